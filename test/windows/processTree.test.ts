// On Windows an attempt's command line is a tree of processes: `shell: true` runs it through
// cmd.exe, and a command often starts its own children. Ending the attempt (timeout, cancel, the
// engine's shutdown) and ending a hook must end the whole tree, as a process group's signal does
// on Linux: Windows has neither, and ending only the first process leaves the rest running.
//
// The trees here end in `ping -n <count> 127.0.0.1`, which runs for <count> seconds. Each test uses
// its own count, so the processes it looks for (by command line, from Linux: Wine runs every
// Windows process as a Linux one) are its own.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { getJson, serveWindows, waitForItem, WinWorkspace } from './support/engine';
import { processesWith, waitFor, WinePrefix } from './support/wine';

/** Long enough to outlast any test; unique per test (see above). */
let nextCount = 600 + Math.floor(Math.random() * 300) * 10;
const pingLine = () => `ping -n ${nextCount++} 127.0.0.1`;

/** Resolves once `line` itself runs (not only a shell that will start it); returns its Linux pids. */
const started = (line: string) => waitFor(`a process "${line}"`, () => {
  const pids = processesWith(line, 'first');
  return pids.length > 0 ? pids : undefined;
});

/** Resolves once no process with `line` is left; the message says what was left. */
const gone = (line: string, why: string) => waitFor(`"${line}" to end (${why})`, () => (processesWith(line).length === 0 ? true : undefined), 20_000);

describe('Windows: ending an attempt ends its whole process tree', function () {
  this.timeout(120_000);
  let prefix: WinePrefix;
  let ws: WinWorkspace;
  before(async () => (prefix = await WinePrefix.create()));
  after(async () => prefix?.dispose());
  beforeEach(() => (ws = new WinWorkspace()));
  afterEach(() => ws.dispose());

  it('a timeout ends cmd.exe and the ping it started, through the shell and without it', async () => {
    const viaShell = pingLine();
    const direct = pingLine();
    ws.enqueue('shell.json', { id: 'shell', command: `cmd.exe /c "${viaShell} > nul"`, shell: true, timeoutMs: 3000, maxAttempts: 1 });
    ws.enqueue('direct.json', { id: 'direct', command: 'cmd.exe', args: ['/c', `${direct} > nul`], timeoutMs: 3000, maxAttempts: 1 });
    const engine = await serveWindows(prefix, ws);
    try {
      await Promise.all([started(viaShell), started(direct)]);
      for (const id of ['shell', 'direct']) {
        const item = await waitForItem(engine.url, id, 'failed', (i) => i.state === 'failed');
        assert.match(item.attempts[0].error, /timed out after 3000 ms/);
      }
      await gone(viaShell, 'the shell item timed out');
      await gone(direct, 'the item timed out');
    } finally {
      await engine.shutdown();
    }
  });

  it('a cancel over HTTP ends the tree of the running attempt', async () => {
    const line = pingLine();
    ws.enqueue('long.json', { id: 'long', command: `cmd.exe /c "${line} > nul"`, shell: true, maxAttempts: 1 });
    const engine = await serveWindows(prefix, ws, ['--token', 'windows-suite-token']);
    try {
      await started(line);
      const res = await fetch(`${engine.url}/items/long/cancel`, { method: 'POST', headers: { authorization: 'Bearer windows-suite-token' } });
      assert.equal(res.status, 202, await res.text());
      await gone(line, 'the item was cancelled');
      const item = await waitForItem(engine.url, 'long', 'failed', (i) => i.state === 'failed', { authorization: 'Bearer windows-suite-token' });
      assert.equal(item.error, 'cancelled');
      const logs = await getJson(`${engine.url}/logs?action=launch_cancelled`, { headers: { authorization: 'Bearer windows-suite-token' } });
      assert.match(logs[0].message, /its process tree was ended/, 'no SIGTERM or SIGKILL on Windows');
    } finally {
      await engine.shutdown();
    }
  });

  it('Stop Engine (the control connection\'s shutdown) ends the trees of running attempts before the engine exits', async () => {
    const line = pingLine();
    ws.enqueue('long.json', { id: 'long', command: 'cmd.exe', args: ['/c', `${line} > nul`], maxAttempts: 1 });
    const engine = await serveWindows(prefix, ws, ['--grace', '500']);
    await started(line);
    assert.equal(await engine.shutdown(), 0, engine.run.output());
    assert.deepEqual(processesWith(line), [], 'nothing of the attempt outlives the engine');
    assert.equal(existsSync(path.join(ws.storage, 'endpoint.json')), false, 'endpoint.json removed');
    assert.equal(existsSync(path.join(ws.storage, 'engine.lock')), false, 'engine.lock released');
  });

  it('a hook that outlives its timeout is ended with every process its shell started', async () => {
    const line = pingLine();
    const count = /-n (\d+)/.exec(line)![1];
    ws.enqueue('fails.json', { id: 'fails', command: 'cmd.exe', args: ['/c', 'exit 3'], maxAttempts: 1 });
    // The count through the environment: the engine's own command line must not hold the line looked for.
    const hook = 'ping -n %HOOK_PING_COUNT% 127.0.0.1 > nul';
    const engine = await serveWindows(prefix, ws, ['--on-item-failed', hook, '--hook-timeout', '2000'], { HOOK_PING_COUNT: count });
    try {
      await started(line);
      await gone(line, 'the hook timed out');
      await waitFor('the hook\'s failure in the log', async () => {
        const entries = (await (await fetch(`${engine.url}/logs?q=hook`)).json()) as { message: string }[];
        return entries.find((e) => /did not finish within 2000 ms and was killed/.test(e.message));
      });
    } finally {
      await engine.shutdown();
    }
  });
});
