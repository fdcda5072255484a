// A database-like service for the README's worked example: it takes a moment to "recover" before
// it listens, as a real database does, then answers `ping` with `pong` and keeps a few values
// (`set key value`, `get key`) for its clients, one line per command, over TCP.
const net = require('node:net');

const port = Number(process.env.DB_PORT || 54329);
const values = new Map();
console.log(`db: recovering…`);
setTimeout(() => {
  net
    .createServer((socket) => {
      let buffered = '';
      socket.on('data', (chunk) => {
        buffered += chunk;
        let nl;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const [cmd, key, ...rest] = buffered.slice(0, nl).trim().split(' ');
          buffered = buffered.slice(nl + 1);
          if (cmd === 'ping') socket.write('pong\n');
          else if (cmd === 'set') socket.write((values.set(key, rest.join(' ')), 'ok\n'));
          else if (cmd === 'get') socket.write(`${values.get(key) ?? ''}\n`);
          else socket.write('error unknown command\n');
        }
      });
      socket.on('error', () => socket.destroy());
    })
    .listen(port, '127.0.0.1', () => console.log(`db: ready on 127.0.0.1:${port}`));
}, 1500);
process.on('SIGTERM', () => {
  console.log('db: stopping');
  process.exit(0);
});
