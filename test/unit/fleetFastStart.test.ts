// Fast start across a fleet: an item that becomes due on one engine is announced through
// PostgreSQL's NOTIFY, so an idle engine elsewhere claims it at once instead of at its next look
// for due items (every 250 ms). Two headless engines on one real PostgreSQL; the one that ingests
// is kept busy, so every item must start on the other.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { getJson, serve } from './support/cli';
import { fleetFixture } from './support/fleetFixture';
import { TempWorkspace, waitFor } from './support/workspace';
import type { StatsOverview, StatusResponse } from '../../src/shared/api';

const LOOK_MS = 60_000;

describe('fleet: fast start on another engine (LISTEN/NOTIFY)', function () {
  this.timeout(240_000);
  const fleet = fleetFixture();
  const { engines, workspaces } = fleet;

  it('an item ingested by a busy engine starts on an idle one at its notification, not at its next look', async () => {
    const url = fleet.pg.createDatabase('fleet_fast');
    const shared = new TempWorkspace('engine-fleet-fast-');
    const own = new TempWorkspace('engine-fleet-own-');
    workspaces.push(shared, own);
    mkdirSync(path.join(shared.folder, '.engine', 'queue-b'), { recursive: true });
    // B's own looks for due items (the fleet's look, and a dispatch after each poll of its empty
    // queue folder) a minute apart. What is left besides the notification is B's once-a-second
    // tick: without the notification these items start 0.5-1 s after their ingestion, with it in
    // single milliseconds (2-95 ms at load 25).
    const env = { ENGINE_MONITOR_FLEET_LOOK_MS: String(LOOK_MS) };
    // A has a folder of its own besides the shared one; B only the shared one.
    const a = await serve(['--workspace', shared.folder, '--workspace', own.folder, '--storage', `${shared.storage}-a`, '--store', url, '--concurrency', '1', '--poll-interval', '200'], 60_000, env);
    engines.push(a);
    const b = await serve(['--workspace', shared.folder, '--queue-dir', '.engine/queue-b', '--storage', `${shared.storage}-b`, '--store', url, '--concurrency', '1', '--poll-interval', String(LOOK_MS)], 60_000, env);
    engines.push(b);
    const bId = (await getJson<StatusResponse>(`${b.url}/status`)).engine.engineId;

    // A's one slot is taken by an item only A can start (its cwd is A's own folder).
    own.enqueue('busy.json', [{ id: 'busy', command: 'sleep', args: ['120'] }]);
    await waitFor('A runs the busy item', async () => (await getJson<StatusResponse>(`${a.url}/status`)).engine.running === 1, 60_000);

    const n = 20;
    for (let i = 0; i < n; i++) {
      shared.enqueue(`fast-${i}.json`, [{ id: `fast-${i}`, command: 'true' }]);
      await waitFor(`fast-${i} to start on B`, async () => (await getJson<{ overview: StatsOverview }>(`${b.url}/stats`)).overview.launched === i + 1, LOOK_MS / 2);
    }

    // From the ingesting engine's commit of the item to the other engine's claim of it.
    const rows = fleet.pg
      .psql('fleet_fast', "SELECT a.engine_id, a.started_at - i.created_at FROM attempts a JOIN items i ON i.id = a.item_id WHERE i.id LIKE 'fast-%'")
      .trim()
      .split('\n')
      .map((r) => r.split('|'));
    assert.equal(rows.length, n);
    assert.ok(rows.every(([engine]) => engine === bId), 'every item started on the idle engine');
    const delays = rows.map(([, ms]) => Number(ms)).sort((x, y) => x - y);
    console.log(`      ingest → start on the other engine, ms: ${delays.join(' ')}`);
    // Well under B's tick, with room for a loaded machine: without the notification none but by
    // chance would be this quick.
    const quick = delays.filter((ms) => ms <= 400).length;
    assert.ok(quick >= n - 2, `at least ${n - 2} of ${n} within 400 ms: ${delays.join(', ')}`);
  });
});
