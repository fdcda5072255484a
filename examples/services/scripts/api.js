// The API of the README's worked example: it needs the database from its first instant (it exits
// when it cannot reach it, as many real servers do), then serves GET /health and GET /greeting
// over HTTP, reading the greeting from the database.
const http = require('node:http');
const net = require('node:net');

const dbPort = Number(process.env.DB_PORT || 54329);
const port = Number(process.env.API_PORT || 3099);

/** Sends one command line to the database and resolves with its answer line. */
function db(command) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(dbPort, '127.0.0.1', () => socket.write(`${command}\n`));
    socket.once('data', (answer) => {
      resolve(String(answer).trim());
      socket.end();
    });
    socket.once('error', reject);
  });
}

db('set greeting hello from the database')
  .then(() => {
    http
      .createServer(async (req, res) => {
        try {
          if (req.url === '/health') res.end(await db('ping'));
          else if (req.url === '/greeting') res.end(await db('get greeting'));
          else res.writeHead(404).end('not found');
        } catch (err) {
          res.writeHead(503).end(`database unavailable: ${err.message}`);
        }
      })
      .listen(port, '127.0.0.1', () => console.log(`api: listening on http://127.0.0.1:${port}`));
  })
  .catch((err) => {
    console.error(`api: cannot reach the database on port ${dbPort}: ${err.message}`);
    process.exit(1);
  });
process.on('SIGTERM', () => {
  console.log('api: stopping');
  process.exit(0);
});
