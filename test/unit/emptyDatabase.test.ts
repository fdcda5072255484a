import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Database, SqlJsStatic } from 'sql.js';
import { buildEmptyDatabase, emptyDatabase, EMPTY_DATABASE_FILE } from '../../src/core/store/emptyDatabase';
import { migrate, SCHEMA_VERSION, schemaVersion } from '../../src/core/store/schema';
import { loadSqlJs } from '../../src/core/store/sqlJs';
import { assertBuilt, CLI } from './support/cli';

/** Every table, index and trigger with its SQL, and the schema version: what a database's schema is. */
function schemaOf(SQL: SqlJsStatic, bytes: Uint8Array): { version: number; objects: unknown[][] } {
  const db = new SQL.Database(bytes);
  try {
    return { version: schemaVersion(db), objects: db.exec('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name')[0].values };
  } finally {
    db.close();
  }
}

function tables(db: Database): string[] {
  return db.exec("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")[0].values.map((r) => String(r[0]));
}

describe('the empty database a new engine starts from', () => {
  let SQL: SqlJsStatic;
  let dir: string;
  before(async () => (SQL = await loadSqlJs()));
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'engine-empty-db-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A database of this schema with one more table, as a file in `dir`: tells whether the file was used. */
  function writeMarked(version = SCHEMA_VERSION): void {
    const db = new SQL.Database();
    migrate(db);
    db.run('CREATE TABLE marker (x)');
    db.run(`PRAGMA user_version = ${version}`);
    writeFileSync(path.join(dir, EMPTY_DATABASE_FILE), db.export());
    db.close();
  }

  it('is the schema migrate() applies, at this version', () => {
    const fresh = new SQL.Database();
    migrate(fresh);
    const expected = schemaOf(SQL, fresh.export());
    fresh.close();
    assert.equal(expected.version, SCHEMA_VERSION);
    assert.deepEqual(schemaOf(SQL, buildEmptyDatabase(SQL)), expected);
    // No file beside it: made on the spot, the same.
    assert.deepEqual(schemaOf(SQL, emptyDatabase(SQL, dir)), expected);
  });

  it('is read from the file beside the bundle when that file is of this schema version', () => {
    writeMarked();
    const db = new SQL.Database(emptyDatabase(SQL, dir));
    assert.ok(tables(db).includes('marker'), 'the file was not used');
    db.close();
  });

  it('is made anew when the file is of another schema version, or not a database', () => {
    writeMarked(SCHEMA_VERSION - 1);
    let db = new SQL.Database(emptyDatabase(SQL, dir));
    assert.ok(!tables(db).includes('marker'), 'a file of another version was used');
    assert.equal(schemaVersion(db), SCHEMA_VERSION);
    db.close();
    for (const junk of [Buffer.alloc(0), Buffer.from('not a database at all, but long enough to have a header: '.repeat(4))]) {
      writeFileSync(path.join(dir, EMPTY_DATABASE_FILE), junk);
      db = new SQL.Database(emptyDatabase(SQL, dir));
      assert.equal(schemaVersion(db), SCHEMA_VERSION);
      assert.ok(tables(db).includes('items'));
      db.close();
    }
  });

  it('ships in the build as this schema, exactly (build.mjs writes it beside dist/cli.js)', () => {
    assertBuilt();
    const shipped = readFileSync(path.join(path.dirname(CLI), EMPTY_DATABASE_FILE));
    assert.deepEqual(schemaOf(SQL, new Uint8Array(shipped)), schemaOf(SQL, buildEmptyDatabase(SQL)));
  });
});
