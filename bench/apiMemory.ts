// Scenario 1c of `npm run bench` (`memory`): the engine host's peak RSS over a whole API load on a
// seeded database, against a bare Node process holding the same snapshot in sql.js. (The engine's
// memory as an outside check measures it, nothing seeded, is bench/memoryScenario.ts.)
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { CFG, TMP } from './config';
import { load, runChild, seeded, ServerChild, type ServerReport, type SnapshotReply } from './children';
import { add, log, raw } from './results';
import { mb, median, type MemoryBreakdown } from './lib';
import { SNAPSHOT_FILE } from '../src/core/store/files';

/**
 * The engine host's peak RSS over a whole API load at 100,000 items + 100,000 entries: every
 * read endpoint under load in turn (word searches included), and snapshots taken during it. The
 * peak is the kernel's high-water mark of the process (getrusage maxrss), so nothing between two
 * samples is missed; a checkpoint on a worker thread counts, one in a process of its own does not
 * (its own peak is reported beside).
 */
export async function scenarioMemory(): Promise<void> {
  log('\n== scenario 1c: engine memory under API load');
  const { dir, seed, cached } = await seeded('mem', CFG.memItems, CFG.memLogs, CFG.memJournal);
  raw.memorySeed = { ...seed, cached };
  const results: { rest: number; peak: number; builders: (number | null)[]; peaks: Record<string, number>; breakdown: Record<string, MemoryBreakdown> }[] = [];
  for (let r = 0; r < CFG.runs; r++) {
    const storageDir = path.join(TMP, 'memory', 'storage');
    const workspace = path.join(TMP, 'memory', 'ws');
    rmSync(path.join(TMP, 'memory'), { recursive: true, force: true });
    mkdirSync(workspace, { recursive: true });
    cpSync(dir, storageDir, { recursive: true });
    const engine = await ServerChild.start({ mode: 'engine', storageDir, workspace, snapshotIntervalMs: 2_000 }, 'memory-engine');
    const atStart = (await engine.request<ServerReport>('report')).breakdown;
    // The engine starts its launch helper at start, and the helper builds the checkpoints in
    // processes of its own; a checkpoint asked for before the helper is ready runs on a worker
    // thread of the host instead (+~265 MB at this size, docs/PERFORMANCE.md). The engine's first
    // periodic snapshot comes 30 s after a change, so the load starts once the helper is up.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const paths = [
      '/stats',
      '/status',
      '/logs?limit=1000',
      `/logs?q=${seed.rareWord}+nightly`,
      '/logs?q=nightly+report',
      '/items?limit=1000',
      '/items?q=nightly&limit=1000',
      `/logs?item=${seed.sampleItemId}`,
    ];
    const builders: (number | null)[] = [];
    const duration = Math.max(2, Math.round(CFG.duration / 2));
    // The high-water mark after each load: which load raised it, and by how much.
    const afterCheckpoint = await engine.request<ServerReport>('report');
    const peaks: Record<string, number> = { start: afterCheckpoint.maxRss };
    for (const p of paths) {
      // A snapshot during each load: the checkpoint and the load's buffers at the same time.
      const snap = engine.request<SnapshotReply>('snapshot');
      await load(engine.url + p, CFG.latencyConnections, duration);
      builders.push((await snap).builderPeakRss);
      peaks[p] = (await engine.request<ServerReport>('report')).maxRss;
    }
    const report = await engine.request<ServerReport>('report');
    const breakdown = { start: atStart, afterCheckpoint: afterCheckpoint.breakdown, afterLoad: report.breakdown };
    results.push({ rest: report.rss, peak: report.maxRss, builders, peaks, breakdown });
    log(`  run ${r + 1}: peak RSS ${mb(report.maxRss)} MB, after the load ${mb(report.rss)} MB; high-water mark after each load: ${Object.entries(peaks).map(([k, v]) => `${k} ${mb(v)}`).join(', ')} MB`);
    for (const [when, b] of Object.entries(breakdown)) log(`    ${when.padEnd(15)} ${formatBreakdown(b)}`);
    await engine.stop();
  }
  raw.memory = results;
  // The floor, measured outside the engine: a bare Node process with the host's Node options that
  // only opens the same snapshot in sql.js (bench/child/sqljsFloor.ts).
  const floors: { breakdown: MemoryBreakdown; maxRss: number }[] = [];
  for (let r = 0; r < CFG.runs; r++) floors.push(await runChild('sqljsFloor', { snapshot: path.join(dir, SNAPSHOT_FILE) }));
  for (const f of floors) log(`  floor (bare Node + sql.js, the same snapshot): ${formatBreakdown(f.breakdown)}; peak ${mb(f.maxRss)} MB`);
  raw.memoryFloor = floors;
  const floor = median(floors.map((f) => f.maxRss));
  const scale = `${(CFG.memItems / 1000).toFixed(0)}k items + ${(CFG.memLogs / 1000).toFixed(0)}k entries`;
  const peak = median(results.map((r) => r.peak));
  const builderPeaks = results.flatMap((r) => r.builders).filter((b): b is number => b !== null);
  add({
    scenario: 'memory',
    measure: `engine host peak RSS over API load + ${CFG.runs > 0 ? results[0].builders.length : 0} snapshots, ${scale}`,
    value: mb(peak),
    unit: 'MB',
    baseline: mb(floor),
    ratio: peak / floor,
    target: '≤ 200 MB',
    met: mb(peak) <= 200,
    note:
      `getrusage maxrss of the host process; baseline: the floor below` +
      (builderPeaks.length ? `; checkpoint processes' peak RSS ${mb(median(builderPeaks))} MB (not in the host's)` : ''),
  });
  add({
    scenario: 'memory',
    measure: `floor: peak RSS of a bare Node process holding the same snapshot in sql.js, ${scale}`,
    value: mb(floor),
    unit: 'MB',
    note: `the engine host's Node options; sql.js loaded, the snapshot opened, every table counted (bench/child/sqljsFloor.ts); RSS after 1 s ${mb(median(floors.map((f) => f.breakdown.rss)))} MB`,
  });
  add({ scenario: 'memory', measure: `engine host RSS after the load, ${scale}`, value: mb(median(results.map((r) => r.rest))), unit: 'MB' });
  for (const when of ['start', 'afterCheckpoint'] as const) {
    const label = when === 'start' ? 'right after start' : '3 s after start (first checkpoint)';
    add({ scenario: 'memory', measure: `engine host RSS ${label}, ${scale}`, value: mb(median(results.map((r) => r.breakdown[when].rss))), unit: 'MB' });
  }
}

/** One line of where the host's resident memory is (MB). */
function formatBreakdown(b: MemoryBreakdown): string {
  return (
    `rss ${mb(b.rss)} (anon ${mb(b.rssAnon)}, file ${mb(b.rssFile)}); V8 heap ${mb(b.heapUsed)} used of ${mb(b.heapTotal)} ` +
    `(code ${mb(b.codeSpace)}, large objects ${mb(b.largeObjectSpace)}); external ${mb(b.external)} (array buffers ${mb(b.arrayBuffers)}); wasm ${mb(b.wasm)}`
  );
}
