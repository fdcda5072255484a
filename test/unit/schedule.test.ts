// Schedules in the real engine: real queue files, real processes, real HTTP, on each store: a
// real sql.js database on disk and a real PostgreSQL database. The occurrences are computed
// against a clock the test steps (EngineOptions.scheduleClock, test-only), so minute boundaries,
// downtime and DST days are crossed without waiting for them; one test waits for one real minute
// boundary with the real clock.
import assert from 'node:assert/strict';
import { cpSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { parseItem } from '../../src/core/intake/items';
import { startHttpServer } from '../../src/server';
import { engineStores } from './support/engineStores';
import { OpenApiChecker, request } from './support/http';
import { serve, type ServeProcess } from './support/cli';
import { untilFileExists } from './support/escapees';
import { allLogs, assertInvariants, nodeItem, settled, TempWorkspace, waitFor } from './support/workspace';

const at = (iso: string) => Date.parse(iso);

for (const store of engineStores()) describe(`schedules: occurrences, catch-up, overlap, hold and DST (${store.name})`, function () {
  this.timeout(90_000);
  store.setUp();
  let ws: TempWorkspace;
  let engine: Engine | undefined;
  let clock = 0;

  beforeEach(() => {
    ws = new TempWorkspace('engine-sched-');
  });
  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    ws.dispose();
  });

  const open = async (storageDir = ws.storage) => {
    engine = await store.engine(ws, { storageDir, scheduleClock: () => clock });
    await engine.start();
    return engine;
  };
  const occurrences = (e: Engine) => e.listItems({ limit: 100, offset: 0 }).items.map((i) => i.id);
  const step = async (e: Engine, iso: string) => {
    clock = at(iso);
    await e.pollNow();
  };
  /** A step, then every occurrence ran (so overlap: skip does not apply to the next). */
  const stepAndSettle = async (e: Engine, iso: string) => {
    await step(e, iso);
    await settled(e);
  };

  it('fires each occurrence as its own item <id>@<minute>Z (schedule_fired); the template is not counted', async () => {
    clock = at('2026-11-24T01:58:30Z');
    ws.enqueue('nightly.json', { id: 'nightly', command: process.execPath, args: ['-e', '0'], schedule: { cron: '* * * * *', timezone: 'UTC' }, priority: 5 });
    const e = await open();
    assert.deepEqual([e.stats().total, occurrences(e)], [0, []], 'a template is not an item');
    assert.deepEqual(e.listSchedules(), [
      { id: 'nightly', schedule: '* * * * *', timezone: 'UTC', overlap: 'skip', nextRunAt: '2026-11-24T01:59:00.000Z', lastRunAt: null, lastOutcome: null, enabled: true },
    ]);
    await step(e, '2026-11-24T01:58:59Z');
    assert.equal(e.stats().total, 0, 'nothing before the minute');
    await step(e, '2026-11-24T01:59:00Z');
    await settled(e);
    assert.deepEqual(occurrences(e), ['nightly@2026-11-24T01:59Z']);
    const detail = e.itemDetail('nightly@2026-11-24T01:59Z')!;
    assert.deepEqual([detail.outcome, detail.item.schedule, detail.item.priority, detail.item.source], ['launched', null, 5, '.engine/queue/nightly.json']);
    const fired = allLogs(e).filter((x) => x.action === 'schedule_fired');
    assert.deepEqual(
      fired.map((x) => [x.itemId, x.details?.template, x.details?.catchUp]),
      [['nightly@2026-11-24T01:59Z', 'nightly', false]],
    );
    await step(e, '2026-11-24T02:00:20Z');
    await settled(e);
    assert.deepEqual(occurrences(e), ['nightly@2026-11-24T01:59Z', 'nightly@2026-11-24T02:00Z']);
    assert.deepEqual([e.stats().total, e.stats().launched], [2, 2]);
    assertInvariants(e);
    const [s] = e.listSchedules();
    assert.deepEqual([s.lastRunAt, s.lastOutcome, s.nextRunAt], ['2026-11-24T02:00:00.000Z', 'launched', '2026-11-24T02:01:00.000Z']);
  });

  it('after the clock is corrected backwards, fires again from the corrected time (not a day later)', async () => {
    clock = at('2026-11-25T02:00:30Z'); // a day ahead
    ws.enqueue('hourly.json', { id: 'hourly', command: process.execPath, args: ['-e', '0'], schedule: { cron: '0 * * * *', timezone: 'UTC' } });
    const e = await open();
    await stepAndSettle(e, '2026-11-25T03:00:10Z');
    assert.deepEqual(occurrences(e), ['hourly@2026-11-25T03:00Z']);
    // The clock is corrected: back to the real time, a day earlier.
    await step(e, '2026-11-24T03:10:00Z');
    assert.equal(e.listSchedules()[0].nextRunAt, '2026-11-24T04:00:00.000Z', 'the next occurrence counts from the corrected clock');
    await stepAndSettle(e, '2026-11-24T04:00:05Z');
    assert.deepEqual(occurrences(e).sort(), ['hourly@2026-11-24T04:00Z', 'hourly@2026-11-25T03:00Z']);
  });

  it('runs exactly one catch-up occurrence after a stop across several, and keeps the template and what fired through the restart', async () => {
    clock = at('2026-11-24T01:58:30Z');
    ws.enqueue('nightly.json', { id: 'nightly', command: process.execPath, args: ['-e', '0'], schedule: '*/1 * * * *' });
    let e = await open();
    await step(e, '2026-11-24T01:59:10Z');
    await settled(e);
    await e.shutdown(0);

    // Down from 01:59:10 to 02:03:30: 02:00, 02:01, 02:02 and 02:03 were missed.
    clock = at('2026-11-24T02:03:30Z');
    e = await open();
    await settled(e);
    assert.deepEqual(occurrences(e), ['nightly@2026-11-24T01:59Z', 'nightly@2026-11-24T02:03Z'], 'one catch-up: the latest missed');
    const catchUps = allLogs(e).filter((x) => x.action === 'schedule_fired' && x.details?.catchUp === true);
    assert.deepEqual(
      catchUps.map((x) => x.itemId),
      ['nightly@2026-11-24T02:03Z'],
    );
    await e.pollNow();
    assert.equal(e.stats().total, 2, 'no second catch-up');
    const [s] = e.listSchedules();
    assert.deepEqual([s.id, s.lastRunAt, s.lastOutcome, s.enabled], ['nightly', '2026-11-24T02:03:00.000Z', 'launched', true]);
  });

  // A copy of the storage folder is what a kill -9 of an engine on sql.js leaves; on PostgreSQL
  // what was committed is the state, and the kill -9 of the engine host below covers it.
  if (store.onDisk) it('keeps templates and their state through a crash (the storage folder as a kill -9 leaves it)', async () => {
    clock = at('2026-11-24T01:58:30Z');
    ws.enqueue('nightly.json', { id: 'nightly', command: process.execPath, args: ['-e', '0'], schedule: '*/1 * * * *' });
    let e = await open();
    await step(e, '2026-11-24T01:59:10Z');
    await settled(e);
    // What a kill -9 now would leave on disk: the storage folder as it is, copied.
    const crashed = path.join(ws.root, 'crashed');
    cpSync(ws.storage, crashed, { recursive: true });
    await e.shutdown(0);

    // From the folder as the crash left it: the template, and that 01:59 had fired (so the
    // catch-up at 02:00:30 is 02:00, and nothing is fired twice).
    clock = at('2026-11-24T02:00:30Z');
    e = await open(crashed);
    await settled(e);
    const [s] = e.listSchedules();
    assert.deepEqual([s.id, s.lastRunAt, s.lastOutcome, s.enabled], ['nightly', '2026-11-24T02:00:00.000Z', 'launched', true]);
    assert.deepEqual(occurrences(e), ['nightly@2026-11-24T01:59Z', 'nightly@2026-11-24T02:00Z']);
    assert.equal(allLogs(e).filter((x) => x.action === 'schedule_fired').length, 2);
  });

  it('skips an occurrence due while the previous one is still pending (overlap: skip, schedule_skipped); overlap: allow fires it', async () => {
    const gate = path.join(ws.root, 'gate');
    clock = at('2026-11-24T01:59:30Z');
    ws.enqueue('slow.json', [
      { id: 'slow', command: untilFileExists(gate), shell: true, schedule: { cron: '* * * * *', timezone: 'UTC' } },
      { id: 'many', command: untilFileExists(gate), shell: true, schedule: { cron: '* * * * *', timezone: 'UTC' }, overlap: 'allow' },
    ]);
    const e = await open();
    await step(e, '2026-11-24T02:00:05Z');
    await waitFor('both to run', () => e.stats().running === 2);
    await step(e, '2026-11-24T02:01:05Z');
    const skipped = allLogs(e).filter((x) => x.action === 'schedule_skipped');
    assert.deepEqual(
      skipped.map((x) => [x.itemId, x.details?.occurrence, x.details?.previous]),
      [['slow', 'slow@2026-11-24T02:01Z', 'slow@2026-11-24T02:00Z']],
    );
    assert.deepEqual(occurrences(e).sort(), ['many@2026-11-24T02:00Z', 'many@2026-11-24T02:01Z', 'slow@2026-11-24T02:00Z']);
    writeFileSync(gate, '');
    await settled(e);
    await step(e, '2026-11-24T02:02:05Z');
    await settled(e);
    assert.ok(occurrences(e).includes('slow@2026-11-24T02:02Z'), 'the next one fires once the previous has an outcome');
    assert.equal(e.listSchedules().find((s) => s.id === 'slow')!.lastRunAt, '2026-11-24T02:02:00.000Z');
    assertInvariants(e);
  });

  it('hold disables a template and release enables it from then on (over HTTP) (held-through occurrences are not caught up); GET /schedules matches the OpenAPI document', async () => {
    clock = at('2026-11-24T01:59:30Z');
    ws.enqueue('t.json', nodeItem('tick', '0', { schedule: { cron: '* * * * *', timezone: 'Europe/Berlin' } }));
    const e = await open();
    const token = 'schedule-test-token';
    const auth = { headers: { Authorization: `Bearer ${token}` } };
    const server = await startHttpServer(e, { host: '127.0.0.1', port: 0, token });
    try {
      const api = new OpenApiChecker((await request(server.url, '/openapi.json', auth)).json as Record<string, any>);
      const hold = await request(server.url, '/items/tick/hold', { method: 'POST', ...auth });
      assert.equal(hold.status, 202);
      api.assertBody('/items/{id}/hold', 202, hold.json, 'post');
      assert.equal((hold.json as { enabled: boolean }).enabled, false);
      const held = await request(server.url, '/schedules', auth);
      assert.equal(held.status, 200);
      api.assertBody('/schedules', 200, held.json);
      assert.deepEqual(held.json, [
        { id: 'tick', schedule: '* * * * *', timezone: 'Europe/Berlin', overlap: 'skip', nextRunAt: null, lastRunAt: null, lastOutcome: null, enabled: false },
      ]);
      assert.deepEqual(
        allLogs(e).filter((x) => x.action === 'item_held').map((x) => x.itemId),
        ['tick'],
      );
      await step(e, '2026-11-24T02:03:05Z');
      assert.equal(e.stats().total, 0, 'a held template fires nothing');
      const release = await request(server.url, '/items/tick/release', { method: 'POST', ...auth });
      assert.deepEqual([release.status, (release.json as { enabled: boolean }).enabled], [202, true]);
      await e.pollNow();
      assert.equal(e.stats().total, 0, 'the occurrences it was held through are not caught up');
      await step(e, '2026-11-24T02:04:00Z');
      await settled(e);
      assert.deepEqual(occurrences(e), ['tick@2026-11-24T02:04Z']);
      const after = await request(server.url, '/schedules', auth);
      api.assertBody('/schedules', 200, after.json);
      assert.deepEqual(
        (after.json as any[]).map((s) => [s.enabled, s.lastRunAt, s.lastOutcome, s.nextRunAt]),
        [[true, '2026-11-24T02:04:00.000Z', 'launched', '2026-11-24T02:05:00.000Z']],
      );
      assert.equal((await request(server.url, '/schedules?x=1', auth)).status, 400);
      const asItem = await request(server.url, '/items/tick', auth);
      assert.equal(asItem.status, 404);
      assert.match((asItem.json as any).error.message, /"tick" is a schedule template, not an item; GET \/schedules lists it/);
    } finally {
      await server.close();
    }
  });

  it('on DST days in Europe/Berlin neither skips nor doubles a daily run: 02:30 in the gap runs at 03:00, in the repeated hour once', async () => {
    clock = at('2026-03-28T12:00:00Z');
    ws.enqueue('dst.json', nodeItem('daily', '0', { schedule: { cron: '30 2 * * *', timezone: 'Europe/Berlin' } }));
    const e = await open();
    // 29 March: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist.
    await stepAndSettle(e, '2026-03-29T00:59:00Z');
    assert.equal(e.stats().total, 0);
    await stepAndSettle(e, '2026-03-29T01:00:00Z');
    await stepAndSettle(e, '2026-03-30T00:30:00Z');
    assert.deepEqual(occurrences(e), ['daily@2026-03-29T01:00Z', 'daily@2026-03-30T00:30Z'], 'the gap day runs once, at 03:00 CEST');
    // 25 October: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice (00:30Z and 01:30Z).
    await stepAndSettle(e, '2026-10-24T12:00:00Z');
    const before = e.stats().total;
    await stepAndSettle(e, '2026-10-25T00:30:00Z');
    await stepAndSettle(e, '2026-10-25T01:30:00Z');
    await stepAndSettle(e, '2026-10-25T23:00:00Z');
    await stepAndSettle(e, '2026-10-26T01:30:00Z');
    assert.deepEqual(occurrences(e).slice(before), ['daily@2026-10-25T00:30Z', 'daily@2026-10-26T01:30Z'], 'the repeated 02:30 runs once, at its first instance');
    await settled(e);
    assertInvariants(e);
  });

  // What this adds to the stepped-clock tests above is the engine's own timer on the real clock,
  // which no store takes part in; on both stores it would wait for two minute boundaries (up to 2 min).
  if (store.onDisk) it('fires on a real minute boundary with the real clock', async function () {
    // Waits for the next minute to begin (up to 60 s), on top of an engine start that takes seconds
    // on a loaded machine: the suite's 90 s left a loaded run about 30 s to spare (58 s measured).
    this.timeout(150_000);
    ws.enqueue('real.json', nodeItem('real', '0', { schedule: '* * * * *' }));
    engine = await store.engine(ws);
    await engine.start();
    const next = Date.parse(engine.listSchedules()[0].nextRunAt!);
    assert.equal(next % 60_000, 0);
    const e = engine;
    await waitFor('the occurrence at the minute', () => e.stats().launched === 1, next - Date.now() + 15_000);
    const [id] = occurrences(e);
    assert.equal(id, `real@${new Date(next).toISOString().slice(0, 16)}Z`);
    const fired = allLogs(e).find((x) => x.action === 'schedule_fired')!;
    assert.ok(Date.parse(fired.timestamp) >= next, 'not before the minute');
  });

  it('rejects bad schedules with the field and why', async () => {
    const ctx = { workspaceFolder: ws.folder, relPath: '.engine/queue/x.json', index: 0, defaults: { timeoutMs: 1000, maxAttempts: 1 } };
    const reason = (entry: Record<string, unknown>) => {
      const r = parseItem({ command: 'true', ...entry }, ctx);
      assert.equal(r.ok, false, JSON.stringify(entry));
      return (r as { reason: string }).reason;
    };
    assert.match(reason({ schedule: '61 * * * *' }), /^"schedule" "61 \* \* \* \*" is not a valid cron expression/);
    // A date that never exists is a mistake, and croner would search years ahead on every check.
    for (const never of ['0 0 31 2 *', '0 0 30 feb *', '0 0 31 4,6,9,11 *', '0 0 30-31 2 *', '0 0 31 apr-jun/2 *']) {
      assert.match(reason({ schedule: never }), new RegExp(`^"schedule" "${never.replace(/[*]/g, '\\*')}" can never fire: no month it names has a day of the month it names`), never);
    }
    for (const possible of ['0 0 29 2 *', '0 0 31 2,3 *', '0 0 31 2 1', '0 0 L 2 *', '0 0 31 * *', '0 0 */15 2 *']) {
      assert.ok(parseItem({ command: 'true', schedule: possible }, ctx).ok, `${possible} can fire`);
    }
    assert.match(reason({ schedule: '* * * *' }), /"schedule" must be a 5-field cron expression/);
    assert.match(reason({ schedule: '0 * * * * *' }), /"schedule" must be a 5-field cron expression/);
    assert.match(reason({ schedule: { cron: '0 2 * * *', timezone: 'Mars/Olympus' } }), /"schedule.timezone" "Mars\/Olympus" is not a known IANA time zone/);
    assert.match(reason({ schedule: '0 2 * * *', runAt: '2026-01-01T00:00:00Z' }), /"schedule" is not allowed with "runAt"/);
    assert.match(reason({ overlap: 'allow' }), /"overlap" applies to scheduled items only/);
    assert.match(reason({ schedule: '0 2 * * *', overlap: 'sometimes' }), /overlap must be equal to one of the allowed values/);
    const ok = parseItem({ command: 'true', schedule: '0 2 * * *' }, ctx);
    assert.ok(ok.ok && ok.item.schedule?.timezone === Intl.DateTimeFormat().resolvedOptions().timeZone, 'default: the engine\'s zone');

    clock = Date.now();
    // The item "taken" in a file of its own, read first: in the same file its id used twice would
    // be rejected as a repeat before the schedule check speaks.
    ws.enqueue('a-taken.json', { id: 'taken', command: 'true' });
    ws.enqueue('bad.json', [
      { id: 'bad', command: 'true', schedule: { cron: '0 2 * *', timezone: 'UTC' } },
      { id: 'zone', command: 'true', schedule: { cron: '0 2 * * *', timezone: 'Nowhere/Else' } },
      { id: 'taken', command: 'true', schedule: '0 2 * * *' },
    ]);
    const e = await open();
    const rejected = allLogs(e).filter((x) => x.action === 'item_rejected').map((x) => x.message);
    assert.equal(rejected.length, 3);
    assert.match(rejected[0], /entry 0: "schedule" must be a 5-field cron expression/);
    assert.match(rejected[1], /entry 1: "schedule.timezone" "Nowhere\/Else" is not a known IANA time zone/);
    assert.match(rejected[2], /entry 2: id "taken" is already an item/);
    assert.deepEqual(e.listSchedules(), []);
  });

  it('a template, its hold and a blocked item survive kill -9 of the engine host (dist/cli.js)', async () => {
    const TOKEN = 'kill-nine-token';
    const AUTH = { Authorization: `Bearer ${TOKEN}` };
    ws.enqueue('t.json', [
      // Once a year: nothing fires during the test.
      nodeItem('yearly', '0', { schedule: { cron: '0 0 1 1 *', timezone: 'UTC' } }),
      nodeItem('waiter', '0', { dependsOn: ['absent'] }),
    ]);
    const start = () => serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '200', ...store.serveArgs()], 60_000, { ENGINE_MONITOR_TOKEN: TOKEN });
    let run: ServeProcess = await start();
    try {
      const get = async (p: string) => (await request(run.url, p, { headers: AUTH })).json as any;
      for (let tries = 0; (await get('/schedules')).length !== 1; tries++) {
        if (tries > 100) throw new Error('the template was not discovered');
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal((await request(run.url, '/items/yearly/hold', { method: 'POST', headers: AUTH })).status, 202);
      run.child.kill('SIGKILL');
      await run.exited;

      run = await start();
      const [template] = await get('/schedules');
      assert.deepEqual([template.id, template.enabled, template.nextRunAt], ['yearly', false, null], 'the hold was journaled before its 202');
      assert.equal((await get('/items/waiter')).state, 'blocked');
      assert.deepEqual((await get('/stats')).overview.total, 1, 'the template is not counted');
      const blockedEntries = (await get('/logs?action=item_blocked')) as { itemId: string }[];
      assert.deepEqual(
        blockedEntries.map((e) => e.itemId),
        ['waiter'],
        'the missing set is not logged again after the restart',
      );
    } finally {
      run.child.kill('SIGKILL');
      await run.exited;
    }
  });
});
