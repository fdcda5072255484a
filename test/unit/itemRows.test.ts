// Smaller item rows (schema 5, for the engine host's memory): an items row's definition JSON leaves out
// what its columns hold, and def_hash keeps 16 hex digits. These run a real engine on a real
// storage folder: one written as schema 4 wrote it (whole definitions, 32-digit hashes, in the
// snapshot and in the journal) must open, read the same and re-read its queue files without
// seeing redefinitions; new rows must read back whole through the API, after a restart too.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadSqlJs } from '../../src/core/store/sqlJs';
import { Engine } from '../../src/core/kernel/engine';
import { definitionHash, itemFromRow, storedDefinition, type ItemDefinition } from '../../src/core/intake/items';
import { migrate, SCHEMA_VERSION } from '../../src/core/store/schema';
import { allLogs, nodeItem, TempWorkspace, waitFor } from './support/workspace';

const FAR = 4070908800000; // 2099-01-01: a pending item that does not launch during the test

describe('item rows (schema 5: definitions without their columns)', () => {
  let ws: TempWorkspace;
  let engine: Engine | undefined;

  beforeEach(() => {
    ws = new TempWorkspace();
  });

  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    ws.dispose();
  });

  /** What the engine makes of nodeItem(id, code) in this workspace (the defaults of ws.options()). */
  const whole = (id: string, code: string, runAt: number | null): ItemDefinition => ({
    id,
    name: id,
    command: process.execPath,
    args: ['-e', code],
    shell: false,
    cwd: ws.folder,
    env: {},
    timeoutMs: 30_000,
    maxAttempts: 3,
    runAt,
  });

  /** The items rows of the snapshot on disk, and its schema version. */
  async function snapshotRows(): Promise<{ version: number; rows: Record<string, { definition: string; def_hash: string }> }> {
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(path.join(ws.storage, 'engine.sqlite')));
    try {
      const version = Number(db.exec('PRAGMA user_version')[0].values[0][0]);
      const rows: Record<string, { definition: string; def_hash: string }> = {};
      for (const [id, definition, hash] of db.exec('SELECT id, definition, def_hash FROM items')[0]?.values ?? []) {
        rows[String(id)] = { definition: String(definition), def_hash: String(hash) };
      }
      return { version, rows };
    } finally {
      db.close();
    }
  }

  it('a definition read back from its row is the one stored, field for field and in the same order', () => {
    const item: ItemDefinition = {
      ...whole('full', '0', FAR),
      env: { B: '2', A: '1' },
      dependsOn: ['x'],
      priority: -3,
      problemMatcher: '$tsc',
    };
    const json = storedDefinition(item);
    assert.equal(JSON.parse(json).id, undefined);
    const row = { id: item.id, name: item.name, max_attempts: item.maxAttempts, run_at: item.runAt };
    assert.equal(JSON.stringify(itemFromRow(json, row)), JSON.stringify(item));
    // A row of schema 4 (the whole definition) is read as it is.
    assert.equal(JSON.stringify(itemFromRow(JSON.stringify(item), row)), JSON.stringify(item));
  });

  it('opens a snapshot and a journal written by schema 4: items read the same, re-reads are no redefinitions, the snapshot rows shrink', async () => {
    const old = whole('old', '0', null);
    const journaled = whole('journaled', '0', FAR);
    // Schema 4 kept the first 32 hex digits of the same SHA-256; only the first 16 are compared
    // now, so the other 16 stand in for what that version wrote after them.
    const v4Hash = (def: ItemDefinition) => `${definitionHash(def)}0123456789abcdef`;
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    migrate(db, 4);
    const now = Date.now();
    db.run(
      "INSERT INTO items (id, name, source, definition, def_hash, outcome, attempts, max_attempts, run_at, due_at, running, last_error, created_at, updated_at) VALUES ('old', 'old', '.engine/queue/old.json', ?, ?, 'failed', 3, 3, NULL, NULL, 0, 'exited with code 1', ?, ?)",
      [JSON.stringify(old), v4Hash(old), now, now],
    );
    db.run("INSERT INTO attempts (id, item_id, attempt, started_at, finished_at, outcome, exit_code) VALUES (1, 'old', 3, ?, ?, 'failed', 1)", [now - 10, now]);
    db.run("INSERT INTO meta (key, value) VALUES ('total_launches', '1'), ('total_failed', '1'), ('journal_seq', '0')");
    mkdirSync(ws.storage, { recursive: true });
    writeFileSync(path.join(ws.storage, 'engine.sqlite'), db.export());
    db.close();
    // A schema-4 journal record after the snapshot: an item ingested before that engine stopped.
    const record = [1, 'item_insert', ['journaled', 'journaled', '.engine/queue/j.json', JSON.stringify(journaled), v4Hash(journaled), 3, FAR, FAR, now, now]];
    writeFileSync(path.join(ws.storage, 'engine.journal'), `${JSON.stringify(record)}\n`);
    // The same items in their queue files: reading them again must change nothing.
    ws.enqueue('old.json', nodeItem('old', '0'));
    ws.enqueue('j.json', nodeItem('journaled', '0', { runAt: new Date(FAR).toISOString() }));

    engine = await Engine.create(ws.options());
    await engine.start();
    await engine.pollNow();
    const logs = allLogs(engine);
    assert.deepEqual(logs.filter((e) => e.action === 'database_recovered' || e.action === 'item_updated' || e.action === 'item_discovered'), [], 'nothing repaired, updated or discovered');
    const detail = (id: string) => {
      const d = engine!.itemDetail(id)!;
      return { id: d.item.id, name: d.item.name, command: d.item.command, args: d.item.args, maxAttempts: d.item.maxAttempts, runAt: d.item.runAt, state: d.state };
    };
    assert.deepEqual(detail('old'), { id: 'old', name: 'old', command: process.execPath, args: ['-e', '0'], maxAttempts: 3, runAt: null, state: 'failed' });
    assert.deepEqual(detail('journaled'), { id: 'journaled', name: 'journaled', command: process.execPath, args: ['-e', '0'], maxAttempts: 3, runAt: new Date(FAR).toISOString(), state: 'scheduled' });
    // A redefinition of the migrated row (a failed item takes one) names only the field that changed.
    ws.enqueue('old.json', nodeItem('old', '1'));
    await engine.pollNow();
    await waitFor('the redefinition', () => allLogs(engine!).find((e) => e.action === 'item_updated'));
    assert.deepEqual(allLogs(engine).find((e) => e.action === 'item_updated')!.details?.changed, ['args']);
    await engine.shutdown(0);
    engine = undefined;

    const { version, rows } = await snapshotRows();
    assert.equal(version, SCHEMA_VERSION);
    // 'old' was migrated on open (its whole definition, then redefined in the short shape);
    // 'journaled' replayed as its schema-4 record wrote it, and the migration does not run twice.
    assert.deepEqual(JSON.parse(rows.old.definition), { command: process.execPath, args: ['-e', '1'], shell: false, cwd: ws.folder, env: {}, timeoutMs: 30_000 });
    assert.equal(rows.old.def_hash, definitionHash({ ...old, args: ['-e', '1'] }));
    assert.deepEqual(JSON.parse(rows.journaled.definition), journaled);
    assert.equal(rows.journaled.def_hash, v4Hash(journaled));

    // Open again: both shapes read whole, and the queue files are still no redefinition.
    engine = await Engine.create(ws.options());
    await engine.start();
    await engine.pollNow();
    assert.equal(engine.itemDetail('journaled')!.item.runAt, new Date(FAR).toISOString());
    assert.deepEqual(engine.itemDetail('old')!.item.args, ['-e', '1']);
    assert.equal(allLogs(engine).filter((e) => e.action === 'item_updated').length, 1, 'only the one redefinition above');
  });

  it('migrates only the rows whose JSON agrees with their columns: another row keeps its whole definition', async () => {
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    migrate(db, 4);
    const agrees = whole('agrees', '0', null);
    // max_attempts 5 in the column, 3 in the JSON: the JSON keeps its fields and is read as it is.
    const differs = whole('differs', '0', null);
    for (const [def, maxAttempts] of [[agrees, 3], [differs, 5]] as const) {
      db.run(
        "INSERT INTO items (id, name, source, definition, def_hash, outcome, attempts, max_attempts, run_at, due_at, running, last_error, created_at, updated_at) VALUES (?, ?, 'q.json', ?, ?, 'launched', 1, ?, NULL, NULL, 0, NULL, 1, 1)",
        [def.id, def.name, JSON.stringify(def), `${definitionHash(def)}0123456789abcdef`, maxAttempts],
      );
    }
    migrate(db);
    const rows = Object.fromEntries((db.exec('SELECT id, definition, def_hash FROM items')[0]?.values ?? []).map(([id, d, h]) => [id, { d: JSON.parse(String(d)) as object, h: String(h) }]));
    db.close();
    assert.deepEqual(rows.agrees.d, { command: process.execPath, args: ['-e', '0'], shell: false, cwd: ws.folder, env: {}, timeoutMs: 30_000 });
    assert.deepEqual(rows.differs.d, differs);
    assert.deepEqual([rows.agrees.h, rows.differs.h], [definitionHash(agrees), definitionHash(differs)]);
  });

  it('stores new items in the short shape and serves them whole, after a restart too', async () => {
    ws.enqueue('a.json', nodeItem('a', '0', { name: 'the a item', maxAttempts: 2, env: { A: '1' } }));
    ws.enqueue('later.json', nodeItem('later', '0', { runAt: new Date(FAR).toISOString(), priority: 7 }));
    engine = await Engine.create(ws.options());
    await engine.start();
    await waitFor('a to launch', () => engine!.itemDetail('a')?.state === 'launched');
    const before = { a: engine.itemDetail('a')!.item, later: engine.itemDetail('later')!.item };
    assert.deepEqual([before.a.name, before.a.maxAttempts, before.a.env, before.a.runAt], ['the a item', 2, { A: '1' }, null]);
    assert.deepEqual([before.later.runAt, before.later.priority, before.later.maxAttempts], [new Date(FAR).toISOString(), 7, 3]);
    await engine.shutdown(0);
    engine = undefined;
    const { rows } = await snapshotRows();
    assert.deepEqual(JSON.parse(rows.a.definition), { command: process.execPath, args: ['-e', '0'], shell: false, cwd: ws.folder, env: { A: '1' }, timeoutMs: 30_000 });
    assert.equal(rows.later.def_hash.length, 16);
    engine = await Engine.create(ws.options());
    await engine.start();
    await engine.pollNow();
    assert.deepEqual({ a: engine.itemDetail('a')!.item, later: engine.itemDetail('later')!.item }, before);
    assert.equal(allLogs(engine).filter((e) => e.action === 'item_updated').length, 0);
  });
});
