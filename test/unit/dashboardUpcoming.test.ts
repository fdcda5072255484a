// The dashboard's Upcoming list from a real engine's GET /schedules over real HTTP:
// the next occurrence of each enabled template, soonest first, five at most; a held template has
// none. The engine's schedule clock is fixed, so the expected times do not depend on when it runs.
import assert from 'node:assert/strict';
import { Engine } from '../../src/core/kernel/engine';
import { readUpcoming, UPCOMING_LIMIT, type DashboardReader } from '../../src/extension/dashboard/dashboardQueries';
import { startHttpServer, type RunningHttpServer } from '../../src/server';
import { nodeItem, TempWorkspace } from './support/workspace';

describe('dashboard: Upcoming runs from GET /schedules', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let engine: Engine;
  let server: RunningHttpServer;
  const token = 'upcoming-test-token';
  const headers = { Authorization: `Bearer ${token}` };

  /** What EngineClient does over HTTP: a refusal is an error naming the status. */
  const reader: DashboardReader = {
    async get<T>(path: string): Promise<T> {
      const res = await fetch(server.url + path, { headers });
      if (!res.ok) throw new Error(`The engine refused ${path}: HTTP ${res.status}`);
      return (await res.json()) as T;
    },
    getWithLink: () => Promise.reject(new Error('Upcoming reads no pages')),
    getText: () => Promise.reject(new Error('Upcoming reads no text')),
  };

  before(async () => {
    ws = new TempWorkspace('engine-upcoming-');
    const templates: [string, string, string][] = [
      ['every-minute', '* * * * *', 'UTC'],
      ['hourly', '0 * * * *', 'UTC'],
      // 03:00 in Berlin (UTC+1 in November) is 02:00Z, the same minute as hourly: ordered by id.
      ['berlin-3', '0 3 * * *', 'Europe/Berlin'],
      ['daily-5', '0 5 * * *', 'UTC'],
      ['monthly', '0 0 1 * *', 'UTC'],
      ['yearly', '0 0 1 1 *', 'UTC'],
      // Would be the soonest, but it is held.
      ['held-soon', '59 1 * * *', 'UTC'],
    ];
    for (const [id, cron, timezone] of templates) ws.enqueue(`${id}.json`, nodeItem(id, '0', { schedule: { cron, timezone } }));
    engine = await Engine.create(ws.options({ scheduleClock: () => Date.parse('2026-11-24T01:58:30Z') }));
    await engine.start();
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0, token });
    const hold = await fetch(`${server.url}/items/held-soon/hold`, { method: 'POST', headers });
    assert.equal(hold.status, 202);
  });
  after(async () => {
    await server?.close();
    await engine?.shutdown(0);
    ws?.dispose();
  });

  it('lists the next occurrence of each enabled template, soonest first, the first five', async () => {
    const runs = await readUpcoming(reader);
    assert.equal(runs.length, UPCOMING_LIMIT);
    assert.deepEqual(
      runs.map((r) => [r.id, r.at]),
      [
        ['every-minute', '2026-11-24T01:59:00.000Z'],
        ['berlin-3', '2026-11-24T02:00:00.000Z'],
        ['hourly', '2026-11-24T02:00:00.000Z'],
        ['daily-5', '2026-11-24T05:00:00.000Z'],
        ['monthly', '2026-12-01T00:00:00.000Z'],
      ],
    );
    assert.deepEqual(runs[1], { id: 'berlin-3', at: '2026-11-24T02:00:00.000Z', schedule: '0 3 * * *', timezone: 'Europe/Berlin' });
  });

  it('an engine older than schedules (404 for /schedules) has nothing upcoming; other errors are errors', async () => {
    const older: DashboardReader = { ...reader, get: (path) => reader.get(path.replace('/schedules', '/no-such-path')) };
    assert.deepEqual(await readUpcoming(older), []);
    // Without the token: the engine's own 401 is shown, not hidden as "no schedules".
    const refused: DashboardReader = {
      ...reader,
      async get<T>(path: string): Promise<T> {
        const res = await fetch(server.url + path);
        if (!res.ok) throw new Error(`The engine refused ${path}: HTTP ${res.status}`);
        return (await res.json()) as T;
      },
    };
    await assert.rejects(readUpcoming(refused), /HTTP 401/);
  });
});
