// Child: scenario 2, launch throughput. A fresh workspace whose queue holds N items running the
// same command; the engine (persistence on, its HTTP server up) runs them at the given concurrency.
// Wall time is from the first poll (engine.start()) to the last outcome.
import { mkdirSync, readFileSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { startHttpServer } from '../../src/server/server';
import { benchEngineOptions, benchLaunchHelper, checkpointInFlight, LoopMonitor, timeSnapshots } from '../lib';
import type { AttemptLauncher } from '../../src/core/launching';
import { locateLaunchHelper } from '../../src/host/launchHelperEntry';

interface Config {
  root: string;
  items: number;
  command: string;
  args: string[];
  concurrency: number;
  snapshotIntervalMs: number;
  /** false: the engine does not capture the attempts' output (the output scenario's baseline). */
  captureOutput?: boolean;
  /**
   * The dispatch overhead of dependencies and priorities: every item gets a priority (spread over
   * −100…100) and depends on the item before it, in chains of ten, so most items are blocked
   * until their predecessor launches and dispatch picks by priority among the rest.
   */
  dependencies?: boolean;
  /** EngineOptions.launchHelpers (BENCH_LAUNCH_HELPERS); undefined: the engine's default. */
  launchHelpers?: number;
  /** false: the launch helpers do not sample the attempts' CPU and memory (the insight scenario's baseline). */
  sampleResources?: boolean;
}

const config = JSON.parse(process.env.BENCH_CONFIG ?? '{}') as Config;

// Where the main thread's time per item goes: the synchronous part of child_process.spawn()
// (fork + exec handshake) and the journal's fdatasync. The bundle calls both through the module
// objects, so wrapping them here times every call the engine makes. Attempts are spawned by the
// engine's launch helper process, so the engine's own spawn time is the one fork() of that helper;
// the helper reports its own time in spawn() per attempt (helperSpawnMs).
// The journal's fdatasyncs on the thread pool are counted too (the time is only the hand-off to the pool).
const timed = { spawnMs: 0, spawns: 0, fsyncMs: 0, fsyncs: 0, poolFsyncMs: 0, poolFsyncs: 0 };
/** Synchronous file-system calls slower than SLOW_CALL_MS, to line up with the loop's stalls. */
const slowCalls: { call: string; ms: number; at: number }[] = [];
const SLOW_CALL_MS = 20;
function wrap(mod: Record<string, unknown>, name: string, ms?: 'spawnMs' | 'fsyncMs' | 'poolFsyncMs', count?: 'spawns' | 'fsyncs' | 'poolFsyncs'): void {
  const original = mod[name] as (...a: unknown[]) => unknown;
  mod[name] = (...a: unknown[]) => {
    const t = performance.now();
    try {
      return original(...a);
    } finally {
      const now = performance.now();
      if (ms && count) {
        timed[ms] += now - t;
        timed[count]++;
      }
      if (now - t > SLOW_CALL_MS) slowCalls.push({ call: name, ms: Math.round(now - t), at: Math.round(now) });
    }
  };
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
wrap(require('node:child_process'), 'spawn', 'spawnMs', 'spawns');
// eslint-disable-next-line @typescript-eslint/no-require-imports
wrap(require('node:child_process'), 'fork', 'spawnMs', 'spawns');
// eslint-disable-next-line @typescript-eslint/no-require-imports
wrap(require('node:fs'), 'fdatasyncSync', 'fsyncMs', 'fsyncs');
// eslint-disable-next-line @typescript-eslint/no-require-imports
wrap(require('node:fs'), 'fdatasync', 'poolFsyncMs', 'poolFsyncs');
for (const name of ['fsyncSync', 'writeSync', 'renameSync', 'openSync', 'closeSync', 'readFileSync', 'writeFileSync', 'unlinkSync', 'linkSync', 'ftruncateSync']) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  wrap(require('node:fs'), name);
}

async function main(): Promise<void> {
  rmSync(config.root, { recursive: true, force: true });
  const ws = path.join(config.root, 'ws');
  const queue = path.join(ws, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  // Several files (the engine refuses one over 1 MiB); written the way scripts enqueue: temp + rename.
  const perFile = 500;
  for (let f = 0; f * perFile < config.items; f++) {
    const lines: string[] = [];
    for (let i = f * perFile; i < Math.min(config.items, (f + 1) * perFile); i++) {
      const extra = config.dependencies ? { priority: ((i * 37) % 201) - 100, ...(i % 10 === 0 ? {} : { dependsOn: [`launch-${i - 1}`] }) } : {};
      lines.push(JSON.stringify({ id: `launch-${i}`, command: config.command, args: config.args, ...extra }));
    }
    const file = path.join(queue, `batch-${String(f).padStart(3, '0')}.jsonl`);
    writeFileSync(`${file}.tmp`, lines.join('\n') + '\n');
    renameSync(`${file}.tmp`, file);
  }

  // Read by the launch helpers the engine forks (they inherit this environment).
  if (config.sampleResources === false) process.env.ENGINE_MONITOR_SAMPLE_RESOURCES = '0';
  const engine = await Engine.create(
    benchEngineOptions(config.root, {
      concurrency: config.concurrency,
      snapshotIntervalMs: config.snapshotIntervalMs,
      // A snapshot at every interval with a change: the engine's default waits for 1 MiB of journal,
      // more than a whole run writes, and scenario 3 asks for the loop delay with snapshots included.
      snapshotMinJournalBytes: 0,
      // The bundle beside this one, as the engine host finds it beside dist/cli.js.
      launchHelper: benchLaunchHelper('launch', locateLaunchHelper),
      captureOutput: config.captureOutput !== false,
      launchHelpers: config.launchHelpers,
    }),
  );
  const workerMs: number[] = [];
  const snapshotParts: { part: string; ms: number; at: number }[] = [];
  const snapshots = timeSnapshots((engine as unknown as { store: Parameters<typeof timeSnapshots>[0] }).store, workerMs, snapshotParts);
  const loop = new LoopMonitor(() => checkpointInFlight((engine as unknown as { store: unknown }).store));
  loop.phase = 'launches';
  const cpu0 = process.cpuUsage();
  const main0 = mainThreadCpuMs();
  Object.assign(timed, { spawnMs: 0, spawns: 0, fsyncMs: 0, fsyncs: 0, poolFsyncMs: 0, poolFsyncs: 0 });
  slowCalls.length = 0;
  const t0 = performance.now();
  await engine.start();
  const server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
  // The engine announces each outcome with a 'stats' event. (Polling the counters every
  // millisecond instead woke this loop 1,000 times a second: 270 ms of CPU per 10 s, charged to
  // the engine in a run decided by CPU. A subscriber costs the engine a few µs per log entry.)
  await new Promise<void>((resolve) => {
    const done = () => {
      const s = engine.stats();
      if (s.total !== config.items || s.pending !== 0) return false;
      unsubscribe();
      resolve();
      return true;
    };
    const unsubscribe = engine.subscribe((event) => void (event.type === 'stats' && done()));
    done();
  });
  const wallMs = performance.now() - t0;
  const c = process.cpuUsage(cpu0);
  const main1 = mainThreadCpuMs();
  const during = { ...timed };
  const launcher = (engine as unknown as { launcher: AttemptLauncher }).launcher;
  const helper = launcher.helperSpawnStats();
  // The pool's helpers together (EngineOptions.launchHelpers): their RSS and CPU summed.
  const helperPids = launcher.helperPids;
  const helperRss = helperPids.length === 0 ? null : helperPids.reduce((sum, pid) => sum + (rssOf(pid) ?? 0), 0);
  const cpus = helperPids.map(cpuOf);
  const helperCpu = cpus.length === 0 || cpus.some((c) => c === null) ? null : { selfMs: cpus.reduce((s, c) => s + c!.selfMs, 0), childrenMs: cpus.reduce((s, c) => s + c!.childrenMs, 0) };
  if (launcher.mode !== 'helper') process.stderr.write('warning: the engine launched in-process (no launch helper)\n');
  const delay = loop.read();
  const stats = engine.stats();
  const rss = process.memoryUsage().rss;
  await server.close();
  await engine.shutdown(1000);
  process.stdout.write(
    `${JSON.stringify({ wallMs, cpuMs: (c.user + c.system) / 1000, mainThreadCpuMs: main0 === null || main1 === null ? null : main1 - main0, loop: delay, snapshots, workerMs, launched: stats.launched, failed: stats.failed, rss, ...during, hrOriginUs: Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000, slowCalls: slowCalls.slice(0, 50), slowSnapshotParts: snapshotParts.filter((p) => p.ms > SLOW_CALL_MS), launcher: launcher.mode, helperSpawnMs: helper.spawnMs, helperSpawns: helper.spawns, helperRss, helperCpu, helpers: helperPids.length })}\n`,
  );
  rmSync(config.root, { recursive: true, force: true });
  process.exit(0);
}

/**
 * CPU time of this process's main thread (Linux), in ms, at the kernel's 10 ms tick: the event
 * loop's own share of cpuMs. The rest is other threads: V8's compiler and GC helpers, the libuv
 * thread pool (the journal's fdatasyncs), snapshot workers.
 */
function mainThreadCpuMs(): number | null {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    return (f[11] + f[12]) * 10;
  } catch {
    return null;
  }
}

/**
 * CPU time of another process (Linux), in ms: its own, and that of the children it has waited for
 * (for the launch helper: the attempts and the checkpoint processes it started).
 */
function cpuOf(pid: number): { selfMs: number; childrenMs: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which may hold spaces: utime, stime, cutime, cstime are 14-17.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    const tick = 1000 / 100; // USER_HZ is 100 on Linux
    return { selfMs: (f[11] + f[12]) * tick, childrenMs: (f[13] + f[14]) * tick };
  } catch {
    return null;
  }
}

/** Resident memory of another process, in bytes (Linux). */
function rssOf(pid: number): number | null {
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) * 1024;
  } catch {
    return null;
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
