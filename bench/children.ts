// The processes under measurement: the children's build (esbuild, into bench-results/.build), one-shot
// children that print a JSON result, the long-lived server child, the seeded databases (cached
// between runs) and the autocannon load the runner puts on a server.
import { fork, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { BUILD, CACHE, CFG, PROFILES, ROOT } from './config';
import { log } from './results';
import type { LoopDelay, MemoryBreakdown } from './lib';
import type { SeedResult } from './seed';
import { ENGINE_HOST_NODE_OPTIONS } from '../src/shared/hostProtocol';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (opts: Record<string, unknown>) => Promise<AutocannonResult>;

export interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; max: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

export async function build(): Promise<void> {
  mkdirSync(BUILD, { recursive: true });
  await esbuild.build({
    entryPoints: {
      ...Object.fromEntries(['seed', 'server', 'launch', 'startup', 'output', 'outputReads', 'spawner', 'sqljsFloor', 'fastStart'].map((n) => [n, path.join(__dirname, 'child', `${n}.ts`)])),
      // The store starts its snapshot worker from beside the running bundle, as from dist/.
      'checkpoint-worker': path.join(__dirname, '..', 'src', 'core', 'store', 'checkpointWorker.ts'),
      // The engine forks its launch helper from beside the running bundle, as from dist/.
      'launch-helper': path.join(__dirname, '..', 'src', 'host', 'launchHelperMain.ts'),
    },
    outdir: BUILD,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
  });
  // Like dist/: sql.js finds its WebAssembly beside the bundle.
  copyFileSync(require.resolve('sql.js/dist/sql-wasm.wasm'), path.join(BUILD, 'sql-wasm.wasm'));
}

/** Node options of a measured child: an engine host runs with the options it has in production. */
export function execArgv(label: string, engineHost: boolean): string[] {
  // BENCH_ENGINE_NODE_OPTIONS: more Node.js options for the engine host, to try one before it goes into ENGINE_HOST_NODE_OPTIONS.
  const tuning = engineHost ? [...ENGINE_HOST_NODE_OPTIONS, ...(process.env.BENCH_ENGINE_NODE_OPTIONS?.split(' ').filter(Boolean) ?? [])] : [];
  if (!CFG.cpuProf) return tuning;
  mkdirSync(PROFILES, { recursive: true });
  return [...tuning, '--cpu-prof', `--cpu-prof-dir=${PROFILES}`, `--cpu-prof-name=${label}-${Date.now()}.cpuprofile`];
}

/** Runs a one-shot child and returns the JSON it prints last. */
export function runChild<T>(name: string, config: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(BUILD, `${name}.js`), [], {
      env: { ...process.env, BENCH_CONFIG: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
      execArgv: execArgv(name, name !== 'seed' && name !== 'spawner'),
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`${name} child exited with ${code}: ${out}`));
      try {
        resolve(JSON.parse(line) as T);
      } catch {
        reject(new Error(`${name} child printed no result: ${out}`));
      }
    });
  });
}

/** A long-lived child that answers IPC requests (the server under load). */
export class ServerChild {
  private constructor(
    private child: ChildProcess,
    readonly url: string,
    readonly startupMs: number,
  ) {}

  static start(config: unknown, label: string): Promise<ServerChild> {
    return new Promise((resolve, reject) => {
      const child = fork(path.join(BUILD, 'server.js'), [], {
        env: { ...process.env, BENCH_CONFIG: JSON.stringify(config) },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        execArgv: execArgv(label, (config as { mode?: string }).mode === 'engine'),
      });
      child.once('exit', (code) => reject(new Error(`server child exited with ${code}`)));
      child.once('message', (m: { type: string; url: string; startupMs: number }) => {
        if (m.type === 'ready') resolve(new ServerChild(child, m.url, m.startupMs));
      });
    });
  }

  /** Tells the child what is being measured now, so that its loop stalls can be attributed. */
  async phase(name: string): Promise<void> {
    await this.request('phase', { phase: name });
  }

  request<T>(type: string, extra: Record<string, unknown> = {}): Promise<T> {
    return new Promise((resolve) => {
      const onMessage = (m: { type: string }) => {
        if (m.type !== type) return;
        this.child.off('message', onMessage);
        resolve(m as T);
      };
      this.child.on('message', onMessage);
      this.child.send({ ...extra, type });
    });
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.child.removeAllListeners('exit');
      this.child.once('exit', () => resolve());
      this.child.send({ type: 'exit' });
    });
  }
}

export interface ServerReport {
  loop: LoopDelay;
  rss: number;
  maxRss: number;
  heapUsed: number;
  breakdown: MemoryBreakdown;
  cpuMs: number;
  /** Main-thread episodes of each snapshot (ms). */
  snapshots: number[];
  /** Each background snapshot's wall time in its worker thread (ms). */
  workerMs?: number[];
}

export interface SnapshotReply {
  ok: boolean;
  background: boolean;
  /** "worker thread" or "process <pid>" (Store.lastSnapshot.builtIn). */
  builtIn: string | null;
  builderPeakRss: number | null;
  ms: number;
  mainMs: number;
  bytes: number;
}

// ---- seeding (cached between runs: it is the slowest part and not what we measure) ---------------

export async function seeded(label: string, items: number, logs: number, journalRecords: number): Promise<{ dir: string; seed: SeedResult; cached: boolean }> {
  // The key covers everything that shapes the database: the store's sources (schema, statements,
  // journal and snapshot formats) and the seeder.
  const sources = createHash('sha256');
  const storeDir = path.join(ROOT, 'src/core/store');
  for (const f of readdirSync(storeDir).sort()) sources.update(readFileSync(path.join(storeDir, f)));
  const hash = sources
    .update(readFileSync(path.join(__dirname, 'seed.ts')))
    .update(`${items}/${logs}/${journalRecords}`)
    .digest('hex')
    .slice(0, 12);
  const prefix = `${label}-${items}-${logs}-`;
  const dir = path.join(CACHE, `${prefix}${hash}`);
  const resultFile = path.join(dir, 'seed.json');
  if (CFG.reuseSeed && existsSync(resultFile)) {
    return { dir: path.join(dir, 'storage'), seed: JSON.parse(readFileSync(resultFile, 'utf8')), cached: true };
  }
  rmSync(dir, { recursive: true, force: true });
  // A seed of the same sizes for an older store.ts is stale: at 1,000,000 entries each is ~300 MB.
  for (const old of existsSync(CACHE) ? readdirSync(CACHE) : []) {
    if (old.startsWith(prefix)) rmSync(path.join(CACHE, old), { recursive: true, force: true });
  }
  log(`seeding ${label}: ${items.toLocaleString('en-US')} items, ${logs.toLocaleString('en-US')} log entries, ${journalRecords} journal records…`);
  const seed = await runChild<SeedResult>('seed', { storageDir: path.join(dir, 'storage'), items, logs, journalRecords });
  writeFileSync(resultFile, JSON.stringify(seed));
  return { dir: path.join(dir, 'storage'), seed, cached: false };
}

/** `nextPath`, when given, picks each request's path (the URL's own path is used otherwise). */
export async function load(url: string, connections: number, duration: number, nextPath?: () => string): Promise<AutocannonResult> {
  const requests = nextPath ? [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, path: nextPath() }) }] : undefined;
  return autocannon({ url, connections, duration, pipelining: 1, ...(requests ? { requests } : {}) });
}

/** What bench/child/launch.ts reports of one run of the engine over its items. */
export interface LaunchResult {
  wallMs: number;
  cpuMs: number;
  /** The engine host's main thread alone (Linux; null elsewhere). */
  mainThreadCpuMs?: number | null;
  loop: LoopDelay;
  snapshots: number[];
  launched: number;
  failed: number;
  rss: number;
  spawnMs: number;
  spawns: number;
  fsyncMs: number;
  fsyncs: number;
  launcher: 'helper' | 'in-process';
  helperSpawnMs: number;
  helperSpawns: number;
  helperRss: number | null;
  /** The launch helpers' own CPU, and their waited-for children's (attempts and checkpoint processes), summed. */
  helperCpu?: { selfMs: number; childrenMs: number } | null;
  /** How many launch helpers were running at the end (the pool). */
  helpers?: number;
  workerMs?: number[];
}
