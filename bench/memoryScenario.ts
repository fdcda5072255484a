// The engine's memory the way an outside check measures it (`BENCH_ONLY=memscenario`): the engine
// started as its `bin` starts it (dist/cli.js run as a program, so its #! line's Node options
// apply), 100,000 items ingested through queue files (and launched, unless BENCH_MEMSCEN_STOPPED=1),
// then each read endpoint under load in turn for BENCH_MEMSCEN_SECONDS, with common words in `q`.
// The host's RSS is read from /proc every 50 ms by this process (not the engine's own report), and
// the kernel's high-water mark (VmHWM) at the end catches whatever fell between two samples.
//
// Unlike scenario 1c (bench/apiMemory.ts), nothing is seeded: every item arrives through the scanner, so
// whatever ingestion and launching leave behind in the host is in the figure.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { mb, median, type Row } from './lib';
import { runChild } from './children';
import { SNAPSHOT_FILE } from '../src/core/store/files';
import { ENGINE_HOST_NODE_OPTIONS } from '../src/shared/hostProtocol';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (opts: Record<string, unknown>) => Promise<{
  requests: { total: number };
  latency: { p50: number; p99: number; max: number };
  non2xx: number;
  errors: number;
}>;

export interface MemScenarioContext {
  root: string;
  tmp: string;
  items: number;
  /** Seconds of load on each path. */
  seconds: number;
  runs: number;
  connections: number;
  /** Ingest only (every item scheduled far ahead): no launches, so no launch log entries. */
  scheduled: boolean;
  log(message: string): void;
  add(row: Row): void;
  fmt(n: number): string;
  raw: Record<string, unknown>;
}

/** Not launched: a --stopped engine does not scan either, so the items wait for a date far ahead. */
const SCHEDULED_AT = '2099-01-01T00:00:00.000Z';
/** Items per queue file (.jsonl). */
const PER_FILE = 1_000;

/** VmRSS / VmHWM of a process, in bytes (NaN once it is gone). */
function procStatus(pid: number): { rss: number; hwm: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (f: string) => Number(new RegExp(`^${f}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

/** RSS sampled every 50 ms; `mark()` starts a new window and returns the last one's peak. */
class RssSampler {
  private timer: NodeJS.Timeout;
  private windowPeak = 0;
  peak = 0;
  last = 0;
  constructor(private pid: number) {
    this.timer = setInterval(() => this.sample(), 50);
  }
  sample(): void {
    const { rss } = procStatus(this.pid);
    if (!Number.isFinite(rss)) return;
    this.last = rss;
    if (rss > this.windowPeak) this.windowPeak = rss;
    if (rss > this.peak) this.peak = rss;
  }
  mark(): number {
    this.sample();
    const p = this.windowPeak;
    this.windowPeak = this.last;
    return p;
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

/** Writes the queue files the way a producer should: a temporary name, then a rename. */
function writeQueue(workspace: string, items: number, scheduled: boolean): void {
  const queue = path.join(workspace, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  for (let f = 0; f * PER_FILE < items; f++) {
    const lines: string[] = [];
    for (let i = f * PER_FILE; i < Math.min(items, (f + 1) * PER_FILE); i++) {
      const n = String(i).padStart(6, '0');
      lines.push(JSON.stringify({ id: `job-${n}`, name: `nightly report ${n}`, command: 'true', args: ['--report', `r${n}`], ...(scheduled ? { runAt: SCHEDULED_AT } : {}) }));
    }
    const file = path.join(queue, `batch-${String(f).padStart(4, '0')}.jsonl`);
    writeFileSync(`${file}.tmp`, `${lines.join('\n')}\n`);
    renameSync(`${file}.tmp`, file);
  }
}

interface Engine {
  child: ChildProcess;
  url: string;
}

/** Starts dist/cli.js as a program (its #! line), as `engine-monitor serve` does. */
function startEngine(cli: string, workspace: string): Promise<Engine> {
  return new Promise((resolve, reject) => {
    const args = ['serve', '--workspace', workspace, '--port', '0', '--quiet'];
    // BENCH_ENGINE_NODE_OPTIONS: more Node options after the bin's own (a later flag wins); then
    // node runs the file with both, as its #! line would with the bin's alone.
    const extra = process.env.BENCH_ENGINE_NODE_OPTIONS?.split(' ').filter(Boolean) ?? [];
    const child =
      extra.length > 0
        ? spawn(process.execPath, [...ENGINE_HOST_NODE_OPTIONS, ...extra, cli, ...args], { cwd: workspace, stdio: ['ignore', 'pipe', 'inherit'] })
        : spawn(cli, args, { cwd: workspace, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.on('error', reject);
    child.once('exit', (code) => reject(new Error(`engine exited with ${code} before it listened: ${out}`)));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        child.removeAllListeners('exit');
        child.stdout.removeAllListeners('data');
        child.stdout.resume();
        resolve({ child, url: m[1] });
      }
    });
  });
}

function stopEngine(e: Engine): Promise<void> {
  return new Promise((resolve) => {
    if (e.child.exitCode !== null) return resolve();
    e.child.once('exit', () => resolve());
    e.child.kill('SIGTERM');
  });
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  return (await res.json()) as T;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * BENCH_MEMSCEN_HEAPSNAPSHOT=1 (with BENCH_ENGINE_NODE_OPTIONS=--heapsnapshot-signal=SIGUSR2): a heap
 * snapshot of the host once everything is measured, into bench-results/profiles/.
 */
async function heapSnapshot(ctx: MemScenarioContext, engine: Engine, workspace: string, run: number): Promise<void> {
  const before = new Set(readdirSync(workspace));
  engine.child.kill('SIGUSR2');
  for (let waited = 0; waited < 120_000; waited += 500) {
    await sleep(500);
    const file = readdirSync(workspace).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
    if (!file) continue;
    // Written as it is taken: done once it has stopped growing.
    const size = statSync(path.join(workspace, file)).size;
    await sleep(2_000);
    if (size === 0 || statSync(path.join(workspace, file)).size !== size) continue;
    const out = path.join(ctx.root, 'bench-results', 'profiles');
    mkdirSync(out, { recursive: true });
    const target = path.join(out, `memscenario-${run}-${Date.now()}.heapsnapshot`);
    copyFileSync(path.join(workspace, file), target);
    ctx.log(`    heap snapshot: ${target}`);
    return;
  }
  ctx.log('    no heap snapshot appeared (is BENCH_ENGINE_NODE_OPTIONS=--heapsnapshot-signal=SIGUSR2 set?)');
}

interface PathResult {
  path: string;
  p50: number;
  p99: number;
  requests: number;
  peakRss: number;
}

interface RunResult {
  ingestMs: number;
  ingestPeak: number;
  restAfterIngest: number;
  paths: PathResult[];
  restAfterLoad: number;
  peak: number;
  hwm: number;
  /** Peak RSS of a bare Node process holding the same database in sql.js. */
  floor: number;
}

/** The paths under load, in order: the independent check's list. */
function loadPaths(): { label: string; path: string }[] {
  return [
    { label: '/stats', path: '/stats' },
    { label: '/health', path: '/health' },
    { label: '/status', path: '/status' },
    { label: '/logs?action=', path: '/logs?action=launch_succeeded' },
    { label: '/logs?item=', path: '/logs?item=job-004242' },
    { label: '/logs?q= common word', path: '/logs?q=nightly' },
    { label: '/logs?q= two common words', path: '/logs?q=nightly+report' },
    { label: '/items?q= common word', path: '/items?q=nightly' },
    { label: '/items?q= two common words', path: '/items?q=report+nightly' },
  ];
}

async function oneRun(ctx: MemScenarioContext, cli: string, run: number): Promise<RunResult> {
  const dir = path.join(ctx.tmp, `memscenario-${run}`);
  rmSync(dir, { recursive: true, force: true });
  const workspace = path.join(dir, 'ws');
  mkdirSync(workspace, { recursive: true });
  const engine = await startEngine(cli, workspace);
  const pid = engine.child.pid!;
  const rss = new RssSampler(pid);
  try {
    const t0 = performance.now();
    writeQueue(workspace, ctx.items, ctx.scheduled);
    // Ingested (and, unless scheduled, every item launched): the counters say so.
    for (;;) {
      const { overview } = await getJson<{ overview: { total: number; launched: number; failed: number } }>(`${engine.url}/stats`);
      if (overview.total >= ctx.items && (ctx.scheduled || overview.launched + overview.failed >= ctx.items)) break;
      if (performance.now() - t0 > 30 * 60_000) throw new Error(`not done after 30 min: ${JSON.stringify(overview)}`);
      await sleep(500);
    }
    const ingestMs = performance.now() - t0;
    const ingestPeak = rss.mark();
    // The engine's periodic snapshot comes once the writes stop; let it pass before the load.
    await sleep(5_000);
    rss.mark();
    const restAfterIngest = rss.last;
    ctx.log(`  run ${run + 1}: ${ctx.items} items ${ctx.scheduled ? 'ingested' : 'ingested and launched'} in ${ctx.fmt(ingestMs / 1000)} s; RSS ${mb(restAfterIngest)} MB, peak while ingesting ${mb(ingestPeak)} MB (load ${os.loadavg()[0].toFixed(1)})`);
    const paths: PathResult[] = [];
    for (const p of loadPaths()) {
      const r = await autocannon({ url: engine.url + p.path, connections: ctx.connections, duration: ctx.seconds, pipelining: 1 });
      if (r.non2xx || r.errors) throw new Error(`${p.path}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
      const peakRss = rss.mark();
      paths.push({ path: p.label, p50: r.latency.p50, p99: r.latency.p99, requests: r.requests.total, peakRss });
      ctx.log(`    ${p.path.padEnd(34)} p99 ${r.latency.p99} ms (p50 ${r.latency.p50}), ${r.requests.total} requests; peak RSS ${mb(peakRss)} MB, now ${mb(rss.last)} MB`);
    }
    await sleep(2_000);
    rss.sample();
    const restAfterLoad = rss.last;
    const { hwm } = procStatus(pid);
    ctx.log(`    peak RSS ${mb(rss.peak)} MB (sampled every 50 ms), VmHWM ${mb(hwm)} MB, at rest after the load ${mb(restAfterLoad)} MB (load ${os.loadavg()[0].toFixed(1)})`);
    if (process.env.BENCH_MEMSCEN_HEAPSNAPSHOT === '1') await heapSnapshot(ctx, engine, workspace, run);
    // The floor, measured outside the engine: a bare Node process that only holds this run's
    // database (the snapshot the engine writes as it stops) in sql.js (bench/child/sqljsFloor.ts).
    rss.stop();
    await stopEngine(engine);
    const floor = await runChild<{ counts: Record<string, number>; maxRss: number }>('sqljsFloor', { snapshot: path.join(workspace, '.engine', 'state', SNAPSHOT_FILE) });
    ctx.log(`    floor (bare Node + sql.js, this run's database: ${Object.entries(floor.counts).map(([t, n]) => `${n} ${t}`).join(', ')}): peak ${mb(floor.maxRss)} MB`);
    return { ingestMs, ingestPeak, restAfterIngest, paths, restAfterLoad, peak: rss.peak, hwm, floor: floor.maxRss };
  } finally {
    rss.stop();
    await stopEngine(engine);
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function scenarioMemoryIndependent(ctx: MemScenarioContext): Promise<void> {
  // BENCH_MEMSCEN_CLI: another build's cli.js (a copy of dist/ from before a change), for a before/after in one run.
  const cli = process.env.BENCH_MEMSCEN_CLI || path.join(ctx.root, 'dist', 'cli.js');
  if (!existsSync(cli)) throw new Error('memscenario: run "npm run build" first (dist/cli.js)');
  ctx.log(`\n== memory, the independent scenario: ${ctx.items} items through queue files${ctx.scheduled ? ' (scheduled, not launched)' : ''}, then ${ctx.seconds} s × ${loadPaths().length} paths at ${ctx.connections} connections; ${ctx.runs} run(s); load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  const runs: RunResult[] = [];
  for (let r = 0; r < ctx.runs; r++) runs.push(await oneRun(ctx, cli, r));
  ctx.raw.memScenario = { items: ctx.items, seconds: ctx.seconds, scheduled: ctx.scheduled, runs };
  const scale = `${(ctx.items / 1000).toFixed(0)}k items through queue files${ctx.scheduled ? ', not launched' : ''}`;
  const peak = median(runs.map((r) => Math.max(r.peak, r.hwm)));
  ctx.add({
    scenario: 'memscenario',
    measure: `engine host peak RSS, bin's Node options, ${scale}, every read endpoint ${ctx.seconds} s`,
    value: mb(peak),
    unit: 'MB',
    target: '≤ 200 MB',
    met: mb(peak) <= 200,
    baseline: mb(median(runs.map((r) => r.floor))),
    ratio: peak / median(runs.map((r) => r.floor)),
    note: `max of /proc VmRSS every 50 ms and VmHWM; per run ${runs.map((r) => mb(Math.max(r.peak, r.hwm))).join(' / ')} MB; baseline: the floor, a bare Node process holding the same database in sql.js (${runs.map((r) => mb(r.floor)).join(' / ')} MB)`,
  });
  ctx.add({ scenario: 'memscenario', measure: `engine host RSS at rest after ingest, ${scale}`, value: mb(median(runs.map((r) => r.restAfterIngest))), unit: 'MB' });
  ctx.add({ scenario: 'memscenario', measure: `engine host RSS at rest after the load, ${scale}`, value: mb(median(runs.map((r) => r.restAfterLoad))), unit: 'MB' });
  const targets: Record<string, number> = { '/status': 5, '/logs?q= common word': 50, '/logs?q= two common words': 50, '/items?q= common word': 20, '/items?q= two common words': 20 };
  const health = median(runs.map((r) => r.paths.find((p) => p.path === '/health')!.p99));
  for (const p of loadPaths()) {
    const results = runs.map((r) => r.paths.find((x) => x.path === p.label)!);
    const v = median(results.map((x) => x.p99));
    const target = targets[p.label];
    ctx.add({
      scenario: 'memscenario',
      measure: `${p.label} p99, ${ctx.connections} conn, ${scale}`,
      value: v,
      unit: 'ms',
      // /health is the same run's baseline; under 1 ms it rounds to 0 and no ratio is given.
      ...(p.label !== '/health' && health > 0 ? { baseline: health, ratio: v / health } : {}),
      ...(target !== undefined ? { target: `≤ ${target} ms`, met: v <= target } : {}),
      note: `${p.path}; p50 ${median(results.map((x) => x.p50))} ms; peak RSS during it ${mb(median(results.map((x) => x.peakRss)))} MB`,
    });
  }
}
