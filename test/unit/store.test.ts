import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadSqlJs } from '../../src/core/store/sqlJs';
import { Engine } from '../../src/core/kernel/engine';
import { queryLogs } from '../../src/core/reads/logQuery';
import { JOURNAL_FILE, SNAPSHOT_FILE, Store } from '../../src/core/store';
import { allLogs, nodeItem, settled, TempWorkspace, waitFor } from './support/workspace';
import { addLogs, copyAsCrashed, countSyncFdatasyncs, recordSnapshotStarts, withStore } from './support/storeTesting';

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

  it('a batch of many mutations writes its records to the journal as it ends; a small one waits for the commit', async () => {
    const { store } = await Store.open({ storageDir: ws.storage });
    const journal = () => readFileSync(path.join(ws.storage, JOURNAL_FILE), 'utf8');
    const syncs = countSyncFdatasyncs();
    try {
      addLogs(store, 1, 5);
      assert.equal(journal(), '', 'a few records wait for the commit');
      // Written as the batch ends, without an fdatasync: the commit still does that.
      addLogs(store, 6, 200);
      assert.equal(journal().trim().split('\n').length, 410, 'every record of both batches is in the journal file');
      assert.equal(syncs.calls, 0, 'no synchronous fdatasync');
      assert.equal(store.journalSynced, false, 'not synced before a commit');
      // What a process killed now leaves on disk has them all.
      copyAsCrashed(ws.storage, path.join(ws.root, 'crashed'));
    } finally {
      syncs.restore();
      store.close();
    }
    await withStore(path.join(ws.root, 'crashed'), (crashed) => {
      assert.equal(crashed.get<{ n: number }>('SELECT COUNT(*) AS n FROM logs')!.n, 205);
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
      await engine.start(); // ingests the item: journal records whose fdatasync is held
      // From here records wait for the disk. A persist tick that came while start() ran, before
      // they were written, had nothing to wait for and may have started a snapshot: a loaded
      // machine makes the start longer than a tick. The deferral is judged from this point on.
      const unsyncedAt = Date.now();
      const earlier = started.length;
      assert.equal(store.journalSynced, false);
      await waitFor('the snapshot to start anyway', () => started.length > earlier, 20_000);
      // Five ticks deferred, the snapshot at the sixth: the first of them can come right away.
      assert.ok(started[earlier] - unsyncedAt >= 4_000, `it waited five persist ticks (started after ${started[earlier] - unsyncedAt} ms)`);
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
