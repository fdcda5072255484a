// The headless engine on Windows' own Node: what a user of `engine-monitor serve` on Windows
// relies on, driven from Linux over loopback HTTP and with the CLI client run by node.exe too.
// One engine serves most tests (each Wine start costs seconds); its queue holds an item for each.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { EXIT_LOCKED } from '../../src/shared/hostProtocol';
import { getJson, serveWindows, waitForItem, WinWorkspace, type WinEngine } from './support/engine';
import { NODE_EXE, waitFor, WinePrefix, winPath, type WineRun } from './support/wine';

const done = (i: { state: string }) => i.state === 'launched' || i.state === 'failed';

describe('Windows: the headless engine on node.exe', function () {
  this.timeout(180_000);
  let prefix: WinePrefix;
  let ws: WinWorkspace;
  let engine: WinEngine;

  before(async () => {
    prefix = await WinePrefix.create();
    ws = new WinWorkspace(true);
    mkdirSync(path.join(ws.folder, 'sub', 'deeper'), { recursive: true });
    ws.enqueue('hello.json', { id: 'hello', command: 'cmd.exe', args: ['/c', 'echo hello from %OS%'], maxAttempts: 1 });
    ws.enqueue('shell.json', { id: 'shell', command: 'echo shell on %OS%& echo to stderr 1>&2', shell: true, maxAttempts: 1 });
    // The engine's own node.exe, named by drive letter and backslashes, in a folder given with backslashes.
    ws.enqueue('node.json', { id: 'node', command: winPath(NODE_EXE), args: ['-e', 'console.log(process.platform + " in " + process.cwd())'], cwd: 'sub\\deeper', maxAttempts: 1 });
    ws.enqueue('retry.json', {
      id: 'retry',
      command: 'if %ENGINE_ATTEMPT% LSS 3 (echo attempt %ENGINE_ATTEMPT% fails& exit /b 7) else (echo attempt %ENGINE_ATTEMPT% succeeds)',
      shell: true,
      maxAttempts: 3,
    });
    // Windows paths ignore case: a folder spelled in other case, and the whole path in lower case, are the same folder.
    ws.enqueue('upper.json', { id: 'upper', command: 'cd', shell: true, cwd: 'SUB', maxAttempts: 1 });
    ws.enqueue('lower.json', { id: 'lower', command: 'cd', shell: true, cwd: winPath(path.join(ws.folder, 'sub')).toLowerCase(), maxAttempts: 1 });
    ws.enqueue('escape.json', { id: 'escape', command: 'cd', shell: true, cwd: 'sub\\..\\..', maxAttempts: 1 });
    ws.enqueue('elsewhere.json', { id: 'elsewhere', command: 'cd', shell: true, cwd: 'C:\\windows', maxAttempts: 1 });
    // A link inside the workspace to a folder outside it. Wine 8 cannot make a junction (mklink /J
    // fails), so it is a Linux symlink, which Windows' Node sees through as it sees through a
    // junction: realpath leads to the folder it points to.
    mkdirSync(path.join(ws.root, 'outside'));
    symlinkSync(path.join(ws.root, 'outside'), path.join(ws.folder, 'link'));
    ws.enqueue('link.json', { id: 'link', command: 'cd', shell: true, cwd: 'link', maxAttempts: 1 });
    ws.enqueue('follow.json', { id: 'follow', command: 'ping -n 3 127.0.0.1 > nul & echo followed to the end', shell: true, maxAttempts: 1 });
    engine = await serveWindows(prefix, ws);
  });

  after(async () => {
    try {
      if (engine) await engine.shutdown();
    } finally {
      // Whatever happened, no Windows process and no wineserver outlive the suite.
      await prefix?.dispose();
      ws?.dispose();
    }
  });

  const output = async (id: string, attempt = 1) => {
    const res = await fetch(`${engine.url}/items/${id}/attempts/${attempt}/output`);
    assert.equal(res.status, 200, `${id}: ${res.status}`);
    return res.text();
  };

  it('runs on Windows: launches cmd.exe, captures its output and serves it over HTTP', async () => {
    const stats = await getJson(`${engine.url}/stats`);
    assert.ok(stats.overview, 'GET /stats answers');
    const hello = await waitForItem(engine.url, 'hello', 'finished', done);
    assert.equal(hello.state, 'launched', JSON.stringify(hello.attempts));
    assert.equal(hello.item.source, '.engine/queue/hello.json');
    assert.equal(await output('hello'), 'hello from Windows_NT\r\n');
    // Healthy once a poll has come in time: on a loaded machine one under Wine may be late, which
    // /health rightly reports for as long as it lasts (503, "stalled").
    await waitFor('/health to say healthy', async () => {
      const res = await fetch(`${engine.url}/health`);
      const health = (await res.json()) as { status: string };
      return res.status === 200 && health.status === 'healthy' ? true : undefined;
    });
  });

  it('runs shell: true items through cmd.exe, stdout and stderr both captured', async () => {
    const shell = await waitForItem(engine.url, 'shell', 'finished', done);
    assert.equal(shell.state, 'launched', JSON.stringify(shell.attempts));
    const text = await output('shell');
    assert.match(text, /shell on Windows_NT/);
    assert.match(text, /to stderr/);
  });

  it('launches a program named by drive letter and backslashes, in a cwd given with backslashes', async () => {
    const item = await waitForItem(engine.url, 'node', 'finished', done);
    assert.equal(item.state, 'launched', JSON.stringify(item.attempts));
    assert.equal((await output('node')).trim(), `win32 in ${winPath(path.join(ws.folder, 'sub', 'deeper'))}`);
  });

  it('retries a failing item with backoff until an attempt succeeds', async () => {
    const item = await waitForItem(engine.url, 'retry', 'finished', done);
    assert.equal(item.state, 'launched');
    assert.deepEqual(item.attempts.map((a: { exitCode: number }) => a.exitCode), [7, 7, 0]);
    assert.equal((await output('retry', 2)).trim(), 'attempt 2 fails');
    assert.equal((await output('retry', 3)).trim(), 'attempt 3 succeeds');
  });

  it('takes cwd case-insensitively, as Windows does, and refuses one that leaves the workspace by .., by drive or by a link', async () => {
    const sub = winPath(path.join(ws.folder, 'sub'));
    for (const id of ['upper', 'lower']) {
      const item = await waitForItem(engine.url, id, 'finished', done);
      assert.equal(item.state, 'launched', `${id}: ${JSON.stringify(item.attempts)}`);
      assert.equal((await output(id)).trim().toLowerCase(), sub.toLowerCase(), id);
    }
    const rejected = await waitFor('the three escapes rejected', async () => {
      const entries = await getJson<{ message: string }[]>(`${engine.url}/logs?action=item_rejected`);
      return entries.length >= 3 ? entries.map((e) => e.message).sort() : undefined;
    });
    assert.match(rejected[0], /elsewhere\.json.*cwd "C:\\windows" resolves outside the workspace folder/);
    assert.match(rejected[1], /escape\.json.*cwd "sub\\\.\.\\\.\." resolves outside the workspace folder/);
    assert.ok(rejected[2].endsWith(`link.json entry 0: cwd "link" leads outside the workspace folder (to ${winPath(path.join(ws.root, 'outside'))}) through a link; use a real folder inside it`), rejected[2]);
    for (const id of ['escape', 'elsewhere', 'link']) assert.equal((await fetch(`${engine.url}/items/${id}`)).status, 404, `${id} is no item`);
  });

  it('writes endpoint.json and holds the lock: a second engine on the same storage is refused', async () => {
    const endpoint = JSON.parse(readFileSync(path.join(ws.storage, 'endpoint.json'), 'utf8'));
    assert.equal(endpoint.url, engine.url);
    assert.ok(Number.isInteger(endpoint.pid) && endpoint.pid > 0);
    const second = prefix.cli(['serve', '--workspace', winPath(ws.folder), '--port', '0', '--quiet']);
    const { code } = await second.exited;
    assert.equal(code, EXIT_LOCKED, second.output());
    assert.match(second.output(), new RegExp(`another engine \\(pid ${endpoint.pid}\\) already runs on .* at ${engine.url.replace(/\./g, '\\.')}`));
  });

  it('takes over a lock written before the machine restarted, though its pid now names a live process', async () => {
    // After a restart Windows hands out the same small pids again: the pid alone cannot say the
    // lock's engine is gone. A live process stands in for the one that got the pid.
    const stranger = prefix.node(['-e', 'console.log("pid " + process.pid); setInterval(() => {}, 60000)']);
    const pid = Number(await waitFor('the live process\'s pid', () => /^pid (\d+)/m.exec(stranger.output())?.[1]));
    const other = new WinWorkspace();
    try {
      mkdirSync(other.storage, { recursive: true });
      const tenDaysAgo = Date.now() - 10 * 86_400_000;
      writeFileSync(path.join(other.storage, 'engine.lock'), JSON.stringify({ pid, url: 'http://127.0.0.1:9', startedAt: new Date(tenDaysAgo).toISOString(), bootedAt: tenDaysAgo - 60_000 }));
      const restarted = await serveWindows(prefix, other, ['--quiet']);
      assert.match(restarted.run.output(), new RegExp(`took over .*engine\\.lock: it was written before the machine restarted \\(pid ${pid} is now another process\\)`));
      assert.equal(await restarted.shutdown(), 0);
    } finally {
      stranger.child.kill('SIGKILL');
      other.dispose();
    }
  });

  describe('the CLI client, run by node.exe in the workspace (it finds the engine by endpoint.json)', () => {
    const cli = async (args: string[]): Promise<{ code: number | null; text: string }> => {
      const run: WineRun = prefix.client(args, ws.folder);
      const { code } = await run.exited;
      return { code, text: run.output() };
    };

    it('status', async () => {
      const { code, text } = await cli(['status']);
      assert.equal(code, 0, text);
      assert.match(text, new RegExp(engine.url.replace(/\./g, '\\.')));
    });

    it('items', async () => {
      await waitForItem(engine.url, 'hello', 'finished', done);
      const json = await cli(['items', '--state', 'launched', '--json']);
      assert.equal(json.code, 0, json.text);
      const ids = (JSON.parse(json.text) as { items: { id: string }[] }).items.map((i) => i.id);
      assert.ok(ids.includes('hello') && ids.includes('retry'), json.text);
      const table = await cli(['items', '--q', 'hello']);
      assert.equal(table.code, 0, table.text);
      assert.match(table.text, /hello\s.*launched/, table.text);
    });

    it('output, and output --follow to the attempt\'s end', async () => {
      const hello = await cli(['output', 'hello']);
      assert.equal(hello.code, 0, hello.text);
      assert.equal(hello.text, 'hello from Windows_NT\r\n');
      const followed = await cli(['output', 'follow', '--follow']);
      assert.equal(followed.code, 0, followed.text);
      assert.match(followed.text, /followed to the end/);
    });
  });
});
