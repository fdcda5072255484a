// Scenario 3 of `npm run bench` (`startup`): the engine's startup, memory and snapshot at
// BENCH_MEM_ITEMS items + BENCH_MEM_LOGS entries + BENCH_MEM_JOURNAL journal records (seeded).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { CFG, TMP } from './config';
import { runChild, seeded } from './children';
import { add, builtInKind, log, raw } from './results';
import { mb, median, type LoopDelay } from './lib';
import { scenarioHostStart } from './hostStart';

interface StartupResult {
  startupMs: number;
  wasmMs: number;
  journalBytes: number;
  rssAfterStart: number;
  rssAfterSnapshot: number;
  maxRss: number;
  snapshotMs: number;
  snapshotMainMs: number;
  snapshotBytes: number;
  builtIn: string | null;
  builderPeakRss: number | null;
  loopDuringSnapshot: LoopDelay;
}

export async function scenarioStartup(): Promise<void> {
  log('\n== scenario 3: startup, memory and snapshots');
  const { dir, seed, cached } = await seeded('mem', CFG.memItems, CFG.memLogs, CFG.memJournal);
  raw.memSeed = { ...seed, cached };
  const workspace = path.join(TMP, 'startup-ws');
  mkdirSync(workspace, { recursive: true });
  const results: StartupResult[] = [];
  for (let r = 0; r < CFG.startupRuns; r++) {
    results.push(await runChild<StartupResult>('startup', { seedDir: dir, root: path.join(TMP, 'startup'), workspace }));
    log(`  run ${r + 1}: startup ${results[r].startupMs.toFixed(0)} ms, RSS ${mb(results[r].rssAfterStart)} MB, snapshot ${results[r].snapshotMs} ms`);
  }
  raw.startup = results;
  const m = (f: (r: StartupResult) => number) => median(results.map(f));
  const scale = `${(CFG.memItems / 1000).toFixed(0)}k items + ${(CFG.memLogs / 1000).toFixed(0)}k entries`;
  add({
    scenario: 'startup',
    measure: `startup (load + replay of ${seed.journalRecords.toLocaleString('en-US')} journal records + first poll + server), ${scale}`,
    value: m((r) => r.startupMs),
    unit: 'ms',
    target: '≤ 1000 ms',
    met: m((r) => r.startupMs) <= 1000,
    note: `sql.js wasm compile, once per process, not included: ${m((r) => r.wasmMs).toFixed(0)} ms`,
  });
  add({ scenario: 'startup', measure: `engine host RSS, ${scale}`, value: mb(m((r) => r.rssAfterStart)), unit: 'MB', target: '≤ 200 MB', met: mb(m((r) => r.rssAfterStart)) <= 200 });
  const builders = results.map((r) => builtInKind(r.builtIn)).join(' / ');
  add({
    scenario: 'startup',
    measure: `engine host peak RSS (incl. a snapshot), ${scale}`,
    value: mb(m((r) => r.maxRss)),
    unit: 'MB',
    target: '≤ 200 MB',
    met: mb(m((r) => r.maxRss)) <= 200,
    note: `checkpoints built in: ${builders}` + (results.some((r) => r.builderPeakRss) ? `; checkpoint process peak RSS ${mb(m((r) => r.builderPeakRss ?? NaN))} MB` : ''),
  });
  add({
    scenario: 'startup',
    measure: `snapshot, ${scale}: checkpoint wall time`,
    value: m((r) => r.snapshotMs),
    unit: 'ms',
    note: `${m((r) => r.snapshotMainMs).toFixed(1)} ms on the main thread; event-loop max meanwhile ${m((r) => r.loopDuringSnapshot.max).toFixed(0)} ms`,
  });
  add({ scenario: 'startup', measure: `snapshot size, ${scale}`, value: mb(m((r) => r.snapshotBytes)), unit: 'MB' });
  await scenarioHostStart();
}
