// The database's tables and the statements that change them. Every change the store makes is one
// of the named MUTATIONS: the journal records the name and its parameters, and replay runs the same
// SQL, so "do it" and "redo it" share one statement.
import type { Database } from 'sql.js';
import type { SqlDatabase } from './sqlJs';

export const SCHEMA_VERSION = 6;

/** Exported for the migration test, which builds a database as version 1 wrote it. */
export const SCHEMA_V1 = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE items (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  definition TEXT NOT NULL,
  def_hash TEXT NOT NULL,
  outcome TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  run_at INTEGER,
  due_at INTEGER,
  running INTEGER NOT NULL,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX items_due ON items (outcome, due_at);
CREATE TABLE attempts (
  id INTEGER PRIMARY KEY,
  item_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  outcome TEXT NOT NULL,
  exit_code INTEGER,
  signal TEXT,
  error TEXT,
  stdout_tail TEXT,
  stderr_tail TEXT
);
CREATE INDEX attempts_item ON attempts (item_id, id);
CREATE INDEX attempts_running ON attempts (outcome) WHERE outcome = 'running';
CREATE TABLE logs (
  id INTEGER PRIMARY KEY,
  ts INTEGER NOT NULL,
  action TEXT NOT NULL,
  level INTEGER NOT NULL,
  message TEXT NOT NULL,
  item_id TEXT,
  details TEXT
);
CREATE INDEX logs_action ON logs (action, id);
CREATE INDEX logs_item ON logs (item_id, id);
CREATE INDEX logs_ts ON logs (ts);
CREATE INDEX logs_level ON logs (level, id);
-- sql.js ships FTS3/FTS4 (no FTS5). An external-content table indexes logs.message without a
-- second copy of the text; prefix queries ("exit*") serve the API's "words start words" search.
CREATE VIRTUAL TABLE logs_fts USING fts4 (content="logs", message, tokenize=unicode61);
CREATE TABLE source_files (path TEXT PRIMARY KEY, fingerprint TEXT NOT NULL);
`;

// Control: a held item is never launched until released; an attempt's
// captured output lives in a file under <storage>/output/ (never in the database), of which the
// row keeps the size, and whether retention has deleted it (the output endpoint then answers 410).
const SCHEMA_V2 = `
ALTER TABLE items ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN output_bytes INTEGER;
ALTER TABLE attempts ADD COLUMN output_pruned INTEGER NOT NULL DEFAULT 0;
`;

// Schedules and dependencies: an item's priority and whether it waits for dependencies (kept on
// every transition, so dispatch skips blocked items through an index instead of joining); the
// dependencies themselves, by id (a dependency may not be known yet); schedule templates, which
// are not items (not counted) and keep where their next occurrence is computed from.
const SCHEMA_V3 = `
ALTER TABLE items ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE items ADD COLUMN blocked INTEGER NOT NULL DEFAULT 0;
CREATE INDEX items_ready ON items (priority DESC, due_at, seq) WHERE outcome = 'pending' AND held = 0 AND blocked = 0 AND running = 0;
CREATE TABLE dependencies (item_id TEXT NOT NULL, depends_on TEXT NOT NULL, PRIMARY KEY (item_id, depends_on));
CREATE INDEX dependencies_on ON dependencies (depends_on);
CREATE TABLE schedules (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  definition TEXT NOT NULL,
  def_hash TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  next_from INTEGER NOT NULL,
  last_run_at INTEGER,
  last_occurrence TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
`;

// Problem matchers: the problems the item's problem matcher found in an attempt's
// output, as the JSON array GET /items/{id} serves; NULL when the item has no matcher.
const SCHEMA_V4 = `
ALTER TABLE attempts ADD COLUMN problems TEXT;
`;

// Smaller item rows (memory): the database lives in the engine host's memory. An item's
// definition JSON leaves out what the row's columns hold (items.ts, storedDefinition: id, name,
// max_attempts, run_at), and def_hash keeps 16 hex digits (the prefix of the 32 written before).
// Only rows whose JSON agrees with their columns lose those fields; a row that did not would keep
// its whole definition, which itemFromRow reads as before. Journal records written before this
// version carry whole definitions and longer hashes: they replay as they are, and read the same.
const SCHEMA_V5 = `
UPDATE items SET def_hash = substr(def_hash, 1, 16) WHERE length(def_hash) > 16;
UPDATE schedules SET def_hash = substr(def_hash, 1, 16) WHERE length(def_hash) > 16;
UPDATE items SET definition = json_remove(definition, '$.id', '$.name', '$.maxAttempts', '$.runAt')
  WHERE json_valid(definition) AND json_type(definition) = 'object'
    AND json_extract(definition, '$.id') IS id AND json_extract(definition, '$.name') IS name
    AND json_extract(definition, '$.maxAttempts') IS max_attempts
    AND json_type(definition, '$.runAt') IS NOT NULL AND json_extract(definition, '$.runAt') IS run_at;
`;

// Services: when a service's attempt became ready (NULL for other attempts, and while it starts).
// An items row's `running` tells a service's attempt apart: 1 running, 2 starting, 3 ready.
const SCHEMA_V6 = `
ALTER TABLE attempts ADD COLUMN ready_at INTEGER;
`;

// Attempt insight: what each attempt's processes cost (CPU, peak resident memory and how often it
// was sampled; all NULL where that was not measured, sampled_every_ms NULL meaning "no figures"),
// how long until its first output, and whether it was slow against the attempts before it.
const SCHEMA_V6_INSIGHT = `
ALTER TABLE attempts ADD COLUMN cpu_ms INTEGER;
ALTER TABLE attempts ADD COLUMN peak_rss_bytes INTEGER;
ALTER TABLE attempts ADD COLUMN sampled_every_ms INTEGER;
ALTER TABLE attempts ADD COLUMN first_output_ms INTEGER;
ALTER TABLE attempts ADD COLUMN slow INTEGER NOT NULL DEFAULT 0;
`;

/** Every statement that changes state, by the name the journal records. */
export const MUTATIONS = {
  meta_set: 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
  item_insert: `INSERT INTO items (id, name, source, definition, def_hash, outcome, attempts, max_attempts, run_at, due_at, running, last_error, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, 0, NULL, ?, ?)`,
  item_state: 'UPDATE items SET outcome = ?, attempts = ?, due_at = ?, running = ?, last_error = ?, updated_at = ? WHERE id = ?',
  // Retries waiting out a backoff, moved by a jump of the wall clock (attempts > 0: not a runAt).
  items_backoff_shift: "UPDATE items SET due_at = due_at + ? WHERE outcome = 'pending' AND running = 0 AND attempts > 0 AND due_at IS NOT NULL",
  // Control: hold/release (held, updated_at, id), and a queue file's new definition of a pending or
  // failed item (name, source, definition, def_hash, max_attempts, run_at, attempts, due_at, updated_at, id).
  item_hold: 'UPDATE items SET held = ?, updated_at = ? WHERE id = ?',
  item_update:
    'UPDATE items SET name = ?, source = ?, definition = ?, def_hash = ?, max_attempts = ?, run_at = ?, attempts = ?, due_at = ?, updated_at = ? WHERE id = ?',
  // Schedules and dependencies: item_insert and item_update keep their v1/v2 parameters (a journal written before
  // the upgrade replays unchanged); priority and the blocked flag follow in their own statements.
  item_priority: 'UPDATE items SET priority = ? WHERE id = ?',
  item_blocked: 'UPDATE items SET blocked = ? WHERE id = ?',
  dependencies_clear: 'DELETE FROM dependencies WHERE item_id = ?',
  // Remove Item and Clear Finished (id): the item and its attempts go; the log keeps its history.
  item_delete: 'DELETE FROM items WHERE id = ?',
  attempts_delete: 'DELETE FROM attempts WHERE item_id = ?',
  dependency_insert: 'INSERT OR IGNORE INTO dependencies (item_id, depends_on) VALUES (?, ?)',
  // A template (id, name, source, definition, def_hash, next_from, created_at, updated_at): a new
  // one computes its first occurrence from its discovery; a redefined one keeps its state.
  schedule_upsert: `INSERT INTO schedules (id, name, source, definition, def_hash, enabled, next_from, last_run_at, last_occurrence, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, 1, ?, NULL, NULL, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET name = excluded.name, source = excluded.source, definition = excluded.definition,
                    def_hash = excluded.def_hash, updated_at = excluded.updated_at`,
  // An occurrence fired or skipped (next_from, last_run_at, last_occurrence, updated_at, id).
  schedule_ran: 'UPDATE schedules SET next_from = ?, last_run_at = ?, last_occurrence = ?, updated_at = ? WHERE id = ?',
  // Hold/release on a template (enabled, next_from, updated_at, id): released, it counts from then.
  schedule_enabled: 'UPDATE schedules SET enabled = ?, next_from = ?, updated_at = ? WHERE id = ?',
  // Services: a running item's attempt is starting or ready (running, updated_at, id); when it became ready (ready_at, id).
  item_running: 'UPDATE items SET running = ?, updated_at = ? WHERE id = ?',
  attempt_ready: 'UPDATE attempts SET ready_at = ? WHERE id = ?',
  attempt_insert: `INSERT INTO attempts (id, item_id, attempt, started_at, outcome) VALUES (?, ?, ?, ?, 'running')`,
  attempt_finish: 'UPDATE attempts SET finished_at = ?, outcome = ?, exit_code = ?, signal = ?, error = ?, stdout_tail = ?, stderr_tail = ? WHERE id = ?',
  // Captured output (src/core/outputRetention.ts): its size once the attempt has finished, and
  // that retention deleted it.
  attempt_output_bytes: 'UPDATE attempts SET output_bytes = ? WHERE id = ?',
  attempt_output_pruned: 'UPDATE attempts SET output_pruned = 1 WHERE id = ?',
  // Problem matchers (problems as JSON, id), journaled with the attempt's finish.
  attempt_problems: 'UPDATE attempts SET problems = ? WHERE id = ?',
  // An attempt's end in one statement: attempt_finish, attempt_output_bytes and attempt_problems
  // together (finished_at, outcome, exit_code, signal, error, stdout_tail, stderr_tail,
  // output_bytes, problems, id). Each statement is about 5 µs in sql.js; those three stay for
  // replaying older journals and for the cancel, which records the end before the process exits.
  attempt_end:
    'UPDATE attempts SET finished_at = ?, outcome = ?, exit_code = ?, signal = ?, error = ?, stdout_tail = ?, stderr_tail = ?, output_bytes = ?, problems = ? WHERE id = ?',
  // attempt_end with what the attempt cost (…, problems, cpu_ms, peak_rss_bytes, sampled_every_ms,
  // first_output_ms, id); attempt_end stays for replaying journals written before schema 6.
  attempt_end_measured:
    'UPDATE attempts SET finished_at = ?, outcome = ?, exit_code = ?, signal = ?, error = ?, stdout_tail = ?, stderr_tail = ?, output_bytes = ?, problems = ?, cpu_ms = ?, peak_rss_bytes = ?, sampled_every_ms = ?, first_output_ms = ? WHERE id = ?',
  // It took more than twice the median of the item's attempts before it (id).
  attempt_slow: 'UPDATE attempts SET slow = 1 WHERE id = ?',
  log_insert: 'INSERT INTO logs (id, ts, action, level, message, item_id, details) VALUES (?, ?, ?, ?, ?, ?, ?)',
  // The full-text row of one entry. Journals before session 9 hold one per entry; the engine now
  // indexes entries in batches, outside the journal (Store.indexLogs), and keeps this for replay.
  log_fts_insert: 'INSERT INTO logs_fts (docid, message) VALUES (?, ?)',
  // External-content FTS4 reads the row being deleted from `logs`, so the index goes first. Kept
  // for replaying journals written before session 9, when every entry was indexed as written.
  logs_fts_prune: 'DELETE FROM logs_fts WHERE docid IN (SELECT id FROM logs WHERE id <= ?)',
  // Pruning now: only the entries the index holds (logs_fts_docsize has a row for each, by docid).
  // Entries are indexed after they are written (Store.indexLogs), outside the journal, so at replay
  // the index may be behind the log; deleting from it an entry it never had would subtract
  // postings (and a document from its totals) that it never added.
  logs_fts_prune_indexed: 'DELETE FROM logs_fts WHERE docid IN (SELECT docid FROM logs_fts_docsize WHERE docid <= ?)',
  logs_prune: 'DELETE FROM logs WHERE id <= ?',
  source_file_set:
    'INSERT INTO source_files (path, fingerprint) VALUES (?, ?) ON CONFLICT (path) DO UPDATE SET fingerprint = excluded.fingerprint',
} as const;
export type MutationKey = keyof typeof MUTATIONS;

/** The schema version a database was written with (0: a new, empty database). */
export function schemaVersion(db: Database): number {
  return Number(db.exec('PRAGMA user_version')[0].values[0][0]);
}

/**
 * Why `db` is not a database this engine can use, or undefined when it is. A snapshot can be valid
 * SQLite and still not ours (another program's file, or one edited by hand): then its tables do not
 * have the columns this schema version writes, and migrating or replaying into it would fail on
 * every start. `fresh` is a new database with this schema, to compare against.
 */
export function schemaMismatch(db: Database, fresh: Database): string | undefined {
  const tables = (d: Database): string[] =>
    (d.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'logs_fts_%' ORDER BY name")[0]?.values ?? []).map((r) => String(r[0]));
  const columns = (d: Database, table: string): string =>
    (d.exec(`PRAGMA table_info(${JSON.stringify(table)})`)[0]?.values ?? []).map((r) => String(r[1])).join(', ');
  const found = tables(db);
  if (schemaVersion(db) === 0) {
    return found.length === 0 ? undefined : `it holds tables (${found.join(', ')}) but no Engine Monitor schema version`;
  }
  for (const table of tables(fresh)) {
    if (!found.includes(table)) return `table ${table} is missing`;
    const want = columns(fresh, table);
    const got = columns(db, table);
    if (got !== want) return `table ${table} has columns (${got}), not (${want})`;
  }
  return undefined;
}

export function applyPragmas(db: Database): void {
  // The database lives in memory and durability comes from our journal, so SQLite's own
  // rollback journal only needs to support ROLLBACK, not crashes.
  db.run('PRAGMA journal_mode = MEMORY');
  db.run('PRAGMA synchronous = OFF');
  db.run('PRAGMA temp_store = MEMORY');
}

/** Brings `db` up to `upTo` (this version by default), one step at a time. */
export function migrate(db: Database, upTo = SCHEMA_VERSION): void {
  if (schemaVersion(db) === 0 && upTo >= 1) {
    db.run('BEGIN');
    db.run(SCHEMA_V1);
    db.run('PRAGMA user_version = 1');
    db.run('COMMIT');
  }
  // Each step in its own transaction, so a database is always at one version or the next.
  if (schemaVersion(db) === 1 && upTo >= 2) {
    db.run('BEGIN');
    db.run(SCHEMA_V2);
    db.run('PRAGMA user_version = 2');
    db.run('COMMIT');
  }
  if (schemaVersion(db) === 2 && upTo >= 3) {
    db.run('BEGIN');
    db.run(SCHEMA_V3);
    db.run('PRAGMA user_version = 3');
    db.run('COMMIT');
  }
  if (schemaVersion(db) === 3 && upTo >= 4) {
    db.run('BEGIN');
    db.run(SCHEMA_V4);
    db.run('PRAGMA user_version = 4');
    db.run('COMMIT');
  }
  if (schemaVersion(db) === 4 && upTo >= 5) {
    db.run('BEGIN');
    db.run(SCHEMA_V5);
    db.run('PRAGMA user_version = 5');
    db.run('COMMIT');
  }
  if (schemaVersion(db) === 5 && upTo >= 6) {
    db.run('BEGIN');
    db.run(SCHEMA_V6);
    db.run(SCHEMA_V6_INSIGHT);
    db.run('PRAGMA user_version = 6');
    db.run('COMMIT');
  }
}

/**
 * The last journal record a snapshot holds, kept in the snapshot itself (meta.journal_seq): replay
 * skips every record up to it. Written outside the journal, as it describes the journal.
 */
export function readJournalSeq(sql: SqlDatabase): number {
  return Number(sql.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', ['journal_seq'])?.value ?? 0);
}

export function writeJournalSeq(sql: SqlDatabase, seq: number): void {
  sql.statement(MUTATIONS.meta_set).run(['journal_seq', String(seq)]);
}
