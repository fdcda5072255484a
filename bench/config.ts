// The benchmark's configuration, read once from the environment (BENCH_*; docs/PERFORMANCE.md lists
// them), and the folders it works in. Shared by bench/run.ts and the scenario files it runs.
import os from 'node:os';
import path from 'node:path';

export const QUICK = process.env.BENCH_QUICK === '1';
const int = (name: string, full: number, quick: number) => {
  const v = process.env[name];
  return v !== undefined && v !== '' ? Number(v) : QUICK ? quick : full;
};
export const CFG = {
  name: process.env.BENCH_NAME || (QUICK ? 'quick' : 'latest'),
  only: (process.env.BENCH_ONLY || 'api,search,memory,memscenario,launch,output,startup,editor,dispatch,codelens,fleet,faststart,insight,fleetjobs').split(',').map((s) => s.trim()),
  apiItems: int('BENCH_API_ITEMS', 100_000, 10_000),
  apiLogs: int('BENCH_API_LOGS', 1_000_000, 100_000),
  /** autocannon seconds per run. */
  duration: int('BENCH_DURATION', 10, 3),
  /** Runs of each compared measurement (medians are reported). */
  runs: int('BENCH_RUNS', 3, 1),
  connections: int('BENCH_CONNECTIONS', 50, 50),
  latencyConnections: int('BENCH_LATENCY_CONNECTIONS', 10, 10),
  /** Snapshot cadence of the engine under API load (the engine's default is 30 s). */
  apiSnapshotMs: int('BENCH_API_SNAPSHOT_MS', 30_000, 30_000),
  launchItems: int('BENCH_LAUNCH_ITEMS', 2_000, 400),
  launchRuns: int('BENCH_LAUNCH_RUNS', 3, 1),
  /**
   * The `node -e 0` case: each item is a whole Node.js start, so fewer items by default to fit the
   * time budget; three runs all the same, because one run's ratio swung 1.13-1.29x between full runs.
   */
  nodeItems: int('BENCH_NODE_ITEMS', 500, 100),
  nodeRuns: int('BENCH_NODE_RUNS', 3, 1),
  concurrency: int('BENCH_CONCURRENCY', 4, 4),
  /** Launch helpers of the engine in the launch rows (EngineOptions.launchHelpers); unset: the engine's default. */
  launchHelpers: process.env.BENCH_LAUNCH_HELPERS ? Number(process.env.BENCH_LAUNCH_HELPERS) : undefined,
  /** Snapshot cadence during launch runs: short, so snapshots land inside the measured window. */
  launchSnapshotMs: int('BENCH_LAUNCH_SNAPSHOT_MS', 2_000, 2_000),
  memItems: int('BENCH_MEM_ITEMS', 100_000, 100_000),
  memLogs: int('BENCH_MEM_LOGS', 100_000, 100_000),
  memJournal: int('BENCH_MEM_JOURNAL', 20_000, 20_000),
  /** The independent memory scenario (bench/memoryScenario.ts): items through queue files, seconds of load per path, runs. */
  memScenarioItems: int('BENCH_MEMSCEN_ITEMS', 100_000, 100_000),
  memScenarioSeconds: int('BENCH_MEMSCEN_SECONDS', 30, 5),
  memScenarioRuns: int('BENCH_MEMSCEN_RUNS', 1, 1),
  memScenarioScheduled: process.env.BENCH_MEMSCEN_SCHEDULED === '1',
  startupRuns: int('BENCH_STARTUP_RUNS', 3, 1),
  /** Output scenario: items launched with capture on and off (each printing a line to stdout and stderr), and the flood's size. */
  outputItems: int('BENCH_OUTPUT_ITEMS', 1_000, 300),
  outputRuns: int('BENCH_OUTPUT_RUNS', 3, 1),
  floodMB: int('BENCH_FLOOD_MB', 100, 100),
  /**
   * Output scenario parts to run: `capture` (launches with capture on and off), `flood` (/stats,
   * launches and the attempt's duration while one prints BENCH_FLOOD_MB, and the smallest cap),
   * `interleaved` (GET of finely interleaved output); all by default.
   */
  outputOnly: (process.env.BENCH_OUTPUT_ONLY || 'capture,flood,interleaved').split(',').map((s) => s.trim()),
  /** Output scenario: one-byte runs, alternating stdout and stderr, of the attempt whose one stream and runs are read. */
  interleavedRuns: int('BENCH_INTERLEAVED_RUNS', 500_000, 500_000),
  /** /bin/true items launched beside the flood (and beside a sleeping attempt, the baseline). */
  outputBatch: int('BENCH_OUTPUT_BATCH', 100, 60),
  /** Dispatch scenario: /bin/true items launched without, then with, dependencies and priorities. */
  dispatchItems: int('BENCH_DISPATCH_ITEMS', 10_000, 2_000),
  /** Fleet scenario: `sleep 0.05` items drained by 1 engine, then 3, on PostgreSQL, and by 1 on sql.js. */
  fleetItems: int('BENCH_FLEET_ITEMS', 3_000, 300),
  fleetRuns: int('BENCH_FLEET_RUNS', 3, 1),
  /** Insight scenario: /bin/true items (launch throughput) and `sleep 0.3` items (long enough to be sampled), with and without the sampler. */
  insightItems: int('BENCH_INSIGHT_ITEMS', 2_000, 400),
  insightSleepItems: int('BENCH_INSIGHT_SLEEP_ITEMS', 120, 40),
  insightRuns: int('BENCH_INSIGHT_RUNS', 3, 1),
  /** Fleet jobs scenario (bench/fleet.ts): /bin/true items at once for jobs/s, and sequential submits for latency. */
  fleetJobsItems: int('BENCH_FLEET_JOBS_ITEMS', 2_000, 500),
  fleetSubmits: int('BENCH_FLEET_SUBMITS', 200, 50),
  fleetJobsRuns: int('BENCH_FLEET_JOBS_RUNS', 1, 1),
  /** CodeLens scenario: lines of the .jsonl queue file, and timed runs of each path. */
  codelensLines: int('BENCH_CODELENS_LINES', 10_000, 10_000),
  codelensRuns: int('BENCH_CODELENS_RUNS', 21, 7),
  /** Fast-start scenario: samples from a rename and from POST /items each (and of the bare spawner), after a few discarded. */
  fastStartSamples: int('BENCH_FAST_START_SAMPLES', 200, 50),
  cpuProf: process.env.BENCH_CPU_PROF === '1',
  reuseSeed: process.env.BENCH_REUSE_SEED !== '0',
};

export const ROOT = path.resolve(__dirname, '..');
export const OUT = path.join(ROOT, 'bench-results');
export const BUILD = path.join(OUT, '.build');
export const CACHE = path.join(OUT, '.cache');
export const TMP = path.join(os.tmpdir(), `engine-bench-${process.pid}`);
export const PROFILES = path.join(OUT, 'profiles');
