import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import path from 'node:path';
import * as zlib from 'node:zlib';
import { loadSqlJs } from '../../src/core/store/sqlJs';
import type { CheckpointJob } from '../../src/core/store/checkpoint';
import { DATABASE_ROOM_BYTES } from '../../src/core/store/snapshotFiles';
import { Engine } from '../../src/core/kernel/engine';
import { queryLogs } from '../../src/core/reads/logQuery';
import { JOURNAL_FILE, JOURNAL_NEXT_FILE, SNAPSHOT_FILE, SNAPSHOT_SUM_FILE, Store, type StoreNote } from '../../src/core/store';
import { AttemptLauncher } from '../../src/core/launching';
import { locateLaunchHelper } from '../../src/host/launchHelperEntry';
import { allLogs, itemDefinition, nodeItem, processAlive, settled, TempWorkspace, waitFor } from './support/workspace';

/** Counts the synchronous fdatasyncs the store makes (it calls them through the fs module) until restored. */
function countSyncFdatasyncs(): { readonly calls: number; restore: () => void } {
  const fs = require('node:fs') as typeof import('node:fs');
  const original = fs.fdatasyncSync;
  let calls = 0;
  fs.fdatasyncSync = (fd: number) => {
    calls++;
    original(fd);
  };
  return {
    get calls() {
      return calls;
    },
    restore: () => {
      fs.fdatasyncSync = original;
    },
  };
}

/** Opens a store (`null`: in memory), runs `fn` on it and closes it, whether `fn` throws or not. */
async function withStore<T>(storageDir: string | null, fn: (store: Store) => T | Promise<T>): Promise<T> {
  const { store } = await Store.open({ storageDir });
  try {
    return await fn(store);
  } finally {
    store.close();
  }
}

/** Records when the engine's persist tick starts each background snapshot. */
function recordSnapshotStarts(store: Store): number[] {
  const started: number[] = [];
  const snapshotInBackground = store.snapshotInBackground.bind(store);
  store.snapshotInBackground = () => {
    started.push(Date.now());
    return snapshotInBackground();
  };
  return started;
}


/**
 * Copies a live storage folder as a crash at this moment would leave it, half-written checkpoints
 * included. A replaced snapshot being deleted in the background (engine.sqlite.tmp-*.old) is left
 * out: it can vanish between cpSync's readdir and its lstat, and a start removes it unread.
 */
function copyAsCrashed(from: string, to: string): void {
  cpSync(from, to, { recursive: true, filter: (src) => !src.endsWith('.old') });
}
describe('store: snapshot, journal, recovery on a real disk', function () {
  this.timeout(30_000);
  let ws: TempWorkspace;
  let engine: Engine | undefined;
  beforeEach(() => (ws = new TempWorkspace('engine-store-')));
  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    ws.dispose();
  });

  it('round-trips items, counters and logs through a snapshot', async () => {
    ws.enqueue('a.json', [nodeItem('a', '0'), nodeItem('b', 'process.exit(1)', { maxAttempts: 1 })]);
    engine = await Engine.create(ws.options());
    await engine.start();
    await settled(engine);
    const stats = engine.stats();
    const logs = allLogs(engine);
    await engine.shutdown(0);
    assert.ok(existsSync(path.join(ws.storage, SNAPSHOT_FILE)));
    assert.equal(readFileSync(path.join(ws.storage, JOURNAL_FILE)).length, 0, 'the snapshot folded the journal in');

    engine = await Engine.create(ws.options());
    assert.deepEqual(engine.stats(), stats);
    const reloaded = allLogs(engine);
    assert.deepEqual(reloaded.slice(0, logs.length), logs);
    assert.equal(reloaded[logs.length].action, 'engine_stopped', 'the shutdown itself is on record');
  });

  it('replays the journal written since the last snapshot (a crash without shutdown)', async () => {
    const { store } = await Store.open({ storageDir: ws.storage });
    store.setMeta('total_launches', '41');
    store.mutate('log_insert', [7, Date.now(), 'engine_started', 1, 'from the journal', null, null]);
    store.mutate('log_fts_insert', [7, 'from the journal']);
    assert.equal(store.commit(), true);
    // No close(): the process "dies" here; only the journal has these mutations.
    assert.ok(readFileSync(path.join(ws.storage, JOURNAL_FILE), 'utf8').split('\n').length >= 3);

    engine = await Engine.create(ws.options());
    assert.equal(engine.stats().totalLaunches, 41);
    assert.equal(engine.queryLogs({ order: 'asc', limit: 10, words: ['journal'] }).entries[0]?.id, 7);
  });

  it('keeps text that starts with a byte order mark (U+FEFF): read at once, replayed from the journal, loaded from a snapshot', async () => {
    // sql.js's default TextDecoder dropped a leading U+FEFF from every TEXT value read back
    // (fast-check seed 1474214314 in logQuery.test found it in a log message).
    const bom = '\uFEFF';
    const entry = { message: `${bom}${bom}message`, itemId: `${bom}item`, details: JSON.stringify({ [`${bom}key`]: `${bom}value` }) };
    const read = (store: Store) => store.get<{ message: string; item_id: string; details: string }>('SELECT message, item_id, details FROM logs WHERE id = 1');
    const expected = { message: entry.message, item_id: entry.itemId, details: entry.details };
    const { store } = await Store.open({ storageDir: ws.storage });
    store.mutate('log_insert', [1, 1_700_000_000_000, 'launch_failed', 3, entry.message, entry.itemId, entry.details]);
    assert.deepEqual({ ...read(store) }, expected);
    assert.equal(store.get<{ t: string }>('SELECT ? AS t', [bom])!.t, bom);
    assert.equal(store.commit(), true);
    const crashed = path.join(ws.root, 'crashed');
    copyAsCrashed(ws.storage, crashed);
    assert.equal(store.snapshot(), true);
    store.close();

    for (const storageDir of [crashed, ws.storage]) {
      await withStore(storageDir, (reopened) => assert.deepEqual({ ...read(reopened) }, expected, storageDir === crashed ? 'replayed from the journal' : 'loaded from the snapshot'));
    }
  });

  describe('the log\'s full-text index, added to in batches outside the journal', () => {
    /** Entries as the engine writes them now: the row only, journaled; the index catches up later. */
    function writeEntries(store: Store, from: number, to: number): void {
      store.batch(() => {
        for (let id = from; id <= to; id++) {
          store.mutate('log_insert', [id, 1_700_000_000_000 + id, 'launch_failed', 3, `entry ${id} ${id % 10 === 0 ? 'rareword' : 'common'} exit`, null, null]);
        }
      });
    }
    const fts = (store: Store, word: string) => store.get<{ n: number }>('SELECT COUNT(*) AS n FROM logs_fts WHERE logs_fts MATCH ?', [word])!.n;
    /** FTS4's own check that every posting matches the content table; throws when the index is damaged. */
    const intact = (store: Store) => store.rows("INSERT INTO logs_fts (logs_fts) VALUES ('integrity-check')");

    it('a crash with entries not yet indexed, then a prune past them: replay and catch-up leave an intact, complete index', async () => {
      const { store } = await Store.open({ storageDir: ws.storage });
      writeEntries(store, 1, 100);
      assert.equal(store.indexLogs(50), 50, 'at most the step asked for, oldest first');
      assert.equal(store.snapshot(), true);
      // After the snapshot: entries 101-200, none of them indexed, and a prune of 1-120 (past what
      // the index holds), all in the journal only.
      writeEntries(store, 101, 200);
      store.batch(() => {
        store.mutate('logs_fts_prune_indexed', [120]);
        store.mutate('logs_prune', [120]);
      });
      assert.equal(store.commit(), true);
      const crashed = path.join(ws.root, 'crashed');
      copyAsCrashed(ws.storage, crashed);
      store.close();

      await withStore(crashed, (recovered) => {
        assert.equal(fts(recovered, 'exit'), 0, 'the snapshot indexed 1-50 and the prune removed them');
        assert.equal(recovered.indexLogs(), 80, 'the 80 entries left, all unindexed, are added');
        assert.equal(recovered.indexLogs(), 0);
        // (FTS4 checks an external-content index against every row of its content table, so the
        // check means something only once the index has caught up.)
        assert.doesNotThrow(() => intact(recovered), 'replay and catch-up left the index consistent with the log');
        assert.equal(fts(recovered, 'exit'), 80);
        assert.equal(fts(recovered, 'rareword'), 8);
      });
    });

    it('a word search reads the index only once it holds the entries just written, rare words included', async () => {
      await withStore(null, (store) => {
        writeEntries(store, 1, 20_000);
        assert.equal(fts(store, 'rareword'), 0, 'nothing indexed yet');
        // 2,000 entries in 20,000: the search walks the newest and then turns to the index.
        const page = queryLogs(store, { order: 'desc', limit: 3000, words: ['rareword'] });
        assert.equal(page.entries.length, 2000);
        assert.equal(page.hasMore, false);
        assert.equal(fts(store, 'rareword'), 2000, 'the search brought the index up to date first');
        // Entries written after that are found too, by a word only they have.
        store.mutate('log_insert', [20_001, 1_700_000_020_001, 'launch_failed', 3, 'entry 20001 uniqueword', null, null]);
        assert.deepEqual(queryLogs(store, { order: 'asc', limit: 10, words: ['uniqueword'] }).entries.map((e) => e.id), [20_001]);
        // A word of other letters than a-z0-9 goes to the index alone.
        store.mutate('log_insert', [20_002, 1_700_000_020_002, 'launch_failed', 3, 'entry 20002 café', null, null]);
        assert.deepEqual(queryLogs(store, { order: 'asc', limit: 10, words: ['café'] }).entries.map((e) => e.id), [20_002]);
        assert.doesNotThrow(() => intact(store));
      });
    });

    it('pruning past the entries the index holds removes only those; the rest are indexed afterwards', async () => {
      await withStore(null, (store) => {
        writeEntries(store, 1, 100);
        assert.equal(store.indexLogs(60), 60);
        store.batch(() => {
          store.mutate('logs_fts_prune_indexed', [80]);
          store.mutate('logs_prune', [80]);
        });
        assert.equal(store.get<{ n: number }>('SELECT COUNT(*) AS n FROM logs_fts_docsize')!.n, 0, 'entries 1-60 left the index');
        assert.equal(store.indexLogs(), 20, '81-100: never indexed, and the only ones left');
        assert.doesNotThrow(() => intact(store));
        assert.equal(fts(store, 'exit'), 20);
        assert.equal(fts(store, 'rareword'), 2);
      });
    });

    it('the engine indexes its entries every second and before a search; close() leaves the snapshot\'s index complete', async () => {
      ws.enqueue('a.json', [nodeItem('a', '0'), nodeItem('b', '0')]);
      engine = await Engine.create(ws.options());
      await engine.start();
      await settled(engine);
      // Written with the row only: nothing in the journal indexes an entry any more.
      assert.doesNotMatch(readFileSync(path.join(ws.storage, JOURNAL_FILE), 'utf8'), /log_fts_insert/);
      assert.ok(engine.queryLogs({ order: 'asc', limit: 100, words: ['succeeded'] }).entries.length >= 2);
      await engine.shutdown(0);
      engine = undefined;
      await withStore(ws.storage, (reopened) => {
        const logs = reopened.get<{ n: number }>('SELECT COUNT(*) AS n FROM logs')!.n;
        assert.equal(reopened.indexLogs(), 0, 'nothing left to index after a clean stop');
        assert.equal(reopened.get<{ n: number }>('SELECT COUNT(*) AS n FROM logs_fts_docsize')!.n, logs);
        assert.doesNotThrow(() => intact(reopened));
      });
    });
  });

  it('a background commit writes at once and fsyncs off the main thread; a synchronous one after it still fsyncs before returning', async () => {
    const { store } = await Store.open({ storageDir: ws.storage });
    const syncs = countSyncFdatasyncs();
    try {
      store.setMeta('total_launches', '7');
      assert.equal(store.commit('background'), true);
      assert.equal(syncs.calls, 0, 'no synchronous fdatasync');
      assert.match(readFileSync(path.join(ws.storage, JOURNAL_FILE), 'utf8'), /"total_launches","7"/, 'written at once');
      assert.equal(store.journalSyncPending, true, 'the fdatasync runs on the thread pool');
      // A spawn's commit right now has nothing pending, yet must not return before the disk has it.
      assert.equal(store.commit(), true);
      assert.equal(syncs.calls, 1, 'the synchronous commit synced what the background one wrote');
      assert.equal(store.commit(), true);
      assert.equal(syncs.calls, 1, 'and nothing more when nothing is unsynced');
      await waitFor('the background fdatasync', () => !store.journalSyncPending, 5000);
      // A rotation (full snapshot) while a background fdatasync runs: no error is reported for the old descriptor.
      store.setMeta('total_launches', '8');
      assert.equal(store.commit('background'), true);
      assert.equal(store.snapshot(), true);
      await waitFor('the background fdatasync', () => !store.journalSyncPending, 5000);
      assert.equal(store.lastError, null);
    } finally {
      syncs.restore();
      store.close();
    }
    const { store: reopened } = await Store.open({ storageDir: ws.storage });
    assert.equal(reopened.getMeta('total_launches'), '8');
    reopened.close();
  });

  /** Holds every fdatasync the store makes on the thread pool until released (it calls them through the fs module). */
  function holdBackgroundSyncs(): { held: (() => void)[]; release: () => void; restore: () => void } {
    const fs = require('node:fs') as typeof import('node:fs');
    const original = fs.fdatasync;
    const held: (() => void)[] = [];
    (fs as { fdatasync: unknown }).fdatasync = (fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => held.push(() => original(fd, cb));
    return {
      held,
      release: () => {
        for (const run of held.splice(0)) run();
      },
      restore: () => {
        (fs as { fdatasync: unknown }).fdatasync = original;
      },
    };
  }

  it('spawns an attempt only once its journal records are on disk, without holding the event loop meanwhile', async () => {
    const marker = path.join(ws.root, 'launched');
    ws.enqueue('a.json', [nodeItem('a', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'x')`)]);
    const syncs = holdBackgroundSyncs();
    try {
      engine = await Engine.create(ws.options());
      await engine.start();
      await waitFor('the attempt to be recorded', () => allLogs(engine!).some((l) => l.action === 'launch_started'));
      await waitFor('its fdatasync on the thread pool', () => syncs.held.length > 0, 5000);
      // Timers keep firing (the loop is free) while the disk has not confirmed the journal.
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(existsSync(marker), false, 'not spawned before its journal records are on disk');
      assert.equal(engine.stats().pending, 1);
      syncs.restore();
      syncs.release();
      await waitFor('the process to run', () => existsSync(marker), 10_000);
      await settled(engine);
      assert.equal(engine.stats().launched, 1);
    } finally {
      syncs.restore();
      syncs.release();
    }
  });

  it('a due snapshot waits while journal records are on their way to the disk, and after five ticks syncs them itself', async function () {
    this.timeout(30_000);
    ws.enqueue('a.json', [nodeItem('a', '0')]);
    engine = await Engine.create(ws.options({ snapshotIntervalMs: 1, snapshotMinJournalBytes: 0, initialMode: 'stopped' }));
    const store = (engine as unknown as { store: Store }).store;
    const started = recordSnapshotStarts(store);
    const syncs = holdBackgroundSyncs();
    try {
      const t0 = Date.now();
      await engine.start(); // ingests the item: journal records whose fdatasync is held
      assert.equal(store.journalSynced, false);
      await waitFor('the snapshot to start anyway', () => started.length > 0, 20_000);
      assert.ok(started[0] - t0 >= 4_500, `it waited five persist ticks (started after ${started[0] - t0} ms)`);
      assert.equal(await store.whenCheckpointed(), true);
      syncs.restore();
      syncs.release();
      // Now the thread pool keeps up: the next due snapshot starts on the next tick.
      const before = started.length;
      store.setMeta('total_launches', '1');
      await waitFor('a checkpoint at the next tick', () => started.length > before, 3_000);
    } finally {
      syncs.restore();
      syncs.release();
    }
  });

  it('takes a periodic snapshot only once the journal is worth folding in, and reports journal syncs as persists', async function () {
    this.timeout(30_000);
    ws.enqueue('a.json', [nodeItem('a', '0')]);
    engine = await Engine.create(ws.options({ snapshotIntervalMs: 1, snapshotMinJournalBytes: 64 * 1024, initialMode: 'stopped' }));
    const store = (engine as unknown as { store: Store }).store;
    const started = recordSnapshotStarts(store);
    const snapshotFile = path.join(ws.storage, SNAPSHOT_FILE);
    const snapshotAt = statSync(snapshotFile).mtimeMs;
    const persistedAt = () => Date.parse(engine!.status().database.lastPersistAt ?? '');
    await engine.start(); // ingests the item: a few hundred bytes of journal, due at every tick
    const ingested = Date.now();
    await waitFor('the ingest to be persisted', () => persistedAt() >= ingested - 5, 5_000);
    await new Promise((r) => setTimeout(r, 2_500)); // two persist ticks with a change each
    assert.equal(started.length, 0, 'no snapshot for a small journal');
    assert.equal(statSync(snapshotFile).mtimeMs, snapshotAt, 'engine.sqlite untouched');
    const { journalBytes } = store.journalSize;
    assert.ok(journalBytes > 0 && journalBytes < 64 * 1024, `journal ${journalBytes} bytes`);
    assert.equal(statSync(path.join(ws.storage, JOURNAL_FILE)).size, journalBytes);
    // Past the floor, the next tick starts one, and it folds the journal in.
    store.setMeta('padding', 'x'.repeat(64 * 1024));
    await waitFor('a snapshot once the journal passed the floor', () => started.length > 0, 5_000);
    assert.equal(await store.whenCheckpointed(), true);
    assert.ok(statSync(snapshotFile).mtimeMs > snapshotAt);
    assert.ok(store.journalSize.journalBytes < 64 * 1024, 'the journal starts over');
    assert.equal(store.journalSize.snapshotBytes, statSync(snapshotFile).size);
  });

  it('an attempt whose journal fdatasync fails is not spawned: it fails as not launched, with the storage error reported', async () => {
    const marker = path.join(ws.root, 'launched');
    ws.enqueue('a.json', [nodeItem('a', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'x')`, { maxAttempts: 1 })]);
    const fs = require('node:fs') as typeof import('node:fs');
    const original = fs.fdatasync;
    (fs as { fdatasync: unknown }).fdatasync = (_fd: number, cb: (err: NodeJS.ErrnoException | null) => void) =>
      setImmediate(() => cb(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })));
    try {
      engine = await Engine.create(ws.options());
      await engine.start();
      await waitFor('the attempt to fail', () => engine!.stats().failed === 1);
    } finally {
      (fs as { fdatasync: unknown }).fdatasync = original;
    }
    const failed = allLogs(engine).find((l) => l.action === 'launch_failed');
    assert.match(failed?.message ?? '', /storage unavailable; not launched/);
    assert.ok(allLogs(engine).some((l) => l.action === 'database_error' && /journal fsync failed: EIO/.test(l.message)), 'the storage error is on record');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(existsSync(marker), false, 'no process ran');
  });

  it('ignores a journal cut in the middle of its last record, and says so', async () => {
    const { store } = await Store.open({ storageDir: ws.storage });
    store.setMeta('total_failed', '5');
    store.commit();
    appendFileSync(path.join(ws.storage, JOURNAL_FILE), '[99,"meta_set",["total_fai');
    engine = await Engine.create(ws.options());
    assert.equal(engine.stats().totalFailed, 5, 'every whole record applied');
    const note = allLogs(engine).find((e) => e.action === 'database_recovered');
    assert.ok(note, 'logged');
    assert.match(note.message, /torn record/);
    assert.match(engine.status().database.recovery?.message ?? '', /torn record/);
    assert.equal(engine.health().checks.database, 'ok');
  });

  for (const [name, bytes] of [
    ['garbage bytes', Buffer.from('this is not a sqlite database, just garbage '.repeat(100))],
    ['zero length', Buffer.alloc(0)],
  ] as const) {
    it(`moves a snapshot with ${name} aside and starts empty`, async () => {
      mkdirSync(ws.storage, { recursive: true });
      writeFileSync(path.join(ws.storage, SNAPSHOT_FILE), bytes);
      ws.enqueue('a.json', nodeItem('a', '0'));
      engine = await Engine.create(ws.options());
      await engine.start();
      const aside = readdirSync(ws.storage).filter((f) => f.startsWith(`${SNAPSHOT_FILE}.corrupt-`));
      assert.equal(aside.length, 1, readdirSync(ws.storage).join(', '));
      assert.deepEqual(readFileSync(path.join(ws.storage, aside[0])), bytes, 'the evidence is kept as it was');
      const note = allLogs(engine).find((e) => e.action === 'database_recovered')!;
      assert.match(note.message, /could not be opened .* moved it aside/);
      assert.equal(note.level, 'error');
      assert.equal(engine.status().database.recovery?.message, note.message, '/status says so too');
      assert.equal(engine.health().checks.database, 'ok');
      await settled(engine);
      assert.equal(engine.stats().launched, 1, 'and works on');
    });
  }

  it('moves aside a snapshot from a newer schema version, naming the versions', async () => {
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    db.run('CREATE TABLE future (x); PRAGMA user_version = 99;');
    mkdirSync(ws.storage, { recursive: true });
    writeFileSync(path.join(ws.storage, SNAPSHOT_FILE), db.export());
    engine = await Engine.create(ws.options());
    const note = allLogs(engine).find((e) => e.action === 'database_recovered')!;
    assert.match(note.message, /newer Engine Monitor \(schema 99/);
  });

  it('moves aside a snapshot that is valid SQLite but not an Engine Monitor database, and starts every time', async () => {
    const SQL = await loadSqlJs();
    for (const [ddl, reason] of [
      ['CREATE TABLE items (x);', /it holds tables \(items\) but no Engine Monitor schema version/],
      ['CREATE TABLE items (x); PRAGMA user_version = 1;', /table \w+ (is missing|has columns)/],
    ] as const) {
      const db = new SQL.Database();
      db.run(ddl);
      mkdirSync(ws.storage, { recursive: true });
      writeFileSync(path.join(ws.storage, SNAPSHOT_FILE), db.export());
      db.close();
      ws.enqueue('a.json', nodeItem('a', '0'));
      engine = await Engine.create(ws.options());
      await engine.start();
      const note = allLogs(engine).find((e) => e.action === 'database_recovered')!;
      assert.match(note.message, /not an Engine Monitor database/);
      assert.match(note.message, reason);
      assert.ok(readdirSync(ws.storage).some((f) => f.startsWith(`${SNAPSHOT_FILE}.corrupt-`)), 'moved aside');
      await settled(engine);
      assert.equal(engine.stats().launched, 1, 'and the engine works');
      await engine.shutdown(0);
      engine = undefined;
      // The next start opens the engine's own snapshot.
      engine = await Engine.create(ws.options());
      assert.equal(engine.stats().launched, 1);
      await engine.shutdown(0);
      engine = undefined;
      rmSync(ws.storage, { recursive: true, force: true });
    }
  });

  it('reports a database error while storage is gone, keeps working in memory, and recovers', async () => {
    ws.enqueue('a.json', nodeItem('a', '0'));
    engine = await Engine.create(ws.options());
    await engine.start();
    await settled(engine);
    rmSync(ws.storage, { recursive: true, force: true });
    ws.enqueue('b.json', nodeItem('b', '0'));
    await engine.pollNow();
    assert.deepEqual(engine.health(), { status: 'unhealthy', checks: { database: 'error', engine: 'running' } });
    assert.match(engine.status().database.lastError ?? '', /journal .* is gone|snapshot failed/);
    assert.equal(engine.stats().total, 2, 'state is kept in memory');
    assert.ok(allLogs(engine).some((e) => e.action === 'database_error'));
    assert.equal(engine.stats().launched, 1, 'nothing launches without a journal');

    mkdirSync(ws.storage);
    await waitFor('health to recover', () => engine!.health().checks.database === 'ok', 5000);
    await settled(engine);
    assert.equal(engine.stats().launched, 2);
    assert.ok(allLogs(engine).some((e) => e.action === 'database_recovered'));

    // What was acknowledged while storage was down is on disk now.
    const stats = engine.stats();
    await engine.shutdown(0);
    engine = await Engine.create(ws.options());
    assert.deepEqual({ ...engine.stats(), lastPollAt: null }, { ...stats, lastPollAt: null });
  });

  it('reports a database error when the storage folder is replaced by a file', async () => {
    engine = await Engine.create(ws.options());
    await engine.start();
    rmSync(ws.storage, { recursive: true, force: true });
    writeFileSync(ws.storage, 'not a folder');
    ws.enqueue('b.json', nodeItem('b', '0'));
    await engine.pollNow();
    assert.equal(engine.health().status, 'unhealthy');
    rmSync(ws.storage);
    mkdirSync(ws.storage);
    await waitFor('health to recover', () => engine!.health().checks.database === 'ok', 5000);
  });
});

describe('store: background snapshots (checkpoint worker) on a real disk', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  const open: Store[] = [];
  beforeEach(() => (ws = new TempWorkspace('engine-ckpt-')));
  afterEach(() => {
    for (const s of open.splice(0)) {
      try {
        s.close();
      } catch {
        // closed by the test
      }
    }
    ws.dispose();
  });

  async function openStore(dir = ws.storage, notes: StoreNote[] = []): Promise<Store> {
    // These tests are about the builder off the main thread, which a small database skips.
    const { store } = await Store.open({ storageDir: dir, onNote: (n) => notes.push(n), exportCheckpointMaxBytes: 0 });
    open.push(store);
    return store;
  }

  /** Log entries through the engine's own journaled statements. */
  function addLogs(store: Store, from: number, count: number): void {
    store.batch(() => {
      for (let id = from; id < from + count; id++) {
        const message = `entry ${id} exit code ${id % 7}`;
        store.mutate('log_insert', [id, 1_700_000_000_000 + id, 'launch_failed', 3, message, `item-${id % 13}`, JSON.stringify({ n: id })]);
        store.mutate('log_fts_insert', [id, message]);
      }
    });
  }

  function dump(store: Store): unknown {
    return {
      logs: store.rows('SELECT id, ts, action, level, message, item_id, details FROM logs ORDER BY id'),
      fts: store.rows("SELECT docid FROM logs_fts WHERE logs_fts MATCH 'exit' ORDER BY docid"),
      meta: store.rows("SELECT key, value FROM meta WHERE key <> 'journal_seq' ORDER BY key"),
    };
  }

  it('leaves its folder quiescent once closed: no temporary file, nothing still being deleted', async () => {
    // Copying the folder right after close() used to race the background unlink of the replaced
    // snapshot (ENOENT on engine.sqlite.tmp-*.old from cpSync).
    const store = await openStore();
    addLogs(store, 1, 50);
    store.snapshot();
    addLogs(store, 51, 50);
    store.close();
    assert.deepEqual(readdirSync(ws.storage).filter((f) => f.includes('.tmp-')), []);
  });

  it('a snapshot whose write fails (disk full) leaves no temporary file behind', async () => {
    // Seen while storage was failing: one empty engine.sqlite.tmp-* left per second of retries.
    // The next temporary names are links to /dev/full, so opening succeeds and writing fails.
    const store = await openStore();
    addLogs(store, 1, 20);
    // Not counting a replaced snapshot (.old) being deleted in the background meanwhile.
    const temporaries = () => readdirSync(ws.storage).filter((f) => f.includes('.tmp-') && !f.endsWith('.old'));
    const planted = temporaries().length;
    for (let n = 1; n <= 50; n++) symlinkSync('/dev/full', path.join(ws.storage, `${SNAPSHOT_FILE}.tmp-${process.pid}-${n}`));
    const before = temporaries().length;
    assert.equal(store.snapshot(), false, 'the write failed');
    assert.match(store.lastError ?? '', /ENOSPC|no space/i);
    assert.equal(temporaries().length, before - 1, 'the failed temporary file was removed');
    for (const f of temporaries()) rmSync(path.join(ws.storage, f));
    assert.equal(store.snapshot(), true, 'and the next snapshot succeeds');
    assert.equal(temporaries().length, planted);
  });

  it('builds the snapshot off the main thread; a restart from it equals the live database', async () => {
    const store = await openStore();
    addLogs(store, 1, 3000);
    store.setMeta('total_launches', '3000');
    assert.equal(store.commit(), true, 'journaled and synced: the checkpoint folds all of it');
    assert.equal(store.snapshotInBackground(), true, 'started');
    assert.ok(existsSync(path.join(ws.storage, JOURNAL_NEXT_FILE)), 'the journal continues in engine.journal.next meanwhile');
    // Changes made while the worker runs belong to the next snapshot, via the journal.
    addLogs(store, 3001, 50);
    assert.equal(store.commit(), true);
    assert.equal(store.snapshotInBackground(), false, 'one checkpoint at a time');

    assert.equal(await store.whenCheckpointed(), true);
    assert.equal(store.lastSnapshot?.background, true);
    assert.ok(!existsSync(path.join(ws.storage, JOURNAL_NEXT_FILE)), 'the continuation became the journal');
    const journal = readFileSync(path.join(ws.storage, JOURNAL_FILE), 'utf8').trim().split('\n');
    assert.equal(journal.length, 100, 'engine.journal holds exactly the 50 entries (+ FTS rows) written during the checkpoint');
    const snapshot = readFileSync(path.join(ws.storage, SNAPSHOT_FILE));
    assert.deepEqual(JSON.parse(readFileSync(path.join(ws.storage, SNAPSHOT_SUM_FILE), 'utf8')), {
      bytes: snapshot.length,
      crc32: zlib.crc32(snapshot),
    });
    // The replaced snapshot is deleted off the main thread, just after the install.
    await waitFor('no temporary file left', () => readdirSync(ws.storage).every((f) => !f.includes('.tmp-')), 5000);

    // A kill -9 now: what is on disk (snapshot + journal) must be the live state.
    const crashed = path.join(ws.root, 'crashed');
    copyAsCrashed(ws.storage, crashed);
    const reopened = await openStore(crashed);
    assert.deepEqual(dump(reopened), dump(store));
    assert.equal((dump(reopened) as { logs: unknown[] }).logs.length, 3050);
  });

  it('starts a checkpoint without an fdatasync when the journal is synced; what was not written yet continues in the next journal', async () => {
    const store = await openStore();
    addLogs(store, 1, 500);
    assert.equal(store.commit(), true);
    assert.equal(store.journalSynced, true);
    addLogs(store, 501, 20); // in memory, not written to the journal yet
    const syncs = countSyncFdatasyncs();
    try {
      assert.equal(store.snapshotInBackground(), true, 'started');
      assert.equal(syncs.calls, 0, 'no fdatasync on the event loop to start it');
    } finally {
      syncs.restore();
    }
    assert.equal(store.commit(), true);
    assert.equal(readFileSync(path.join(ws.storage, JOURNAL_NEXT_FILE), 'utf8').trim().split('\n').length, 40, 'the 20 unwritten entries (+ FTS rows) went to the continuation');
    assert.equal(await store.whenCheckpointed(), true);
    const crashed = path.join(ws.root, 'crashed');
    copyAsCrashed(ws.storage, crashed);
    const reopened = await openStore(crashed);
    assert.deepEqual(dump(reopened), dump(store), 'snapshot + journal on disk are the live state');
    assert.equal((dump(reopened) as { logs: unknown[] }).logs.length, 520);

    // With records written but not yet synced, starting one syncs them first (the engine waits for
    // a tick at which the thread pool has done it instead).
    addLogs(store, 521, 5);
    assert.equal(store.commit('background'), true);
    assert.equal(store.journalSynced, false, 'written, its fdatasync still on the thread pool');
    const unsynced = countSyncFdatasyncs();
    try {
      assert.equal(store.snapshotInBackground(), true);
      assert.equal(unsynced.calls, 1, 'one synchronous fdatasync of the unsynced records');
    } finally {
      unsynced.restore();
    }
    assert.equal(await store.whenCheckpointed(), true);
  });

  it('checkpoints a small database by exporting it from memory: no builder, no fdatasync on the event loop, nothing lost at any point', async () => {
    const notes: StoreNote[] = [];
    const { store } = await Store.open({
      storageDir: ws.storage,
      onNote: (n) => notes.push(n),
      runCheckpoint: () => {
        throw new Error('a small database needs no checkpoint builder');
      },
    });
    open.push(store);
    addLogs(store, 1, 500);
    assert.equal(store.commit(), true);
    addLogs(store, 501, 20); // in memory only: the export holds them, the next journal repeats them
    const syncs = countSyncFdatasyncs();
    try {
      assert.equal(store.snapshotInBackground(), true, 'started');
      assert.equal(syncs.calls, 0, 'the snapshot file is written and synced on the thread pool');
    } finally {
      syncs.restore();
    }
    // A kill -9 before the install: the old snapshot and both journals.
    const before = path.join(ws.root, 'before-install');
    copyAsCrashed(ws.storage, before);
    assert.equal(store.commit(), true);
    addLogs(store, 521, 10);
    assert.equal(store.commit(), true);
    assert.equal(await store.whenCheckpointed(), true);
    assert.deepEqual(notes, [], 'no fallback');
    assert.equal(store.lastSnapshot?.background, true);
    assert.equal(store.lastSnapshot?.builtIn, 'the engine (exported from memory)');
    assert.equal(store.journalSize.snapshotBytes, statSync(path.join(ws.storage, SNAPSHOT_FILE)).size);
    const snapshot = readFileSync(path.join(ws.storage, SNAPSHOT_FILE));
    assert.deepEqual(JSON.parse(readFileSync(path.join(ws.storage, SNAPSHOT_SUM_FILE), 'utf8')), { bytes: snapshot.length, crc32: zlib.crc32(snapshot) });
    // After it: the new snapshot, and a journal that repeats the 20 entries it already holds.
    const after = path.join(ws.root, 'after-install');
    copyAsCrashed(ws.storage, after);
    const reopened = await openStore(after);
    assert.deepEqual(dump(reopened), dump(store), 'snapshot + journal on disk are the live state');
    assert.equal((dump(reopened) as { logs: unknown[] }).logs.length, 530);
    const early = await openStore(before);
    assert.equal((dump(early) as { logs: unknown[] }).logs.length, 500, 'what was committed before the crash, and no more');
  });

  it('a new database that has grown past the export limit is checkpointed by a builder, not exported here, though its snapshot on disk is still small', async () => {
    const jobs: CheckpointJob[] = [];
    const { store } = await Store.open({
      storageDir: ws.storage,
      // Well above a new database's snapshot on disk, well below what 2,000 entries make.
      exportCheckpointMaxBytes: 256 * 1024,
      runCheckpoint: (job) => {
        jobs.push(job);
        return undefined; // no helper: the store builds it on a thread, as it would without one
      },
    });
    open.push(store);
    const initial = statSync(path.join(ws.storage, SNAPSHOT_FILE)).size;
    assert.ok(initial < 256 * 1024, `the new database's snapshot is small (${initial} bytes)`);
    addLogs(store, 1, 2_000);
    assert.equal(store.commit(), true);
    assert.equal(store.snapshotInBackground(), true, 'started');
    assert.equal(jobs.length, 1, 'the builder was asked');
    assert.equal(await store.whenCheckpointed(), true);
    assert.notEqual(store.lastSnapshot?.builtIn, 'the engine (exported from memory)');
    assert.ok(statSync(path.join(ws.storage, SNAPSHOT_FILE)).size > 256 * 1024, 'the new snapshot holds the 2,000 entries');
  });

  it('runs the checkpoint on a thread at the lowest CPU priority, so the event loop keeps its core', async function () {
    if (process.platform !== 'linux') this.skip(); // per-thread nice values are a Linux feature
    const store = await openStore();
    addLogs(store, 1, 2000);
    const niceThreads = () =>
      readdirSync(`/proc/${process.pid}/task`).filter((tid) => {
        const stat = readFileSync(`/proc/${process.pid}/task/${tid}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16] === '19';
      });
    // A worker thread of an earlier test's checkpoint may still be exiting (a loaded machine).
    await waitFor('no low-priority thread before', () => niceThreads().length === 0, 10_000);
    const mainPriority = getPriority(process.pid);
    assert.equal(store.snapshotInBackground(), true);
    let seen = 0;
    let settledYet = false;
    const done = store.whenCheckpointed().then((ok) => ((settledYet = true), ok));
    while (!settledYet) {
      seen = Math.max(seen, niceThreads().length);
      await new Promise((r) => setTimeout(r, 2));
    }
    assert.equal(await done, true);
    assert.equal(seen, 1, 'the checkpoint thread ran at nice 19');
    assert.equal(getPriority(process.pid), mainPriority, 'the main thread keeps its priority');
  });

  it('a crash while the checkpoint runs (journal split in two) loses nothing', async () => {
    const store = await openStore();
    addLogs(store, 1, 2000);
    assert.equal(store.snapshotInBackground(), true);
    addLogs(store, 2001, 20);
    assert.equal(store.commit(), true);
    // Synchronous from here to the copy: the worker cannot have been installed in between, since
    // installing happens on this thread.
    const crashed = path.join(ws.root, 'crashed');
    copyAsCrashed(ws.storage, crashed);
    assert.ok(existsSync(path.join(crashed, JOURNAL_NEXT_FILE)));
    const notes: StoreNote[] = [];
    const reopened = await openStore(crashed, notes);
    assert.deepEqual(dump(reopened), dump(store));
    assert.ok(!existsSync(path.join(crashed, JOURNAL_NEXT_FILE)), 'the split journal is folded at start');
    // Closed first: the start's own snapshot may still be freeing the one it replaced.
    reopened.close();
    open.splice(open.indexOf(reopened), 1);
    assert.deepEqual(readdirSync(crashed).filter((f) => f.includes('.tmp-')), [], 'a half-written checkpoint is removed');
    await store.whenCheckpointed();
  });

  it('a checkpoint that cannot rebuild the state from disk falls back to a snapshot from memory, and says so', async () => {
    const notes: StoreNote[] = [];
    const store = await openStore(ws.storage, notes);
    addLogs(store, 1, 500);
    assert.equal(store.commit(), true);
    // A record that never happened in memory: replaying the journal from disk now goes past the
    // live state, and the worker must refuse rather than install it.
    appendFileSync(path.join(ws.storage, JOURNAL_FILE), `${JSON.stringify([10_000_000, 'meta_set', ['bogus', 'x']])}\n`);
    assert.equal(store.snapshotInBackground(), true);
    assert.equal(await store.whenCheckpointed(), true, 'the fallback snapshot succeeded');
    assert.equal(store.lastSnapshot?.background, false);
    assert.equal(notes.length, 1);
    assert.match(notes[0].message, /background snapshot failed \(the journal on disk ends at record 10000000, not \d+\); wrote the snapshot from memory instead/);
    copyAsCrashed(ws.storage, path.join(ws.root, 'copy'));
    const fromDisk = await openStore(path.join(ws.root, 'copy'));
    assert.deepEqual(dump(fromDisk), dump(store));
    assert.equal(fromDisk.getMeta('bogus'), undefined, 'the bogus record is not in the state');
  });

  it('a shutdown during a checkpoint abandons it and snapshots the live database', async () => {
    const store = await openStore();
    addLogs(store, 1, 2000);
    assert.equal(store.snapshotInBackground(), true);
    addLogs(store, 2001, 5);
    const live = dump(store);
    const done = store.whenCheckpointed();
    store.close();
    assert.equal(await done, false, 'abandoned');
    await waitFor('the abandoned temporary files to go', () => readdirSync(ws.storage).every((f) => !f.includes('.tmp-')), 5000);
    assert.ok(!existsSync(path.join(ws.storage, JOURNAL_NEXT_FILE)));
    copyAsCrashed(ws.storage, path.join(ws.root, 'copy'));
    assert.deepEqual(dump(await openStore(path.join(ws.root, 'copy'))), live);
  });

  describe('in a process started by the launch helper', () => {
    let launcher: AttemptLauncher | undefined;
    afterEach(async () => {
      await launcher?.close(0);
      launcher = undefined;
    });

    /** A store whose checkpoints go through a ready launch helper, as the engine wires it. */
    async function openWithHelper(notes: StoreNote[] = []): Promise<{ store: Store; helperPids: number[] }> {
      launcher = new AttemptLauncher({ entry: locateLaunchHelper(), helpers: 2 });
      const l = launcher;
      // The helpers start with the first launch.
      assert.equal((await l.launch(1, itemDefinition({}), 1).done).succeeded, true);
      await waitFor('both helpers to be ready', () => l.helperPids.length === 2);
      const { store } = await Store.open({ storageDir: ws.storage, onNote: (n) => notes.push(n), runCheckpoint: (job) => l.runCheckpoint(job), exportCheckpointMaxBytes: 0 });
      open.push(store);
      return { store, helperPids: l.helperPids };
    }

    /** Children of a process (Linux /proc), each with its nice value. */
    function childrenOf(pid: number): { pid: number; nice: number }[] {
      const out: { pid: number; nice: number }[] = [];
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(' ').filter(Boolean)) {
          try {
            const stat = readFileSync(`/proc/${child}/stat`, 'utf8');
            out.push({ pid: Number(child), nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) });
          } catch {
            // gone meanwhile
          }
        }
      }
      return out;
    }

    it('builds the snapshot in another process at the lowest priority; a restart from it equals the live database', async function () {
      if (process.platform !== 'linux') this.skip(); // /proc
      const { store, helperPids } = await openWithHelper();
      addLogs(store, 1, 3000);
      assert.equal(store.snapshotInBackground(), true);
      addLogs(store, 3001, 50);
      // Every process the helper runs meanwhile, by pid, with the lowest nice value seen for it.
      const seen = new Map<number, number>();
      let settledYet = false;
      const done = store.whenCheckpointed().then((ok) => ((settledYet = true), ok));
      while (!settledYet) {
        for (const c of helperPids.flatMap(childrenOf)) seen.set(c.pid, Math.max(seen.get(c.pid) ?? 0, c.nice));
        await new Promise((r) => setTimeout(r, 2));
      }
      assert.equal(await done, true);
      assert.equal(store.lastSnapshot?.background, true);
      assert.equal(seen.size, 1, `the helpers ran one checkpoint process: ${JSON.stringify([...seen])}`);
      const [[pid, nice]] = [...seen];
      assert.notEqual(pid, process.pid);
      assert.equal(nice, 19, 'at nice 19');
      await waitFor('the checkpoint process to exit', () => !processAlive(pid), 5000);
      store.commit();
      const crashed = path.join(ws.root, 'crashed');
      copyAsCrashed(ws.storage, crashed);
      const reopened = await openStore(crashed);
      assert.deepEqual(dump(reopened), dump(store));
      assert.equal((dump(reopened) as { logs: unknown[] }).logs.length, 3050);
    });

    it('a checkpoint process killed mid-build: the snapshot is written from memory, nothing is lost, and the log says where it failed', async function () {
      if (process.platform !== 'linux') this.skip(); // /proc
      const notes: StoreNote[] = [];
      const { store, helperPids } = await openWithHelper(notes);
      addLogs(store, 1, 3000);
      assert.equal(store.snapshotInBackground(), true);
      const [victim] = await waitFor('the checkpoint process', () => {
        const c = helperPids.flatMap(childrenOf);
        return c.length > 0 && c;
      });
      process.kill(victim.pid, 'SIGKILL');
      assert.equal(await store.whenCheckpointed(), true, 'the fallback snapshot succeeded');
      assert.equal(store.lastSnapshot?.background, false);
      assert.equal(notes.length, 1);
      assert.match(notes[0].message, /background snapshot failed \(the checkpoint process ended \(signal SIGKILL\)\); wrote the snapshot from memory instead/);
      assert.equal(notes[0].details?.builtIn, `process ${victim.pid}`);
      await waitFor('no temporary file left', () => readdirSync(ws.storage).every((f) => !f.includes('.tmp-')), 5000);
      copyAsCrashed(ws.storage, path.join(ws.root, 'copy'));
      assert.deepEqual(dump(await openStore(path.join(ws.root, 'copy'))), dump(store));
    });

    it('the engine shutting down mid-checkpoint ends the checkpoint process and leaves no temporary file', async function () {
      if (process.platform !== 'linux') this.skip(); // /proc
      const { store, helperPids } = await openWithHelper();
      addLogs(store, 1, 3000);
      assert.equal(store.snapshotInBackground(), true);
      const [child] = await waitFor('the checkpoint process', () => {
        const c = helperPids.flatMap(childrenOf);
        return c.length > 0 && c;
      });
      const live = dump(store);
      const done = store.whenCheckpointed();
      // The engine's order: the store first (a final snapshot from memory), then the launcher.
      store.close();
      await launcher!.close(0);
      assert.equal(await done, false, 'abandoned');
      await waitFor('the checkpoint process to end', () => !processAlive(child.pid), 5000);
      await waitFor('no temporary file left', () => readdirSync(ws.storage).every((f) => !f.includes('.tmp-')), 5000);
      copyAsCrashed(ws.storage, path.join(ws.root, 'copy'));
      assert.deepEqual(dump(await openStore(path.join(ws.root, 'copy'))), live);
    });

    /** A store whose checkpoints go to `l` as the engine wires it, before `l` has any helper. */
    async function openBeside(l: AttemptLauncher, notes: StoreNote[] = []): Promise<Store> {
      const { store } = await Store.open({ storageDir: ws.storage, onNote: (n) => notes.push(n), runCheckpoint: (job) => l.runCheckpoint(job), exportCheckpointMaxBytes: 0 });
      open.push(store);
      return store;
    }

    /**
     * A pool of two real launch helpers not started yet, a store beside it with `entries` log
     * entries, and a background checkpoint asked for: it starts the helpers and waits for one.
     */
    async function checkpointWaitingForHelpers(entries: number): Promise<{ l: AttemptLauncher; store: Store }> {
      launcher = new AttemptLauncher({ entry: locateLaunchHelper(), helpers: 2 });
      const l = launcher;
      const store = await openBeside(l);
      addLogs(store, 1, entries);
      assert.equal(l.helperPid, undefined, 'no helper before any launch');
      assert.equal(store.snapshotInBackground(), true);
      assert.equal(l.helperPids.length, 0, 'none ready yet: the checkpoint waits');
      return { l, store };
    }

    /** Processes whose command line names `text` (a checkpoint process carries its job's storage folder). */
    function processesNaming(text: string): string[] {
      return execFileSync('ps', ['-e', '-o', 'args=']).toString().split('\n').filter((l) => l.includes(text));
    }

    it('a checkpoint asked for while the helpers start waits for one and runs in a process it starts, not on a thread here', async function () {
      if (process.platform !== 'linux') this.skip(); // /proc
      const { l, store } = await checkpointWaitingForHelpers(3000);
      assert.notEqual(l.helperPid, undefined, 'the checkpoint started the helpers');
      // Once a helper is ready, the checkpoint process is its child.
      const [child] = await waitFor('the checkpoint process', () => {
        const c = l.helperPids.flatMap((h) => childrenOf(h));
        return c.length > 0 && c;
      });
      assert.equal(await store.whenCheckpointed(), true);
      assert.equal(store.lastSnapshot?.background, true);
      assert.equal(store.lastSnapshot?.builtIn, `process ${child.pid}`, 'built by the process the helper started');
      store.commit();
      const crashed = path.join(ws.root, 'crashed');
      copyAsCrashed(ws.storage, crashed);
      assert.deepEqual(dump(await openStore(crashed)), dump(store));
    });

    it('a checkpoint cancelled while it waits for the helpers never starts, and leaves no temporary file', async function () {
      if (process.platform !== 'linux') this.skip(); // ps
      const { l, store } = await checkpointWaitingForHelpers(3000);
      const done = store.whenCheckpointed();
      // What the engine's shutdown does first: give the checkpoint up.
      store.abandonCheckpoint();
      assert.equal(await done, false, 'abandoned');
      // A barrier: each helper handles its messages in order, and a waiting checkpoint is sent to
      // the first helper ready before any launch is; one launch finished in each means each has
      // already acted on anything sent before.
      await waitFor('both helpers to be ready', () => l.helperPids.length === 2);
      const runs = [1, 2].map((id) => l.launch(id, itemDefinition({}), 1));
      assert.deepEqual(new Set(runs.map((r) => l.helperPidOf(r))), new Set(l.helperPids));
      await Promise.all(runs.map((r) => r.done));
      assert.deepEqual(processesNaming(ws.storage), [], 'no checkpoint process');
      assert.deepEqual(readdirSync(ws.storage).filter((f) => f.includes('.tmp-')), [], 'no temporary file');
    });

    it('a checkpoint that waited for a helper can be cancelled once it runs there: its process ends', async function () {
      if (process.platform !== 'linux') this.skip(); // /proc
      const { l, store } = await checkpointWaitingForHelpers(3000);
      const [child] = await waitFor('the checkpoint process', () => {
        const c = l.helperPids.flatMap((h) => childrenOf(h));
        return c.length > 0 && c;
      });
      const done = store.whenCheckpointed();
      store.abandonCheckpoint();
      assert.equal(await done, false, 'abandoned');
      await waitFor('the checkpoint process to end', () => !processAlive(child.pid), 5000);
      await waitFor('no temporary file left', () => readdirSync(ws.storage).every((f) => !f.includes('.tmp-')), 5000);
    });

    it('a checkpoint waiting for helpers that cannot start runs on a worker thread once the launcher falls back', async function () {
      this.timeout(20_000);
      const broken = path.join(ws.root, 'broken-launch-helper.js');
      writeFileSync(broken, 'process.exit(3)');
      const warnings: string[] = [];
      launcher = new AttemptLauncher({ entry: { file: broken, execArgv: [] }, helpers: 2, warn: (m) => warnings.push(m) });
      const l = launcher;
      const store = await openBeside(l);
      addLogs(store, 1, 200);
      assert.equal(store.snapshotInBackground(), true);
      assert.equal(l.mode, 'helper', 'still trying the helpers');
      assert.equal(await store.whenCheckpointed(), true);
      assert.equal(l.mode, 'in-process');
      assert.equal(store.lastSnapshot?.background, true);
      assert.equal(store.lastSnapshot?.builtIn, 'worker thread');
      assert.equal(warnings.length, 1);
      store.commit();
      copyAsCrashed(ws.storage, path.join(ws.root, 'copy'));
      assert.deepEqual(dump(await openStore(path.join(ws.root, 'copy'))), dump(store));
    });

    it('a checkpoint waiting for the helpers when the launcher closes runs on a worker thread', async () => {
      const { l, store } = await checkpointWaitingForHelpers(200);
      launcher = undefined;
      await l.close(0);
      assert.equal(await store.whenCheckpointed(), true);
      assert.equal(store.lastSnapshot?.builtIn, 'worker thread');
    });
  });

  it('starts from a snapshot whose checksum does not match after SQLite checks it (and refuses a damaged one)', async () => {
    const store = await openStore();
    addLogs(store, 1, 200);
    store.close();
    const file = path.join(ws.storage, SNAPSHOT_FILE);
    // A valid database the checksum does not describe: quick_check decides, and it passes.
    writeFileSync(path.join(ws.storage, SNAPSHOT_SUM_FILE), JSON.stringify({ bytes: 1, crc32: 1 }));
    const copy = path.join(ws.root, 'copy');
    copyAsCrashed(ws.storage, copy);
    assert.equal((dump(await openStore(copy)) as { logs: unknown[] }).logs.length, 200);
    // Damaged pages inside a file whose header is intact: only the integrity check can see it.
    const bytes = readFileSync(file);
    bytes.fill(0x5a, bytes.length - 3 * 4096 + 100, bytes.length - 100);
    writeFileSync(file, bytes);
    const notes: StoreNote[] = [];
    const { store: recovered, notes: openNotes } = await Store.open({ storageDir: ws.storage, onNote: (n) => notes.push(n) });
    open.push(recovered);
    assert.match(openNotes.map((n) => n.message).join('; '), /could not be opened \((integrity check failed|database disk image is malformed)/);
  });
});


describe('store: loading sql.js and a snapshot, in a fresh process', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  beforeEach(() => (ws = new TempWorkspace('engine-load-')));
  afterEach(() => ws.dispose());

  const storeModule = path.join(__dirname, '..', '..', 'src', 'core', 'store', 'index.ts');
  /** Runs `body` in a new Node process with the store's sources loaded; returns what it prints last as JSON. */
  function inFreshProcess<T>(body: string): T {
    const script = `const { Store } = require(${JSON.stringify(storeModule)});\n${body}`;
    const out = execFileSync(process.execPath, ['--require', require.resolve('tsx/cjs'), '-e', script], { encoding: 'utf8', timeout: 50_000 });
    return JSON.parse(out.trim().split('\n').pop()!) as T;
  }

  it('keeps the event loop alive while sql.js compiles, and lets it go afterwards', () => {
    // With nothing holding the loop while the WebAssembly compiles, Node continues startup inside
    // NodePlatform::DrainTasks and then waits there for V8's background compile jobs: timers and I/O
    // stood still for 110-220 ms after each engine start (docs/PERFORMANCE.md, fix 21).
    const seen = inFreshProcess<{ during: string[]; after: string[] }>(`
      const opening = Store.open({ storageDir: null });
      const during = process.getActiveResourcesInfo();
      opening.then(({ store }) => {
        store.close();
        setImmediate(() => console.log(JSON.stringify({ during, after: process.getActiveResourcesInfo() })));
      });`);
    assert.ok(seen.during.includes('Timeout'), `a referenced timer holds the loop while sql.js loads (active: ${seen.during.join(', ')})`);
    assert.ok(!seen.after.includes('Timeout'), `and is gone once it has loaded (active: ${seen.after.join(', ')})`);
    // execFileSync returned: the process exited by itself, so nothing was left holding the loop.
  });

  it('loads a snapshot and replays its journal in one buffer, without a second copy of the file', async () => {
    const { store } = await Store.open({ storageDir: ws.storage });
    const addLogs = (from: number, count: number) =>
      store.batch(() => {
        for (let id = from; id < from + count; id++) {
          const message = `entry ${id} exit code ${id % 7} ${'x'.repeat(id % 50)}`;
          store.mutate('log_insert', [id, 1_700_000_000_000 + id, 'launch_failed', 3, message, `item-${id % 13}`, JSON.stringify({ n: id })]);
          store.mutate('log_fts_insert', [id, message]);
        }
      });
    addLogs(1, 40_000);
    assert.equal(store.snapshot(), true);
    // A journal after it, left unreplayed the way a crash leaves it (a copy of the folder taken now).
    addLogs(40_001, 2_000);
    assert.equal(store.commit(), true);
    const crashed = path.join(ws.root, 'crashed');
    copyAsCrashed(ws.storage, crashed);
    store.close();
    const size = statSync(path.join(crashed, SNAPSHOT_FILE)).size;
    const journal = statSync(path.join(crashed, JOURNAL_FILE)).size;
    assert.ok(journal > 0 && journal < size / 10, `a journal much smaller than the snapshot (${journal} vs ${size} bytes)`);

    const loaded = inFreshProcess<{ bytes: number; logs: number; matches: number }>(`
      Store.open({ storageDir: null }).then(({ store: warm }) => {
        warm.close();
        const before = process.memoryUsage().arrayBuffers;
        return Store.open({ storageDir: ${JSON.stringify(crashed)} }).then(({ store }) => {
          const bytes = process.memoryUsage().arrayBuffers - before;
          const logs = store.get('SELECT COUNT(*) AS n FROM logs').n;
          const matches = store.get("SELECT COUNT(*) AS n FROM logs_fts WHERE logs_fts MATCH 'exit'").n;
          console.log(JSON.stringify({ bytes, logs, matches }));
        });
      });`);
    assert.equal(loaded.logs, 42_000, 'every entry of the snapshot and of the journal');
    assert.equal(loaded.matches, 42_000, 'and the text index with them');
    // One buffer: the file plus the room reserved for replay (a quarter of it, twice the journal,
    // and at least DATABASE_ROOM_BYTES in all, untouched pages: address space, not memory).
    // A copy made when replay outgrew the file would add the file's size again until V8 collects it.
    assert.ok(size > 2 * 1024 * 1024, `a file larger than the slack below (${size} bytes)`);
    const oneBuffer = Math.max(DATABASE_ROOM_BYTES, size + Math.ceil(size / 4) + 2 * journal);
    assert.ok(loaded.bytes <= oneBuffer + 1024 * 1024, `ArrayBuffer memory after loading: ${loaded.bytes} bytes; one buffer is ${oneBuffer}, the file ${size}`);
  });
});
