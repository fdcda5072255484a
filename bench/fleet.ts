// The fleet's throughput and latency, measured the way graphile-worker measures its own
// (perfTest/: N jobs inserted at once, K workers, jobs/s = N / wall time; latency: sequential
// submits, submit → start), on real CLI engines (dist/cli.js serve) and a real PostgreSQL server
// started for the run. `BENCH_ONLY=fleetjobs npx tsx bench/run.ts`.
//
// - Throughput: `items` × /bin/true submitted at once through the first engine's POST /items (in
//   batches of 1,000, the most one request takes), drained by 1, 2 and 3 engines (concurrency 4
//   each). Wall time is from the first request to the last attempt's end as the database recorded it.
// - Latency: `submits` items one after another, each `/bin/date +%s%3N`, so the attempt's own
//   output says when its process started. Local: one engine. Cross-engine: two engines sharing a
//   folder, the one that ingests kept busy (its 4 slots hold items only it can start), so every
//   item starts on the other. Submit → start counts from sending the POST /items; ingest → start
//   from the ingesting engine's commit of the item.
// - The floor: the bare Node.js spawner (bench/child/spawner.ts) over the same items, same run.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { assertFleetBuilt, enqueue, getJson, startFleetEngine, stopFleetEngine, type FleetEngine } from './fleetEngines';
import { median, percentile, type Row } from './lib';

export interface FleetJobsContext {
  tmp: string;
  items: number;
  submits: number;
  runs: number;
  log(message: string): void;
  add(row: Row): void;
  fmt(n: number): string;
  /** The bare spawner's wall time for `items` × /bin/true at `concurrency`. */
  spawner(items: number, concurrency: number): Promise<number>;
  raw: Record<string, unknown>;
}

const CONCURRENCY = 4;
/** The engines' token: POST /items needs one. */
const TOKEN = 'bench-fleet-token';
/** The most items one POST /items takes. */
const BATCH = 1000;

/** Submits items through an engine's POST /items, a batch at a time; throws unless each is taken (201). */
async function submitItems(url: string, items: unknown[]): Promise<void> {
  for (let i = 0; i < items.length; i += BATCH) {
    const res = await fetch(`${url}/items`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(items.slice(i, i + BATCH)),
    });
    const body = await res.text();
    if (res.status !== 201) throw new Error(`POST /items answered ${res.status}: ${body.slice(0, 500)}`);
  }
}
/** Short, so that finding a renamed file costs little of what is measured; stated in the rows. */
const POLL_MS = 100;

/** graphile-worker's, River's and pg-boss's own published figures (their hardware: quoted beside ours, never as a ratio). */
export const FLEET_ANCHORS =
  'anchors (their hardware, in-process no-op jobs): graphile-worker 15,607 jobs/s unbatched, 4.28 ms average latency (i9-14900K); River ~46k jobs/s (M2); an independent 4-CPU harness: pg-boss 2,387 jobs/s, River 501';

export async function scenarioFleetJobs(ctx: FleetJobsContext): Promise<void> {
  assertFleetBuilt();
  ctx.log(`fleet jobs: ${ctx.items} × /bin/true at once on 1, 2, 3 engines × concurrency ${CONCURRENCY}; ${ctx.submits} sequential submits, local and cross-engine; ${ctx.runs} run(s)`);
  const { PostgresServer } = await import('../test/unit/support/postgres');
  const pg = await PostgresServer.start();
  let n = 0;
  const fresh = () => {
    const name = `jobs_${++n}`;
    const dir = path.join(ctx.tmp, `fleet-jobs-${n}`);
    return { db: name, url: pg.createDatabase(name), dir, ws: path.join(dir, 'ws'), own: path.join(dir, 'own') };
  };
  const sql = (db: string, q: string) => pg.psql(db, q).trim();
  const engines: FleetEngine[] = [];
  const start = async (url: string, dir: string, folders: string[], i: number) => {
    const e = await startFleetEngine({
      workspace: folders[0],
      storage: path.join(dir, `state-${i}`),
      url,
      queueDir: i === 0 ? '.engine/queue' : `.engine/queue-${i}`,
      concurrency: CONCURRENCY,
      pollIntervalMs: POLL_MS,
      extra: ['--token', TOKEN, ...folders.slice(1).flatMap((f) => ['--workspace', f])],
    });
    engines.push(e);
    return e;
  };
  const stopAll = () => Promise.all(engines.splice(0).map((e) => stopFleetEngine(e)));

  const drain = async (count: number): Promise<{ jobsPerS: number; wallMs: number; perEngine: string }> => {
    const { db, url, dir, ws } = fresh();
    try {
      const es: FleetEngine[] = [];
      for (let i = 0; i < count; i++) es.push(await start(url, dir, [ws], i));
      const items = Array.from({ length: ctx.items }, (_, i) => ({ id: `t${i}`, command: '/bin/true' }));
      const t0 = Date.now();
      await submitItems(es[0].url, items);
      for (;;) {
        await new Promise((r) => setTimeout(r, 100));
        const dead = es.find((e) => e.exit);
        if (dead) throw new Error(`engine ${es.indexOf(dead)} exited (${dead.exit!.code ?? dead.exit!.signal}) during the drain:\n${dead.stderr()}`);
        const s = await getJson<{ overview: { launched: number; failed: number } }>(`${es.find((e) => !e.exit)!.url}/stats`, 10_000, TOKEN);
        if (s.overview.launched + s.overview.failed >= ctx.items) break;
      }
      const wallMs = Number(sql(db, 'SELECT max(finished_at) FROM attempts')) - t0;
      const perEngine = sql(db, 'SELECT count(*) FROM attempts GROUP BY engine_id ORDER BY 1 DESC').split('\n').join('/');
      return { jobsPerS: (ctx.items * 1000) / wallMs, wallMs, perEngine };
    } finally {
      await stopAll();
    }
  };

  const latency = async (cross: boolean): Promise<{ submit: number[]; ingest: number[]; elsewhere: number }> => {
    const { db, url, dir, ws, own } = fresh();
    mkdirSync(path.join(own, '.engine', 'queue'), { recursive: true });
    try {
      const a = await start(url, dir, cross ? [ws, own] : [ws], 0);
      let bId = '';
      if (cross) {
        const b = await start(url, dir, [ws], 1);
        bId = (await getJson<{ engine: { engineId: string } }>(`${b.url}/status`, 10_000, TOKEN)).engine.engineId;
        // The ingesting engine's slots, taken by items only it can start (their cwd is its own folder).
        enqueue(own, 'busy.json', Array.from({ length: CONCURRENCY }, (_, i) => ({ id: `busy-${i}`, command: 'sleep', args: ['3600'] })));
        for (;;) {
          await new Promise((r) => setTimeout(r, 100));
          if ((await getJson<{ engine: { running: number } }>(`${a.url}/status`, 10_000, TOKEN)).engine.running === CONCURRENCY) break;
        }
      }
      const submittedAt = new Map<string, number>();
      for (let i = 0; i < ctx.submits; i++) {
        const id = `l${i}`;
        submittedAt.set(id, Date.now());
        await submitItems(a.url, [{ id, command: '/bin/date', args: ['+%s%3N'] }]);
        for (;;) {
          await new Promise((r) => setTimeout(r, 10));
          const d = await getJson<{ outcome: string }>(`${a.url}/items/${id}`, 10_000, TOKEN).catch(() => undefined);
          if (d && d.outcome !== 'pending') break;
        }
      }
      const rows = sql(db, "SELECT i.id, i.created_at, btrim(a.stdout_tail, E'\\n '), a.engine_id FROM items i JOIN attempts a ON a.item_id = i.id WHERE i.id LIKE 'l%'")
        .split('\n')
        .map((r) => r.split('|'));
      if (rows.length !== ctx.submits || rows.some((r) => r.length !== 4 || !/^\d+$/.test(r[2]))) throw new Error(`unexpected attempts of the latency items: ${JSON.stringify(rows.slice(0, 5))}`);
      const submit: number[] = [];
      const ingest: number[] = [];
      let elsewhere = 0;
      for (const [id, createdAt, out, engineId] of rows) {
        const startedAt = Number(out.trim());
        submit.push(startedAt - submittedAt.get(id)!);
        ingest.push(startedAt - Number(createdAt));
        if (engineId === bId) elsewhere++;
      }
      return { submit: submit.sort((x, y) => x - y), ingest: ingest.sort((x, y) => x - y), elsewhere };
    } finally {
      await stopAll();
    }
  };

  const jobs: Record<number, number[]> = { 1: [], 2: [], 3: [] };
  const floors: Record<number, number[]> = { 4: [], 12: [] };
  let local: Awaited<ReturnType<typeof latency>> | undefined;
  let cross: Awaited<ReturnType<typeof latency>> | undefined;
  try {
    for (let run = 0; run < ctx.runs; run++) {
      for (const c of [4, 12]) floors[c].push((ctx.items * 1000) / (await ctx.spawner(ctx.items, c)));
      for (const count of [1, 2, 3]) {
        const r = await drain(count);
        jobs[count].push(r.jobsPerS);
        ctx.log(`  run ${run + 1}, ${count} engine(s): ${ctx.fmt(r.jobsPerS)} jobs/s (${ctx.fmt(r.wallMs)} ms; attempts per engine ${r.perEngine})`);
      }
    }
    local = await latency(false);
    cross = await latency(true);
  } finally {
    await stopAll();
    pg.stop();
  }
  const j = (c: number) => median(jobs[c]);
  const floor4 = median(floors[4]);
  const floor12 = median(floors[12]);
  ctx.raw.fleetJobs = { jobs, floors, local, cross };
  const note = `${ctx.items} × /bin/true through POST /items (batches of ${BATCH}), poll interval ${POLL_MS} ms; ${FLEET_ANCHORS}`;
  ctx.add({ scenario: 'fleetjobs', measure: `1 engine × ${CONCURRENCY}: jobs/s`, value: j(1), unit: 'jobs/s', baseline: floor4, ratio: j(1) / floor4, note: `baseline: the bare spawner at concurrency 4, same run; ${note}` });
  ctx.add({ scenario: 'fleetjobs', measure: `2 engines × ${CONCURRENCY}: jobs/s`, value: j(2), unit: 'jobs/s', baseline: floor12, ratio: j(2) / floor12, note: 'baseline: the bare spawner at concurrency 12, same run' });
  ctx.add({ scenario: 'fleetjobs', measure: `3 engines × ${CONCURRENCY}: jobs/s`, value: j(3), unit: 'jobs/s', baseline: floor12, ratio: j(3) / floor12, note: 'baseline: the bare spawner at concurrency 12, same run' });
  ctx.add({ scenario: 'fleetjobs', measure: 'scale-out, 2 engines vs 1', value: (j(2) / (2 * j(1))) * 100, unit: '% of linear' });
  ctx.add({ scenario: 'fleetjobs', measure: 'scale-out, 3 engines vs 1', value: (j(3) / (3 * j(1))) * 100, unit: '% of linear' });
  for (const [label, r] of [['local', local], ['cross-engine', cross]] as const) {
    const where = label === 'local' ? 'one engine' : `${r.elsewhere} of ${r.submit.length} started on the other engine`;
    ctx.add({ scenario: 'fleetjobs', measure: `submit → start, ${label}: p50`, value: percentile(r.submit, 50), unit: 'ms', note: `${r.submit.length} sequential POST /items of one item each, ${where}; from sending the request` });
    ctx.add({ scenario: 'fleetjobs', measure: `submit → start, ${label}: p99`, value: percentile(r.submit, 99), unit: 'ms' });
    ctx.add({ scenario: 'fleetjobs', measure: `ingest → start, ${label}: p50`, value: percentile(r.ingest, 50), unit: 'ms', note: 'from the ingesting engine\'s commit of the item to its process\'s first output of the time' });
    ctx.add({ scenario: 'fleetjobs', measure: `ingest → start, ${label}: p99`, value: percentile(r.ingest, 99), unit: 'ms' });
  }
}
