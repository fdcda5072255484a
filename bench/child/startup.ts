// Child: scenario 3, startup and memory at 100,000 items and 100,000 log entries. Copies a seeded
// storage folder (snapshot + an unreplayed journal), then measures what the engine host does on
// start: Engine.create (load the snapshot, replay the journal, fold it into a new snapshot, load
// counters), the first poll, and the HTTP server. Then RSS, and one background snapshot's time
// (in its worker, and on the main thread) and size.
import { cpSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { startEngineHost } from '../../src/host/engineHost';
import { Store } from '../../src/core/store';
import { checkpointInFlight, LoopMonitor, timeSnapshots } from '../lib';

interface Config {
  seedDir: string;
  root: string;
  workspace: string;
}

const config = JSON.parse(process.env.BENCH_CONFIG ?? '{}') as Config;

async function main(): Promise<void> {
  rmSync(config.root, { recursive: true, force: true });
  const storageDir = path.join(config.root, 'storage');
  cpSync(config.seedDir, storageDir, { recursive: true });
  const journalBytes = statSync(path.join(storageDir, 'engine.journal')).size;
  // sql.js's WebAssembly module is compiled once per process; time it apart from the engine.
  const tw = performance.now();
  const { store: warm } = await Store.open({ storageDir: null });
  warm.close();
  const wasmMs = performance.now() - tw;

  let store: Store | undefined;
  const loop = new LoopMonitor(() => checkpointInFlight(store));
  const t0 = performance.now();
  const started = await startEngineHost({
    workspaceFolders: [config.workspace],
    storageDir,
    queueDirectory: '.engine/queue',
    pollIntervalMs: 2000,
    concurrency: 4,
    maxAttempts: 3,
    timeoutMs: 600_000,
    logMaxEntries: 100_000,
    logMaxAgeDays: 14,
    // Stopped: the seeded pending items must not launch; startup and the first poll are the same.
    initialMode: 'stopped',
    version: '0.0.0-bench',
    host: '127.0.0.1',
    port: 0,
  });
  const startupMs = performance.now() - t0;
  if (started.kind !== 'running') throw new Error('locked');
  const host = started.host;
  store = (host.engine as unknown as { store: Store }).store;
  const workerMs: number[] = [];
  const snapshots = timeSnapshots(store, workerMs);
  // A little API traffic, as a UI would make, before reading memory.
  for (const p of ['/stats', '/status', '/logs?limit=1000', '/logs?q=succeeded&limit=1000', '/items?limit=1000']) {
    await fetch(host.url + p).then((r) => r.arrayBuffer());
  }
  await new Promise((r) => setTimeout(r, 200));
  const rssAfterStart = process.memoryUsage().rss;
  loop.reset();
  loop.phase = 'snapshot';
  store.setMeta('bench_marker', String(Date.now()));
  // The engine's periodic snapshot: built in a checkpoint process while the event loop runs on.
  store.snapshotInBackground();
  await store.whenCheckpointed();
  // Read now: the shutdown below takes a snapshot of its own.
  const built = { builtIn: store.lastSnapshot?.builtIn ?? null, builderPeakRss: store.lastSnapshot?.builderPeakRss ?? null };
  const snapshotMs = workerMs[0] ?? store.lastSnapshot?.ms ?? NaN;
  const snapshotMainMs = snapshots.reduce((a, b) => a + b, 0);
  const snapshotBytes = statSync(path.join(storageDir, 'engine.sqlite')).size;
  const rssAfterSnapshot = process.memoryUsage().rss;
  const maxRss = process.resourceUsage().maxRSS * 1024;
  await host.shutdown(1000);
  rmSync(config.root, { recursive: true, force: true });
  process.stdout.write(
    `${JSON.stringify({ startupMs, wasmMs, journalBytes, rssAfterStart, rssAfterSnapshot, maxRss, snapshotMs, snapshotMainMs, snapshotBytes, ...built, loopDuringSnapshot: loop.read(), hrOriginUs: Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000 })}\n`,
  );
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
