// One set of tests of StoreBackend (src/core/store/backend.ts), the contract the engine holds any
// store to, run against each store the engine has: sql.js on a real disk, and a real PostgreSQL
// server started by the test (a missing PostgreSQL skips here and fails under CI=true, as the
// fleet tests do). The engine's own reads (records.ts, logQuery.ts) are how each test looks at
// the rows, so a store that stores something differently fails where the engine would notice.
import assert from 'node:assert/strict';
import type { ItemDefinition } from '../../src/core/intake/items';
import { storedDefinition } from '../../src/core/intake/items';
import { queryLogs } from '../../src/core/reads/logQuery';
import { readDueItems, readHeld, readItem, readItemDetail, readItemPage, readNextDueAt, readRunningAttempts, readStoredState, readWaitingFor } from '../../src/core/reads/records';
import type { StoreBackend } from '../../src/core/store';
import type { PgStore } from '../../src/core/store/pgStore';
import { PG_MUTATIONS, WITH_ENGINE_ID } from '../../src/core/store/pgSchema';
import { MUTATIONS } from '../../src/core/store/schema';
import { PostgresServer } from './support/postgres';
import { postgresKind, sqlJsKind } from './support/storeKinds';

const T0 = 1_700_000_000_000;

function definition(id: string, extra: Partial<ItemDefinition> = {}): ItemDefinition {
  return { id, name: `${id} name`, command: 'node', args: ['-e', '0'], shell: false, cwd: '/tmp', env: {}, timeoutMs: 30_000, maxAttempts: 3, runAt: null, ...extra };
}

/** item_insert as the engine writes it: (id, name, source, definition, def_hash, max_attempts, run_at, due_at, created_at, updated_at). */
function insertItem(store: StoreBackend, id: string, extra: Partial<ItemDefinition> & { dueAt?: number; source?: string } = {}): void {
  const { dueAt = 0, source = 'queue/a.json', ...def } = extra;
  const d = definition(id, def);
  store.mutate('item_insert', [d.id, d.name, source, storedDefinition(d), `hash-${id}`, d.maxAttempts, d.runAt, dueAt, T0, T0]);
}

/** item_state: (outcome, attempts, due_at, running, last_error, updated_at, id). */
function setState(store: StoreBackend, id: string, s: { outcome?: string; attempts?: number; dueAt?: number | null; running?: number; error?: string | null; at?: number }): void {
  store.mutate('item_state', [s.outcome ?? 'pending', s.attempts ?? 0, s.dueAt ?? 0, s.running ?? 0, s.error ?? null, s.at ?? T0, id]);
}

/** log_insert: (id, ts, action, level, message, item_id, details). */
function log(store: StoreBackend, id: number, message: string, extra: { action?: string; level?: number; itemId?: string | null; ts?: number; details?: string | null } = {}): void {
  store.mutate('log_insert', [id, extra.ts ?? T0 + id, extra.action ?? 'launch_succeeded', extra.level ?? 1, message, extra.itemId ?? null, extra.details ?? null]);
}

/** The engine a store shared by a fleet records as the writer of what this one writes. */
const writer = (store: StoreBackend): string | undefined => (store as Partial<PgStore>).engineId;

const ids = (store: StoreBackend, words?: string[], extra: Partial<Parameters<typeof queryLogs>[1]> = {}): number[] =>
  queryLogs(store, { order: 'asc', limit: 100, ...(words ? { words } : {}), ...extra }).entries.map((e) => e.id);

for (const kind of [sqlJsKind(), postgresKind()]) {
  describe(`store contract: ${kind.name}`, function () {
    this.timeout(60_000);
    let store: StoreBackend | undefined;
    const open: StoreBackend[] = [];
    /** Each store the test opened is closed after it, whatever happened. */
    const track = (s: StoreBackend): StoreBackend => {
      open.push(s);
      return s;
    };
    const s = (): StoreBackend => store!;

    before(async function () {
      await kind.before(this);
    });
    after(() => kind.after());
    beforeEach(async () => {
      store = track(await kind.fresh());
    });
    afterEach(() => {
      for (const o of open.splice(0)) o.close();
      kind.dispose();
    });

    /** Commits, closes and opens the store again: what survives is what a restarted engine finds. */
    async function restart(): Promise<void> {
      assert.equal(await store!.commitDurably(), true);
      store!.close();
      open.splice(open.indexOf(store!), 1);
      store = track(await kind.reopen());
    }

    it('an item inserted reads back with its definition and the defaults of a new item, after a restart too', async () => {
      insertItem(store!, 'build', { runAt: T0 + 5_000, dueAt: T0 + 5_000, maxAttempts: 4 });
      await restart();
      const row = readItem(s(), 'build');
      assert.ok(row, 'the item survives a restart');
      assert.deepEqual(
        { outcome: row.outcome, attempts: row.attempts, max_attempts: row.max_attempts, run_at: row.run_at, due_at: row.due_at, running: row.running, held: row.held, priority: row.priority, blocked: row.blocked, last_error: row.last_error },
        { outcome: 'pending', attempts: 0, max_attempts: 4, run_at: T0 + 5_000, due_at: T0 + 5_000, running: 0, held: 0, priority: 0, blocked: 0, last_error: null },
      );
      const detail = readItemDetail(s(), 'build', T0);
      assert.equal(detail?.item.command, 'node');
      assert.deepEqual(detail?.item.args, ['-e', '0']);
      assert.equal(detail?.state, 'scheduled');
      assert.equal(readItem(s(), 'missing'), undefined);
    });

    it('state rows: running, then an outcome; the counts by outcome and the last launch follow them', () => {
      for (const id of ['a', 'b', 'c', 'd']) insertItem(store!, id);
      setState(store!, 'a', { running: 1, attempts: 1 });
      store!.mutate('attempt_insert', [1, 'a', 1, T0 + 10]);
      assert.equal(readItemDetail(s(), 'a', T0)?.state, 'running');
      setState(store!, 'a', { outcome: 'launched', attempts: 1, dueAt: null });
      store!.mutate('attempt_end', [T0 + 50, 'launched', 0, null, null, null, null, 12, null, 1]);
      setState(store!, 'b', { outcome: 'failed', attempts: 3, dueAt: null, error: 'exit 1' });
      setState(store!, 'c', { attempts: 1, dueAt: T0 + 60_000 });
      const state = readStoredState(s());
      assert.deepEqual(
        { launched: state.counters.launched, pending: state.counters.pending, failed: state.counters.failed, held: state.counters.held },
        { launched: 1, pending: 2, failed: 1, held: 0 },
      );
      assert.equal(state.lastAttemptId, 1);
      assert.deepEqual({ id: state.lastLaunch?.itemId, outcome: state.lastLaunch?.outcome, exitCode: state.lastLaunch?.exitCode, durationMs: state.lastLaunch?.durationMs }, { id: 'a', outcome: 'launched', exitCode: 0, durationMs: 40 });
      assert.equal(readItemDetail(s(), 'b', T0)?.error, 'exit 1');
      assert.equal(readItemDetail(s(), 'c', T0)?.state, 'backoff');
    });

    it('counters kept in meta (launches and failures ever) survive a restart and are overwritten, not added', async () => {
      store!.setMeta('total_launches', '7');
      store!.setMeta('total_launches', '9');
      store!.setMeta('total_failed', '2');
      assert.equal(store!.getMeta('nothing-here'), undefined);
      await restart();
      const state = readStoredState(s());
      assert.equal(state.counters.totalLaunches, 9);
      assert.equal(state.counters.totalFailed, 2);
      assert.equal(store!.getMeta('total_launches'), '9');
    });

    it('attempts: a running one is found at start, its end is recorded with output size and problems', async () => {
      insertItem(store!, 'job');
      setState(store!, 'job', { running: 1, attempts: 1 });
      store!.mutate('attempt_insert', [41, 'job', 1, T0 + 100]);
      const firstEngine = writer(store!);
      await restart();
      const running = readRunningAttempts(s());
      assert.deepEqual(running.map((r) => ({ id: r.id, attempt: r.attempt, startedAt: r.startedAt, item: r.item.id })), [{ id: 41, attempt: 1, startedAt: T0 + 100, item: 'job' }]);
      store!.batch(() => {
        store!.mutate('attempt_finish', [T0 + 400, 'failed', 2, null, 'exited with 2', null, null, 41]);
        store!.mutate('attempt_output_bytes', [321, 41]);
        store!.mutate('attempt_problems', [JSON.stringify([{ file: 'a.ts', line: 3, message: 'bad', severity: 'error' }]), 41]);
        setState(store!, 'job', { attempts: 1, dueAt: T0 + 1_000 });
      });
      store!.mutate('attempt_insert', [42, 'job', 2, T0 + 1_000]);
      store!.mutate('attempt_end', [T0 + 1_500, 'launched', 0, null, null, null, null, 10, null, 42]);
      assert.deepEqual(readRunningAttempts(s()), []);
      const detail = readItemDetail(s(), 'job', T0 + 2_000)!;
      assert.deepEqual(
        detail.attempts.map((a) => ({ attempt: a.attempt, outcome: a.outcome, exitCode: a.exitCode, error: a.error, durationMs: a.durationMs, outputBytes: a.outputBytes, problems: a.problems.length })),
        [
          { attempt: 1, outcome: 'failed', exitCode: 2, error: 'exited with 2', durationMs: 300, outputBytes: 321, problems: 1 },
          { attempt: 2, outcome: 'launched', exitCode: 0, error: null, durationMs: 500, outputBytes: 10, problems: 0 },
        ],
      );
      // Which engine ran each attempt: named by a store a fleet shares, absent from one engine's own.
      if (kind.namesEngines) assert.deepEqual(detail.attempts.map((a) => a.engineId), [firstEngine, writer(store!)]);
      else assert.ok(detail.attempts.every((a) => !('engineId' in a)));
      store!.mutate('attempt_output_pruned', [41]);
      assert.equal(store!.get<{ output_pruned: number }>('SELECT output_pruned FROM attempts WHERE id = ?', [41])?.output_pruned, 1);
    });

    it('holds: a held item is never due, is counted as held, and its release makes it due again', () => {
      insertItem(store!, 'h');
      insertItem(store!, 'free');
      store!.mutate('item_hold', [1, T0 + 1, 'h']);
      assert.equal(readHeld(s(), 'h'), true);
      assert.equal(readHeld(s(), 'free'), false);
      assert.equal(readStoredState(s()).counters.held, 1);
      assert.equal(readItemDetail(s(), 'h', T0)?.state, 'held');
      assert.deepEqual(readDueItems(s(), T0, 10).map((r) => r.id), ['free']);
      store!.mutate('item_hold', [0, T0 + 2, 'h']);
      assert.deepEqual(readDueItems(s(), T0, 10).map((r) => r.id), ['h', 'free']);
      assert.equal(readStoredState(s()).counters.held, 0);
    });

    it('dispatch order: the highest priority first, then the longest due, then discovery; blocked and running items are passed over', () => {
      insertItem(store!, 'first', { dueAt: 0 });
      insertItem(store!, 'urgent', { dueAt: T0 - 10 });
      insertItem(store!, 'retry', { dueAt: T0 - 500 });
      insertItem(store!, 'later', { dueAt: T0 + 9_000 });
      insertItem(store!, 'blocked');
      insertItem(store!, 'busy');
      store!.mutate('item_priority', [50, 'urgent']);
      store!.mutate('item_blocked', [1, 'blocked']);
      setState(store!, 'busy', { running: 1, attempts: 1 });
      assert.deepEqual(readDueItems(s(), T0, 10).map((r) => r.id), ['urgent', 'first', 'retry']);
      assert.deepEqual(readDueItems(s(), T0, 2).map((r) => r.id), ['urgent', 'first']);
      assert.equal(readNextDueAt(s(), T0), T0 + 9_000);
      // A jump of the wall clock moves the retries waiting out a backoff (attempts > 0), not a runAt.
      setState(store!, 'retry', { attempts: 1, dueAt: T0 + 100 });
      store!.mutate('items_backoff_shift', [1_000]);
      assert.equal(readItem(s(), 'retry')?.due_at, T0 + 1_100);
      assert.equal(readItem(s(), 'later')?.due_at, T0 + 9_000);
    });

    it('a redefinition replaces the definition and resets the item, keeping its place in discovery order', () => {
      insertItem(store!, 'one');
      insertItem(store!, 'two');
      setState(store!, 'one', { outcome: 'failed', attempts: 3, dueAt: null, error: 'boom' });
      const d = definition('one', { name: 'renamed', args: ['-e', '1'], maxAttempts: 5 });
      store!.mutate('item_update', [d.name, 'queue/b.json', storedDefinition(d), 'hash-2', d.maxAttempts, null, 0, 0, T0 + 5, 'one']);
      setState(store!, 'one', { attempts: 0, dueAt: 0, at: T0 + 5 });
      const detail = readItemDetail(s(), 'one', T0 + 10)!;
      assert.deepEqual({ name: detail.item.name, args: detail.item.args, max: detail.item.maxAttempts, source: detail.item.source, state: detail.state }, { name: 'renamed', args: ['-e', '1'], max: 5, source: 'queue/b.json', state: 'waiting' });
      assert.deepEqual(readItemPage(s(), { limit: 10, offset: 0 }, T0 + 10).items.map((i) => i.id), ['one', 'two']);
    });

    it('dependencies: recorded once each, in the order given, and a blocked item waits for those not launched', () => {
      for (const id of ['app', 'lib', 'db']) insertItem(store!, id);
      store!.mutate('dependency_insert', ['app', 'lib']);
      store!.mutate('dependency_insert', ['app', 'db']);
      store!.mutate('dependency_insert', ['app', 'lib']);
      store!.mutate('dependency_insert', ['app', 'unknown']);
      assert.deepEqual(readWaitingFor(s(), 'app'), ['lib', 'db', 'unknown']);
      setState(store!, 'lib', { outcome: 'launched', attempts: 1, dueAt: null });
      assert.deepEqual(readWaitingFor(s(), 'app'), ['db', 'unknown']);
      store!.mutate('item_blocked', [1, 'app']);
      assert.deepEqual(readItemDetail(s(), 'app', T0)?.waitingFor, ['db', 'unknown']);
      store!.mutate('dependencies_clear', ['app']);
      assert.deepEqual(readWaitingFor(s(), 'app'), []);
    });

    it('schedules: a redefinition keeps where the next occurrence counts from; runs and holds are recorded', async () => {
      const cols = 'name, enabled, next_from, last_run_at, last_occurrence';
      store!.mutate('schedule_upsert', ['nightly', 'Nightly', 'queue/s.json', '{"schedule":"0 2 * * *"}', 'h1', T0, T0, T0]);
      store!.mutate('schedule_ran', [T0 + 86_400_000, T0 + 7_200_000, 'nightly@1', T0 + 7_200_000, 'nightly']);
      store!.mutate('schedule_upsert', ['nightly', 'Nightly build', 'queue/s.json', '{"schedule":"0 3 * * *"}', 'h2', T0 + 9, T0 + 9, T0 + 9]);
      await restart();
      assert.deepEqual(store!.get(`SELECT ${cols} FROM schedules WHERE id = ?`, ['nightly']), {
        name: 'Nightly build',
        enabled: 1,
        next_from: T0 + 86_400_000,
        last_run_at: T0 + 7_200_000,
        last_occurrence: 'nightly@1',
      });
      store!.mutate('schedule_enabled', [0, T0 + 99, T0 + 99, 'nightly']);
      assert.deepEqual(store!.get<{ enabled: number; next_from: number }>('SELECT enabled, next_from FROM schedules WHERE id = ?', ['nightly']), { enabled: 0, next_from: T0 + 99 });
    });

    it('source files: one fingerprint per path, replaced when the file changes', () => {
      store!.mutate('source_file_set', ['queue/a.json', 'f1']);
      store!.mutate('source_file_set', ['queue/b.json', 'f2']);
      store!.mutate('source_file_set', ['queue/a.json', 'f3']);
      assert.deepEqual(store!.rows('SELECT path, fingerprint FROM source_files ORDER BY path'), [
        ['queue/a.json', 'f3'],
        ['queue/b.json', 'f2'],
      ]);
    });

    it('logs: filters by action, level, item and time, keyset pages both ways, and pruning from the oldest', async () => {
      log(store!, 1, 'scan started', { action: 'item_discovered', level: 0 });
      log(store!, 2, 'item a launched', { itemId: 'a' });
      log(store!, 3, 'item a failed', { action: 'launch_failed', level: 3, itemId: 'a', details: '{"exitCode":1}' });
      log(store!, 4, 'item b launched', { itemId: 'b' });
      log(store!, 5, 'disk nearly full', { action: 'database_error', level: 2 });
      const firstEngine = writer(store!);
      await restart();
      assert.deepEqual(ids(store!), [1, 2, 3, 4, 5]);
      assert.deepEqual(ids(store!, undefined, { actions: ['launch_succeeded'] }), [2, 4]);
      assert.deepEqual(ids(store!, undefined, { minLevel: 'warn' }), [3, 5]);
      assert.deepEqual(ids(store!, undefined, { itemId: 'a' }), [2, 3]);
      assert.deepEqual(ids(store!, undefined, { since: new Date(T0 + 2).toISOString(), until: new Date(T0 + 4).toISOString() }), [2, 3]);
      const page = queryLogs(s(), { order: 'desc', limit: 2 });
      assert.deepEqual([page.entries.map((e) => e.id), page.hasMore], [[5, 4], true]);
      const next = queryLogs(s(), { order: 'desc', limit: 2, afterId: page.lastId });
      assert.deepEqual(next.entries.map((e) => e.id), [3, 2]);
      const failed = queryLogs(s(), { order: 'asc', limit: 1, itemId: 'a', minLevel: 'error' }).entries[0];
      assert.deepEqual({ level: failed.level, message: failed.message, details: failed.details, timestamp: failed.timestamp }, { level: 'error', message: 'item a failed', details: { exitCode: 1 }, timestamp: new Date(T0 + 3).toISOString() });
      if (kind.namesEngines) assert.equal(failed.engineId, firstEngine);
      else assert.ok(!('engineId' in failed));
      assert.equal(readStoredState(s()).lastLogId, 5);
      store!.batch(() => {
        store!.mutate('logs_fts_prune_indexed', [2]);
        store!.mutate('logs_prune', [2]);
      });
      assert.deepEqual(ids(store!), [3, 4, 5]);
    });

    it('log search: every word must start a word of the message, in any case, with letters beyond ASCII too', () => {
      const messages = ['Build started for nightly', 'exited with code 2', 'EXIT requested by user', 'Überprüfung fehlgeschlagen', 'rebuild of cache', 'build nightly done'];
      messages.forEach((m, i) => log(store!, i + 1, m));
      store!.indexLogs();
      assert.deepEqual(ids(store!, ['build']), [1, 6]);
      assert.deepEqual(ids(store!, ['exit']), [2, 3]);
      assert.deepEqual(ids(store!, ['nightly', 'build']), [1, 6]);
      assert.deepEqual(ids(store!, ['überprüf']), [4]);
      assert.deepEqual(ids(store!, ['uild']), []);
      // Entries written after the index last caught up are found as well.
      log(store!, 7, 'build again');
      assert.deepEqual(ids(store!, ['build']), [1, 6, 7]);
      assert.deepEqual(ids(store!, ['build'], { order: 'desc', limit: 2 }), [7, 6]);
    });

    it('item search: each word starts a word of the id, name, command or args; the other filters apply and the total is exact', async () => {
      insertItem(store!, 'deploy-web', { args: ['--target', 'production'] });
      insertItem(store!, 'deploy-api', { source: 'queue/b.json' });
      insertItem(store!, 'test-unit');
      insertItem(store!, 'redeploy');
      // Whatever the store builds for its search, once it says it is ready a search needs no more.
      await store!.searchItemsReady();
      assert.equal(store!.searchItemsReady(), undefined);
      setState(store!, 'deploy-api', { outcome: 'failed', attempts: 3, dueAt: null });
      const page = (q: string, extra: object = {}, limit = 10, offset = 0) => readItemPage(s(), { filter: { q, ...extra }, limit, offset }, T0);
      assert.deepEqual(page('deploy').items.map((i) => i.id), ['deploy-web', 'deploy-api']);
      assert.equal(page('deploy').total, 2);
      assert.deepEqual(page('DEPLOY prod').items.map((i) => i.id), ['deploy-web']);
      assert.deepEqual(page('deploy', { outcome: 'failed' }).items.map((i) => i.id), ['deploy-api']);
      assert.deepEqual(page('deploy', { source: 'queue/a.json' }).items.map((i) => i.id), ['deploy-web']);
      assert.deepEqual(page('deploy', { states: ['waiting'] }).items.map((i) => i.id), ['deploy-web']);
      const second = page('deploy', {}, 1, 1);
      assert.deepEqual([second.items.map((i) => i.id), second.total], [['deploy-api'], 2]);
      assert.deepEqual(page('ploy').items, []);
      assert.equal(page('ploy').total, 0);
      // A word with other characters than letters and digits is matched as typed.
      assert.deepEqual(page('deploy-w').items.map((i) => i.id), ['deploy-web']);
    });

    it('a batch is one unit: its value is returned, and a throw inside undoes every change it made', async () => {
      insertItem(store!, 'kept');
      assert.equal(
        store!.batch(() => {
          insertItem(store!, 'x1');
          return 'done';
        }),
        'done',
      );
      assert.throws(
        () =>
          store!.batch(() => {
            insertItem(store!, 'undone');
            setState(store!, 'kept', { outcome: 'failed', attempts: 1, dueAt: null });
            throw new Error('stop here');
          }),
        /stop here/,
      );
      assert.equal(readItem(s(), 'undone'), undefined);
      assert.equal(readItem(s(), 'kept')?.outcome, 'pending');
      await restart();
      assert.deepEqual(readItemPage(s(), { limit: 10, offset: 0 }, T0).items.map((i) => i.id), ['kept', 'x1']);
      assert.equal(readItem(s(), 'kept')?.outcome, 'pending');
    });

    it('a batch undone by a throw stays undone for an engine that finds the store after a crash', async () => {
      insertItem(store!, 'kept');
      assert.throws(() =>
        store!.batch(() => {
          insertItem(store!, 'undone');
          throw new Error('stop here');
        }),
      );
      insertItem(store!, 'after');
      assert.equal(await store!.commitDurably(), true);
      // Opened beside the first, which is never closed: what a kill -9 leaves is all it reads.
      const survivor = track(await kind.reopen());
      assert.deepEqual(readItemPage(survivor, { limit: 10, offset: 0 }, T0).items.map((i) => i.id), ['kept', 'after']);
    });

    it('durability: a commit leaves nothing pending and reports health; the store says where it is and how large', async () => {
      insertItem(store!, 'a');
      assert.equal(store!.commit(), true);
      assert.equal(store!.hasPending, false);
      insertItem(store!, 'b');
      assert.equal(await store!.commitDurably(), true);
      assert.equal(store!.hasPending, false);
      assert.equal(store!.journalSynced, true);
      assert.equal(store!.lastError, null);
      assert.equal(typeof store!.lastPersistTime, 'number');
      assert.ok(store!.sizeBytes() > 0, 'a store on disk takes room');
      assert.ok(!store!.databasePath.includes(PostgresServer.PASSWORD), 'the path never shows a password');
      const { journalBytes, snapshotBytes } = store!.journalSize;
      assert.ok(journalBytes >= 0 && snapshotBytes >= 0);
      assert.equal(typeof store!.changedSinceSnapshot, 'boolean');
    });

    it('a snapshot started in the background, or abandoned, loses nothing across a restart', async () => {
      insertItem(store!, 'before');
      await store!.commitDurably();
      assert.equal(typeof store!.snapshotInBackground(), 'boolean');
      insertItem(store!, 'during');
      store!.abandonCheckpoint();
      await restart();
      assert.deepEqual(readItemPage(s(), { limit: 10, offset: 0 }, T0).items.map((i) => i.id), ['before', 'during']);
    });

    it('rows and get: arrays in column order, one object or undefined', () => {
      insertItem(store!, 'r1');
      insertItem(store!, 'r2');
      assert.deepEqual(store!.rows('SELECT id, max_attempts FROM items ORDER BY seq'), [
        ['r1', 3],
        ['r2', 3],
      ]);
      assert.deepEqual(store!.get('SELECT id, outcome FROM items WHERE id = ?', ['r2']), { id: 'r2', outcome: 'pending' });
      assert.equal(store!.get('SELECT id FROM items WHERE id = ?', ['none']), undefined);
      assert.deepEqual(store!.all<{ id: string }>('SELECT id FROM items ORDER BY seq DESC').map((r) => r.id), ['r2', 'r1']);
    });
  });
}

describe('store contract: the two statement tables', () => {
  it('PostgreSQL has a statement (or an explicit nothing) for every named mutation of sql.js, and no other', () => {
    assert.deepEqual(Object.keys(PG_MUTATIONS).sort(), Object.keys(MUTATIONS).sort());
  });

  it('each PostgreSQL statement takes the parameters its sql.js statement takes (plus the engine id where it records one)', () => {
    const count = (sql: string): number => (sql.match(/\?/g) ?? []).length;
    for (const [key, sql] of Object.entries(MUTATIONS) as [keyof typeof MUTATIONS, string][]) {
      const pg = PG_MUTATIONS[key];
      if (pg === null) continue;
      assert.equal(count(pg), count(sql) + (WITH_ENGINE_ID.has(key) ? 1 : 0), `${key}: ${pg}`);
    }
  });
});
