// The command-line client black-box: the built dist/cli.js run as a user
// runs it, against a real headless engine (`serve` on port 0) with real queue files and real
// processes. Every command in text and --json, follow modes, discovery, exit codes, and the
// safety of what it prints (no colour off a terminal or with NO_COLOR, engine strings escaped).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import type { HealthResponse, ItemDetail, LogEntry, StatsResponse, StatusResponse } from '../../src/shared/api';
import { assertBuilt, CLI, serve, type ServeProcess } from './support/cli';
import { request } from './support/http';
import { nodeItem, outputOnFullDisk, TempWorkspace, waitFor } from './support/workspace';

const TOKEN = 'client-token-5e7a';
const HOSTILE_NAME = 'x\x1b[31mRED\nforged line';
const FUTURE = '2099-01-01T00:00:00.000Z';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface Started {
  child: ReturnType<typeof spawn>;
  stdout(): string;
  stderr(): string;
  exited: Promise<Run>;
}

/**
 * Starts the client with exactly the environment given (no inherited ENGINE_MONITOR_URL/TOKEN: a
 * test run from a VS Code terminal has them) in `cwd`, stdout and stderr piped.
 */
function startClient(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd: string }): Started {
  assertBuilt();
  const { ENGINE_MONITOR_URL: _u, ENGINE_MONITOR_TOKEN: _t, NO_COLOR: _n, ...inherited } = process.env;
  const child = spawn(process.execPath, [CLI, ...args], { cwd: opts.cwd, env: { ...inherited, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<Run>((resolve) => child.once('close', (code) => resolve({ code, stdout: out, stderr: err })));
  return { child, stdout: () => out, stderr: () => err, exited };
}

function client(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd: string }): Promise<Run> {
  return startClient(args, opts).exited;
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The client on a real terminal (a pseudo-terminal from util-linux `script`), `columns` wide. */
function clientOnTty(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd: string; columns: number }): Promise<Run> {
  const { ENGINE_MONITOR_URL: _u, ENGINE_MONITOR_TOKEN: _t, NO_COLOR: _n, ...inherited } = process.env;
  const command = `stty cols ${opts.columns} rows 50; ${[process.execPath, CLI, ...args].map(shellQuote).join(' ')}`;
  const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: opts.cwd, env: { ...inherited, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  // A terminal ends lines with CRLF.
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout: out.replace(/\r\n/g, '\n'), stderr: err })));
}

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

const ESC = '\x1b';

describe('command-line client', function () {
  this.timeout(120_000);
  let ws: TempWorkspace;
  let engine: ServeProcess;
  let gates: string;
  const env = () => ({ ENGINE_MONITOR_URL: engine.url, ENGINE_MONITOR_TOKEN: TOKEN });
  const cwd = () => ws.root;

  before(async () => {
    ws = new TempWorkspace('engine-client-');
    gates = path.join(ws.root, 'gates');
    mkdirSync(gates);
    const gated = (code: number) =>
      `const fs=require('fs');console.log('tick');const t=setInterval(()=>{if(fs.existsSync(process.argv[1])){clearInterval(t);console.log('done');process.exit(${code})}},20)`;
    ws.enqueue(
      'items.jsonl',
      [
        nodeItem('ok', "process.stdout.write('hello stdout\\n');process.stderr.write('oops\\n')", { name: 'Says hello' }),
        nodeItem('bad', 'process.exit(3)', { maxAttempts: 1 }),
        nodeItem('evil', '0', { name: HOSTILE_NAME }),
        nodeItem('later', '0', { name: 'Later on', runAt: FUTURE }),
        { ...nodeItem('slow', gated(0), { maxAttempts: 1 }), args: ['-e', gated(0), path.join(gates, 'slow')] },
        { ...nodeItem('slowbad', gated(4), { maxAttempts: 1 }), args: ['-e', gated(4), path.join(gates, 'slowbad')] },
      ]
        .map((i) => JSON.stringify(i))
        .join('\n') + '\n',
    );
    // Default storage (<workspace>/.engine/state): where the client looks for endpoint.json.
    // 500 ms polls: `health` must print "healthy", and /health calls the engine stalled once a poll
    // is 3 intervals late, which a loaded machine managed at 100 ms (300 ms).
    engine = await serve(['--workspace', ws.folder, '--poll-interval', '500'], 20_000, { ENGINE_MONITOR_TOKEN: TOKEN });
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const deadline = Date.now() + 30_000; ; ) {
      const s = (await request(engine.url, '/stats', { headers: auth })).json as StatsResponse;
      if (s.overview.launched === 2 && s.overview.failed === 1 && s.overview.running === 2) break;
      if (Date.now() > deadline) assert.fail(`ok, bad and evil did not finish, or slow and slowbad did not start: ${JSON.stringify(s)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  after(async () => {
    writeFileSync(path.join(gates, 'slow'), '');
    writeFileSync(path.join(gates, 'slowbad'), '');
    engine.child.kill('SIGTERM');
    await engine.exited;
    ws.dispose();
  });

  async function waitForItem(id: string): Promise<void> {
    for (const deadline = Date.now() + 15_000; ; ) {
      if ((await request(engine.url, `/items/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } })).status === 200) return;
      if (Date.now() > deadline) assert.fail(`the engine did not discover ${id}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  describe('each command, text and --json', () => {
    it('status', async () => {
      const text = await client(['status'], { env: env(), cwd: cwd() });
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^engine +launch-engine \d/m);
      assert.match(text.stdout, /^state +running$/m);
      assert.match(text.stdout, new RegExp(`^url +${engine.url}$`, 'm'));
      assert.match(text.stdout, /^items +6 total: 2 launched, 3 pending \(2 running, 0 held\), 1 failed$/m);
      assert.match(text.stdout, /^KIND +LOCATION +ITEMS/m);
      const json = await client(['status', '--json'], { env: env(), cwd: cwd() });
      assert.equal(json.code, 0);
      const body = JSON.parse(json.stdout) as StatusResponse;
      assert.equal(body.engine.name, 'launch-engine');
      assert.equal(body.server.url, engine.url);
      assert.equal(body.stats.total, 6);
    });

    it('stats', async () => {
      const text = await client(['stats'], { env: env(), cwd: cwd() });
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^total +6$/m);
      assert.match(text.stdout, /^failed +1$/m);
      assert.match(text.stdout, /^ {2}running +2$/m);
      const json = await client(['stats', '--json'], { env: env(), cwd: cwd() });
      const body = JSON.parse(json.stdout) as StatsResponse;
      const api = (await request(engine.url, '/stats', { headers: { authorization: `Bearer ${TOKEN}` } })).json as StatsResponse;
      assert.deepEqual({ ...body.overview, lastPollAt: null }, { ...api.overview, lastPollAt: null });
    });

    it('health', async () => {
      const text = await client(['health'], { env: env(), cwd: cwd() });
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^status +healthy\ndatabase +ok\nengine +running\n/);
      const json = await client(['health', '--json'], { env: env(), cwd: cwd() });
      assert.equal(json.code, 0);
      assert.equal((JSON.parse(json.stdout) as HealthResponse).status, 'healthy');
    });

    it('logs, with filters', async () => {
      const text = await client(['logs', '--item', 'bad'], { env: env(), cwd: cwd() });
      assert.equal(text.code, 0, text.stderr);
      const lines = text.stdout.trimEnd().split('\n');
      assert.match(lines[0], /^TIME +LEVEL +ACTION +ITEM +MESSAGE$/);
      // Newest first: item_failed, launch_failed, launch_started, item_discovered.
      assert.deepEqual(
        lines.slice(1).map((l) => l.split(/ +/)[2]),
        ['item_failed', 'launch_failed', 'launch_started', 'item_discovered'],
      );
      const json = await client(['logs', '--json', '--action', 'launch_failed,item_failed', '--order', 'asc', '--limit', '5'], { env: env(), cwd: cwd() });
      assert.equal(json.code, 0, json.stderr);
      const entries = JSON.parse(json.stdout) as LogEntry[];
      assert.deepEqual(
        entries.map((e) => [e.action, e.itemId]),
        [
          ['launch_failed', 'bad'],
          ['item_failed', 'bad'],
        ],
      );
      const q = await client(['logs', '--json', '--q', 'exit code', '--level', 'warn'], { env: env(), cwd: cwd() });
      assert.deepEqual((JSON.parse(q.stdout) as LogEntry[]).map((e) => e.action).sort(), ['item_failed', 'launch_failed']);
      const none = await client(['logs', '--since', '2099-01-01T00:00:00Z'], { env: env(), cwd: cwd() });
      assert.equal(none.code, 0);
      assert.equal(none.stdout, '');
      assert.match(none.stderr, /no log entries match/);
    });

    it('items, with --state and --q', async () => {
      const text = await client(['items'], { env: env(), cwd: cwd() });
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^ID +NAME +STATE +ATTEMPTS +UPDATED +LAST ERROR$/m);
      assert.match(text.stdout, /^bad +bad +failed +1\/1 +\S+ +exited with code 3$/m);
      assert.match(text.stdout, /^slow +slow +running +1\/1 /m);
      const failed = await client(['items', '--state', 'failed'], { env: env(), cwd: cwd() });
      assert.deepEqual(failed.stdout.trimEnd().split('\n').slice(1).map((l) => l.split(' ')[0]), ['bad']);
      const json = await client(['items', '--json', '--state', 'running,launched', '--q', 'says'], { env: env(), cwd: cwd() });
      assert.equal(json.code, 0, json.stderr);
      const body = JSON.parse(json.stdout) as { items: { id: string }[]; total: number };
      assert.deepEqual(body.items.map((i) => i.id), ['ok']);
      assert.equal(body.total, 1);
    });

    it('output: the bytes of the latest attempt, one stream, or JSON', async () => {
      const stdout = await client(['output', 'ok', '--stream', 'stdout'], { env: env(), cwd: cwd() });
      assert.equal(stdout.code, 0, stdout.stderr);
      assert.equal(stdout.stdout, 'hello stdout\n');
      const stderr = await client(['output', 'ok', '--stream', 'stderr', '--attempt', '1'], { env: env(), cwd: cwd() });
      assert.equal(stderr.stdout, 'oops\n');
      const both = await client(['output', 'ok'], { env: env(), cwd: cwd() });
      assert.deepEqual(both.stdout.split('\n').sort(), ['', 'hello stdout', 'oops']);
      const json = await client(['output', 'ok', '--json', '--stream', 'stdout'], { env: env(), cwd: cwd() });
      const body = JSON.parse(json.stdout) as { itemId: string; attempt: number; output: string; detail: { outcome: string } };
      assert.deepEqual([body.itemId, body.attempt, body.output, body.detail.outcome], ['ok', 1, 'hello stdout\n', 'succeeded']);
      // Without --follow the exit code does not depend on the attempt's outcome.
      const failedAttempt = await client(['output', 'bad'], { env: env(), cwd: cwd() });
      assert.equal(failedAttempt.code, 0);
    });

    it('cancel, retry, hold and release, text and --json', async () => {
      const hold = await client(['hold', 'later'], { env: env(), cwd: cwd() });
      assert.equal(hold.code, 0, hold.stderr);
      assert.equal(hold.stdout, 'held later (Later on): now held\n');
      const release = await client(['release', 'later', '--json'], { env: env(), cwd: cwd() });
      assert.equal(release.code, 0, release.stderr);
      assert.equal((JSON.parse(release.stdout) as ItemDetail).state, 'scheduled');
      const cancel = await client(['cancel', 'later'], { env: env(), cwd: cwd() });
      assert.equal(cancel.stdout, 'cancelled later (Later on): now failed\n');
      const retry = await client(['retry', 'later', '--json'], { env: env(), cwd: cwd() });
      assert.equal(retry.code, 0, retry.stderr);
      assert.equal((JSON.parse(retry.stdout) as ItemDetail).state, 'scheduled');
      const detail = (await request(engine.url, '/items/later', { headers: { authorization: `Bearer ${TOKEN}` } })).json as ItemDetail;
      assert.equal(detail.state, 'scheduled', 'the engine agrees');
    });
  });

  describe('follow modes', () => {
    it('output --follow streams until the attempt ends and exits 0 when it succeeded', async () => {
      const run = startClient(['output', 'slow', '--follow'], { env: env(), cwd: cwd() });
      await waitFor('the output so far', () => run.stdout() === 'tick\n');
      writeFileSync(path.join(gates, 'slow'), '');
      const { code, stdout, stderr } = await run.exited;
      assert.equal(code, 0, stderr);
      assert.equal(stdout, 'tick\ndone\n');
    });

    it('output --follow exits 1 when the attempt failed, saying how', async () => {
      const run = startClient(['output', 'slowbad', '--follow'], { env: env(), cwd: cwd() });
      await waitFor('the output so far', () => run.stdout() === 'tick\n');
      writeFileSync(path.join(gates, 'slowbad'), '');
      const { code, stdout, stderr } = await run.exited;
      assert.equal(code, 1);
      assert.equal(stdout, 'tick\ndone\n');
      assert.match(stderr, /slowbad attempt 1 failed, exit code 4/);
    });

    it('output --follow waits for the first attempt of an item that has not run yet', async () => {
      ws.enqueue('soon.json', nodeItem('soon', "console.log('ran at last')", { runAt: FUTURE }));
      await waitForItem('soon');
      const run = startClient(['output', 'soon', '--follow'], { env: env(), cwd: cwd() });
      await waitFor('the waiting note', () => run.stderr().includes('waiting for the first attempt of soon (state scheduled)'));
      // A new definition of a pending item replaces it: now it runs at once.
      ws.enqueue('soon.json', nodeItem('soon', "console.log('ran at last')"));
      const { code, stdout, stderr } = await run.exited;
      assert.equal(code, 0, stderr);
      assert.equal(stdout, 'ran at last\n');
    });

    it('logs --follow prints recent matching entries, then new ones, filtered, until Ctrl+C', async () => {
      const run = startClient(['logs', '--follow', '--limit', '1', '--action', 'item_discovered,launch_succeeded'], { env: env(), cwd: cwd() });
      await waitFor('the history line', () => run.stdout().split('\n').length >= 2);
      ws.enqueue('late.json', nodeItem('late', '0'));
      await waitFor('late to succeed', () => /launch_succeeded +late /.test(run.stdout()));
      run.child.kill('SIGINT');
      const { code, stdout } = await run.exited;
      assert.equal(code, 0);
      const lines = stdout.trimEnd().split('\n');
      // One entry of history (the newest match before the start), then late's, in order; its
      // launch_started came between them on the stream and was filtered out.
      assert.equal(lines.length, 3, stdout);
      assert.match(lines[0], /launch_succeeded/);
      assert.match(lines[1], /^\S+ info +item_discovered +late /);
      assert.match(lines[2], /^\S+ info +launch_succeeded +late /);
    });

    it('logs --follow --json writes one entry per line', async () => {
      const run = startClient(['logs', '--follow', '--json', '--item', 'later', '--limit', '1'], { env: env(), cwd: cwd() });
      await waitFor('the history line', () => run.stdout().endsWith('\n'));
      await client(['hold', 'later'], { env: env(), cwd: cwd() });
      await waitFor('item_held', () => run.stdout().includes('item_held'));
      run.child.kill('SIGINT');
      const { code, stdout } = await run.exited;
      assert.equal(code, 0);
      const entries = stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as LogEntry);
      assert.equal(entries.length, 2);
      assert.ok(entries.every((e) => e.itemId === 'later'));
      assert.equal(entries[1].action, 'item_held');
      await client(['release', 'later'], { env: env(), cwd: cwd() });
    });
  });

  describe('finding the engine', () => {
    it('from endpoint.json in a parent folder', async () => {
      const deep = path.join(ws.folder, 'src', 'deeper');
      mkdirSync(deep, { recursive: true });
      const run = await client(['health', '--json'], { cwd: deep, env: { ENGINE_MONITOR_TOKEN: TOKEN } });
      assert.equal(run.code, 0, run.stderr);
      assert.equal((JSON.parse(run.stdout) as HealthResponse).status, 'healthy');
    });

    it('--url before ENGINE_MONITOR_URL before endpoint.json', async () => {
      const dead = `http://127.0.0.1:${await closedPort()}`;
      const byFlag = await client(['stats', '--url', engine.url], { cwd: ws.folder, env: { ENGINE_MONITOR_URL: dead, ENGINE_MONITOR_TOKEN: TOKEN } });
      assert.equal(byFlag.code, 0, byFlag.stderr);
      const byEnv = await client(['stats'], { cwd: ws.folder, env: { ENGINE_MONITOR_URL: dead } });
      assert.equal(byEnv.code, 3);
      assert.equal(byEnv.stderr, `engine-monitor: cannot reach the engine at ${dead} (from ENGINE_MONITOR_URL): ECONNREFUSED\n`);
    });

    it('unreachable: exit 3 naming the URL and where it was found', async () => {
      const port = await closedPort();
      const byFlag = await client(['status', '--url', `http://127.0.0.1:${port}`], { cwd: ws.root });
      assert.equal(byFlag.code, 3);
      assert.match(byFlag.stderr, new RegExp(`cannot reach the engine at http://127.0.0.1:${port} \\(given by --url\\): ECONNREFUSED`));
      // A stale endpoint.json (an engine that crashed) is named, with what to do.
      const stale = path.join(ws.root, 'stale');
      mkdirSync(path.join(stale, '.engine', 'state'), { recursive: true });
      const file = path.join(stale, '.engine', 'state', 'endpoint.json');
      writeFileSync(file, JSON.stringify({ url: `http://127.0.0.1:${port}`, pid: 1, startedAt: FUTURE }));
      const byFile = await client(['items'], { cwd: stale });
      assert.equal(byFile.code, 3);
      assert.match(byFile.stderr, new RegExp(`found in ${file.replace(/[.]/g, '\\.')}\\): ECONNREFUSED; that engine may have stopped`));
      const nowhere = await client(['items'], { cwd: path.parse(ws.root).root });
      assert.equal(nowhere.code, 3);
      assert.match(nowhere.stderr, /no engine to ask: give --url <url>, set ENGINE_MONITOR_URL/);
    });
  });

  describe('errors from the engine: exit 1 with its message', () => {
    it('an unknown item', async () => {
      for (const args of [['output', 'no such'], ['hold', 'no such'], ['output', 'ok', '--attempt', '7']]) {
        const run = await client(args, { env: env(), cwd: cwd() });
        assert.equal(run.code, 1, args.join(' '));
        assert.equal(run.stdout, '');
        assert.match(run.stderr, args[1] === 'ok' ? /^engine-monitor: item "ok" has no attempt 7; its attempts: 1\n$/ : /^engine-monitor: no item with id "no such"/i);
      }
    });

    it('a missing or wrong token (401) and a conflict (409)', async () => {
      const noToken = await client(['items'], { env: { ENGINE_MONITOR_URL: engine.url }, cwd: cwd() });
      assert.equal(noToken.code, 1);
      assert.match(noToken.stderr, /give the engine's token with --token or ENGINE_MONITOR_TOKEN/);
      const wrong = await client(['items', '--token', 'nope'], { env: env(), cwd: cwd() });
      assert.equal(wrong.code, 1, '--token wins over ENGINE_MONITOR_TOKEN');
      const conflict = await client(['release', 'ok'], { env: env(), cwd: cwd() });
      assert.equal(conflict.code, 1);
      assert.match(conflict.stderr, /^engine-monitor: \S.*\n$/);
    });

    it('health exits 1 when the engine is unhealthy (its storage fails: a full disk)', async function () {
      if (!existsSync('/dev/full')) {
        if (process.env.CI) assert.fail('this test needs /dev/full (Linux)');
        this.skip();
      }
      const other = new TempWorkspace('engine-client-full-');
      const full = await serve(['--workspace', other.folder, '--storage', other.storage]);
      try {
        // Attempt 1's output file is /dev/full: its first write fails with ENOSPC and /health reports
        // the storage error (as in output.test.ts), until an attempt's output is written again. Made
        // once the engine runs: at its start it removes output files of attempts it never had.
        outputOnFullDisk(path.join(other.storage, 'output'), 1);
        other.enqueue('a.json', nodeItem('full', 'console.log("some output")'));
        await waitFor('the engine to report the storage error', async () => (await request(full.url, '/health')).status === 503);
        const health = await client(['health'], { env: { ENGINE_MONITOR_URL: full.url }, cwd: other.root });
        assert.equal(health.code, 1, `${health.stdout}${health.stderr}`);
        assert.match(health.stdout, /^status +unhealthy\ndatabase +error\nengine +running\n/);
        const json = await client(['health', '--json'], { env: { ENGINE_MONITOR_URL: full.url }, cwd: other.root });
        assert.equal(json.code, 1);
        assert.equal((JSON.parse(json.stdout) as HealthResponse).status, 'unhealthy');
      } finally {
        full.child.kill('SIGTERM');
        await full.exited;
        other.dispose();
      }
    });

    it('control against an engine without a token: 403 with a hint; a stopped engine is degraded, exit 0', async () => {
      const other = new TempWorkspace('engine-client-ro-');
      const ro = await serve(['--workspace', other.folder, '--storage', other.storage, '--stopped']);
      try {
        const health = await client(['health'], { env: { ENGINE_MONITOR_URL: ro.url }, cwd: other.root });
        assert.equal(health.code, 0, 'only unhealthy is exit 1');
        assert.match(health.stdout, /^status +degraded\ndatabase +ok\nengine +stopped\n/);
        const run = await client(['hold', 'x'], { env: { ENGINE_MONITOR_URL: ro.url }, cwd: other.root });
        assert.equal(run.code, 1);
        assert.match(run.stderr, /needs a token.*\(with a token on the engine, give the same one here: --token or ENGINE_MONITOR_TOKEN\)\n$/);
      } finally {
        ro.child.kill('SIGTERM');
        await ro.exited;
        other.dispose();
      }
    });
  });

  describe('usage errors: exit 2 naming the problem', () => {
    for (const [args, message] of [
      [['frobnicate'], /unknown command "frobnicate": use serve or one of status, stats/],
      [[], /missing command/],
      [['output'], /output needs an item id: engine-monitor output <id>/],
      [['cancel', 'a', 'b'], /cancel takes one item id, got 2: a b/],
      [['stats', 'extra'], /stats takes no arguments, got "extra"/],
      [['logs', '--frob'], /logs: Unknown option '--frob'/],
      [['logs', '--level', 'loud'], /--level: "loud" is not one of debug, info, warn, error/],
      [['logs', '--action', 'launch_started,exploded'], /--action: unknown action "exploded"/],
      [['logs', '--since', 'yesterday'], /--since needs an ISO 8601 date-time/],
      [['logs', '--limit', '5000'], /--limit must be a whole number from 1 to 1000, got "5000"/],
      [['logs', '--follow', '--order', 'asc'], /--order cannot be combined with --follow/],
      [['items', '--state', 'sleeping'], /--state: "sleeping" is not one of waiting, scheduled/],
      [['output', 'x', '--attempt', '0'], /--attempt must be a whole number from 1/],
      [['output', 'x', '--stream', 'both'], /--stream: "both" is not one of stdout, stderr/],
      [['status', '--url', 'localhost:7411/x'], /--url: "localhost:7411\/x" is not an engine base URL/],
    ] as const) {
      it(`${args.join(' ') || '(nothing)'}`, async () => {
        const run = await client([...args], { cwd: ws.root });
        assert.equal(run.code, 2);
        assert.match(run.stderr, message);
        assert.match(run.stderr, /Usage: engine-monitor serve/);
        assert.match(run.stderr, /engine-monitor status\|stats\|health\|logs\|items\|output\|cancel\|retry\|hold\|release/);
        assert.equal(run.stdout, '');
      });
    }

    it('--help lists the commands and the exit codes, exit 0', async () => {
      for (const args of [['--help'], ['logs', '--help']]) {
        const run = await client(args, { cwd: ws.root });
        assert.equal(run.code, 0);
        assert.match(run.stdout, /Exit codes:\n {2}0 {2}ok\n {2}1 {2}the engine answered with an error/);
        assert.match(run.stdout, /\n {2}3 {2}the engine cannot be reached/);
      }
    });
  });

  describe('what reaches the terminal', () => {
    it('into a pipe: no escape codes, nothing cut, a hostile name escaped', async () => {
      for (const args of [['items'], ['logs', '--item', 'evil'], ['status']]) {
        const run = await client(args, { env: env(), cwd: cwd() });
        assert.equal(run.code, 0);
        assert.ok(!run.stdout.includes(ESC), `${args.join(' ')} printed an escape code: ${JSON.stringify(run.stdout)}`);
        assert.ok(!run.stdout.includes('…'));
      }
      const items = await client(['items'], { env: env(), cwd: cwd() });
      assert.match(items.stdout, /^evil +x\\u001b\[31mRED\\nforged line +launched /m);
      assert.ok(!/^forged line/m.test(items.stdout), 'no forged row');
    });

    it('on a terminal: colours, a table as wide as the terminal, a hostile name escaped', async function () {
      const run = await clientOnTty(['items'], { env: env(), cwd: cwd(), columns: 60 });
      assert.equal(run.code, 0, run.stdout);
      assert.ok(run.stdout.includes(`${ESC}[1mID`), `a bold header: ${JSON.stringify(run.stdout)}`);
      assert.ok(run.stdout.includes(`${ESC}[31mfailed${ESC}[39m`), 'failed in red');
      const plain = run.stdout.replace(/\x1b\[[0-9;]*m/g, '');
      for (const line of plain.trimEnd().split('\n')) assert.ok([...line].length <= 60, `wider than 60: ${JSON.stringify(line)}`);
      assert.match(plain, /…/);
      assert.ok(!run.stdout.includes(`${ESC}[31mRED`), 'the name cannot colour the terminal');
      assert.match(plain, /^evil +x\\u001b/m);
    });

    it('on a terminal with NO_COLOR (any value, even empty): no escape codes', async () => {
      for (const value of ['1', '']) {
        const run = await clientOnTty(['items'], { env: { ...env(), NO_COLOR: value }, cwd: cwd(), columns: 200 });
        assert.equal(run.code, 0, run.stdout);
        assert.ok(!run.stdout.includes(ESC), JSON.stringify(run.stdout));
        assert.match(run.stdout, /^ID +NAME/m);
      }
    });
  });
});
