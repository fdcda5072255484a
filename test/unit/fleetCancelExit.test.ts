// One item, one process at a time, across a fleet: two real engines (`serve`) on one real
// PostgreSQL database, a real SIGTERM-deaf process, Cancel and Retry through the engines' HTTP API.
// While the cancelled attempt's process lives, on whichever engine, no engine starts the item
// again; once it has exited, one does. Processes are watched in /proc, never for a fixed time.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fetchFromEngine, processesMentioning, serve, type ServeProcess } from './support/cli';
import { uniqueSleep } from './support/control';
import { fleetFixture } from './support/fleetFixture';
import { TempWorkspace, waitFor } from './support/workspace';
import type { ItemDetail, StatusResponse } from '../../src/shared/api';
import { PG_FLEET_STEP, PG_SCHEMA_V1, PG_SCHEMA_V2, PG_SCHEMA_V2_INSIGHT, PG_SCHEMA_VERSION } from '../../src/core/store/pgSchema';

const TOKEN = 'fleet-cancel-exit-token-0123456789';

/** The parent's pid of a live process (0 once it is gone). */
function parentOf(pid: number): number {
  try {
    const m = /^PPid:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

describe('fleet: a cancelled process holds its item on every engine until it exits', function () {
  this.timeout(180_000);
  const shared = fleetFixture();
  let dbCount = 0;

  /** A database of its own and one workspace folder; engines are started by the test. */
  function setUp(): { db: string; url: string; ws: TempWorkspace } {
    const db = `fleet_exit_${++dbCount}`;
    const url = shared.pg.createDatabase(db);
    const ws = new TempWorkspace('engine-fleet-exit-');
    shared.workspaces.push(ws);
    return { db, url, ws };
  }

  /** An engine on the shared workspace folder; `queue`: a queue folder of its own (only the first scans the shared one). */
  async function engine(url: string, ws: TempWorkspace, name: string, queue?: string, extra: string[] = []): Promise<ServeProcess & { id: string }> {
    const own = [...(queue ? ['--queue-dir', queue] : []), ...extra];
    if (queue) mkdirSync(path.join(ws.folder, queue), { recursive: true });
    const e = await serve(['--workspace', ws.folder, '--storage', `${ws.storage}-${name}`, '--store', url, '--poll-interval', '200', '--concurrency', '2', ...own], 60_000, {
      ENGINE_MONITOR_TOKEN: TOKEN,
    });
    shared.engines.push(e);
    const id = (await read<StatusResponse>(`${e.url}/status`)).engine.engineId;
    assert.ok(id, 'a fleet engine has an id');
    return { ...e, id };
  }

  async function control(e: ServeProcess, itemId: string, action: 'cancel' | 'retry'): Promise<void> {
    const res = await fetchFromEngine(e, `${e.url}/items/${encodeURIComponent(itemId)}/${action}`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}` } });
    assert.equal(res.status, 202, `${action} ${itemId}: HTTP ${res.status} ${await res.text()}`);
  }

  /** A read: with a token configured, reads need it too. */
  async function read<T>(url: string): Promise<T> {
    const res = await fetch(url, { headers: { Authorization: `Bearer ${TOKEN}` } });
    assert.equal(res.status, 200, `${url}: HTTP ${res.status}`);
    return (await res.json()) as T;
  }

  const sql = (db: string, text: string): string => shared.pg.psql(db, text).trim();

  /**
   * Waits until every process in `first` (the cancelled attempt's) has exited, failing at once if
   * another process mentioning `needle` starts meanwhile.
   */
  async function noSecondWhileAlive(needle: string, first: Set<number>, what: string, db: string, timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const now = processesMentioning(needle);
      // A child the cancelled shell forks shows the shell's command line until it execs: not a second
      // process. Nor is one already gone when its parent is read (parentOf 0): such a fork (the
      // shell's `sleep 0.05`, every 50 ms) had run and exited in between. A second attempt loops
      // until the test releases it, so the next look still finds it.
      const second = now.filter((p) => {
        if (first.has(p.pid)) return false;
        const parent = parentOf(p.pid);
        return parent !== 0 && !first.has(parent);
      });
      const alive = now.filter((p) => first.has(p.pid));
      if (second.length > 0 && alive.length > 0) {
        assert.fail(
          `${what}: a second process of the item started while the cancelled one (pids ${alive.map((p) => p.pid).join(', ')}) is still alive: ${second.map((p) => `${p.pid} ${p.cmdline}`).join('; ')}; ` +
            `attempts: ${sql(db, "SELECT id, attempt, outcome, error, engine_id FROM attempts WHERE item_id = 'deaf' ORDER BY id").split('\n').join('; ')}`,
        );
      }
      if (alive.length === 0) return;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for the cancelled process to exit (${what})`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('cancelled and retried through engine A while engine B runs it: B ends its process, and no engine starts the item until it has exited', async () => {
    const { db, url, ws } = setUp();
    const marker = uniqueSleep();
    const termed = path.join(ws.folder, `termed-${marker}`);
    const release = path.join(ws.folder, `release-${marker}`);
    // It notes its SIGTERM and lives on, until its SIGKILL or until the test lets it go.
    ws.enqueue('deaf.json', { id: 'deaf', command: `trap 'touch ${termed}' TERM; until [ -e ${release} ]; do sleep 0.05; done`, shell: true, maxAttempts: 1 });
    const b = await engine(url, ws, 'b');
    const first = await waitFor('the item to run on B', () => {
      const p = processesMentioning(release);
      return p.length === 1 ? new Set(p.map((x) => x.pid)) : undefined;
    }, 60_000);
    const a = await engine(url, ws, 'a', '.engine/queue-a');
    assert.equal(sql(db, "SELECT engine_id FROM attempts WHERE item_id = 'deaf'"), b.id, 'the attempt is B\'s');

    await control(a, 'deaf', 'cancel');
    assert.equal((await read<ItemDetail>(`${a.url}/items/deaf`)).outcome, 'failed');
    await control(a, 'deaf', 'retry');
    assert.equal((await read<ItemDetail>(`${a.url}/items/deaf`)).outcome, 'pending');
    assert.equal(sql(db, "SELECT engine_id FROM exiting_processes WHERE item_id = 'deaf'"), b.id, 'A recorded that B still has the process');
    await noSecondWhileAlive(release, first, 'cancelled through A, running on B', db);
    assert.ok(existsSync(termed), 'B sent its process SIGTERM, as its own cancel does');

    // The retried attempt finds the release file there and ends at once: its row says it ran.
    writeFileSync(release, '');
    await waitFor('the retried item to run once B\'s process exited', () => sql(db, "SELECT outcome FROM items WHERE id = 'deaf'") === 'launched', 60_000);
    const rows = sql(db, "SELECT attempt, outcome, coalesce(error, ''), coalesce(signal, '') FROM attempts WHERE item_id = 'deaf' ORDER BY id").split('\n');
    assert.deepEqual(rows, ['1|failed|cancelled|SIGKILL', '1|succeeded||'], 'the cancelled attempt keeps its cancel, with how its process ended; one attempt after the retry');
    assert.equal(sql(db, 'SELECT count(*) FROM exiting_processes'), '0', 'the exit removed its row');
  });

  it('cancelled and retried on the engine that runs it: the other engine does not start it while the process exits', async () => {
    const { db, url, ws } = setUp();
    const deaf = uniqueSleep();
    // SIGTERM-deaf: it lives until the SIGKILL 5 s after the cancel.
    ws.enqueue('deaf.json', { id: 'deaf', command: `trap '' TERM; sleep ${deaf}; true`, shell: true, maxAttempts: 1 });
    const b = await engine(url, ws, 'b');
    const first = await waitFor('the item to run on B', () => {
      const p = processesMentioning(`sleep ${deaf}`);
      return p.length === 2 ? new Set(p.map((x) => x.pid)) : undefined;
    }, 60_000);
    const a = await engine(url, ws, 'a', '.engine/queue-a');
    // A is up and looking for due items: it has joined the fleet B sees.
    await waitFor('A in B\'s fleet', async () => (await read<StatusResponse>(`${b.url}/status`)).fleet?.some((f) => f.engineId === a.id));

    await control(b, 'deaf', 'cancel');
    await control(b, 'deaf', 'retry');
    assert.equal(sql(db, "SELECT engine_id FROM exiting_processes WHERE item_id = 'deaf'"), b.id, 'B recorded that it still has the process');
    await noSecondWhileAlive(`sleep ${deaf}`, first, 'cancelled and retried on B', db);

    await waitFor('the retried attempt\'s shell and sleep', () => processesMentioning(`sleep ${deaf}`).length === 2, 60_000);
    const rows = sql(db, "SELECT attempt, outcome, coalesce(error, ''), coalesce(signal, '') FROM attempts WHERE item_id = 'deaf' ORDER BY id").split('\n');
    assert.deepEqual(rows, ['1|failed|cancelled|SIGKILL', '1|running||'], 'the retried attempt started after the cancelled one was killed and recorded');
    const runner = sql(db, "SELECT engine_id FROM attempts WHERE item_id = 'deaf' ORDER BY id DESC LIMIT 1");
    await control(runner === a.id ? a : b, 'deaf', 'cancel');
  });

  it('a database of the previous schema, with an engine of the previous build in it, takes the new step', async () => {
    const { db, url, ws } = setUp();
    // As engines of schema 2 left it, one of them still holding its lease (no records_exits then).
    shared.pg.psql(
      db,
      `SET ROLE engine; ${PG_SCHEMA_V1} ${PG_SCHEMA_V2} ${PG_SCHEMA_V2_INSIGHT} ${PG_FLEET_STEP}
       CREATE TABLE em_schema (version INTEGER NOT NULL); INSERT INTO em_schema VALUES (2);
       INSERT INTO engines (engine_id, host, pid, state, started_at, last_heartbeat_at, lease_until, running, workspaces)
         VALUES ('previous-build', 'elsewhere', 1, 'running', em_now(), em_now(), em_now() + 600000, 0, '[]');`,
    );
    ws.enqueue('one.json', { id: 'one', command: 'true', maxAttempts: 1 });
    const e = await engine(url, ws, 'new');
    await waitFor('the item launched', () => sql(db, "SELECT outcome FROM items WHERE id = 'one'") === 'launched', 60_000);
    assert.equal(sql(db, 'SELECT version FROM em_schema'), String(PG_SCHEMA_VERSION));
    assert.equal(PG_SCHEMA_VERSION, 3);
    assert.deepEqual(sql(db, 'SELECT engine_id, records_exits FROM engines ORDER BY records_exits').split('\n'), ['previous-build|0', `${e.id}|1`]);
    assert.equal(sql(db, 'SELECT count(*) FROM exiting_processes'), '0');
  });

  it('a lost engine\'s record blocks nothing: once its lease expires, another engine runs the item', async () => {
    const { db, url, ws } = setUp();
    const deaf = uniqueSleep();
    ws.enqueue('deaf.json', { id: 'deaf', command: `trap '' TERM; sleep ${deaf}; true`, shell: true, maxAttempts: 1 });
    const b = await engine(url, ws, 'b', undefined, ['--lease-ms', '3000']);
    const first = await waitFor('the item to run on B', () => {
      const p = processesMentioning(`sleep ${deaf}`);
      return p.length === 2 ? p.map((x) => x.pid) : undefined;
    }, 60_000);
    try {
      const a = await engine(url, ws, 'a', '.engine/queue-a', ['--lease-ms', '3000']);
      await control(b, 'deaf', 'cancel');
      assert.equal(sql(db, "SELECT engine_id FROM exiting_processes WHERE item_id = 'deaf'"), b.id);
      // B dies before its process exits (that process lives on, orphaned: the test ends it).
      b.child.kill('SIGKILL');
      await b.exited;
      await control(a, 'deaf', 'retry');
      await waitFor('A to run the item once B\'s lease expired', () => sql(db, "SELECT count(*) FROM attempts WHERE item_id = 'deaf' AND outcome = 'running'") === '1', 60_000);
      assert.equal(sql(db, "SELECT engine_id FROM attempts WHERE item_id = 'deaf' AND outcome = 'running'"), a.id);
      await waitFor('the lost engine\'s record removed', () => sql(db, 'SELECT count(*) FROM exiting_processes') === '0', 30_000);
      await control(a, 'deaf', 'cancel');
    } finally {
      for (const pid of first) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
    }
  });
});
