// `npm run bench`: measures the engine and its API at realistic scale against baselines measured
// in the same run on the same machine, prints a table, and writes bench-results/<name>.json and
// bench-results/<name>.md. A benchmark, not a test: it never fails on timing (exit code 0 unless
// the benchmark itself broke). Method and latest figures: docs/PERFORMANCE.md.
//
// Every process under measurement is a child: the runner only generates load (autocannon) or
// runs the xargs baseline, so the load generator never shares the measured event loop.
//
// This file is the driver: it builds the children, runs the scenarios BENCH_ONLY selects (in this
// order), and prints and writes the table. The configuration is bench/config.ts, the table
// bench/results.ts, the children bench/children.ts; each scenario is a file of its own.
import { mkdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CFG, OUT, QUICK, ROOT, TMP } from './config';
import { build, runChild } from './children';
import { add, fmt, log, raw, rows, table } from './results';
import { mb, median, type EditorBenchContext } from './lib';
import { scenarioApi } from './api';
import { scenarioSearch } from './search';
import { scenarioMemory } from './apiMemory';
import { scenarioMemoryIndependent } from './memoryScenario';
import { scenarioLaunch } from './launch';
import { scenarioOutput } from './output';
import { scenarioStartup } from './startup';
import { scenarioDispatch } from './dispatch';
import { scenarioCodeLens } from './codelens';
import { scenarioFleet } from './fleetScaleOut';
import { scenarioFastStart } from './fastStart';
import { scenarioInsight } from './insight';
import { scenarioFleetJobs } from './fleet';

/**
 * Scenario 4 (activation time and extension-host event-loop delay in code-server, bundle and
 * .vsix sizes) lives in bench/editor.ts, owned with the extension tests. When that file exists it
 * must export `scenarioEditor(ctx: EditorBenchContext): Promise<void>`; its rows join this table.
 */
async function scenarioEditor(): Promise<void> {
  const file = path.join(__dirname, 'editor.ts');
  if (!existsSync(file)) {
    log('\n== scenario 4: the editor — skipped (bench/editor.ts not present yet; see docs/PERFORMANCE.md)');
    return;
  }
  log('\n== scenario 4: the editor');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(file) as { scenarioEditor(ctx: EditorBenchContext): Promise<void> };
  await mod.scenarioEditor({ add, raw, log, median, tmp: path.join(TMP, 'editor'), quick: QUICK });
}

async function main(): Promise<void> {
  const started = new Date();
  log(`engine-monitor bench "${CFG.name}"${QUICK ? ' (quick)' : ''} on ${os.cpus().length} CPU(s), node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  await build();
  mkdirSync(TMP, { recursive: true });
  let failure: Error | undefined;
  try {
    if (CFG.only.includes('api')) await scenarioApi();
    if (CFG.only.includes('search')) await scenarioSearch();
    if (CFG.only.includes('memory')) await scenarioMemory();
    if (CFG.only.includes('memscenario')) {
      await scenarioMemoryIndependent({
        root: ROOT,
        tmp: TMP,
        items: CFG.memScenarioItems,
        seconds: CFG.memScenarioSeconds,
        runs: CFG.memScenarioRuns,
        connections: CFG.latencyConnections,
        scheduled: CFG.memScenarioScheduled,
        log,
        add,
        fmt,
        raw,
      });
    }
    if (CFG.only.includes('launch')) await scenarioLaunch();
    if (CFG.only.includes('output')) await scenarioOutput();
    if (CFG.only.includes('startup')) await scenarioStartup();
    if (CFG.only.includes('editor')) await scenarioEditor();
    if (CFG.only.includes('dispatch')) await scenarioDispatch();
    if (CFG.only.includes('codelens')) scenarioCodeLens();
    if (CFG.only.includes('fleet')) await scenarioFleet();
    if (CFG.only.includes('faststart')) await scenarioFastStart();
    if (CFG.only.includes('insight')) await scenarioInsight();
    if (CFG.only.includes('fleetjobs')) {
      await scenarioFleetJobs({
        tmp: TMP,
        items: CFG.fleetJobsItems,
        submits: CFG.fleetSubmits,
        runs: CFG.fleetJobsRuns,
        log,
        add,
        fmt,
        spawner: async (items, concurrency) => (await runChild<{ wallMs: number }>('spawner', { items, command: '/bin/true', args: [], concurrency })).wallMs,
        raw,
      });
    }
  } catch (err) {
    // The rows measured before the failure are written all the same: a full run is most of an
    // hour on a quiet machine, and its figures are worth keeping when a later scenario breaks.
    failure = err as Error;
  } finally {
    rmSync(TMP, { recursive: true, force: true });
  }
  const seconds = (Date.now() - started.getTime()) / 1000;
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${mb(os.totalmem())} MB, ${os.platform()} ${os.release()}, node ${process.version}`;
  const summary =
    `# Benchmark "${CFG.name}" — ${started.toISOString()}\n\n` +
    `Machine: ${machine}; load average at start ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}. Took ${seconds.toFixed(0)} s.\n\n` +
    `${table()}\n\n` +
    `Targets met: ${rows.filter((r) => r.met === true).length}; missed: ${rows.filter((r) => r.met === false).length}` +
    `${rows.some((r) => r.met === false) ? ` (${rows.filter((r) => r.met === false).map((r) => r.measure).join('; ')})` : ''}.\n` +
    (failure ? `\n**The run broke** before it ended, so later scenarios are missing: ${failure.message}\n` : '');
  mkdirSync(OUT, { recursive: true });
  writeFileSync(
    path.join(OUT, `${CFG.name}.json`),
    JSON.stringify({ name: CFG.name, startedAt: started.toISOString(), seconds, machine, config: CFG, rows, raw, failure: failure?.stack }, null, 2),
  );
  writeFileSync(path.join(OUT, `${CFG.name}.md`), summary);
  process.stdout.write(`\n${summary}\nwritten: bench-results/${CFG.name}.json, bench-results/${CFG.name}.md\n`);
  if (failure) throw failure;
}

main().catch((err) => {
  log(`bench failed: ${(err as Error).stack ?? err}`);
  rmSync(TMP, { recursive: true, force: true });
  process.exit(1);
});
