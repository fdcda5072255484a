// The store's checkpoints off the main thread (a worker thread here; in a launch helper's process in
// storeCheckpointHelper.test.ts), crashes while they run, and snapshots that fail their checks.

import assert from 'node:assert/strict';
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import path from 'node:path';
import * as zlib from 'node:zlib';
import type { CheckpointJob } from '../../src/core/store/checkpoint';
import { JOURNAL_FILE, JOURNAL_NEXT_FILE, SNAPSHOT_FILE, SNAPSHOT_SUM_FILE, Store, type StoreNote } from '../../src/core/store';
import { waitFor } from './support/workspace';
import { addLogs, checkpointStores, copyAsCrashed, countSyncFdatasyncs, dump } from './support/storeTesting';

describe('store: background snapshots (checkpoint worker) on a real disk', function () {
  this.timeout(60_000);
  const stores = checkpointStores();
  const openStore = (dir?: string, notes?: StoreNote[]) => stores.open(dir, notes);

  it('leaves its folder quiescent once closed: no temporary file, nothing still being deleted', async () => {
    // Copying the folder right after close() used to race the background unlink of the replaced
    // snapshot (ENOENT on engine.sqlite.tmp-*.old from cpSync).
    const store = await openStore();
    addLogs(store, 1, 50);
    store.snapshot();
    addLogs(store, 51, 50);
    store.close();
    assert.deepEqual(readdirSync(stores.ws.storage).filter((f) => f.includes('.tmp-')), []);
  });

  it('a snapshot whose write fails (disk full) leaves no temporary file behind', async () => {
    // Seen while storage was failing: one empty engine.sqlite.tmp-* left per second of retries.
    // The next temporary names are links to /dev/full, so opening succeeds and writing fails.
    const store = await openStore();
    addLogs(store, 1, 20);
    // Not counting a replaced snapshot (.old) being deleted in the background meanwhile.
    const temporaries = () => readdirSync(stores.ws.storage).filter((f) => f.includes('.tmp-') && !f.endsWith('.old'));
    const planted = temporaries().length;
    for (let n = 1; n <= 50; n++) symlinkSync('/dev/full', path.join(stores.ws.storage, `${SNAPSHOT_FILE}.tmp-${process.pid}-${n}`));
    const before = temporaries().length;
    assert.equal(store.snapshot(), false, 'the write failed');
    assert.match(store.lastError ?? '', /ENOSPC|no space/i);
    assert.equal(temporaries().length, before - 1, 'the failed temporary file was removed');
    for (const f of temporaries()) rmSync(path.join(stores.ws.storage, f));
    assert.equal(store.snapshot(), true, 'and the next snapshot succeeds');
    assert.equal(temporaries().length, planted);
  });

  it('builds the snapshot off the main thread; a restart from it equals the live database', async () => {
    const store = await openStore();
    addLogs(store, 1, 3000);
    store.setMeta('total_launches', '3000');
    assert.equal(store.commit(), true, 'journaled and synced: the checkpoint folds all of it');
    assert.equal(store.snapshotInBackground(), true, 'started');
    assert.ok(existsSync(path.join(stores.ws.storage, JOURNAL_NEXT_FILE)), 'the journal continues in engine.journal.next meanwhile');
    // Changes made while the worker runs belong to the next snapshot, via the journal.
    addLogs(store, 3001, 50);
    assert.equal(store.commit(), true);
    assert.equal(store.snapshotInBackground(), false, 'one checkpoint at a time');

    assert.equal(await store.whenCheckpointed(), true);
    assert.equal(store.lastSnapshot?.background, true);
    assert.ok(!existsSync(path.join(stores.ws.storage, JOURNAL_NEXT_FILE)), 'the continuation became the journal');
    const journal = readFileSync(path.join(stores.ws.storage, JOURNAL_FILE), 'utf8').trim().split('\n');
    assert.equal(journal.length, 100, 'engine.journal holds exactly the 50 entries (+ FTS rows) written during the checkpoint');
    const snapshot = readFileSync(path.join(stores.ws.storage, SNAPSHOT_FILE));
    assert.deepEqual(JSON.parse(readFileSync(path.join(stores.ws.storage, SNAPSHOT_SUM_FILE), 'utf8')), {
      bytes: snapshot.length,
      crc32: zlib.crc32(snapshot),
    });
    // The replaced snapshot is deleted off the main thread, just after the install.
    await waitFor('no temporary file left', () => readdirSync(stores.ws.storage).every((f) => !f.includes('.tmp-')), 5000);

    // A kill -9 now: what is on disk (snapshot + journal) must be the live state.
    const crashed = path.join(stores.ws.root, 'crashed');
    copyAsCrashed(stores.ws.storage, crashed);
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
    assert.equal(readFileSync(path.join(stores.ws.storage, JOURNAL_NEXT_FILE), 'utf8').trim().split('\n').length, 40, 'the 20 unwritten entries (+ FTS rows) went to the continuation');
    assert.equal(await store.whenCheckpointed(), true);
    const crashed = path.join(stores.ws.root, 'crashed');
    copyAsCrashed(stores.ws.storage, crashed);
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
      storageDir: stores.ws.storage,
      onNote: (n) => notes.push(n),
      runCheckpoint: () => {
        throw new Error('a small database needs no checkpoint builder');
      },
    });
    stores.track(store);
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
    const before = path.join(stores.ws.root, 'before-install');
    copyAsCrashed(stores.ws.storage, before);
    assert.equal(store.commit(), true);
    addLogs(store, 521, 10);
    assert.equal(store.commit(), true);
    assert.equal(await store.whenCheckpointed(), true);
    assert.deepEqual(notes, [], 'no fallback');
    assert.equal(store.lastSnapshot?.background, true);
    assert.equal(store.lastSnapshot?.builtIn, 'the engine (exported from memory)');
    assert.equal(store.journalSize.snapshotBytes, statSync(path.join(stores.ws.storage, SNAPSHOT_FILE)).size);
    const snapshot = readFileSync(path.join(stores.ws.storage, SNAPSHOT_FILE));
    assert.deepEqual(JSON.parse(readFileSync(path.join(stores.ws.storage, SNAPSHOT_SUM_FILE), 'utf8')), { bytes: snapshot.length, crc32: zlib.crc32(snapshot) });
    // After it: the new snapshot, and a journal that repeats the 20 entries it already holds.
    const after = path.join(stores.ws.root, 'after-install');
    copyAsCrashed(stores.ws.storage, after);
    const reopened = await openStore(after);
    assert.deepEqual(dump(reopened), dump(store), 'snapshot + journal on disk are the live state');
    assert.equal((dump(reopened) as { logs: unknown[] }).logs.length, 530);
    const early = await openStore(before);
    assert.equal((dump(early) as { logs: unknown[] }).logs.length, 500, 'what was committed before the crash, and no more');
  });

  it('a new database that has grown past the export limit is checkpointed by a builder, not exported here, though its snapshot on disk is still small', async () => {
    const jobs: CheckpointJob[] = [];
    const { store } = await Store.open({
      storageDir: stores.ws.storage,
      // Well above a new database's snapshot on disk, well below what 2,000 entries make.
      exportCheckpointMaxBytes: 256 * 1024,
      runCheckpoint: (job) => {
        jobs.push(job);
        return undefined; // no helper: the store builds it on a thread, as it would without one
      },
    });
    stores.track(store);
    const initial = statSync(path.join(stores.ws.storage, SNAPSHOT_FILE)).size;
    assert.ok(initial < 256 * 1024, `the new database's snapshot is small (${initial} bytes)`);
    addLogs(store, 1, 2_000);
    assert.equal(store.commit(), true);
    assert.equal(store.snapshotInBackground(), true, 'started');
    assert.equal(jobs.length, 1, 'the builder was asked');
    assert.equal(await store.whenCheckpointed(), true);
    assert.notEqual(store.lastSnapshot?.builtIn, 'the engine (exported from memory)');
    assert.ok(statSync(path.join(stores.ws.storage, SNAPSHOT_FILE)).size > 256 * 1024, 'the new snapshot holds the 2,000 entries');
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
    const crashed = path.join(stores.ws.root, 'crashed');
    copyAsCrashed(stores.ws.storage, crashed);
    assert.ok(existsSync(path.join(crashed, JOURNAL_NEXT_FILE)));
    const notes: StoreNote[] = [];
    const reopened = await openStore(crashed, notes);
    assert.deepEqual(dump(reopened), dump(store));
    assert.ok(!existsSync(path.join(crashed, JOURNAL_NEXT_FILE)), 'the split journal is folded at start');
    // Closed first: the start's own snapshot may still be freeing the one it replaced.
    reopened.close();
    assert.deepEqual(readdirSync(crashed).filter((f) => f.includes('.tmp-')), [], 'a half-written checkpoint is removed');
    await store.whenCheckpointed();
  });

  it('a checkpoint that cannot rebuild the state from disk falls back to a snapshot from memory, and says so', async () => {
    const notes: StoreNote[] = [];
    const store = await openStore(stores.ws.storage, notes);
    addLogs(store, 1, 500);
    assert.equal(store.commit(), true);
    // A record that never happened in memory: replaying the journal from disk now goes past the
    // live state, and the worker must refuse rather than install it.
    appendFileSync(path.join(stores.ws.storage, JOURNAL_FILE), `${JSON.stringify([10_000_000, 'meta_set', ['bogus', 'x']])}\n`);
    assert.equal(store.snapshotInBackground(), true);
    assert.equal(await store.whenCheckpointed(), true, 'the fallback snapshot succeeded');
    assert.equal(store.lastSnapshot?.background, false);
    assert.equal(notes.length, 1);
    assert.match(notes[0].message, /background snapshot failed \(the journal on disk ends at record 10000000, not \d+\); wrote the snapshot from memory instead/);
    copyAsCrashed(stores.ws.storage, path.join(stores.ws.root, 'copy'));
    const fromDisk = await openStore(path.join(stores.ws.root, 'copy'));
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
    await waitFor('the abandoned temporary files to go', () => readdirSync(stores.ws.storage).every((f) => !f.includes('.tmp-')), 5000);
    assert.ok(!existsSync(path.join(stores.ws.storage, JOURNAL_NEXT_FILE)));
    copyAsCrashed(stores.ws.storage, path.join(stores.ws.root, 'copy'));
    assert.deepEqual(dump(await openStore(path.join(stores.ws.root, 'copy'))), live);
  });

  it('starts from a snapshot whose checksum does not match after SQLite checks it (and refuses a damaged one)', async () => {
    const store = await openStore();
    addLogs(store, 1, 200);
    store.close();
    const file = path.join(stores.ws.storage, SNAPSHOT_FILE);
    // A valid database the checksum does not describe: quick_check decides, and it passes.
    writeFileSync(path.join(stores.ws.storage, SNAPSHOT_SUM_FILE), JSON.stringify({ bytes: 1, crc32: 1 }));
    const copy = path.join(stores.ws.root, 'copy');
    copyAsCrashed(stores.ws.storage, copy);
    assert.equal((dump(await openStore(copy)) as { logs: unknown[] }).logs.length, 200);
    // Damaged pages inside a file whose header is intact: only the integrity check can see it.
    const bytes = readFileSync(file);
    bytes.fill(0x5a, bytes.length - 3 * 4096 + 100, bytes.length - 100);
    writeFileSync(file, bytes);
    const notes: StoreNote[] = [];
    const { store: recovered, notes: openNotes } = await Store.open({ storageDir: stores.ws.storage, onNote: (n) => notes.push(n) });
    stores.track(recovered);
    assert.match(openNotes.map((n) => n.message).join('; '), /could not be opened \((integrity check failed|database disk image is malformed)/);
  });
});
