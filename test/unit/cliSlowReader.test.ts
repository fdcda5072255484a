// `engine-monitor output` into a reader slower than the request timeout (`less`, `| (sleep 20;
// wc -c)`): the engine answered at once, so the client must wait for its reader for as long as it
// takes, not give up after 15 s as if the engine were unreachable. A real engine, a real attempt
// printing 8 MiB, the real client writing into a pipe this test does not read for 17 s.
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { assertBuilt, CLI, getJson, serve, type ServeProcess } from './support/cli';
import { TempWorkspace, waitFor } from './support/workspace';

const BYTES = 8 * 1024 * 1024;
/** A little longer than the client's request timeout (15 s). */
const READER_PAUSE_MS = 17_000;

describe('command-line client: output into a slow reader', function () {
  this.timeout(120_000);
  let ws: TempWorkspace;
  let engine: ServeProcess;

  before(async () => {
    ws = new TempWorkspace('engine-client-slow-');
    ws.enqueue('big.json', { id: 'big', command: process.execPath, args: ['-e', `process.stdout.write('x'.repeat(${BYTES}))`] });
    engine = await serve(['--workspace', ws.folder, '--storage', ws.storage]);
    await waitFor('the big item to succeed', async () => (await getJson<{ outcome: string }>(`${engine.url}/items/big`).catch(() => ({ outcome: '' }))).outcome === 'launched', 60_000);
  });
  after(async () => {
    engine.child.kill('SIGTERM');
    await engine.exited;
    ws.dispose();
  });

  it('writes every byte however long its reader takes, and exits 0', async () => {
    assertBuilt();
    const { ENGINE_MONITOR_URL: _u, ENGINE_MONITOR_TOKEN: _t, ...env } = process.env;
    const child = spawn(process.execPath, [CLI, 'output', 'big', '--url', engine.url], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const closed = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    // Paused: the pipe fills and the client waits on it, as it would on `less`.
    child.stdout.pause();
    await new Promise((r) => setTimeout(r, READER_PAUSE_MS));
    let received = 0;
    child.stdout.on('data', (c: Buffer) => (received += c.length));
    child.stdout.resume();
    const code = await closed;
    assert.equal(code, 0, `exit ${code}: ${err}`);
    assert.equal(err, '');
    assert.equal(received, BYTES);
  });
});
