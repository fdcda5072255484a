// GET /metrics, black-box: the built CLI (`serve`) with real queue files and
// real attempts that succeed and fail; the exposition checked against /stats, by Debian's
// `promtool check metrics`, and scraped by a real Prometheus server that then answers PromQL.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { StatsOverview } from '../../src/shared/api';
import { serve, type ServeProcess } from './support/cli';
import { OpenApiChecker, request } from './support/http';
import { nodeItem, outputOnFullDisk, TempWorkspace } from './support/workspace';

const PROMTOOL = '/usr/bin/promtool';
const PROMETHEUS = '/usr/bin/prometheus';
const TOKEN = 'metrics-token-5e2a';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
/** Far enough ahead that the item stays pending (and not running) for the whole test. */
const NEXT_YEAR = new Date(Date.now() + 365 * 86_400_000).toISOString();

/** One sample of the exposition: `name{labels}` → value. */
type Samples = Map<string, number>;

/** Parses the text exposition format (0.0.4) into samples; throws on a line it does not understand. */
function parseExposition(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${JSON.stringify(line)}`);
    // Prometheus reads NaN and Inf in any case (Go's ParseFloat); prom-client writes `Nan` for an empty delay histogram.
    const word = m[3].toLowerCase();
    const value = word === '+inf' || word === 'inf' ? Infinity : word === '-inf' ? -Infinity : Number(m[3]);
    assert.ok(!Number.isNaN(value) || word === 'nan', `value of ${line}`);
    samples.set(m[1] + (m[2] ?? ''), value);
  }
  return samples;
}

function sample(samples: Samples, key: string): number {
  const value = samples.get(key);
  if (value === undefined) throw new Error(`no sample ${key} in the exposition`);
  return value;
}

/** What /metrics says of the figures /stats reports. */
function statsOf(samples: Samples): Omit<StatsOverview, 'total' | 'lastPollAt'> & { lastPollAt: number } {
  return {
    launched: sample(samples, 'engine_monitor_items{outcome="launched"}'),
    pending: sample(samples, 'engine_monitor_items{outcome="pending"}'),
    failed: sample(samples, 'engine_monitor_items{outcome="failed"}'),
    totalLaunches: sample(samples, 'engine_monitor_launches_total'),
    totalFailed: sample(samples, 'engine_monitor_launch_failures_total'),
    held: sample(samples, 'engine_monitor_held'),
    running: sample(samples, 'engine_monitor_running'),
    lastPollAt: sample(samples, 'engine_monitor_last_poll_timestamp_seconds'),
  };
}

function expected(overview: StatsOverview): ReturnType<typeof statsOf> {
  const { total: _total, lastPollAt, ...rest } = overview;
  return { ...rest, lastPollAt: lastPollAt === null ? 0 : Date.parse(lastPollAt) / 1000 };
}

function healthOf(samples: Samples): Record<string, number> {
  return Object.fromEntries(['healthy', 'degraded', 'unhealthy'].map((s) => [s, sample(samples, `engine_monitor_health_status{status="${s}"}`)]));
}

/** Until `probe` returns something truthy; it may be async (an HTTP read). */
async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const value = await probe().catch((err: unknown) => ((last = err), undefined));
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A binary these tests need: in CI a missing one fails the test (.ci/run installs it); elsewhere it skips. */
function requireBinary(ctx: Mocha.Context, file: string): void {
  if (existsSync(file)) return;
  if (process.env.CI) throw new Error(`${file} is missing: install Debian's "prometheus" package (.ci/run does)`);
  ctx.skip();
}

/** Runs `promtool check metrics` with the exposition on stdin. */
function promtoolCheck(body: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PROMTOOL, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
    child.stdin.end(body);
  });
}

/** A port nothing listens on now: bound with port 0, then released for the child to take. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

async function stats(url: string, headers: Record<string, string> = {}): Promise<StatsOverview> {
  const res = await request(url, '/stats', { headers });
  assert.equal(res.status, 200);
  return (res.json as { overview: StatsOverview }).overview;
}

async function metrics(url: string, headers: Record<string, string> = {}): Promise<{ text: string; samples: Samples }> {
  const res = await request(url, '/metrics', { headers });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['content-type'], CONTENT_TYPE);
  return { text: res.text, samples: parseExposition(res.text) };
}

async function stop(run: ServeProcess): Promise<void> {
  if (run.child.exitCode !== null || run.child.signalCode !== null) return;
  run.child.kill('SIGTERM');
  await run.exited;
}

describe('/metrics: Prometheus exposition of a real engine', function () {
  this.timeout(120_000);
  let ws: TempWorkspace;
  let open: ServeProcess;
  const runs: ServeProcess[] = [];

  async function start(workspace: TempWorkspace, token?: string): Promise<ServeProcess> {
    // --grace 0: the attempt left running at the end does not hold the engine's stop. 1 s polls:
    // the health gauge must read healthy, and a poll 3 intervals late is "stalled", which 200 ms
    // intervals allowed a loaded machine to reach.
    const run = await serve(['--workspace', workspace.folder, '--storage', workspace.storage, '--poll-interval', '1000', '--grace', '0'], 20_000, token ? { ENGINE_MONITOR_TOKEN: token } : {});
    runs.push(run);
    return run;
  }

  before(async () => {
    ws = new TempWorkspace('engine-metrics-');
    open = await start(ws);
    // Enqueued once the server runs, so every attempt finishes while it listens (the histogram
    // counts those): two successes, an item failing both its attempts, one failing once then
    // succeeding, one due next year (pending, not running), and one running until the end.
    const flakyMarker = path.join(ws.root, 'flaky-failed-once');
    ws.enqueue('mixed.json', [
      nodeItem('ok-1', '0'),
      nodeItem('ok-2', '0'),
      nodeItem('bad', 'process.exit(3)', { maxAttempts: 2 }),
      nodeItem('flaky', '', {
        args: ['-e', "const fs = require('fs'); if (!fs.existsSync(process.argv[1])) { fs.writeFileSync(process.argv[1], ''); process.exit(1); }", flakyMarker],
        maxAttempts: 3,
      }),
      nodeItem('later', '0', { runAt: NEXT_YEAR }),
      nodeItem('sleeper', 'setTimeout(() => {}, 600000)'),
    ]);
    await until('the items to reach their outcomes', async () => {
      const s = await stats(open.url);
      return s.launched === 3 && s.failed === 1 && s.pending === 2 && s.running === 1 && s.totalLaunches === 7 && s;
    });
  });
  after(async () => {
    for (const run of runs.splice(0)) await stop(run);
    ws.dispose();
  });

  it('reports what /stats reports, the finished attempts in the histogram, and the health', async () => {
    // Nothing changes any more (the sleeper runs on) but the time of the last poll: read until the
    // three reads fall between two polls, so that they describe the same state.
    const { before, samples, after } = await until('three reads between two polls', async () => {
      const first = await stats(open.url);
      const read = await metrics(open.url);
      const last = await stats(open.url);
      return first.lastPollAt === last.lastPollAt && { before: first, samples: read.samples, after: last };
    });
    assert.deepEqual(after, before);
    assert.deepEqual(statsOf(samples), expected(before));
    assert.deepEqual(
      { launched: before.launched, failed: before.failed, pending: before.pending, running: before.running, totalLaunches: before.totalLaunches, totalFailed: before.totalFailed },
      { launched: 3, failed: 1, pending: 2, running: 1, totalLaunches: 7, totalFailed: 3 },
    );

    // Every attempt but the running one has finished: 2 + 2 (bad) + 2 (flaky) = 6.
    const finished = before.totalLaunches - before.running;
    assert.equal(sample(samples, 'engine_monitor_attempt_duration_seconds_count'), finished);
    assert.equal(sample(samples, 'engine_monitor_attempt_duration_seconds_bucket{le="+Inf"}'), finished);
    assert.ok(sample(samples, 'engine_monitor_attempt_duration_seconds_sum') > 0);
    const buckets = [...samples].filter(([k]) => k.startsWith('engine_monitor_attempt_duration_seconds_bucket'));
    assert.equal(buckets[0][0], 'engine_monitor_attempt_duration_seconds_bucket{le="0.01"}');
    assert.equal(buckets[buckets.length - 2][0], 'engine_monitor_attempt_duration_seconds_bucket{le="3600"}');
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i][1] >= buckets[i - 1][1], `${buckets[i][0]} is cumulative`);
    // A Node.js start takes well under a minute, and certainly finishes within the hour.
    assert.equal(sample(samples, 'engine_monitor_attempt_duration_seconds_bucket{le="60"}'), finished);

    assert.deepEqual(healthOf(samples), { healthy: 1, degraded: 0, unhealthy: 0 });
    assert.equal(((await request(open.url, '/health')).json as { status: string }).status, 'healthy');

    // The process's own metrics are there, without the gauges misnamed `_total`.
    assert.ok(samples.has('process_cpu_user_seconds_total'));
    assert.ok(samples.has('nodejs_heap_size_used_bytes'));
    for (const key of samples.keys()) assert.doesNotMatch(key, /^nodejs_active_\w+_total/);
  });

  it('passes promtool check metrics', async function () {
    requireBinary(this, PROMTOOL);
    const { text } = await metrics(open.url);
    const result = await promtoolCheck(text);
    assert.deepEqual(result, { code: 0, output: '' });
    // The check does find problems: a gauge named like a counter is refused.
    const misnamed = await promtoolCheck('# HELP x_total a gauge\n# TYPE x_total gauge\nx_total 1\n');
    assert.equal(misnamed.code, 3, misnamed.output);
    assert.match(misnamed.output, /_total/);
  });

  it('is protected like every endpoint: HEAD, 400 on a parameter, Host and Origin, no CORS', async () => {
    const api = new OpenApiChecker((await request(open.url, '/openapi.json')).json as Record<string, any>);
    assert.ok(api.response('/metrics', 200).content[CONTENT_TYPE]);

    const head = await request(open.url, '/metrics', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers['content-type'], CONTENT_TYPE);
    assert.ok(Number(head.headers['content-length']) > 0);

    const param = await request(open.url, '/metrics?name=engine_monitor_held');
    assert.equal(param.status, 400);
    api.assertBody('/metrics', 400, param.json);
    assert.match((param.json as any).error.message, /name/);

    const host = await request(open.url, '/metrics', { headers: { host: 'attacker.example:80' } });
    assert.equal(host.status, 403);
    assert.equal((host.json as any).error.code, 'forbidden_host');
    const origin = await request(open.url, '/metrics', { headers: { origin: 'http://attacker.example' } });
    assert.equal(origin.status, 403);
    assert.equal((origin.json as any).error.code, 'forbidden_origin');

    const ok = await request(open.url, '/metrics', { headers: { origin: open.url } });
    assert.equal(ok.status, 200);
    for (const name of Object.keys(ok.headers)) assert.doesNotMatch(name, /^access-control-/i);
    assert.equal(ok.headers['cache-control'], 'no-store');

    const post = await request(open.url, '/metrics', { method: 'PUT' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
  });

  it('reports unhealthy when storage fails (a full disk), and healthy again once it works', async function () {
    if (!existsSync('/dev/full')) {
      if (process.env.CI) assert.fail('this test needs /dev/full (Linux)');
      this.skip();
    }
    const wsFull = new TempWorkspace('engine-metrics-full-');
    let run: ServeProcess | undefined;
    try {
      run = await start(wsFull);
      const url = run.url;
      // Attempt 1's output file is /dev/full: its first write fails with ENOSPC, and the engine
      // reports the storage error until an attempt's output is written again (output.test.ts).
      outputOnFullDisk(path.join(wsFull.storage, 'output'), 1);
      wsFull.enqueue('full.json', nodeItem('full', 'console.log("some output")'));
      await until('/health to say unhealthy', async () => (await request(url, '/health')).status === 503);
      assert.deepEqual(healthOf((await metrics(url)).samples), { healthy: 0, degraded: 0, unhealthy: 1 });
      wsFull.enqueue('fine.json', nodeItem('fine', 'console.log("ok")'));
      await until('/health to say healthy', async () => (await request(url, '/health')).status === 200);
      assert.deepEqual(healthOf((await metrics(url)).samples), { healthy: 1, degraded: 0, unhealthy: 0 });
    } finally {
      if (run) {
        runs.splice(runs.indexOf(run), 1);
        await stop(run);
      }
      wsFull.dispose();
    }
  });

  it('keeps the _total counters across a restart; the histogram starts again from zero', async () => {
    const ws2 = new TempWorkspace('engine-metrics-restart-');
    try {
      let run = await start(ws2);
      ws2.enqueue('two.json', [nodeItem('ok', '0'), nodeItem('bad', 'process.exit(2)', { maxAttempts: 1 })]);
      const first = await until('both items to finish', async () => {
        const s = await stats(run.url);
        return s.launched === 1 && s.failed === 1 && s;
      });
      const beforeRestart = (await metrics(run.url)).samples;
      assert.equal(sample(beforeRestart, 'engine_monitor_launches_total'), 2);
      assert.equal(sample(beforeRestart, 'engine_monitor_attempt_duration_seconds_count'), 2);
      await stop(run);

      run = await start(ws2);
      // A poll between the two reads moves lastPollAt: read until both fall between two polls.
      const restarted = run;
      const { samples, after } = await until('a scrape and a /stats read between two polls', async () => {
        const before = await stats(restarted.url);
        const read = await metrics(restarted.url);
        const last = await stats(restarted.url);
        return before.lastPollAt === last.lastPollAt && { samples: read.samples, after: last };
      });
      assert.deepEqual(statsOf(samples), expected(after));
      assert.equal(sample(samples, 'engine_monitor_launches_total'), first.totalLaunches);
      assert.equal(sample(samples, 'engine_monitor_launch_failures_total'), first.totalFailed);
      assert.equal(sample(samples, 'engine_monitor_attempt_duration_seconds_count'), 0);
    } finally {
      ws2.dispose();
    }
  });

  describe('with a token, scraped by a real Prometheus server', () => {
    let wsToken: TempWorkspace;
    let guarded: ServeProcess;
    let promDir: string | undefined;
    let prometheus: ReturnType<typeof spawn> | undefined;
    let prometheusExited: Promise<unknown> | undefined;

    before(async () => {
      wsToken = new TempWorkspace('engine-metrics-token-');
      guarded = await start(wsToken, TOKEN);
      wsToken.enqueue('token.json', [nodeItem('ok', '0'), nodeItem('later', '0', { runAt: NEXT_YEAR }), nodeItem('sleeper', 'setTimeout(() => {}, 600000)')]);
      await until('one item to launch and one to run', async () => {
        const s = await stats(guarded.url, AUTH);
        return s.launched === 1 && s.running === 1;
      });
      // A running attempt cancelled: it finishes then and there (failed), and counts in the histogram.
      assert.equal((await request(guarded.url, '/items/sleeper/cancel', { method: 'POST', headers: AUTH })).status, 202);
      // A held item and a stopped engine: held 1, health degraded.
      assert.equal((await request(guarded.url, '/items/later/hold', { method: 'POST', headers: AUTH })).status, 202);
      assert.equal((await request(guarded.url, '/engine/stop', { method: 'POST', headers: AUTH })).status, 202);
    });
    after(async () => {
      if (prometheus?.pid !== undefined && prometheus.exitCode === null && prometheus.signalCode === null) {
        process.kill(prometheus.pid, 'SIGTERM');
        await prometheusExited;
      }
      if (promDir) rmSync(promDir, { recursive: true, force: true });
      wsToken.dispose();
    });

    it('answers 401 without the token, and the held item and degraded health with it', async () => {
      const denied = await request(guarded.url, '/metrics');
      assert.equal(denied.status, 401);
      assert.equal((denied.json as any).error.code, 'unauthorized');
      assert.match(String(denied.headers['www-authenticate']), /^Bearer/);
      const wrong = await request(guarded.url, '/metrics', { headers: { authorization: 'Bearer not-the-token' } });
      assert.equal(wrong.status, 401);

      const { samples } = await metrics(guarded.url, AUTH);
      const overview = await stats(guarded.url, AUTH);
      assert.deepEqual(statsOf(samples), expected(overview));
      assert.deepEqual(
        { held: overview.held, failed: overview.failed, running: overview.running, totalLaunches: overview.totalLaunches, totalFailed: overview.totalFailed },
        { held: 1, failed: 1, running: 0, totalLaunches: 2, totalFailed: 1 },
      );
      // The success and the cancelled attempt.
      assert.equal(sample(samples, 'engine_monitor_attempt_duration_seconds_count'), 2);
      assert.deepEqual(healthOf(samples), { healthy: 0, degraded: 1, unhealthy: 0 });
    });

    it('is scraped by Prometheus (with and without the token) and answers PromQL', async function () {
      requireBinary(this, PROMETHEUS);
      promDir = mkdtempSync(path.join(os.tmpdir(), 'engine-metrics-prometheus-'));
      const target = (url: string) => new URL(url).host;
      // Prometheus reads YAML, and JSON is YAML.
      const config = {
        global: { scrape_interval: '1s', scrape_timeout: '1s' },
        scrape_configs: [
          { job_name: 'open', static_configs: [{ targets: [target(open.url)] }] },
          { job_name: 'token', authorization: { type: 'Bearer', credentials: TOKEN }, static_configs: [{ targets: [target(guarded.url)] }] },
          { job_name: 'no-token', static_configs: [{ targets: [target(guarded.url)] }] },
        ],
      };
      const configFile = path.join(promDir, 'prometheus.yml');
      writeFileSync(configFile, JSON.stringify(config, null, 2));
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      let log = '';
      prometheus = spawn(
        PROMETHEUS,
        [`--config.file=${configFile}`, `--storage.tsdb.path=${path.join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      prometheus.stdout!.on('data', (c: Buffer) => (log += c.toString()));
      prometheus.stderr!.on('data', (c: Buffer) => (log += c.toString()));
      prometheusExited = new Promise((resolve) => prometheus!.once('exit', resolve));
      void prometheusExited.then(() => (log += `\n[prometheus exited: ${prometheus!.exitCode ?? prometheus!.signalCode}]`));

      const query = async (promql: string): Promise<Map<string, number>> => {
        const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(promql)}`);
        const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
        assert.equal(body.status, 'success');
        return new Map(body.data.result.map((r) => [r.metric.job, Number(r.value[1])]));
      };

      const openTotal = (await stats(open.url)).totalLaunches;
      const guardedTotal = (await stats(guarded.url, AUTH)).totalLaunches;
      try {
        await until(
          `Prometheus to scrape engine_monitor_launches_total (${openTotal} and ${guardedTotal})`,
          async () => {
            const values = await query('engine_monitor_launches_total');
            return values.get('open') === openTotal && values.get('token') === guardedTotal;
          },
          60_000,
        );
        assert.deepEqual(await query('engine_monitor_held'), new Map([['open', 0], ['token', 1]]));
        assert.deepEqual(await query('engine_monitor_health_status{status="degraded"}'), new Map([['open', 0], ['token', 1]]));
        assert.deepEqual(await query('engine_monitor_attempt_duration_seconds_count'), new Map([['open', 6], ['token', 2]]));

        // The job without the token is refused by the engine, and Prometheus says so.
        const noToken = await until('Prometheus to report the scrape without a token', async () => {
          const res = await fetch(`${base}/api/v1/targets`);
          const body = (await res.json()) as { data: { activeTargets: { labels: { job: string }; health: string; lastError: string }[] } };
          const t = body.data.activeTargets.find((a) => a.labels.job === 'no-token');
          return t && t.health !== 'unknown' && t;
        });
        assert.equal(noToken.health, 'down');
        assert.match(noToken.lastError, /401/);
        const up = await query('up');
        assert.deepEqual(up, new Map([['open', 1], ['token', 1], ['no-token', 0]]));
      } catch (err) {
        throw new Error(`${(err as Error).message}\nPrometheus log:\n${log.slice(-4000)}`);
      }
    });
  });
});
