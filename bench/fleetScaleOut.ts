// `npm run bench` scenario `fleet`: scale-out of engines sharing a PostgreSQL store, and the
// per-item overhead of PostgreSQL against sql.js. (The fleet's jobs/s and latency, `fleetjobs`, are
// bench/fleet.ts.)
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CFG, ROOT, TMP } from './config';
import { add, fmt, log, raw } from './results';
import { median } from './lib';

/**
 * The fleet. The same `sleep 0.05` items drained by one engine (concurrency 2) and by
 * three (concurrency 2 each) on a real PostgreSQL server started for the run, and by one engine on
 * sql.js: scale-out efficiency is (time of one) / (3 × time of three), 1.0 being linear; per-item
 * overhead is the time an item costs beyond its sleep (wall time × concurrency / items − 50 ms),
 * on PostgreSQL against sql.js. Real CLI processes (dist/cli.js, built first), timed from the
 * enqueue to /stats reporting every item launched.
 */
export async function scenarioFleet(): Promise<void> {
  log(`fleet: ${CFG.fleetItems} × sleep 0.05, 1 vs 3 engines × concurrency 2 on PostgreSQL, 1 on sql.js; ${CFG.fleetRuns} run(s)`);
  const cli = path.join(ROOT, 'dist', 'cli.js');
  if (!existsSync(cli) || !existsSync(path.join(ROOT, 'dist', 'pg-worker.js'))) throw new Error('fleet: run "npm run build" first (dist/cli.js and dist/pg-worker.js)');
  const { PostgresServer } = await import('../test/unit/support/postgres');
  const pg = await PostgresServer.start();
  let db = 0;
  const drain = async (engines: number, store: 'postgres' | 'sqljs'): Promise<number> => {
    const dir = path.join(TMP, `fleet-${++db}`);
    const ws = path.join(dir, 'ws');
    const url = store === 'postgres' ? pg.createDatabase(`bench_${db}`) : undefined;
    const children: ChildProcess[] = [];
    try {
      const urls: string[] = [];
      for (let i = 0; i < engines; i++) {
        const queueDir = i === 0 ? '.engine/queue' : `.engine/queue-${i}`;
        mkdirSync(path.join(ws, queueDir), { recursive: true });
        const args = [cli, 'serve', '--workspace', ws, '--storage', path.join(dir, `state-${i}`), '--port', '0', '--quiet', '--concurrency', '2', '--poll-interval', '200', '--queue-dir', queueDir];
        if (url) args.push('--store', url);
        const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
        children.push(child);
        urls.push(
          await new Promise<string>((resolve, reject) => {
            let out = '';
            child.stdout.on('data', (c: Buffer) => {
              out += c.toString();
              const m = /^listening on (\S+)$/m.exec(out);
              if (m) resolve(m[1]);
            });
            child.once('exit', (code) => reject(new Error(`fleet engine exited with ${code}`)));
          }),
        );
      }
      const items = Array.from({ length: CFG.fleetItems }, (_, i) => ({ id: `f${i}`, command: 'sleep', args: ['0.05'] }));
      const file = path.join(ws, '.engine', 'queue', 'work.json');
      writeFileSync(`${file}.tmp`, JSON.stringify(items));
      const started = performance.now();
      renameSync(`${file}.tmp`, file);
      for (;;) {
        await new Promise((r) => setTimeout(r, 100));
        const body = (await (await fetch(`${urls[0]}/stats`)).json()) as { overview: { launched: number; failed: number } };
        if (body.overview.launched + body.overview.failed >= CFG.fleetItems) break;
      }
      return performance.now() - started;
    } finally {
      await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : (c.once('exit', r), c.kill('SIGTERM'))))));
    }
  };
  const one: number[] = [];
  const three: number[] = [];
  const sqljs: number[] = [];
  try {
    for (let run = 0; run < CFG.fleetRuns; run++) {
      sqljs.push(await drain(1, 'sqljs'));
      one.push(await drain(1, 'postgres'));
      three.push(await drain(3, 'postgres'));
      log(`  run ${run + 1}: sql.js ${fmt(sqljs.at(-1)!)} ms, PostgreSQL 1 engine ${fmt(one.at(-1)!)} ms, 3 engines ${fmt(three.at(-1)!)} ms`);
    }
  } finally {
    pg.stop();
  }
  const t1 = median(one);
  const t3 = median(three);
  const ts = median(sqljs);
  const efficiency = t1 / (3 * t3);
  const overhead = (ms: number) => (ms * 2) / CFG.fleetItems - 50;
  raw.fleet = { one, three, sqljs };
  add({ scenario: 'fleet', measure: `3 engines × 2 vs 1 × 2, ${CFG.fleetItems} × sleep 0.05: scale-out efficiency`, value: efficiency * 100, unit: '% of linear', baseline: 100, ratio: efficiency, target: '≥ 80 %', met: efficiency >= 0.8, note: `drain ${fmt(t3)} ms vs ${fmt(t1)} ms (medians)` });
  add({ scenario: 'fleet', measure: 'per-item overhead beyond the sleep, PostgreSQL (1 engine)', value: overhead(t1), unit: 'ms', baseline: overhead(ts), ratio: overhead(t1) / overhead(ts), note: `baseline: sql.js, 1 engine (drain ${fmt(ts)} ms)` });
}
