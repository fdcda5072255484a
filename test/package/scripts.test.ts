// examples/scripts against the real headless engine (dist/cli.js serve): wait-for-drain.sh (bash,
// curl, jq) and tail-events.mjs (Node), run as a CI job or a user runs them.
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { serve, type ServeProcess } from '../unit/support/cli';
import { REPO_ROOT } from './support';

const WAIT_FOR_DRAIN = path.join(REPO_ROOT, 'examples', 'scripts', 'wait-for-drain.sh');
const TAIL_EVENTS = path.join(REPO_ROOT, 'examples', 'scripts', 'tail-events.mjs');
const RUN_ITEM = path.join(REPO_ROOT, 'examples', 'scripts', 'run-item.sh');
const CLIENT = `${process.execPath} ${path.join(REPO_ROOT, 'dist', 'cli.js')}`;
const NODE = process.execPath;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const ok = (id: string) => ({ id, command: NODE, args: ['-e', 'setTimeout(() => {}, 100)'] });
const failing = (id: string) => ({ id, command: NODE, args: ['-e', 'process.exit(3)'], maxAttempts: 1 });

class Workspace {
  readonly root = mkdtempSync(path.join(os.tmpdir(), 'engine-scripts-'));
  readonly folder = path.join(this.root, 'ws');
  readonly storage = path.join(this.root, 'storage');
  readonly engines: ServeProcess[] = [];

  constructor() {
    mkdirSync(path.join(this.folder, '.engine', 'queue'), { recursive: true });
  }

  /** As scripts should enqueue: write under a temporary name, then rename. */
  enqueue(name: string, items: unknown): void {
    const file = path.join(this.folder, '.engine', 'queue', name);
    writeFileSync(`${file}.tmp`, typeof items === 'string' ? items : JSON.stringify(items));
    renameSync(`${file}.tmp`, file);
  }

  async start(...args: string[]): Promise<string> {
    const engine = await serve(['--workspace', this.folder, '--storage', this.storage, '--poll-interval', '300', ...args]);
    this.engines.push(engine);
    return engine.url;
  }

  async stopAll(): Promise<void> {
    for (const e of this.engines) {
      if (e.child.exitCode === null && e.child.signalCode === null) {
        e.child.kill('SIGTERM');
        await e.exited;
      }
    }
  }

  async dispose(): Promise<void> {
    await this.stopAll();
    rmSync(this.root, { recursive: true, force: true });
  }
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runScript(file: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000, cwd?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    // The script itself (its shebang and executable bit), as a CI job calls it.
    const child = spawn(file, args, { cwd, env: { ...process.env, ENGINE_MONITOR_URL: '', ENGINE_MONITOR_TOKEN: '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${path.basename(file)} ${args.join(' ')} ran over ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('examples/scripts/wait-for-drain.sh', function () {
  this.timeout(60_000);
  let ws: Workspace;
  beforeEach(() => (ws = new Workspace()));
  afterEach(async () => ws.dispose());

  it('exits 0 with a summary when every item launched', async function () {
    ws.enqueue('build.json', [ok('build'), ok('lint'), ok('test')]);
    const url = await ws.start();
    const r = await runScript(WAIT_FOR_DRAIN, ['--interval', '0.2', url]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^drained: 3 items, 3 launched, 0 failed, 0 pending; 3 launch attempts, 0 failed$/m);
    assert.doesNotMatch(r.stderr, /failed|rejected/);
  });

  it('exits 1 and names the failed item when one failed', async function () {
    ws.enqueue('jobs.jsonl', [ok('a'), failing('migrate'), ok('b')].map((i) => JSON.stringify(i)).join('\n'));
    const url = await ws.start();
    // The URL from the environment, as VS Code's terminals provide it.
    const r = await runScript(WAIT_FOR_DRAIN, ['-q', '-i', '0.2'], { ENGINE_MONITOR_URL: url });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^drained: 3 items, 2 launched, 1 failed, 0 pending/m);
    assert.match(r.stdout, /^ {2}migrate: 1 attempt, last: exited with code 3$/m);
    assert.match(r.stderr, /1 item\(s\) failed/);
  });

  it('warns about rejected queue entries', async function () {
    ws.enqueue('typo.json', [ok('good'), { id: 'bad', comand: 'make' }]);
    const url = await ws.start();
    const r = await runScript(WAIT_FOR_DRAIN, ['-i', '0.2', url]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^drained: 1 items, 1 launched, 0 failed/m);
    assert.match(r.stderr, /1 queue entry was rejected since the engine started: .*\/logs\?action=item_rejected/);
  });

  it('waits for a file written just before it started, even before the engine has scanned it', async function () {
    const url = await ws.start('--poll-interval', '1500');
    await sleep(300); // the engine's first poll is over: the queue was empty then
    ws.enqueue('late.json', ok('late'));
    const r = await runScript(WAIT_FOR_DRAIN, ['-i', '0.1', url]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^drained: 1 items, 1 launched, 0 failed/m);
  });

  it('times out (exit 4) on an item scheduled for later, unless told to ignore scheduled items', async function () {
    ws.enqueue('later.json', [ok('now'), { ...ok('nightly'), runAt: '2099-01-01T00:00:00.000Z' }]);
    const url = await ws.start();
    const timedOut = await runScript(WAIT_FOR_DRAIN, ['--timeout', '1.5', '--interval', '0.2', url]);
    assert.equal(timedOut.code, 4, timedOut.stdout + timedOut.stderr);
    assert.match(timedOut.stderr, /timed out after 1\.5s: 1 pending/);
    const ignored = await runScript(WAIT_FOR_DRAIN, ['--ignore-scheduled', '-i', '0.2', url]);
    assert.equal(ignored.code, 0, ignored.stdout + ignored.stderr);
    assert.match(ignored.stdout, /^drained: 2 items, 1 launched, 0 failed, 1 pending \(1 scheduled for later\)/m);
  });

  it('sends ENGINE_MONITOR_TOKEN, and says so when the engine wants one (exit 3)', async function () {
    ws.enqueue('one.json', ok('one'));
    const url = await ws.start('--token', 's3cret');
    const without = await runScript(WAIT_FOR_DRAIN, [url]);
    assert.equal(without.code, 3);
    assert.match(without.stderr, /wants a token: set ENGINE_MONITOR_TOKEN \(HTTP 401\)/);
    const withToken = await runScript(WAIT_FOR_DRAIN, ['-i', '0.2', url], { ENGINE_MONITOR_TOKEN: 's3cret' });
    assert.equal(withToken.code, 0, withToken.stdout + withToken.stderr);
  });

  it('exits 3 when the engine is unreachable and 2 on bad arguments', async function () {
    const port = await freePort();
    const down = await runScript(WAIT_FOR_DRAIN, [`http://127.0.0.1:${port}`]);
    assert.equal(down.code, 3);
    assert.match(down.stderr, new RegExp(`cannot reach the engine at http://127\\.0\\.0\\.1:${port}`));

    for (const args of [[], ['--timeout'], ['--interval', '0', 'http://127.0.0.1:1'], ['--bogus'], ['http://127.0.0.1:1/stats'], ['a', 'b']]) {
      const r = await runScript(WAIT_FOR_DRAIN, args);
      assert.equal(r.code, 2, `${JSON.stringify(args)}: ${r.stderr}`);
      assert.match(r.stderr, /Try 'wait-for-drain\.sh --help'/);
    }
    const help = await runScript(WAIT_FOR_DRAIN, ['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: wait-for-drain\.sh \[options\] \[URL\]/);
  });
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** A running tail-events.mjs whose output can be awaited line by line. */
class Tail {
  readonly child;
  stdout = '';
  stderr = '';
  readonly closed: Promise<number | null>;

  constructor(args: string[], env: NodeJS.ProcessEnv = {}) {
    this.child = spawn(NODE, [TAIL_EVENTS, ...args], { env: { ...process.env, ENGINE_MONITOR_URL: '', ENGINE_MONITOR_TOKEN: '', ...env } });
    this.child.stdout.on('data', (c: Buffer) => (this.stdout += c.toString()));
    this.child.stderr.on('data', (c: Buffer) => (this.stderr += c.toString()));
    this.closed = new Promise((resolve) => this.child.once('close', (code) => resolve(code)));
  }

  lines(): string[] {
    return this.stdout.split('\n').filter(Boolean);
  }

  async waitFor(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`tail-events: timed out waiting for ${what}\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      await sleep(50);
    }
  }

  async stop(): Promise<number | null> {
    this.child.kill('SIGINT');
    return this.closed;
  }
}

describe('examples/scripts/tail-events.mjs', function () {
  this.timeout(60_000);
  let ws: Workspace;
  let tail: Tail | undefined;
  beforeEach(() => (ws = new Workspace()));
  afterEach(async () => {
    if (tail && tail.child.exitCode === null) tail.child.kill('SIGKILL');
    tail = undefined;
    await ws.dispose();
  });

  it('prints the launch entries as lines, filtered by action, and stops on Ctrl+C', async function () {
    ws.enqueue('jobs.json', [ok('build'), failing('deploy')]);
    const url = await ws.start();
    // --from 0: the whole log so far, then live.
    tail = new Tail(['--from', '0', '--action', 'launch_succeeded', '-a', 'launch_failed', url]);
    const t = tail;
    await t.waitFor('both launch outcomes', () => /launch_succeeded +build /.test(t.stdout) && /launch_failed +deploy /.test(t.stdout));
    assert.equal(await t.stop(), 0);
    const line = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (debug|info |warn |error) (launch_succeeded|launch_failed) +\S+ .+$/;
    for (const l of t.lines()) assert.match(l, line);
    assert.deepEqual(t.lines().map((l) => l.split(/ +/)[3]).sort(), ['build', 'deploy']);
    assert.match(t.lines().find((l) => l.includes('deploy'))!, /warn +launch_failed +deploy .*exited with code 3/);
  });

  it('filters by minimum level and prints JSON lines for jq', async function () {
    ws.enqueue('jobs.json', [ok('fine'), failing('broken')]);
    const url = await ws.start();
    tail = new Tail(['--from', '0', '--level', 'warn', '--json'], { ENGINE_MONITOR_URL: url });
    const t = tail;
    await t.waitFor('item_failed', () => t.stdout.includes('"item_failed"'));
    assert.equal(await t.stop(), 0);
    const entries = t.lines().map((l) => JSON.parse(l) as { id: number; level: string; action: string; itemId: string | null });
    assert.ok(entries.length >= 2);
    for (const e of entries) assert.ok(e.level === 'warn' || e.level === 'error', JSON.stringify(e));
    assert.deepEqual(entries.filter((e) => e.itemId === 'broken').map((e) => e.action), ['launch_failed', 'item_failed']);
  });

  it('reconnects after the engine restarts and resumes with Last-Event-ID: nothing lost, nothing twice', async function () {
    const port = await freePort();
    const url = await ws.start('--port', String(port));
    tail = new Tail(['--json', url]); // live: no history
    const t = tail;
    await sleep(500); // connected (the stream has no entry to show yet)
    ws.enqueue('first.json', ok('first'));
    await t.waitFor('the first launch', () => t.stdout.includes('"launch_succeeded"'));

    await ws.stopAll(); // SIGTERM: the engine persists and exits; the tail loses its stream
    await t.waitFor('the lost connection', () => /connection lost/.test(t.stderr));
    ws.enqueue('second.json', ok('second')); // logged while the tail is away…
    await ws.start('--port', String(port));
    await t.waitFor('the reconnection', () => /reconnected, resuming after log entry \d+/.test(t.stderr), 30_000);
    await t.waitFor('the second launch', () => /"launch_succeeded".*"second"/.test(t.stdout));
    assert.equal(await t.stop(), 0);

    const entries = t.lines().map((l) => JSON.parse(l) as { id: number; action: string; itemId: string | null });
    const ids = entries.map((e) => e.id);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'in log order');
    assert.equal(new Set(ids).size, ids.length, 'no entry twice');
    // …and caught up after the reconnection, from the first entry after the last one it printed.
    for (let i = 1; i < ids.length; i++) assert.equal(ids[i], ids[i - 1] + 1, `no gap: ${ids.join(',')}`);
    const second = entries.filter((e) => e.itemId === 'second').map((e) => e.action);
    assert.ok(['item_discovered', 'launch_started', 'launch_succeeded'].every((a) => second.includes(a)), second.join(','));
  });

  it('exits 3 with a clear message on a wrong token and 2 on bad arguments', async function () {
    const url = await ws.start('--token', 's3cret');
    const wrong = new Tail([url], { ENGINE_MONITOR_TOKEN: 'nope' });
    assert.equal(await wrong.closed, 3);
    assert.match(wrong.stderr, /HTTP 401.*set ENGINE_MONITOR_TOKEN/);

    for (const args of [[], ['--level', 'loud', url], ['--action', 'launch_exploded', url], ['--from', 'x', url], [`${url}/stats`]]) {
      const r = new Tail(args);
      assert.equal(await r.closed, 2, `${JSON.stringify(args)}: ${r.stderr}`);
      assert.match(r.stderr, /Try 'node tail-events\.mjs --help'/);
    }
  });
});

describe('examples/scripts/run-item.sh (built on the command-line client)', function () {
  this.timeout(60_000);
  let ws: Workspace;
  beforeEach(() => (ws = new Workspace()));
  afterEach(async () => ws.dispose());
  const run = (args: string[], env: NodeJS.ProcessEnv) => runScript(RUN_ITEM, args, { ENGINE_MONITOR_CLI: CLIENT, ...env }, 60_000, ws.folder);

  it('runs a command through the engine, prints its output and exits 0 when it succeeded', async function () {
    const url = await ws.start();
    const r = await run(['greet', '--', NODE, '-e', 'console.log("hello from " + process.argv[1])', 'the engine'], { ENGINE_MONITOR_URL: url });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout, 'hello from the engine\n');
    const item = (await (await fetch(`${url}/items/greet`)).json()) as { state: string; item: { args: string[] } };
    assert.equal(item.state, 'launched');
    assert.deepEqual(item.item.args.slice(-1), ['the engine'], 'arguments with spaces arrive whole');
  });

  it('exits 1 when the attempt failed, and 2 for an id the engine already has', async function () {
    const url = await ws.start();
    const r = await run(['broken', '--', NODE, '-e', 'console.error("no luck"); process.exit(5)'], { ENGINE_MONITOR_URL: url });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.equal(r.stdout, 'no luck\n');
    assert.match(r.stderr, /broken attempt 1 failed, exit code 5/);
    const again = await run(['broken', '--', NODE, '-e', '0'], { ENGINE_MONITOR_URL: url });
    assert.equal(again.code, 2);
    assert.match(again.stderr, /already has an item 'broken'/);
  });

  it('exits 3 naming the URL when the engine is unreachable, 2 for bad arguments', async function () {
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise((r) => server.close(r));
    const r = await run(['x', '--', 'true'], { ENGINE_MONITOR_URL: `http://127.0.0.1:${port}` });
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, new RegExp(`cannot reach the engine at http://127.0.0.1:${port} \\(from ENGINE_MONITOR_URL\\)`));
    const bad = await run(['x', 'true'], {});
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /missing '--' before the command/);
  });
});
