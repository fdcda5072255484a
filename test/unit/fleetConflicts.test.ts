// PostgreSQL may abort any transaction of a fleet engine for reasons that are nobody's bug: a
// deadlock between two engines' counter updates (40P01), a serialization failure (40001), a lock
// it could not get in time (55P03). The engine retries such a unit of work as it does when the
// database is briefly unreachable: the claim is dropped and taken again, the outcome is recorded
// on the next tick. It never dies of it, never runs an item twice, never loses an outcome.
//
// The aborts are real: a trigger in the real database raises the SQLSTATE the first N times the
// engine's statement reaches it (a sequence counts them, since a sequence is not rolled back with
// the transaction the trigger aborts).
import assert from 'node:assert/strict';
import { getJson, serve, type ServeProcess } from './support/cli';
import { PostgresServer, startPostgresOrSkip } from './support/postgres';
import { TempWorkspace, waitFor } from './support/workspace';
import type { HealthResponse, StatsOverview } from '../../src/shared/api';

/** A trigger on `attempts` that aborts the first `times` statements of kind `op` with `sqlstate`. */
function abortFirst(op: 'INSERT' | 'UPDATE', sqlstate: string, times: number, table = 'attempts'): string {
  const name = `em_test_abort_${table}_${op.toLowerCase()}`;
  return `
    CREATE SEQUENCE ${name}_seq;
    GRANT USAGE ON SEQUENCE ${name}_seq TO engine;
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF nextval('${name}_seq') <= ${times} THEN
        RAISE EXCEPTION 'aborted by the test (%)', '${sqlstate}' USING ERRCODE = '${sqlstate}';
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER ${name} BEFORE ${op} ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}();`;
}

describe('fleet: transactions PostgreSQL aborts (deadlock, serialization failure) are retried', function () {
  this.timeout(180_000);
  let pg: PostgresServer | undefined;
  let engine: ServeProcess | undefined;
  let ws: TempWorkspace | undefined;

  before(async function () {
    pg = await startPostgresOrSkip(this);
  });
  after(() => pg?.stop());
  afterEach(async () => {
    if (engine && engine.child.exitCode === null && engine.child.signalCode === null) {
      engine.child.kill('SIGTERM');
      await engine.exited;
    }
    engine = undefined;
    ws?.dispose();
  });

  async function start(db: string): Promise<ServeProcess> {
    const url = pg!.createDatabase(db);
    ws = new TempWorkspace('engine-fleet-abort-');
    engine = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--store', url, '--poll-interval', '200', '--concurrency', '2', '--max-attempts', '1'], 60_000);
    return engine;
  }

  async function launchedOnceEach(e: ServeProcess, db: string, n: number): Promise<void> {
    await waitFor(`${n} items launched`, async () => {
      const stats = await getJson<{ overview: StatsOverview }>(`${e.url}/stats`).catch((err: Error) => {
        throw new Error(`the engine does not answer (${err.message}); it wrote:\n${e.stderr()}`);
      });
      return stats.overview.launched === n;
    }, 90_000);
    const sql = (text: string): string => pg!.psql(db, text).trim();
    assert.equal(sql('SELECT count(*) FROM attempts'), String(n), 'one attempt per item: nothing ran twice');
    assert.equal(sql("SELECT count(*) FROM attempts WHERE outcome = 'succeeded'"), String(n), 'every outcome recorded');
    const health = await getJson<HealthResponse>(`${e.url}/health`);
    assert.equal(health.status, 'healthy', JSON.stringify(health));
    assert.equal(e.child.exitCode, null, 'the engine is still running');
  }

  it('a claim aborted by a deadlock is taken again: every item launches once', async () => {
    const e = await start('fleet_abort_claim');
    pg!.psql('fleet_abort_claim', abortFirst('INSERT', '40P01', 2));
    ws!.enqueue('work.json', Array.from({ length: 4 }, (_, i) => ({ id: `c${i}`, command: 'true' })));
    await launchedOnceEach(e, 'fleet_abort_claim', 4);
    assert.ok(Number(pg!.psql('fleet_abort_claim', 'SELECT last_value FROM em_test_abort_attempts_insert_seq').trim()) > 2, 'the claims were aborted, then taken again');
  });

  it('an outcome aborted by a serialization failure is recorded on the next try', async () => {
    const e = await start('fleet_abort_outcome');
    pg!.psql('fleet_abort_outcome', abortFirst('UPDATE', '40001', 2));
    ws!.enqueue('work.json', Array.from({ length: 4 }, (_, i) => ({ id: `o${i}`, command: 'true' })));
    await launchedOnceEach(e, 'fleet_abort_outcome', 4);
    assert.ok(Number(pg!.psql('fleet_abort_outcome', 'SELECT last_value FROM em_test_abort_attempts_update_seq').trim()) > 2, 'the outcomes were aborted, then recorded');
  });

  it('a queue file whose ingestion was aborted by a lock timeout is ingested by the next poll', async () => {
    const e = await start('fleet_abort_poll');
    pg!.psql('fleet_abort_poll', abortFirst('INSERT', '55P03', 2, 'items'));
    ws!.enqueue('work.json', Array.from({ length: 4 }, (_, i) => ({ id: `p${i}`, command: 'true' })));
    await launchedOnceEach(e, 'fleet_abort_poll', 4);
    assert.ok(Number(pg!.psql('fleet_abort_poll', 'SELECT last_value FROM em_test_abort_items_insert_seq').trim()) > 2, 'the ingestion was aborted, then done again');
  });
});
