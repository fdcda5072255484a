// `engine.lock`: one engine per storage folder. A lock names its owner by pid, the owner's start
// time and the machine's boot id, so a pid reused by an unrelated process does not block start-up;
// it is written whole before it appears, so a racing engine never reads it empty; an unreadable
// one is held while it is young and taken over once it is old.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { EXIT_LOCKED } from '../../src/shared/hostProtocol';
import { runCli } from './support/cli';
import { nodeItem, TempWorkspace, waitFor } from './support/workspace';

/** Field 22 of /proc/<pid>/stat: the process's start time in clock ticks since boot. */
function startTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
}

const BOOT_ID = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();

/** Engines a test started, ended after it even when it failed half-way. */
const started: ChildProcess[] = [];
function endStarted(): void {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** Runs `serve` to its first word: the URL it listens on, or the code it exited with. */
async function startOrExit(args: string[]): Promise<{ run: ReturnType<typeof runCli>; url?: string; code?: number | null }> {
  const run = runCli(['serve', '--port', '0', '--quiet', ...args]);
  started.push(run.child);
  return new Promise((resolve) => {
    const check = () => {
      const m = /^listening on (http:\/\/\S+)$/m.exec(run.stdout());
      if (m) resolve({ run, url: m[1] });
    };
    run.child.stdout.on('data', check);
    void run.exited.then(({ code }) => resolve({ run, code }));
  });
}

function runTracked(args: string[]): ReturnType<typeof runCli> {
  const run = runCli(args);
  started.push(run.child);
  return run;
}

/** Starts `serve` and waits for its URL; fails with its output if it exits instead. */
async function serveTracked(args: string[]): Promise<{ child: ChildProcess; url: string; stderr(): string; exited: ReturnType<typeof runCli>['exited'] }> {
  const { run, url, code } = await startOrExit(args);
  if (url === undefined) throw new Error(`serve exited with ${code} before it was ready:\n${run.stdout()}\n${run.stderr()}`);
  return { child: run.child, url, stderr: () => run.stderr(), exited: run.exited };
}

/** The line is written before the ready line, but on another pipe: it may be read a moment later. */
function stderrShows(run: { stderr(): string }, pattern: RegExp): Promise<true> {
  return waitFor(`${pattern} on stderr`, () => pattern.test(run.stderr()) || undefined).catch((err: Error) => {
    throw new Error(`${err.message}; stderr was:\n${run.stderr()}`);
  });
}

describe('CLI: engine.lock names its owner by more than its pid', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let bystander: ChildProcess;
  const lockFile = () => path.join(ws.storage, 'engine.lock');
  const writeLock = (lock: Record<string, unknown>) => {
    mkdirSync(ws.storage, { recursive: true });
    writeFileSync(lockFile(), JSON.stringify({ url: 'http://127.0.0.1:9', startedAt: new Date().toISOString(), ...lock }));
  };
  beforeEach(() => {
    ws = new TempWorkspace('engine-lock-');
    // A live process that is no engine: what a stale lock's pid names after a reboot.
    bystander = spawn('sleep', ['600'], { stdio: 'ignore' });
  });
  afterEach(() => {
    bystander.kill('SIGKILL');
    endStarted();
    ws.dispose();
  });

  it('takes over a lock whose live pid started at another time, and says so', async () => {
    const pid = bystander.pid!;
    writeLock({ pid, processStart: startTicks(pid) + 1, bootId: BOOT_ID });
    const run = await serveTracked(['--workspace', ws.folder, '--storage', ws.storage]);
    await stderrShows(run, new RegExp(`took over .*engine\\.lock: pid ${pid} now belongs to another process`));
    const lock = JSON.parse(readFileSync(lockFile(), 'utf8'));
    assert.equal(lock.pid, run.child.pid);
    assert.equal(lock.url, run.url);
    run.child.kill('SIGTERM');
    assert.deepEqual(await run.exited, { code: 0, signal: null });
  });

  it('takes over a lock written before the machine restarted', async () => {
    const pid = bystander.pid!;
    writeLock({ pid, processStart: startTicks(pid), bootId: '00000000-0000-0000-0000-000000000000' });
    const run = await serveTracked(['--workspace', ws.folder, '--storage', ws.storage]);
    await stderrShows(run, /took over .*engine\.lock: it was written before the machine restarted/);
    run.child.kill('SIGTERM');
    assert.deepEqual(await run.exited, { code: 0, signal: null });
  });

  it("records its own start time and boot id, and a second engine is refused by them", async () => {
    const first = await serveTracked(['--workspace', ws.folder, '--storage', ws.storage]);
    const lock = JSON.parse(readFileSync(lockFile(), 'utf8'));
    assert.deepEqual(
      { pid: lock.pid, url: lock.url, processStart: lock.processStart, bootId: lock.bootId },
      { pid: first.child.pid, url: first.url, processStart: startTicks(first.child.pid!), bootId: BOOT_ID },
    );
    const second = runTracked(['serve', '--port', '0', '--workspace', ws.folder, '--storage', ws.storage]);
    assert.equal((await second.exited).code, EXIT_LOCKED);
    assert.match(second.stderr(), new RegExp(`another engine \\(pid ${first.child.pid}\\) already runs`));
    first.child.kill('SIGTERM');
    assert.deepEqual(await first.exited, { code: 0, signal: null });
  });

  it('judges a lock without start time and boot id (an older engine\'s) by its pid, as before', async () => {
    writeLock({ pid: bystander.pid });
    const run = runTracked(['serve', '--port', '0', '--workspace', ws.folder, '--storage', ws.storage]);
    assert.equal((await run.exited).code, EXIT_LOCKED);
    assert.match(run.stderr(), new RegExp(`another engine \\(pid ${bystander.pid}\\) already runs`));
  });
});

describe('CLI: engine.lock is never seen half written', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  const lockFile = () => path.join(ws.storage, 'engine.lock');
  beforeEach(() => {
    ws = new TempWorkspace('engine-lockrace-');
    mkdirSync(ws.storage, { recursive: true });
  });
  afterEach(() => {
    endStarted();
    ws.dispose();
  });

  it('an empty lock file that was just created is held: the second engine exits 3 and says another is starting', async () => {
    writeFileSync(lockFile(), '');
    // Kept fresh, as by an engine that created it and is about to write it, however slowly the
    // CLI itself starts on a loaded machine.
    const fresh = setInterval(() => utimesSync(lockFile(), new Date(), new Date()), 200);
    let result;
    try {
      result = await startOrExit(['--workspace', ws.folder, '--storage', ws.storage]);
    } finally {
      clearInterval(fresh);
    }
    if (result.url !== undefined) {
      result.run.child.kill('SIGTERM');
      await result.run.exited;
    }
    assert.equal(result.code, EXIT_LOCKED, result.run.stdout() + result.run.stderr());
    assert.match(result.run.stderr(), /another engine is starting on .* \(its engine\.lock is not written yet\)/);
    assert.equal(readFileSync(lockFile(), 'utf8'), '', 'the lock was left to its writer');
  });

  it('an empty lock file older than the grace period is taken over', async () => {
    writeFileSync(lockFile(), '');
    const aMinuteAgo = new Date(Date.now() - 60_000);
    utimesSync(lockFile(), aMinuteAgo, aMinuteAgo);
    const run = await serveTracked(['--workspace', ws.folder, '--storage', ws.storage]);
    await stderrShows(run, /took over .*engine\.lock: it was unreadable and \d+ s old/);
    assert.equal(JSON.parse(readFileSync(lockFile(), 'utf8')).pid, run.child.pid);
    run.child.kill('SIGTERM');
    assert.deepEqual(await run.exited, { code: 0, signal: null });
  });

  it('of four engines started at once on one storage folder, exactly one runs', async () => {
    const args = ['--workspace', ws.folder, '--storage', ws.storage];
    const results = await Promise.all([1, 2, 3, 4].map(() => startOrExit(args)));
    try {
      const running = results.filter((r) => r.url !== undefined);
      assert.equal(running.length, 1, results.map((r) => r.run.stderr()).join('\n'));
      for (const r of results) if (r.url === undefined) assert.equal(r.code, EXIT_LOCKED, r.run.stderr());
      assert.equal(JSON.parse(readFileSync(lockFile(), 'utf8')).pid, running[0].run.child.pid);
    } finally {
      for (const r of results) if (r.url !== undefined) r.run.child.kill('SIGTERM');
      await Promise.all(results.map((r) => r.run.exited));
    }
  });
});

describe('CLI: the storage folder removed and recreated under a running engine', function () {
  this.timeout(90_000);
  let ws: TempWorkspace;
  let bystander: ChildProcess | undefined;
  beforeEach(() => (ws = new TempWorkspace('engine-lockstorage-')));
  afterEach(() => {
    bystander?.kill('SIGKILL');
    endStarted();
    ws.dispose();
  });

  async function healthStatus(url: string): Promise<number> {
    return (await fetch(`${url}/health`)).status;
  }

  async function untilHealth(url: string, status: number): Promise<void> {
    for (;;) {
      if ((await healthStatus(url)) === status) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('puts engine.lock and endpoint.json back before it recovers, so a second engine is refused', async () => {
    const run = await serveTracked(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '100']);
    rmSync(ws.storage, { recursive: true, force: true });
    await untilHealth(run.url, 503);
    mkdirSync(ws.storage);
    await untilHealth(run.url, 200);
    const lock = JSON.parse(readFileSync(path.join(ws.storage, 'engine.lock'), 'utf8'));
    assert.deepEqual({ pid: lock.pid, url: lock.url }, { pid: run.child.pid, url: run.url });
    const endpoint = JSON.parse(readFileSync(path.join(ws.storage, 'endpoint.json'), 'utf8'));
    assert.deepEqual({ pid: endpoint.pid, url: endpoint.url }, { pid: run.child.pid, url: run.url });
    const second = runTracked(['serve', '--port', '0', '--workspace', ws.folder, '--storage', ws.storage]);
    assert.equal((await second.exited).code, EXIT_LOCKED);
    assert.match(second.stderr(), new RegExp(`another engine \\(pid ${run.child.pid}\\) already runs`));
    run.child.kill('SIGTERM');
    assert.deepEqual(await run.exited, { code: 0, signal: null });
  });

  it('launches nothing more when another engine holds the recreated folder by the time storage is back', async () => {
    const run = await serveTracked(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '100']);
    rmSync(ws.storage, { recursive: true, force: true });
    await untilHealth(run.url, 503);
    // An item that becomes due while storage is gone waits for it (it cannot be journaled first).
    ws.enqueue('late.json', nodeItem('late', '0'));
    for (;;) {
      const stats = (await (await fetch(`${run.url}/stats`)).json()) as { overview: { pending: number } };
      if (stats.overview.pending === 1) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // The folder comes back already locked by another live process (moved into place whole, so
    // the engine cannot recover in between).
    bystander = spawn('sleep', ['600'], { stdio: 'ignore' });
    const pid = bystander.pid!;
    const next = `${ws.storage}.next`;
    mkdirSync(next);
    writeFileSync(path.join(next, 'engine.lock'), JSON.stringify({ pid, url: '', startedAt: new Date().toISOString(), processStart: startTicks(pid), bootId: BOOT_ID }));
    renameSync(next, ws.storage);
    await untilHealth(run.url, 200);
    const status = (await (await fetch(`${run.url}/status`)).json()) as { engine: { state: string } };
    assert.equal(status.engine.state, 'stopped');
    const logs = (await (await fetch(`${run.url}/logs?action=engine_stopped,launch_started&order=asc`)).json()) as { action: string; level: string; message: string }[];
    assert.ok(logs.some((e) => e.action === 'engine_stopped' && e.level === 'error' && /no longer this engine's/.test(e.message)), JSON.stringify(logs));
    assert.deepEqual(logs.filter((e) => e.action === 'launch_started'), [], 'the waiting item was not launched');
    assert.equal(JSON.parse(readFileSync(path.join(ws.storage, 'engine.lock'), 'utf8')).pid, pid, 'the other lock was left alone');
    run.child.kill('SIGTERM');
    assert.deepEqual(await run.exited, { code: 0, signal: null });
  });
});
