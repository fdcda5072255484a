// The fleet drain loop, run by hand (outside every test run):
//
//   npm run build && npx tsx test/soak/fleetDrain.ts [runs=20] [items=300] [burners=1]
//
// Each run: a fresh database on one real PostgreSQL, three engines (shared workspace, concurrency
// 2, as the fleet test), `items` × `sleep 0.05` in one queue file, drained while `burners`
// CPU-bound processes run beside it. Every engine's /health is asked every 250 ms (2 s timeout);
// any exit, refused connection, timeout or slow answer is reported with the engine's stderr, as
// is every attempt that did not succeed and every engine that takes long to stop. Exit code 1
// when anything of that happened.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assertFleetBuilt, enqueue, getJson, startFleetEngine, stopFleetEngine, type FleetEngine } from '../../bench/fleetEngines';
import { PostgresServer } from '../unit/support/postgres';

const RUNS = Number(process.argv[2] ?? 20);
const ITEMS = Number(process.argv[3] ?? 300);
const BURNERS = Number(process.argv[4] ?? 1);
/** A /health answer slower than this is reported (the engine's event loop was held). */
const SLOW_MS = 1000;

interface Watch {
  checks: number;
  maxMs: number;
  slow: number;
  problems: string[];
}

async function watchHealth(e: FleetEngine, name: string, w: Watch, until: () => boolean): Promise<void> {
  while (!until()) {
    const t0 = performance.now();
    try {
      const res = await fetch(`${e.url}/health`, { signal: AbortSignal.timeout(2000) });
      const body = await res.text();
      if (res.status !== 200) w.problems.push(`${name}: /health ${res.status} ${body}`);
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
      w.problems.push(`${name}: /health failed (${cause}) after ${Math.round(performance.now() - t0)} ms${e.exit ? `; exited ${e.exit.code ?? e.exit.signal}` : ''}`);
      if (e.exit) return;
    }
    const ms = performance.now() - t0;
    w.checks++;
    w.maxMs = Math.max(w.maxMs, ms);
    if (ms > SLOW_MS) {
      w.slow++;
      w.problems.push(`${name}: /health took ${Math.round(ms)} ms`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

function burn(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) { Math.sqrt(Math.random()); }'], { stdio: 'ignore' });
}

async function main(): Promise<void> {
  assertFleetBuilt();
  const pg = await PostgresServer.start();
  const burners = Array.from({ length: BURNERS }, burn);
  const live = new Set<FleetEngine>();
  // Interrupted by hand: no engine, burner or database server is left behind.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const b of burners) b.kill('SIGKILL');
      for (const e of live) e.child.kill('SIGKILL');
      pg.stop();
      process.exit(130);
    });
  }
  let failedRuns = 0;
  let logLines = 0;
  console.log(`fleet drain loop: ${RUNS} runs × ${ITEMS} × sleep 0.05, 3 engines × concurrency 2, ${BURNERS} CPU burner(s) beside it`);
  try {
    for (let run = 1; run <= RUNS; run++) {
      const db = `drain_${run}`;
      const url = pg.createDatabase(db);
      const dir = mkdtempSync(path.join(os.tmpdir(), 'em-fleet-drain-'));
      const ws = path.join(dir, 'ws');
      const engines: FleetEngine[] = [];
      const problems: string[] = [];
      const watches: Watch[] = [];
      let done = false;
      const t0 = performance.now();
      try {
        for (let i = 0; i < 3; i++) {
          engines.push(await startFleetEngine({ workspace: ws, storage: path.join(dir, `state-${i}`), url, queueDir: i === 0 ? '.engine/queue' : `.engine/queue-${i}`, concurrency: 2, pollIntervalMs: 200 }));
          live.add(engines[i]);
        }
        const watchers = engines.map((e, i) => {
          const w: Watch = { checks: 0, maxMs: 0, slow: 0, problems };
          watches.push(w);
          return watchHealth(e, `engine ${i} (pid ${e.child.pid})`, w, () => done);
        });
        const started = enqueue(ws, 'work.json', Array.from({ length: ITEMS }, (_, i) => ({ id: `job-${i}`, command: 'sleep', args: ['0.05'] })));
        const deadline = performance.now() + 300_000;
        let launched = 0;
        while (performance.now() < deadline) {
          await new Promise((r) => setTimeout(r, 200));
          const alive = engines.find((e) => !e.exit);
          if (!alive) break;
          try {
            const s = await getJson<{ overview: { launched: number; failed: number } }>(`${alive.url}/stats`, 5000);
            launched = s.overview.launched;
            if (s.overview.launched + s.overview.failed >= ITEMS) break;
          } catch {
            // the watchers report it
          }
        }
        const drainMs = performance.now() - started;
        done = true;
        await Promise.all(watchers);
        if (launched !== ITEMS) problems.push(`only ${launched} of ${ITEMS} launched after ${Math.round(drainMs)} ms`);
        const sql = (q: string) => pg.psql(db, q).trim();
        const attempts = Number(sql('SELECT count(*) FROM attempts'));
        const notOk = sql("SELECT outcome || ': ' || coalesce(error, '') || ' ×' || count(*) FROM attempts WHERE outcome <> 'succeeded' GROUP BY outcome, error");
        if (notOk) problems.push(`attempts not succeeded: ${notOk.split('\n').join('; ')}`);
        const warnings = sql("SELECT action || ' ×' || count(*) || ': ' || min(message) FROM logs WHERE level >= 2 GROUP BY action");
        if (warnings) problems.push(`warnings and errors logged: ${warnings.split('\n').join('; ')}`);
        const perEngine = sql('SELECT count(*) FROM attempts GROUP BY engine_id ORDER BY 1').split('\n').join('/');
        for (const [i, e] of engines.entries()) if (e.exit) problems.push(`engine ${i} exited during the run: ${e.exit.code ?? e.exit.signal}\n${e.stderr().slice(-4000)}`);
        const stopMs = await Promise.all(engines.map((e) => stopFleetEngine(e)));
        for (const [i, e] of engines.entries()) {
          if (e.exit && e.exit.code !== 0) problems.push(`engine ${i} ended with ${e.exit.code ?? e.exit.signal}\n${e.stderr().slice(-4000)}`);
          else {
            // What every engine says on SIGTERM is expected; anything else is a problem.
            const said = e.stderr().split('\n').filter((l) => l.trim() && !/^engine-monitor: SIGTERM; stopping/.test(l));
            if (said.length > 0) problems.push(`engine ${i} wrote to stderr:\n${said.join('\n').slice(-4000)}`);
          }
        }
        const slowest = Math.max(...watches.map((w) => w.maxMs));
        console.log(
          `run ${run}: drained ${launched}/${ITEMS} in ${Math.round(drainMs)} ms (${attempts} attempts, per engine ${perEngine}); ` +
            `/health ${watches.reduce((n, w) => n + w.checks, 0)} checks, slowest ${Math.round(slowest)} ms; stop ${stopMs.map((ms) => Math.round(ms)).join('/')} ms; ` +
            `run total ${Math.round(performance.now() - t0)} ms`,
        );
      } catch (err) {
        problems.push(`run broke: ${(err as Error).stack ?? String(err)}`);
        done = true;
        await Promise.all(engines.map((e) => stopFleetEngine(e)));
      } finally {
        for (const e of engines) live.delete(e);
        rmSync(dir, { recursive: true, force: true });
      }
      const serverLog = readFileSync(path.join(pg.dir, 'server.log'), 'utf8').split('\n');
      const pgErrors = serverLog.slice(logLines).filter((l) => /ERROR|FATAL|PANIC|deadlock/.test(l));
      logLines = serverLog.length - 1;
      if (pgErrors.length > 0) problems.push(`PostgreSQL's log:\n${pgErrors.slice(0, 20).join('\n')}`);
      if (problems.length > 0) {
        failedRuns++;
        for (const p of [...new Set(problems)]) console.log(`  PROBLEM: ${p}`);
      }
    }
  } finally {
    for (const b of burners) b.kill('SIGKILL');
    pg.stop();
  }
  console.log(`${RUNS - failedRuns} of ${RUNS} runs clean`);
  process.exitCode = failedRuns > 0 ? 1 : 0;
}

void main();
