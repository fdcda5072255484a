// Attempt insight with real processes through a real engine and its launch helpers: what an
// attempt's process group cost (memory of a child and of a grandchild, CPU of a busy loop), when it
// first printed, the item's durations and the attempt that was slow; schema-5 databases migrated;
// the /metrics histograms.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { median, percentile, slowAgainst, summarizeDurations } from '../../src/core/features/insight/durations';
import { migrate } from '../../src/core/store/schema';
import { loadSqlJs } from '../../src/core/store/sqlJs';
import { createEngineMetrics } from '../../src/server/metrics';
import { buildOpenApiDocument } from '../../src/server/openapi';
import { OpenApiChecker } from './support/http';
import type { AttemptDetail } from '../../src/shared/api';
import { PG_SCHEMA_V1, PG_SCHEMA_VERSION } from '../../src/core/store/pgSchema';
import { spawn } from 'node:child_process';
import { ResourceSampler } from '../../src/core/launching/resourceSampler';
import { allLogs, NODE, nodeItem, settled, TempWorkspace, waitFor } from './support/workspace';
import { startPostgresOrSkip, type PostgresServer } from './support/postgres';

const MB = 1024 * 1024;
/** 150 MB written (so resident, not only reserved), held long enough for several samples. */
const ALLOCATE_150MB = 'const b = Buffer.alloc(150 * 1024 * 1024, 1); setTimeout(() => b.length, 1200)';

describe('attempt insight', function () {
  this.timeout(90_000);
  let ws: TempWorkspace;
  let engine: Engine | undefined;

  beforeEach(() => {
    ws = new TempWorkspace('engine-insight-');
  });
  afterEach(async () => {
    await engine?.shutdown(1000);
    engine = undefined;
    ws.dispose();
  });

  const lastAttempt = (id: string): AttemptDetail => {
    const attempts = engine!.itemDetail(id)!.attempts;
    return attempts[attempts.length - 1];
  };

  it('records each attempt group\'s CPU, peak memory (a grandchild\'s included) and first output, in the launch helpers', async () => {
    // The grandchild: the leader runs a shell that runs node; only the grandchild allocates.
    const grandchild = `require('node:child_process').spawnSync('/bin/sh', ['-c', ${JSON.stringify(`"${NODE}" -e "${ALLOCATE_150MB}"; true`)}], { stdio: 'ignore' })`;
    ws.enqueue('insight.jsonl', [
      nodeItem('memory', ALLOCATE_150MB),
      // Busy until it has used 1 s of CPU by its own count, however loaded the machine is.
      nodeItem('busy', 'const u = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1000; }; while (u() < 1000);'),
      nodeItem('grandchild', grandchild),
      nodeItem('silent', 'setTimeout(() => 0, 300)'),
      nodeItem('talker', 'setTimeout(() => console.log("hello"), 400)'),
    ].map((i) => JSON.stringify(i)).join('\n'));
    engine = await Engine.create(ws.options({ concurrency: 2 }));
    await engine.start();
    await settled(engine, 60_000);

    const memory = lastAttempt('memory');
    assert.equal(memory.outcome, 'succeeded');
    assert.ok(memory.resources, 'memory: resources measured');
    assert.equal(memory.resources.sampledEveryMs, 250);
    const peak = memory.resources.peakRssBytes!;
    assert.ok(peak >= 100 * MB && peak <= 1024 * MB, `a child allocating 150 MB peaked at ${peak / MB} MB`);

    const busy = lastAttempt('busy');
    const cpuMs = busy.resources!.cpuMs!;
    // 1 s of its own, and Node's start; one thread cannot use much more CPU than time passed.
    assert.ok(cpuMs >= 950 && cpuMs <= busy.durationMs! + 500, `a busy loop of 1 s of CPU reported ${cpuMs} ms of CPU in ${busy.durationMs} ms`);
    assert.ok(memory.resources.cpuMs! < cpuMs, 'the allocation used less CPU than the busy loop');

    // Node alone, without the grandchild's 150 MB, is about 40-60 MB resident.
    const grand = lastAttempt('grandchild').resources!.peakRssBytes!;
    assert.ok(grand >= 150 * MB && grand <= 1024 * MB, `a grandchild allocating 150 MB counts: the group peaked at ${grand / MB} MB`);

    assert.equal(lastAttempt('silent').firstOutputMs, null, 'an attempt that printed nothing has no first output');
    assert.ok(lastAttempt('silent').resources, 'a silent attempt still has its resources');
    const first = lastAttempt('talker').firstOutputMs!;
    assert.ok(first >= 395 && first < 20_000, `printed 400 ms after its start: firstOutputMs ${first}`);

    // As the API document says, no field more (strict), no field less.
    const checker = new OpenApiChecker(buildOpenApiDocument('0.0.0-test', 'http://127.0.0.1:1'));
    for (const id of ['memory', 'busy', 'grandchild', 'silent', 'talker']) checker.assertComponent('ItemDetail', engine.itemDetail(id));

    // The histograms of /metrics saw them.
    const metrics = createEngineMetrics(engine);
    await engine.pollNow();
    const text = await metrics.scrape();
    metrics.close();
    assert.match(text, /# TYPE engine_monitor_attempt_peak_rss_bytes histogram/);
    assert.match(text, /# TYPE engine_monitor_attempt_cpu_seconds histogram/);
  });

  it('/metrics histograms count each measured attempt', async () => {
    engine = await Engine.create(ws.options());
    const metrics = createEngineMetrics(engine);
    await engine.start();
    ws.enqueue('m.json', nodeItem('m', ALLOCATE_150MB));
    await engine.pollNow();
    await settled(engine);
    const text = await metrics.scrape();
    metrics.close();
    assert.match(text, /engine_monitor_attempt_peak_rss_bytes_count 1\n/);
    assert.match(text, /engine_monitor_attempt_peak_rss_bytes_bucket\{le="67108864"\} 0\n/, 'not under 64 MiB');
    assert.match(text, /engine_monitor_attempt_peak_rss_bytes_bucket\{le="1073741824"\} 1\n/, 'under 1 GiB');
    assert.match(text, /engine_monitor_attempt_cpu_seconds_count 1\n/);
  });

  it('summarizes the durations and marks the attempt that took more than twice the median of those before it', async () => {
    // Attempts 1-4 fail after 2 s, 5 fails after 8 s, 6 succeeds at once. Not "1-4 at once": then
    // each is a Node.js start, and on a loaded machine one start can take twice another's, which
    // made attempt 4 "slow" too (the dashboard's chart test did so in a run of the suite under load).
    const code = 'const n = Number(process.env.ENGINE_ATTEMPT); if (n >= 6) process.exit(0); setTimeout(() => process.exit(1), n === 5 ? 8000 : 2000)';
    ws.enqueue('slow.json', nodeItem('slow', code, { maxAttempts: 6 }));
    engine = await Engine.create(ws.options());
    await engine.start();
    await settled(engine, 60_000);
    const detail = engine.itemDetail('slow')!;
    assert.equal(detail.outcome, 'launched');
    assert.deepEqual(detail.attempts.map((a) => a.slow), [false, false, false, false, true, false]);
    const ms = detail.attempts.map((a) => a.durationMs!);
    assert.deepEqual(detail.durations, summarizeDurations(ms));
    assert.equal(detail.durations.count, 6);
    assert.ok(detail.durations.p90Ms! >= 8000, 'the slow attempt is the 90th percentile');
    const warnings = allLogs(engine).filter((e) => e.action === 'attempt_slow');
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0].level, 'warn');
    assert.equal(warnings[0].itemId, 'slow');
    assert.equal(warnings[0].details?.durationMs, ms[4]);
  });

  it('migrates a schema-5 database: its attempts read without figures, new ones get them', async () => {
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    migrate(db, 5);
    const now = Date.now();
    db.run(
      "INSERT INTO items (id, name, source, definition, def_hash, outcome, attempts, max_attempts, run_at, due_at, running, last_error, created_at, updated_at) VALUES ('old', 'old', '.engine/queue/old.json', ?, 'x', 'failed', 1, 1, NULL, NULL, 0, 'exited with code 1', ?, ?)",
      [JSON.stringify({ command: NODE, args: ['-e', '0'], shell: false, cwd: ws.folder, env: {}, timeoutMs: 30_000 }), now, now],
    );
    db.run("INSERT INTO attempts (id, item_id, attempt, started_at, finished_at, outcome, exit_code) VALUES (1, 'old', 1, ?, ?, 'failed', 1)", [now - 40, now]);
    db.run("INSERT INTO meta (key, value) VALUES ('total_launches', '1'), ('total_failed', '1'), ('journal_seq', '0')");
    mkdirSync(ws.storage, { recursive: true });
    writeFileSync(path.join(ws.storage, 'engine.sqlite'), db.export());
    db.close();

    engine = await Engine.create(ws.options());
    await engine.start();
    const old = engine.itemDetail('old')!;
    assert.deepEqual(
      { resources: old.attempts[0].resources, firstOutputMs: old.attempts[0].firstOutputMs, slow: old.attempts[0].slow },
      { resources: null, firstOutputMs: null, slow: false },
    );
    assert.deepEqual(old.durations, { count: 1, medianMs: 40, p90Ms: 40 });
    engine.retryItem('old');
    await waitFor('the retry', () => engine!.itemDetail('old')!.attempts.length === 2 && engine!.itemDetail('old')!.attempts[1].finishedAt);
    assert.ok(engine.itemDetail('old')!.attempts[1].resources, 'the new attempt is measured');
    await engine.shutdown(1000);
    engine = undefined;
    const reopened = new SQL.Database(readFileSync(path.join(ws.storage, 'engine.sqlite')));
    assert.equal(Number(reopened.exec('PRAGMA user_version')[0].values[0][0]), 6);
    assert.equal(reopened.exec('SELECT count(*) FROM attempts WHERE sampled_every_ms = 250')[0].values[0][0], 1);
    reopened.close();
  });

  for (const walk of [true, false]) {
    it(`the sampler ${walk ? 'walking the attempt\'s tree' : 'listing /proc'} counts a grandchild, and a process that left with setsid does not`, async () => {
      const sampler = new ResourceSampler(process.platform, true, walk);
      assert.equal(sampler.walksTrees, walk);
      // sh → sh → node holding 150 MB; beside it, a process that leaves with setsid and holds 150 MB too.
      const hold = `"${NODE}" -e "${ALLOCATE_150MB.replace('1200', '4000')}"`;
      const leader = spawn('/bin/sh', ['-c', `/bin/sh -c '${hold}; true' & setsid ${hold} & wait`], { detached: true, stdio: 'ignore' });
      const usage = sampler.track(leader)!;
      const exited = new Promise((r) => leader.once('exit', r));
      try {
        await waitFor('the grandchild\'s 150 MB in a sample', () => {
          sampler.scan();
          return usage.peakRssPages !== null && usage.peakRssPages * 4096 >= 150 * MB;
        }, 30_000);
        sampler.scan();
        const peak = (await sampler.stop(usage))!.peakRssBytes!;
        assert.ok(peak >= 150 * MB && peak < 300 * MB, `the group peaked at ${peak / MB} MB: the grandchild's 150 MB, not the escaped process's`);
      } finally {
        // The group; the process that left it ends by itself 4 s after its start.
        try {
          process.kill(-leader.pid!, 'SIGKILL');
        } catch {
          // gone
        }
        await exited;
      }
    });
  }

  it('median, nearest-rank percentile and the slow rule', () => {
    assert.equal(median([]), null);
    assert.equal(median([5, 1, 3]), 3);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90), 9);
    assert.equal(percentile([7], 90), 7);
    assert.deepEqual(summarizeDurations([]), { count: 0, medianMs: null, p90Ms: null });
    assert.equal(slowAgainst(1000, [100, 100]), null, 'two before it are too few to judge');
    assert.equal(slowAgainst(201, [100, 100, 100]), 100);
    assert.equal(slowAgainst(200, [100, 100, 100]), null, 'twice the median is not more than twice');
    // Only the 10 newest before it count: eleven earlier ones of 1 ms would make 50 slow.
    assert.equal(slowAgainst(50, [100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]), null);
  });

  describe('on PostgreSQL', () => {
    let pg: PostgresServer | undefined;
    before(async function () {
      pg = await startPostgresOrSkip(this);
    });
    after(() => pg?.stop());

    it('migrates a database of the first fleet schema and records the figures and the slow attempt there', async () => {
      const url = pg!.createDatabase('insight_v1');
      // As an engine of the first fleet schema left it: its tables, owned by the engine's role.
      pg!.psql('insight_v1', `SET ROLE engine; ${PG_SCHEMA_V1} CREATE TABLE em_schema (version INTEGER NOT NULL); INSERT INTO em_schema VALUES (1);`);
      const code = 'const n = Number(process.env.ENGINE_ATTEMPT); if (n === 4) setTimeout(() => process.exit(1), 4000); else process.exit(n >= 5 ? 0 : 1)';
      ws.enqueue('slow.json', nodeItem('slow', code, { maxAttempts: 5 }));
      ws.enqueue('memory.json', nodeItem('memory', ALLOCATE_150MB));
      engine = await Engine.create(ws.options({ storeUrl: url }));
      await engine.start();
      await settled(engine, 60_000);
      assert.equal(pg!.psql('insight_v1', 'SELECT version FROM em_schema').trim(), String(PG_SCHEMA_VERSION));
      const slow = engine.itemDetail('slow')!;
      assert.deepEqual(slow.attempts.map((a) => a.slow), [false, false, false, true, false]);
      assert.equal(slow.durations.count, 5);
      const peak = lastAttempt('memory').resources!.peakRssBytes!;
      assert.ok(peak >= 100 * MB && peak <= 1024 * MB, `peaked at ${peak / MB} MB`);
    });
  });
});
