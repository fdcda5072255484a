// The command-line client against a server that is not what it claims: every field it prints is
// the server's text and goes through escapeControls, and JSON of an unexpected shape is said to be
// the server's fault (exit 3), not a stack trace. A real HTTP server on loopback that answers what
// a broken or hostile one would, and the real client process.
import * as assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runClient } from './support/cli';
import { waitFor } from './support/workspace';

const ESC = '\x1b';

describe('command-line client: a server that is not what it claims', function () {
  this.timeout(60_000);
  let server: Server;
  let url = '';
  const streams: ServerResponse[] = [];
  const answers = new Map<string, string>();

  before(async () => {
    server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/events') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': hello\n\n');
        streams.push(res);
        return;
      }
      const body = answers.get(path);
      if (body === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"not_found","message":"no"}}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const s of streams) s.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('logs --follow escapes the timestamp, level and action it prints, not only the message', async () => {
    const hostile = {
      id: 1,
      timestamp: `${ESC}[2J2026-11-28T00:00:00.000Z`,
      level: `${ESC}[8merror`,
      action: `x${ESC}]0;owned${String.fromCharCode(7)}`,
      itemId: null,
      message: 'a message',
      details: null,
    };
    answers.set('/logs', JSON.stringify([hostile]));
    const client = runClient(['logs', '--follow', '--url', url]);
    try {
      await waitFor('the history line', () => client.stdout().includes('a message'), 30_000);
    } finally {
      client.kill();
      await client.exited;
    }
    assert.ok(!client.stdout().includes(ESC), `no control character reached the terminal: ${JSON.stringify(client.stdout())}`);
    assert.ok(!client.stdout().includes(String.fromCharCode(7)), 'no BEL either');
    assert.match(client.stdout(), /^\\u001b\[2J2026-11-28T00:00:00\.000Z \\u001b\[8merror x\\u001b\]0;owned\\u0007 - a message$/m);
  });

  it('JSON of the wrong shape (null where an object belongs) is exit 3 with a message, not a stack trace', async () => {
    answers.set('/status', JSON.stringify({ engine: null, stats: null, database: null, workspaces: null }));
    answers.set('/health', JSON.stringify({ status: null, checks: null }));
    answers.set('/stats', JSON.stringify({ overview: null }));
    const client = runClient(['status', '--url', url]);
    const code = await client.exited;
    assert.equal(code, 3, client.stderr());
    assert.match(client.stderr(), /^engine-monitor: the engine's answer is not what this client understands \(\/status: engine: expected an object, got null\); is http:\/\/127\.0\.0\.1:\d+ an Engine Monitor engine of this version\?\n$/);
    assert.doesNotMatch(client.stderr(), /\n\s+at /, 'no stack trace');
  });

  it('names the field that is not what the client reads, in a list and in a control answer, and prints nothing of such an answer', async () => {
    answers.set('/items', JSON.stringify({ items: [{ id: 'a', name: 'A', state: 'pending', attempts: 0, maxAttempts: 3, updatedAt: '2026-11-28T00:00:00.000Z', lastError: null }, { id: 'b', name: null }], total: 2 }));
    const list = runClient(['items', '--url', url]);
    assert.equal(await list.exited, 3, list.stderr());
    assert.match(list.stderr(), /\(\/items: items\[1\]\.name: expected a string, got null\)/);
    assert.equal(list.stdout(), '', 'no half-printed table');

    answers.set('/items/x/hold', JSON.stringify({ item: { id: 'x', name: 'X' }, state: 'held', outcome: 'pending', error: null, attempts: [{ attempt: 1 }] }));
    const hold = runClient(['hold', 'x', '--url', url]);
    assert.equal(await hold.exited, 3, hold.stderr());
    assert.match(hold.stderr(), /\(\/items\/x\/hold: attempts\[0\]\.outcome: expected a string, got nothing\)/);
    assert.doesNotMatch(hold.stderr(), /\n\s+at /, 'no stack trace');
  });
});
