// The database a new engine starts from: this version's schema and nothing else. SQLite parsing
// and running the schema's CREATE statements (and sql.js compiling the WebAssembly they reach
// for the first time) is a noticeable part of a first start, which a window starting its engine
// waits for. The build does it once and ships the result beside the bundles
// (dist/empty-database.sqlite); a new database loads those bytes instead.
//
// The file is a speed-up only: when it is missing (tests run from sources), unreadable or of
// another schema version, the schema is applied here as it always was.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { SqlJsStatic } from 'sql.js';
import { migrate, SCHEMA_VERSION } from './schema';

export const EMPTY_DATABASE_FILE = 'empty-database.sqlite';

/** Every SQLite database file starts so (its header's magic string). */
const SQLITE_MAGIC = 'SQLite format 3\0';
/** Where SQLite's header keeps `PRAGMA user_version`: 4 bytes, big-endian. */
const USER_VERSION_OFFSET = 60;

/** An empty database of this schema version, exported: what the build writes. */
export function buildEmptyDatabase(SQL: SqlJsStatic): Uint8Array {
  const db = new SQL.Database();
  try {
    migrate(db);
    return db.export();
  } finally {
    db.close();
  }
}

/**
 * The bytes of an empty database of this schema version: the build's file in `dir` (beside the
 * bundle) when it is there and of this version, else made now.
 */
export function emptyDatabase(SQL: SqlJsStatic, dir: string = __dirname): Uint8Array {
  const shipped = readShipped(path.join(dir, EMPTY_DATABASE_FILE));
  return shipped ?? buildEmptyDatabase(SQL);
}

function readShipped(file: string): Uint8Array | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch {
    return undefined;
  }
  const ours =
    bytes.length > USER_VERSION_OFFSET + 4 &&
    bytes.toString('latin1', 0, SQLITE_MAGIC.length) === SQLITE_MAGIC &&
    bytes.readUInt32BE(USER_VERSION_OFFSET) === SCHEMA_VERSION;
  return ours ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length) : undefined;
}
