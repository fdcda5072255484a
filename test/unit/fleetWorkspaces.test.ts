// A fleet whose engines have different workspace folders (how a person tries a fleet on one
// machine before buying hosts): three headless engines on one real PostgreSQL, each with its own
// folder and its own queue. An engine never claims an item whose cwd is outside its folders, so
// no item fails for a folder it could not use; an item no live engine can start waits, says why,
// and is run once an engine that can joins.
import assert from 'node:assert/strict';
import { allLogs, getJson, serve, type ServeProcess } from './support/cli';
import { fleetFixture, stopEngine } from './support/fleetFixture';
import { TempWorkspace, waitFor } from './support/workspace';
import type { ItemDetail, StatsOverview, StatusResponse } from '../../src/shared/api';

describe('fleet: engines with different workspace folders', function () {
  this.timeout(240_000);
  const fleet = fleetFixture();
  const { engines, workspaces } = fleet;

  async function engine(url: string, ws: TempWorkspace, n: number): Promise<ServeProcess> {
    const e = await serve(['--workspace', ws.folder, '--storage', `${ws.storage}-${n}`, '--store', url, '--poll-interval', '200', '--concurrency', '2', '--max-attempts', '3'], 60_000);
    engines.push(e);
    return e;
  }

  const sql = (db: string, text: string): string => fleet.pg.psql(db, text).trim();
  const workspace = (): TempWorkspace => {
    const ws = new TempWorkspace('engine-fleet-ws-');
    workspaces.push(ws);
    return ws;
  };

  it('each engine runs only the items of its own folder: none fails for a folder it could not use', async () => {
    const url = fleet.pg.createDatabase('fleet_ws_split');
    const wss = [workspace(), workspace(), workspace()];
    const es: ServeProcess[] = [];
    for (const [i, ws] of wss.entries()) es.push(await engine(url, ws, i));
    const ids: string[] = [];
    for (const status of await Promise.all(es.map((e) => getJson<StatusResponse>(`${e.url}/status`)))) ids.push(status.engine.engineId ?? '');

    // Every engine lists every engine with its folders.
    for (const e of es) {
      const fleet = (await getJson<StatusResponse>(`${e.url}/status`)).fleet!;
      assert.deepEqual(
        ids.map((id) => fleet.find((f) => f.engineId === id)?.workspaces),
        wss.map((ws) => [ws.folder]),
      );
    }

    // 60 items per folder, all at once, into each engine's own queue: with any engine claiming
    // anything, two thirds would fail with "outside every workspace folder".
    for (const [i, ws] of wss.entries()) {
      ws.enqueue('work.json', Array.from({ length: 60 }, (_, j) => ({ id: `w${i}-${j}`, command: 'sleep', args: ['0.02'] })));
    }
    await waitFor('every item launched', async () => (await getJson<{ overview: StatsOverview }>(`${es[0].url}/stats`)).overview.launched === 180, 180_000);

    assert.equal(sql('fleet_ws_split', "SELECT count(*) FROM attempts WHERE outcome <> 'succeeded'"), '0', 'no attempt failed');
    assert.equal(sql('fleet_ws_split', 'SELECT count(*) FROM attempts'), '180', 'one attempt per item');
    // Which engine ran the items of each folder: the engine of that folder, every one.
    const ranBy = sql('fleet_ws_split', "SELECT split_part(item_id, '-', 1), engine_id, count(*) FROM attempts GROUP BY 1, 2 ORDER BY 1").split('\n');
    assert.deepEqual(ranBy, wss.map((_, i) => `w${i}|${ids[i]}|60`));

    // Each engine says once in its log that no other engine shares its folders.
    const logs = await allLogs(es[0].url);
    for (const id of ids) {
      await waitFor(`the warning of ${id}`, async () => (await allLogs(es[0].url)).some((l) => l.engineId === id && /match no other engine of the fleet/.test(l.message)), 30_000);
    }
    assert.ok(logs.every((l) => !/outside every workspace folder/.test(l.message)), 'no launch refused for its folder');
    const said = (await allLogs(es[1].url)).filter((l) => /match no other engine of the fleet/.test(l.message));
    assert.equal(said.length, 3, `once per engine: ${said.map((l) => l.engineId).join(', ')}`);
    assert.equal(said.find((l) => l.engineId === ids[1])?.level, 'warn');
  });

  it('an item no live engine can start waits, says why, and runs once an engine with its folder joins', async () => {
    const url = fleet.pg.createDatabase('fleet_ws_wait');
    const [wa, wb, wc] = [workspace(), workspace(), workspace()];
    const a = await engine(url, wa, 0);
    await engine(url, wb, 1);
    let c = await engine(url, wc, 2);
    // Due a little later, so that C can stop before it would launch them.
    const runAt = new Date(Date.now() + 8000).toISOString();
    wc.enqueue('later.json', Array.from({ length: 5 }, (_, j) => ({ id: `c-${j}`, command: 'true', runAt })));
    await waitFor('C ingested its items', async () => (await getJson<{ overview: StatsOverview }>(`${a.url}/stats`)).overview.pending === 5, 60_000);
    await stopEngine(c);
    await waitFor('the items are due', () => Date.now() > Date.parse(runAt) + 500, 30_000);

    // A and B poll every 250 ms at most and are idle: they would have claimed them by now.
    const detail = await waitFor('C-s item waits', async () => {
      const d = await getJson<ItemDetail>(`${a.url}/items/c-0`);
      return d.state === 'waiting' ? d : undefined;
    }, 30_000);
    assert.equal(detail.waitingFor?.length, 1, JSON.stringify(detail));
    const why = detail.waitingFor[0];
    assert.match(why, /none of the 2 live engine\(s\) of the fleet can start it/);
    assert.ok(why.includes(wc.folder), `names the folder it needs: ${why}`);
    assert.ok(why.includes(wa.folder) && why.includes(wb.folder), `names the folders the fleet has: ${why}`);
    assert.match(why, /start an engine with --workspace/);
    assert.equal(detail.attempts.length, 0, 'never attempted');
    assert.equal(sql('fleet_ws_wait', 'SELECT count(*) FROM attempts'), '0');

    // An engine with C's folder joins: it runs them, and they were never tried elsewhere.
    c = await engine(url, wc, 3);
    const cId = (await getJson<StatusResponse>(`${c.url}/status`)).engine.engineId;
    await waitFor('C-s items launched', async () => (await getJson<{ overview: StatsOverview }>(`${a.url}/stats`)).overview.launched === 5, 60_000);
    assert.deepEqual(sql('fleet_ws_wait', "SELECT DISTINCT engine_id || ' ' || outcome FROM attempts").split('\n'), [`${cId} succeeded`]);
    assert.equal(sql('fleet_ws_wait', 'SELECT count(*) FROM attempts'), '5');
    const done = await getJson<ItemDetail>(`${a.url}/items/c-0`);
    assert.equal(done.waitingFor, undefined, 'nothing to wait for once launched');
  });
});
