// The test run of the README's worked example: it asks the API for the greeting the API keeps in
// the database, and exits 0 when it is the expected one (1 otherwise).
const port = Number(process.env.API_PORT || 3099);

fetch(`http://127.0.0.1:${port}/greeting`)
  .then(async (res) => {
    const text = await res.text();
    console.log(`tests: GET /greeting → ${res.status} ${text}`);
    process.exit(res.ok && text === 'hello from the database' ? 0 : 1);
  })
  .catch((err) => {
    console.error(`tests: the API did not answer: ${err.message}`);
    process.exit(1);
  });
