import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import initSqlJs from 'sql.js';
import { Engine } from '../../src/core/engine';
import { JOURNAL_FILE, SNAPSHOT_FILE, Store } from '../../src/core/store';
import { allLogs, nodeItem, settled, TempWorkspace, waitFor } from './support/workspace';

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

  it('ignores a journal cut in the middle of its last record, and says so', async () => {
    const { store } = await Store.open({ storageDir: ws.storage });
    store.setMeta('total_failed', '5');
    store.commit();
    appendFileSync(path.join(ws.storage, JOURNAL_FILE), '[99,"meta_set",["total_fai');
    engine = await Engine.create(ws.options());
    assert.equal(engine.stats().totalFailed, 5, 'every whole record applied');
    const note = allLogs(engine).find((e) => e.action === 'database_recovered');
    assert.ok(note, 'logged');
    assert.match(note!.message, /torn record/);
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
    const SQL = await initSqlJs();
    const db = new SQL.Database();
    db.run('CREATE TABLE future (x); PRAGMA user_version = 99;');
    mkdirSync(ws.storage, { recursive: true });
    writeFileSync(path.join(ws.storage, SNAPSHOT_FILE), db.export());
    engine = await Engine.create(ws.options());
    const note = allLogs(engine).find((e) => e.action === 'database_recovered')!;
    assert.match(note.message, /newer Engine Monitor \(schema 99/);
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
