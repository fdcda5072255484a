// Hooks, black-box: the built CLI (`serve`) with --on-item-failed,
// --on-health-change and --notify-url, real queue files, real hook processes run by /bin/sh, and a
// real HTTP receiver on loopback (port 0). The hooks write what they read on stdin to files the
// tests parse.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { version } from '../../package.json';
import type { HealthChangedHookEvent, HealthResponse, ItemDetail, ItemFailedHookEvent, LogEntry, StatsResponse } from '../../src/shared/api';
import { MAX_CONCURRENT_HOOKS, MAX_QUEUED_HOOKS } from '../../src/host/hooks';
import { allLogs, getJson, runCli, serve, type ServeProcess } from './support/cli';
import { request } from './support/http';
import { outputOnFullDisk, processAlive, TempWorkspace, waitFor } from './support/workspace';

const TOKEN = 'hooks-token-5e1a';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;


/** A queue line for an item that runs `script` with /bin/sh, one attempt only. */
function shItem(id: string, script: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ id, command: '/bin/sh', args: ['-c', script], maxAttempts: 1, ...extra });
}

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real HTTP receiver on 127.0.0.1 (port 0) answering each POST with the next status of `statuses` (the last one repeats). */
class Receiver {
  readonly received: Received[] = [];
  private server!: Server;
  url = '';
  constructor(private readonly statuses: number[]) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        const status = this.statuses[Math.min(this.received.length - 1, this.statuses.length - 1)];
        res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'try again');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/alert`;
    return this;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('Hooks: --on-item-failed, --on-health-change, --notify-url', function () {
  this.timeout(120_000);
  let ws: TempWorkspace;
  /** Where the hooks write what they received. */
  let out: string;
  const running: ServeProcess[] = [];
  const receivers: Receiver[] = [];
  /** Hook processes a test started that may outlive it (the sleeping ones), ended after it. */
  const hookPids: number[] = [];

  beforeEach(() => {
    ws = new TempWorkspace('engine-hooks-');
    out = path.join(ws.root, 'hook-out');
    mkdirSync(out);
  });
  afterEach(async () => {
    for (const run of running.splice(0)) {
      if (run.child.exitCode === null && run.child.signalCode === null) {
        run.child.kill('SIGTERM');
        await run.exited;
      }
    }
    for (const pid of hookPids.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // ended with its engine, as it should
      }
    }
    for (const r of receivers.splice(0)) await r.close();
    ws.dispose();
  });

  async function start(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
    // 1 s polls: the engine is "stalled" (unhealthy) once a poll is 3 intervals late, and every
    // health change is an event the hooks and --notify-url get. At 100 ms a loaded machine (CI at
    // load 12) let polls slip past 300 ms, so receivers counted health_changed POSTs beside the
    // item_failed ones. None of these tests is about stall detection.
    const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '1000', ...args], 20_000, env);
    running.push(run);
    return run;
  }

  async function receiver(statuses: number[]): Promise<Receiver> {
    const r = await new Receiver(statuses).start();
    receivers.push(r);
    return r;
  }

  /**
   * A hook command line that saves its stdin and environment (event, URL, and whether it got the
   * API token) to a new file in `out`, named after `prefix`. The environment file, whose presence
   * says the record is complete, is renamed into place: the shell's `>` creates it empty before
   * printf writes, and a test once read it in between (an empty environment, in a full CI run).
   */
  const recordingHook = (prefix: string) =>
    `f=$(mktemp '${out}/${prefix}.XXXXXX') && cat > "$f" && printf '%s %s %s' "$ENGINE_HOOK_EVENT" "$ENGINE_MONITOR_URL" "\${ENGINE_MONITOR_TOKEN-unset}" > "$f.partial" && mv "$f.partial" "$f.env"`;

  /** What the recording hooks saved, parsed, oldest file first is not promised: sorted by the caller. */
  const recorded = <T>(prefix: string): { event: T; text: string; env: string }[] =>
    readdirSync(out)
      .filter((f) => f.startsWith(`${prefix}.`) && !f.endsWith('.env') && !f.endsWith('.partial') && existsSync(path.join(out, `${f}.env`)))
      .map((f) => {
        const text = readFileSync(path.join(out, f), 'utf8');
        return { event: JSON.parse(text) as T, text, env: readFileSync(path.join(out, `${f}.env`), 'utf8') };
      });

  const hookFailures = async (run: ServeProcess): Promise<LogEntry[]> => (await allLogs(run.url)).filter((e) => e.action === 'hook_failed');

  it('an item that fails for good runs --on-item-failed with the event on stdin, and --notify-url gets the same JSON', async () => {
    const r = await receiver([200]);
    const run = await start(['--on-item-failed', recordingHook('item'), '--notify-url', r.url]);
    ws.enqueue('a.jsonl', `${shItem('doomed', 'echo broken >&2; exit 7', { name: 'Doomed Export' })}\n${shItem('fine', 'exit 0')}\n`);

    const [saved] = await waitFor('the item_failed hook to run', () => {
      const got = recorded<ItemFailedHookEvent>('item');
      return got.length > 0 && got;
    });
    const { event, text, env } = saved;
    assert.equal(event.event, 'item_failed');
    assert.equal(env, `item_failed ${run.url} unset`);
    assert.deepEqual(event.engine, { url: run.url, version });
    assert.match(event.timestamp, ISO);
    // `item` is what GET /items/{id} answers.
    const detail = await getJson<ItemDetail>(`${run.url}/items/doomed`);
    assert.deepEqual(event.item, detail);
    assert.equal(event.item.state, 'failed');
    assert.equal(event.item.item.name, 'Doomed Export');
    assert.equal(event.item.attempts.length, 1);
    assert.equal(event.item.attempts[0].exitCode, 7);
    // `entry` is the item_failed log entry, as /logs lists it.
    const [logged] = (await allLogs(run.url)).filter((e) => e.action === 'item_failed');
    assert.deepEqual(event.entry, logged);
    assert.equal(event.entry.itemId, 'doomed');

    // The same bytes, POSTed as JSON; the item that succeeded sent nothing.
    await waitFor('the POST', () => r.received.length > 0);
    assert.equal(r.received.length, 1);
    assert.equal(r.received[0].body, text);
    assert.equal(r.received[0].headers['content-type'], 'application/json');
    assert.equal(recorded('item').length, 1);
    assert.deepEqual(await hookFailures(run), []);
  });

  it('an item failed by its dependency (no attempt) runs --on-item-failed too, with its dependency_failed entry', async () => {
    await start(['--on-item-failed', recordingHook('item')]);
    ws.enqueue('a.jsonl', `${shItem('first', 'exit 4')}\n${shItem('second', 'exit 0', { dependsOn: ['first'] })}\n`);
    const got = await waitFor('both items\' hooks', () => {
      const saved = recorded<ItemFailedHookEvent>('item');
      return saved.length === 2 && saved;
    });
    const byItem = new Map(got.map((g) => [g.event.item.item.id, g.event]));
    assert.equal(byItem.get('first')?.entry.action, 'item_failed');
    const second = byItem.get('second');
    assert.equal(second?.event, 'item_failed');
    assert.equal(second?.entry.action, 'dependency_failed');
    assert.equal(second?.item.state, 'failed');
    assert.equal(second?.item.error, 'dependency failed: first');
    assert.equal(second?.item.attempts.length, 0);
  });

  it('--on-health-change gets health_changed, from and to as /health answers them, when the engine is started and stopped', async () => {
    const r = await receiver([200]);
    const run = await start(['--stopped', '--on-health-change', recordingHook('health'), '--notify-url', r.url], { ENGINE_MONITOR_TOKEN: TOKEN });
    const health = async () => (await request(run.url, '/health', { headers: AUTH })).json as HealthResponse;
    // Started stopped: degraded from the start, which is no change.
    assert.equal((await health()).status, 'degraded');
    assert.equal((await request(run.url, '/engine/start', { method: 'POST', headers: AUTH })).status, 202);
    const [first] = await waitFor('the first health_changed hook', () => {
      const got = recorded<HealthChangedHookEvent>('health');
      return got.length === 1 && got;
    });
    // The API's token is not the hook's to read.
    assert.equal(first.env, `health_changed ${run.url} unset`);
    const e = first.event;
    assert.equal(e.event, 'health_changed');
    assert.deepEqual({ status: e.from.status, checks: e.from.checks }, { status: 'degraded', checks: { database: 'ok', engine: 'stopped' } });
    assert.deepEqual({ status: e.to.status, checks: e.to.checks }, { status: 'healthy', checks: { database: 'ok', engine: 'running' } });
    const now = await health();
    assert.deepEqual(Object.keys(e.to).sort(), Object.keys(now).sort());
    assert.deepEqual({ ...e.to, timestamp: now.timestamp }, now);
    assert.deepEqual(e.engine, { url: run.url, version });
    assert.equal(e.timestamp, e.to.timestamp);
    assert.ok(e.from.timestamp <= e.to.timestamp);

    assert.equal((await request(run.url, '/engine/stop', { method: 'POST', headers: AUTH })).status, 202);
    const both = await waitFor('the second health_changed hook', () => {
      const got = recorded<HealthChangedHookEvent>('health');
      return got.length === 2 && got;
    });
    const second = both.map((b) => b.event).find((b) => b.to.checks.engine === 'stopped');
    assert.ok(second, JSON.stringify(both));
    assert.equal(second.from.status, 'healthy');
    assert.equal(second.to.status, 'degraded');
    await waitFor('both POSTs', () => r.received.length === 2);
    assert.deepEqual(r.received.map((x) => x.body).sort(), both.map((b) => b.text).sort());
  });

  it('--on-health-change gets healthy → unhealthy when storage breaks (a full disk), and back when it works again', async function () {
    if (!existsSync('/dev/full')) {
      if (process.env.CI) assert.fail('this test needs /dev/full (Linux)');
      this.skip();
    }
    const run = await start(['--on-health-change', recordingHook('health')]);
    // Attempt 1's output file is /dev/full: every write fails with ENOSPC (as in output.test.ts).
    outputOnFullDisk(path.join(ws.storage, 'output'), 1);
    ws.enqueue('a.jsonl', `${JSON.stringify({ id: 'full', command: '/bin/sh', args: ['-c', 'echo some output'] })}\n`);
    const [broke] = await waitFor('health_changed to unhealthy', () => {
      const got = recorded<HealthChangedHookEvent>('health');
      return got.length === 1 && got;
    });
    assert.equal(broke.env, `health_changed ${run.url} unset`);
    assert.equal(broke.event.from.status, 'healthy');
    assert.deepEqual({ status: broke.event.to.status, checks: broke.event.to.checks }, { status: 'unhealthy', checks: { database: 'error', engine: 'running' } });
    // The next attempt writes its output: storage is healthy again, and the hook hears of it.
    ws.enqueue('b.jsonl', `${JSON.stringify({ id: 'fine', command: '/bin/true' })}\n`);
    const both = await waitFor('health_changed back to healthy', () => {
      const got = recorded<HealthChangedHookEvent>('health');
      return got.length === 2 && got;
    });
    const back = both.map((b) => b.event).find((e) => e.to.status === 'healthy');
    assert.ok(back, JSON.stringify(both));
    assert.equal(back.from.checks.database, 'error');
  });

  it('--notify-url retries a non-2xx answer: 500, 500, 200 is three tries and no failure; always 500 is three tries and one hook_failed', async () => {
    const flaky = await receiver([500, 500, 200]);
    const down = await receiver([500]);
    const run = await start(['--notify-url', flaky.url, '--notify-url', down.url]);
    ws.enqueue('a.jsonl', `${shItem('doomed', 'exit 1')}\n`);
    const [failure] = await waitFor('the hook_failed entry', async () => {
      const got = await hookFailures(run);
      return got.length > 0 && got;
    }, 30_000);
    assert.equal(down.received.length, 3);
    // Its tries are jittered independently of the other's.
    await waitFor('the third try at the flaky receiver', () => flaky.received.length === 3);
    // Every try carries the same event.
    assert.equal(new Set(flaky.received.map((x) => x.body)).size, 1);
    assert.deepEqual(down.received.map((x) => x.body), flaky.received.map((x) => x.body));
    assert.equal(JSON.parse(flaky.received[0].body).event, 'item_failed');

    const downOrigin = new URL(down.url).origin;
    assert.equal(failure.level, 'error');
    assert.equal(failure.itemId, 'doomed');
    assert.match(failure.message, new RegExp(`^notify-url ${downOrigin.replace(/[.]/g, '\\.')} failed 3 times \\(item_failed event\\): HTTP 500$`));
    assert.deepEqual(failure.details, { event: 'item_failed', hook: 'notify-url', url: downOrigin, attempts: 3, status: 500, errors: ['HTTP 500', 'HTTP 500', 'HTTP 500'] });
    // Only the one that never succeeded is reported.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await hookFailures(run)).length, 1);
  });

  it('a hook that exits non-zero logs hook_failed with its exit code and stderr, and a hook_failed entry starts no hook', async () => {
    const calls = path.join(out, 'calls');
    const run = await start(['--on-item-failed', `echo called >> '${calls}'; echo "cannot reach the pager" >&2; exit 3`]);
    ws.enqueue('a.jsonl', `${shItem('doomed', 'exit 1')}\n`);
    const [failure] = await waitFor('the hook_failed entry', async () => {
      const got = await hookFailures(run);
      return got.length > 0 && got;
    });
    assert.equal(failure.itemId, 'doomed');
    assert.match(failure.message, /^on-item-failed hook ".*" exited with code 3 \(item_failed event\): cannot reach the pager$/);
    assert.deepEqual(
      { ...failure.details, command: undefined },
      { event: 'item_failed', hook: 'on-item-failed', command: undefined, exitCode: 3, signal: null, timedOut: false, error: null, stderr: 'cannot reach the pager\n' },
    );
    // Another poll or two: the hook ran once, and its failure did not run it again.
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(readFileSync(calls, 'utf8'), 'called\n');
    assert.equal((await hookFailures(run)).length, 1);
  });

  it('a hook that hangs is killed at --hook-timeout, with everything it started, and logged hook_failed', async () => {
    const pidFile = path.join(out, 'pids');
    // The shell starts a child of its own, so the kill must reach the process group, not one pid.
    const run = await start(['--hook-timeout', '1000', '--on-item-failed', `sleep 300 & echo $! >> '${pidFile}'; echo $$ >> '${pidFile}'; wait`]);
    ws.enqueue('a.jsonl', `${shItem('doomed', 'exit 1')}\n`);
    const pids = await waitFor('the hook to start', () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim().split('\n').length === 2 && readFileSync(pidFile, 'utf8').trim().split('\n').map(Number));
    hookPids.push(...pids);
    assert.ok(pids.every(processAlive));
    const [failure] = await waitFor('the hook_failed entry', async () => {
      const got = await hookFailures(run);
      return got.length > 0 && got;
    });
    assert.match(failure.message, /^on-item-failed hook ".*" did not finish within 1000 ms and was killed \(item_failed event\)$/);
    assert.equal(failure.details?.timedOut, true);
    assert.equal(failure.details?.signal, 'SIGTERM');
    await waitFor('the hook and its child to be gone', () => !pids.some(processAlive), 5_000);
  });

  it('hanging hooks do not delay launches: 20 items launch as fast with every hook slot taken as without', async () => {
    const pidFile = path.join(out, 'pids');
    const run = await start(['--concurrency', '4', '--hook-timeout', '600000', '--on-item-failed', `echo $$ >> '${pidFile}'; exec sleep 300`]);
    const launched = async () => (await getJson<StatsResponse>(`${run.url}/stats`)).overview.launched;
    /** Time from enqueueing 20 items of /bin/true to all of them launched. */
    const batch = async (name: string, before: number): Promise<number> => {
      const lines = Array.from({ length: 20 }, (_, i) => JSON.stringify({ id: `${name}-${i}`, command: '/bin/true' })).join('\n');
      const t0 = performance.now();
      ws.enqueue(`${name}.jsonl`, `${lines}\n`);
      await waitFor(`batch ${name} to launch`, async () => (await launched()) === before + 20, 60_000);
      return performance.now() - t0;
    };
    // A first batch warms the engine up (its first launches are slower), measured batches follow.
    await batch('warm', 0);
    const quiet = await batch('quiet', 20);

    // More failures than hook slots: every slot holds a sleeping hook and some wait behind them.
    ws.enqueue('doomed.jsonl', `${Array.from({ length: MAX_CONCURRENT_HOOKS + 2 }, (_, i) => shItem(`doomed-${i}`, 'exit 1')).join('\n')}\n`);
    const pids = await waitFor('every hook slot to be taken', () => {
      const lines = existsSync(pidFile) ? readFileSync(pidFile, 'utf8').trim().split('\n').map(Number) : [];
      return lines.length === MAX_CONCURRENT_HOOKS && lines;
    });
    hookPids.push(...pids);
    const busy = await batch('busy', 40);
    // The hooks were still hanging all along.
    assert.ok(pids.every(processAlive), 'a hook ended during the measurement');
    // A loose bound on the ratio: a poll interval's alignment alone can double a short batch.
    assert.ok(busy < quiet * 4 + 300, `20 launches took ${Math.round(busy)} ms with hanging hooks, ${Math.round(quiet)} ms without`);
    assert.equal(readFileSync(pidFile, 'utf8').trim().split('\n').length, MAX_CONCURRENT_HOOKS, 'more hooks ran at once than the limit');
  });

  it('when more deliveries wait than the queue holds, the oldest are dropped and one hook_failed says how many', async () => {
    const pidFile = path.join(out, 'pids');
    const run = await start(['--concurrency', '16', '--hook-timeout', '600000', '--on-item-failed', `echo $$ >> '${pidFile}'; exec sleep 300`]);
    const n = MAX_CONCURRENT_HOOKS + MAX_QUEUED_HOOKS + 7;
    ws.enqueue('doomed.jsonl', `${Array.from({ length: n }, (_, i) => shItem(`doomed-${i}`, 'exit 1')).join('\n')}\n`);
    await waitFor('every item to fail', async () => (await getJson<StatsResponse>(`${run.url}/stats`)).overview.failed === n, 60_000);
    const [dropped] = await waitFor('the drop report', async () => {
      const got = await hookFailures(run);
      return got.length > 0 && got;
    });
    hookPids.push(...readFileSync(pidFile, 'utf8').trim().split('\n').map(Number));
    assert.equal(dropped.message, `7 hook deliveries were dropped: more than ${MAX_QUEUED_HOOKS} were waiting behind ${MAX_CONCURRENT_HOOKS} running ones (slow or hanging hooks?)`);
    assert.equal(dropped.details?.dropped, 7);
    await new Promise((r) => setTimeout(r, 1_200));
    assert.equal((await hookFailures(run)).length, 1);
  });

  it('the engine stops its hooks when it stops: no hook process outlives it', async () => {
    const pidFile = path.join(out, 'pids');
    const run = await start(['--hook-timeout', '600000', '--on-item-failed', `echo $$ >> '${pidFile}'; exec sleep 300`]);
    ws.enqueue('a.jsonl', `${shItem('doomed', 'exit 1')}\n`);
    const [pid] = await waitFor('the hook to start', () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim().split('\n').map(Number));
    hookPids.push(pid);
    run.child.kill('SIGTERM');
    assert.deepEqual(await run.exited, { code: 0, signal: null });
    await waitFor('the hook to be gone', () => !processAlive(pid), 5_000);
  });

  describe('bad flag values exit 2 with a message naming the problem', () => {
    const cases: [string[], RegExp][] = [
      [['--notify-url', 'hooks.example.test/alert'], /--notify-url must be an absolute http:\/\/ or https:\/\/ URL, got "hooks\.example\.test\/alert"/],
      [['--notify-url', 'ftp://hooks.example.test/alert'], /--notify-url must be an http:\/\/ or https:\/\/ URL, got "ftp:\/\/hooks\.example\.test\/alert" \(scheme ftp:\)/],
      [['--notify-url', 'http://bot:s3cret-hook@hooks.example.test/alert?key=abc'], /--notify-url must not hold a user name or password \(the one for http:\/\/hooks\.example\.test\); fetch\(\) refuses such URLs\. Put the secret in the URL's path or query instead/],
      [['--on-item-failed', '  '], /--on-item-failed must be a command line, got an empty one; leave the flag out for no hook/],
      [['--on-health-change', ''], /--on-health-change must be a command line, got an empty one/],
      [['--hook-timeout', '50'], /--hook-timeout must be a whole number from 100 to 600000, got "50"/],
    ];
    for (const [flags, message] of cases) {
      it(flags.join(' '), async () => {
        const run = runCli(['serve', '--workspace', ws.folder, '--storage', ws.storage, '--port', '0', ...flags]);
        const { code } = await run.exited;
        assert.equal(code, 2);
        assert.match(run.stderr(), message);
        assert.equal(run.stdout(), '');
        assert.ok(!run.stderr().includes('s3cret-hook'), 'a secret in a refused URL is not repeated');
      });
    }
  });
});
