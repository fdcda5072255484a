import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { EXIT_LOCKED, EXIT_USAGE } from '../../src/shared/hostProtocol';
import type { StatsResponse } from '../../src/shared/api';
import { request } from './support/http';
import { allLogs, getJson, runCli, serve } from './support/cli';
import { nodeItem, TempWorkspace } from './support/workspace';

describe('CLI: engine-monitor serve', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  beforeEach(() => (ws = new TempWorkspace('engine-cli-')));
  afterEach(() => ws.dispose());

  it('prints its ready line, writes endpoint.json, serves, and exits 0 on SIGTERM', async () => {
    ws.enqueue('a.json', nodeItem('a', '0'));
    const run = await serve(['--workspace', ws.folder, '--storage', ws.storage]);
    const lines = run.stdout().split('\n');
    assert.equal(lines[0], `listening on ${run.url}`, 'the ready line stands alone, first');
    assert.match(run.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const endpoint = JSON.parse(readFileSync(path.join(ws.storage, 'endpoint.json'), 'utf8'));
    assert.equal(endpoint.url, run.url);
    assert.equal(endpoint.pid, run.child.pid);
    assert.equal(new Date(endpoint.startedAt).toISOString(), endpoint.startedAt);
    const stats = await getJson<StatsResponse>(`${run.url}/stats`);
    assert.notEqual(stats.overview.lastPollAt, null, 'polled before the first request was served');
    run.child.kill('SIGTERM');
    const { code } = await run.exited;
    assert.equal(code, 0);
    assert.equal(existsSync(path.join(ws.storage, 'endpoint.json')), false, 'no stale endpoint left behind');
  });

  it('without --quiet, prints the log from its own start (engine_started, the first poll) and then live entries', async () => {
    ws.enqueue('a.json', nodeItem('a', '0'));
    const run = runCli(['serve', '--port', '0', '--workspace', ws.folder, '--storage', ws.storage]);
    await waitForText(run, /launch_succeeded/);
    const lines = run.stdout().split('\n');
    assert.match(lines[0], /^listening on http:/);
    const actions = lines.map((l) => /^\S+ (?:info|warn|error)\s+(\S+)/.exec(l)?.[1]).filter(Boolean);
    assert.deepEqual(actions.slice(0, 2), ['engine_started', 'item_discovered'], run.stdout());
    assert.ok(actions.indexOf('launch_started') < actions.indexOf('launch_succeeded'));
    assert.equal(new Set(lines.filter((l) => l.includes('engine_started'))).size, 1, 'printed once');
    run.child.kill('SIGTERM');
    assert.equal((await run.exited).code, 0);
  });

  it('waits for running attempts on SIGTERM and records their outcome', async () => {
    ws.enqueue('slow.json', nodeItem('slow', 'setTimeout(() => {}, 1500)'));
    const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '100']);
    for (;;) {
      const status = await getJson(`${run.url}/status`);
      if (status.engine.running === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    run.child.kill('SIGTERM');
    assert.equal((await run.exited).code, 0);
    const again = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--stopped']);
    const stats = await getJson<StatsResponse>(`${again.url}/stats`);
    assert.equal(stats.overview.launched, 1, 'the attempt finished within the grace period and was recorded');
    again.child.kill('SIGTERM');
    await again.exited;
  });

  for (const [args, message] of [
    [['serve'], /--workspace <dir> is required/],
    [['serve', '--workspace', '/no/such/folder'], /is not a folder/],
    [['serve', '--workspace', '.', '--port', 'eighty'], /--port must be a whole number from 0 to 65535, got "eighty"/],
    [['serve', '--workspace', '.', '--concurrency', '0'], /--concurrency must be a whole number from 1/],
    [['serve', '--workspace', '.', '--snapshot-min-journal', '1MB'], /--snapshot-min-journal must be a whole number from 0 to \d+, got "1MB"/],
    [['serve', '--workspace', '.', '--frobnicate'], /Unknown option '--frobnicate'/],
    [['serve', '--workspace', '.', '--host', '0.0.0.0'], /not a loopback address.*--token/],
    [['launch'], /unknown command "launch"/],
    [['serve', '--workspace', '.', '--port', '-1'], /--port must be a whole number from 0 to 65535, got "-1"/],
  ] as const) {
    it(`exits 2 with a clear message for: ${args.join(' ')}`, async () => {
      const run = runCli([...args]);
      const { code } = await run.exited;
      assert.equal(code, EXIT_USAGE);
      assert.match(run.stderr(), message);
      assert.match(run.stderr(), /Usage: engine-monitor serve/);
      assert.equal(run.stdout(), '');
    });
  }

  it('refuses a second engine on the same storage folder and names the first', async () => {
    const first = await serve(['--workspace', ws.folder, '--storage', ws.storage]);
    const second = runCli(['serve', '--workspace', ws.folder, '--storage', ws.storage, '--port', '0']);
    assert.equal((await second.exited).code, EXIT_LOCKED);
    assert.match(second.stderr(), new RegExp(`another engine \\(pid ${first.child.pid}\\) already runs .* at ${first.url.replace(/\./g, '\\.')}`));
    first.child.kill('SIGTERM');
    await first.exited;
  });

  it('uses a free port and says so when the requested one is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--port', String(port)]);
    assert.notEqual(run.url, `http://127.0.0.1:${port}`);
    assert.match(run.stderr(), new RegExp(`port ${port} is in use; listening on a free port instead`));
    run.child.kill('SIGTERM');
    await run.exited;
    blocker.close();
  });

  it('after kill -9 mid-run loses no item and no outcome, and retries the interrupted attempts', async () => {
    // Quick items, and sleepers that are surely running when the engine is killed.
    const items = [
      ...Array.from({ length: 6 }, (_, i) => nodeItem(`quick${i}`, '0')),
      ...Array.from({ length: 3 }, (_, i) => nodeItem(`sleep${i}`, 'setTimeout(() => {}, 3000)')),
    ];
    ws.enqueue('mixed.json', items);
    const args = ['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '100', '--concurrency', '4'];
    const first = await serve(args);
    let before: StatsResponse;
    for (;;) {
      before = await getJson<StatsResponse>(`${first.url}/stats`);
      if (before.overview.launched >= 6) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await serve(args);
    const logs0 = await allLogs(second.url);
    const interrupted = logs0.filter((e) => e.action === 'launch_interrupted');
    assert.ok(interrupted.length >= 1, 'the running sleepers were recorded as interrupted');
    assert.ok(interrupted.every((e) => e.details?.error === 'interrupted'));
    let after: StatsResponse;
    for (;;) {
      after = await getJson<StatsResponse>(`${second.url}/stats`);
      if (after.overview.pending === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const o = after.overview;
    assert.equal(o.total, items.length, 'no item lost');
    assert.equal(o.launched, items.length, 'every item launched in the end');
    assert.ok(o.launched >= before.overview.launched, 'no outcome lost');
    assert.equal(o.totalLaunches, o.launched + o.totalFailed);
    const logs = await allLogs(second.url);
    const started = logs.filter((e) => e.action === 'launch_started').length;
    const duplicates = started - items.length;
    assert.equal(duplicates, logs.filter((e) => e.action === 'launch_interrupted').length, 'every duplicate launch is an interrupted one');
    second.child.kill('SIGTERM');
    assert.equal((await second.exited).code, 0);
  });
});

describe('CLI: serving other machines (--host 0.0.0.0 with --token)', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  beforeEach(() => (ws = new TempWorkspace('engine-remote-')));
  afterEach(() => ws.dispose());

  it("answers on the machine's own addresses and --allowed-host names, with the token, and refuses other Host names", async () => {
    const address = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--host', '0.0.0.0', '--token', 's3cret', '--allowed-host', 'engine.example']);
    const port = new URL(run.url).port;
    const auth = { authorization: 'Bearer s3cret' };
    try {
      if (address) {
        const own = await request(`http://${address}:${port}`, '/stats', { headers: auth });
        assert.equal(own.status, 200, `reachable on ${address}`);
        assert.equal((await request(`http://${address}:${port}`, '/stats')).status, 401, 'the token is required');
      }
      const named = await request(run.url, '/stats', { headers: { ...auth, host: `engine.example:${port}` } });
      assert.equal(named.status, 200);
      const rebinding = await request(run.url, '/stats', { headers: { ...auth, host: `attacker.example:${port}` } });
      assert.equal(rebinding.status, 403);
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
  });

  it('refuses --allowed-host without --token', async () => {
    const run = runCli(['serve', '--workspace', ws.folder, '--allowed-host', 'engine.example']);
    assert.equal((await run.exited).code, EXIT_USAGE);
    assert.match(run.stderr(), /--allowed-host lets other machines in: it needs --token/);
  });
});

function waitForText(run: ReturnType<typeof runCli>, pattern: RegExp, timeoutMs = 20_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${pattern} on stdout within ${timeoutMs} ms:\n${run.stdout()}\n${run.stderr()}`)), timeoutMs);
    const check = () => {
      if (!pattern.test(run.stdout())) return;
      clearTimeout(timer);
      resolve();
    };
    run.child.stdout.on('data', check);
    check();
  });
}
