// Small helpers shared by the benchmark runner and its child processes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import type { EngineOptions } from '../src/core/kernel/engine';

/** One row of the benchmark's table (bench-results/<name>.md and .json; docs/PERFORMANCE.md quotes them). */
export interface Row {
  scenario: string;
  measure: string;
  value: number;
  unit: string;
  baseline?: number;
  /** value / baseline (or as stated in `note`). */
  ratio?: number;
  target?: string;
  met?: boolean;
  note?: string;
}

/** What bench/editor.ts gets: add rows to the table, keep raw data for the JSON, log progress. */
export interface EditorBenchContext {
  add(row: Row): void;
  raw: Record<string, unknown>;
  log(message: string): void;
  median(values: number[]): number;
  /** Scratch folder, removed at the end of the run. */
  tmp: string;
  quick: boolean;
}

export function median(values: number[]): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** The nearest-rank percentile. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export interface LoopDelay {
  /** Milliseconds; each sample includes the monitor's 1 ms tick. */
  p50: number;
  p99: number;
  max: number;
  mean: number;
  samples: number;
  /** Stalls over STALL_MS, longest first (at most 20): what the process was doing when each happened. */
  stalls?: Stall[];
}

export interface Stall {
  ms: number;
  /** What the runner said it was measuring (e.g. "/stats throughput"). */
  phase: string;
  /** Whether a background snapshot was being built at the time. */
  checkpoint: boolean;
  /** When the stall ended (performance.now() of the child), to line it up with other traces. */
  at?: number;
}

/** Loop stalls longer than this are recorded one by one, to say where a max came from. */
export const STALL_MS = 50;

/** Event-loop delay of this process (perf_hooks.monitorEventLoopDelay, 1 ms resolution). */
export class LoopMonitor {
  private h: IntervalHistogram = monitorEventLoopDelay({ resolution: 1 });
  private stalls: Stall[] = [];
  /** Set by the child from the runner's messages. */
  phase = 'startup';
  /**
   * @param checkpointing tells whether a background snapshot is in flight, so that each stall can
   * be attributed to one or not.
   */
  constructor(private readonly checkpointing: () => boolean = () => false) {
    this.h.enable();
    // A 10 ms timer that notices when it fires late: the histogram has the distribution, this the
    // individual stalls with their context.
    let last = performance.now();
    setInterval(() => {
      const now = performance.now();
      const late = now - last - 10;
      last = now;
      if (late > STALL_MS) this.stalls.push({ ms: Math.round(late), phase: this.phase, checkpoint: this.checkpointing(), at: Math.round(now) });
    }, 10).unref();
  }
  reset(): void {
    this.h.reset();
    this.stalls = [];
  }
  read(): LoopDelay {
    const ms = (ns: number) => Math.round((ns / 1e6) * 100) / 100;
    return {
      p50: ms(this.h.percentile(50)),
      p99: ms(this.h.percentile(99)),
      // The histogram drops its first interval, so a stall right after the monitor starts (as the
      // startup stall of fix 21 was) reached only the 10 ms timer's record: the max is the larger.
      max: Math.max(ms(this.h.max), ...this.stalls.map((s) => s.ms)),
      mean: ms(this.h.mean),
      samples: this.h.count,
      stalls: [...this.stalls].sort((a, b) => b.ms - a.ms).slice(0, 20),
    };
  }
}

/** Whether a store has a checkpoint in flight (its private field; the benchmark only reads it). */
export function checkpointInFlight(store: unknown): boolean {
  return (store as { checkpoint?: unknown } | undefined)?.checkpoint != null;
}

interface SnapshotTaker {
  snapshot(): boolean;
  snapshotInBackground?(): boolean;
  whenCheckpointed?(): Promise<boolean>;
  readonly lastSnapshot?: { background: boolean; ms: number } | null;
}

/**
 * Records how long each snapshot blocks the event loop: a synchronous snapshot() whole; a
 * background one as two episodes on the main thread (commit + journal rotation + worker start, and
 * later installing the result). With `workerMs`, also each background snapshot's wall time in its
 * worker thread, which the event loop does not wait for.
 */
export function timeSnapshots(store: SnapshotTaker, workerMs?: number[], events?: { part: string; ms: number; at: number }[]): number[] {
  const durations: number[] = [];
  const record = (part: string, t: number) => {
    const ms = Math.round((performance.now() - t) * 10) / 10;
    durations.push(ms);
    events?.push({ part, ms, at: Math.round(performance.now()) });
  };
  const wrap = <A extends unknown[], R>(target: object, name: string, after?: (result: R) => void) => {
    const holder = target as Record<string, (...args: A) => R>;
    const original = holder[name]?.bind(target);
    if (!original) return;
    holder[name] = (...args: A) => {
      const t = performance.now();
      let result: R | undefined;
      try {
        result = original(...args);
        return result;
      } finally {
        record(name, t);
        if (result !== undefined) after?.(result);
      }
    };
  };
  wrap<[], boolean>(store, 'snapshot');
  wrap<[], boolean>(store, 'snapshotInBackground', (started) => {
    if (!started || !workerMs || !store.whenCheckpointed) return;
    void store.whenCheckpointed().then(() => {
      if (store.lastSnapshot?.background) workerMs.push(Math.round(store.lastSnapshot.ms));
    });
  });
  // Installing a finished checkpoint (renames + directory fsyncs) runs on the main thread too. It is
  // called for the worker's message, error and exit; only the first call of each does anything.
  const holder = store as unknown as Record<string, ((cp: { settled: boolean }, m: unknown) => void) | undefined>;
  const finish = holder.finishCheckpoint?.bind(store);
  if (finish) {
    holder.finishCheckpoint = (cp, m) => {
      if (cp.settled) return finish(cp, m);
      const t = performance.now();
      finish(cp, m);
      record('finishCheckpoint', t);
    };
  }
  return durations;
}

export function mb(bytes: number): number {
  return Math.round((bytes / 1024 / 1024) * 10) / 10;
}

/**
 * The launch helper as the engine host finds it, and under BENCH_CPU_PROF (this child runs with
 * --cpu-prof) profiled too, into the same folder: the helper spawns every attempt and writes their
 * output, so "where each microsecond goes" needs its profile beside the engine's. It writes it
 * when it exits (the engine's shutdown closes it).
 */
export function benchLaunchHelper(label: string, locate: () => { file: string; execArgv: string[] } | null | undefined): { file: string; execArgv: string[] } | null | undefined {
  const entry = locate();
  const dir = process.execArgv.find((a) => a.startsWith('--cpu-prof-dir='));
  if (!entry || !dir) return entry;
  return { ...entry, execArgv: [...entry.execArgv, '--cpu-prof', dir, `--cpu-prof-name=${label}-helper-${Date.now()}.cpuprofile`] };
}

/** A Node.js program printing `mb` MiB to stdout as fast as it can (the output scenario's flood). */
export function floodScript(mb: number): string {
  return `const b = Buffer.alloc(1 << 20, 'y'); let i = 0; const w = () => { while (i < ${mb}) { i++; if (!process.stdout.write(b)) return process.stdout.once('drain', w); } }; w();`;
}

/** Where a process's resident memory is, in bytes (memoryBreakdown). */
export interface MemoryBreakdown {
  rss: number;
  /** /proc/self/status: anonymous memory (heaps, buffers, wasm), file-backed (code), shared. */
  rssAnon: number;
  rssFile: number;
  heapTotal: number;
  heapUsed: number;
  /** V8's code space, large-object space and the rest of the old generation. */
  codeSpace: number;
  largeObjectSpace: number;
  /** Memory outside the V8 heap that V8 knows of (array buffers included). */
  external: number;
  arrayBuffers: number;
  /** Every WebAssembly memory created since watchWasmMemory() (sql.js's heap): their sizes. */
  wasm: number;
}

const wasmMemories: WebAssembly.Memory[] = [];

/**
 * Records the memory of every WebAssembly instance created from now on (sql.js instantiates its
 * module with WebAssembly.instantiate and exports its memory), for memoryBreakdown(). sql.js does
 * not expose its heap, and that heap is the database's page cache and every query's scratch space.
 */
export function watchWasmMemory(): void {
  const instantiate = WebAssembly.instantiate.bind(WebAssembly) as (...a: unknown[]) => Promise<unknown>;
  (WebAssembly as { instantiate: unknown }).instantiate = async (...args: unknown[]) => {
    const result = (await instantiate(...args)) as WebAssembly.WebAssemblyInstantiatedSource | WebAssembly.Instance;
    const instance = 'instance' in result ? result.instance : result;
    for (const e of Object.values(instance.exports)) if (e instanceof WebAssembly.Memory) wasmMemories.push(e);
    return result;
  };
}

export function memoryBreakdown(): MemoryBreakdown {
  const m = process.memoryUsage();
  const status = (() => {
    try {
      return readFileSync('/proc/self/status', 'utf8');
    } catch {
      return '';
    }
  })();
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  const spaces = getHeapSpaceStatistics();
  const space = (name: string) => spaces.find((s) => s.space_name === name)?.space_used_size ?? 0;
  return {
    rss: m.rss,
    rssAnon: kb('RssAnon'),
    rssFile: kb('RssFile'),
    heapTotal: m.heapTotal,
    heapUsed: m.heapUsed,
    codeSpace: space('code_space') + space('code_large_object_space'),
    largeObjectSpace: space('large_object_space'),
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    wasm: wasmMemories.reduce((sum, w) => sum + w.buffer.byteLength, 0),
  };
}

/**
 * The engine options every bench child starts from: the workspace `<root>/ws` with its default
 * queue folder, storage in `<root>/storage`, one attempt per item, a 60 s timeout, the engine
 * running from the start; `overrides` gives what a scenario measures.
 */
export function benchEngineOptions(root: string, overrides: Partial<EngineOptions>): EngineOptions {
  return {
    workspaceFolders: [path.join(root, 'ws')],
    storageDir: path.join(root, 'storage'),
    queueDirectory: '.engine/queue',
    pollIntervalMs: 2000,
    concurrency: 1,
    maxAttempts: 1,
    timeoutMs: 60_000,
    logMaxEntries: 100_000,
    logMaxAgeDays: 14,
    initialMode: 'running',
    version: '0.0.0-bench',
    ...overrides,
  };
}
