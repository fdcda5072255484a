// The fleet's tables in PostgreSQL: the sql.js schema (schema.ts) at its
// current version, plus what a fleet needs: which engine ran each attempt and wrote each log entry,
// the engines and their leases, counters kept by triggers (so /stats reads a few rows, fleet-wide,
// never a scan), and a NOTIFY per log entry for every engine's /events. Word-prefix search uses
// the `simple` text search configuration: no stemming, no stop words, like SQLite's unicode61.
import type { MutationKey } from './schema';

export const PG_SCHEMA_VERSION = 3;

/** Applied once, under an advisory lock, by whichever engine finds the database empty. */
export const PG_SCHEMA_V1 = `
CREATE OR REPLACE FUNCTION em_now() RETURNS bigint LANGUAGE sql VOLATILE AS
  $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE items (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  definition TEXT NOT NULL,
  def_hash TEXT NOT NULL,
  outcome TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  run_at BIGINT,
  due_at BIGINT,
  running INTEGER NOT NULL,
  last_error TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  held INTEGER NOT NULL DEFAULT 0,
  priority INTEGER NOT NULL DEFAULT 0,
  blocked INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX items_due ON items (outcome, due_at);
CREATE INDEX items_ready ON items (priority DESC, due_at, seq) WHERE outcome = 'pending' AND held = 0 AND blocked = 0 AND running = 0;
CREATE SEQUENCE attempts_id_seq;
CREATE TABLE attempts (
  id BIGINT PRIMARY KEY,
  item_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  started_at BIGINT NOT NULL,
  finished_at BIGINT,
  outcome TEXT NOT NULL,
  exit_code INTEGER,
  signal TEXT,
  error TEXT,
  stdout_tail TEXT,
  stderr_tail TEXT,
  output_bytes BIGINT,
  output_pruned INTEGER NOT NULL DEFAULT 0,
  problems TEXT,
  engine_id TEXT
);
CREATE INDEX attempts_item ON attempts (item_id, id);
CREATE INDEX attempts_running ON attempts (engine_id) WHERE outcome = 'running';
CREATE SEQUENCE logs_id_seq;
CREATE TABLE logs (
  id BIGINT PRIMARY KEY,
  ts BIGINT NOT NULL,
  action TEXT NOT NULL,
  level INTEGER NOT NULL,
  message TEXT NOT NULL,
  item_id TEXT,
  details TEXT,
  engine_id TEXT
);
CREATE INDEX logs_action ON logs (action, id);
CREATE INDEX logs_item ON logs (item_id, id);
CREATE INDEX logs_ts ON logs (ts);
CREATE INDEX logs_level ON logs (level, id);
CREATE INDEX logs_words ON logs USING gin (to_tsvector('simple', message));
CREATE TABLE source_files (path TEXT PRIMARY KEY, fingerprint TEXT NOT NULL);
CREATE TABLE dependencies (rowid BIGSERIAL, item_id TEXT NOT NULL, depends_on TEXT NOT NULL, PRIMARY KEY (item_id, depends_on));
CREATE INDEX dependencies_on ON dependencies (depends_on);
CREATE TABLE schedules (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  definition TEXT NOT NULL,
  def_hash TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  next_from BIGINT NOT NULL,
  last_run_at BIGINT,
  last_occurrence TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE engines (
  engine_id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  state TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  last_heartbeat_at BIGINT NOT NULL,
  lease_until BIGINT NOT NULL,
  running INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE counters (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  launched BIGINT NOT NULL, pending BIGINT NOT NULL, failed BIGINT NOT NULL, held BIGINT NOT NULL,
  running BIGINT NOT NULL, total_launches BIGINT NOT NULL, total_failed BIGINT NOT NULL
);
INSERT INTO counters VALUES (1, 0, 0, 0, 0, 0, 0, 0);

CREATE FUNCTION em_items_counters() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE dl bigint := 0; dp bigint := 0; df bigint := 0; dh bigint := 0; dr bigint := 0;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    IF OLD.outcome = 'launched' THEN dl := dl - 1; ELSIF OLD.outcome = 'pending' THEN dp := dp - 1; ELSE df := df - 1; END IF;
    IF OLD.outcome = 'pending' AND OLD.held = 1 THEN dh := dh - 1; END IF;
    IF OLD.running = 1 THEN dr := dr - 1; END IF;
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') THEN
    IF NEW.outcome = 'launched' THEN dl := dl + 1; ELSIF NEW.outcome = 'pending' THEN dp := dp + 1; ELSE df := df + 1; END IF;
    IF NEW.outcome = 'pending' AND NEW.held = 1 THEN dh := dh + 1; END IF;
    IF NEW.running = 1 THEN dr := dr + 1; END IF;
  END IF;
  IF dl <> 0 OR dp <> 0 OR df <> 0 OR dh <> 0 OR dr <> 0 THEN
    UPDATE counters SET launched = launched + dl, pending = pending + dp, failed = failed + df, held = held + dh, running = running + dr WHERE id = 1;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER items_counters AFTER INSERT OR UPDATE OR DELETE ON items FOR EACH ROW EXECUTE FUNCTION em_items_counters();

CREATE FUNCTION em_attempts_counters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE counters SET total_launches = total_launches + 1 WHERE id = 1;
  ELSIF OLD.outcome = 'running' AND NEW.outcome = 'failed' THEN
    UPDATE counters SET total_failed = total_failed + 1 WHERE id = 1;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER attempts_counters AFTER INSERT OR UPDATE OF outcome ON attempts FOR EACH ROW EXECUTE FUNCTION em_attempts_counters();

-- Every engine's /events hears every engine's log entries (delivered at commit).
CREATE FUNCTION em_logs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('engine_monitor_log', NEW.id::text);
  RETURN NULL;
END $$;
CREATE TRIGGER logs_notify AFTER INSERT ON logs FOR EACH ROW EXECUTE FUNCTION em_logs_notify();
`;

/** Attempt insight, as schema.ts's version 6: applied after version 1, to a new database as to an old one. */
export const PG_SCHEMA_V2_INSIGHT = `
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS cpu_ms BIGINT;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS peak_rss_bytes BIGINT;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS sampled_every_ms INTEGER;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS first_output_ms BIGINT;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS slow INTEGER NOT NULL DEFAULT 0;
`;

/**
 * Processes still exiting (version 3): one row per attempt whose item was cancelled while its
 * process runs on, keyed by the engine that has the process, until that engine sees it exit.
 * Every engine's claim skips an item with such a row of a live engine (lease not expired), so an
 * item retried right after a cancel gets no second process anywhere in the fleet; a lost engine's
 * rows block nothing and are removed. `engines.records_exits` says an engine clears its rows: an
 * engine of an earlier build never does, so no row is written for its processes. Additive and
 * idempotent, for a new database as for an existing one.
 */
export const PG_SCHEMA_V3_EXITS = `
CREATE TABLE IF NOT EXISTS exiting_processes (
  attempt_id BIGINT PRIMARY KEY,
  item_id TEXT NOT NULL,
  engine_id TEXT NOT NULL,
  since BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS exiting_processes_item ON exiting_processes (item_id);
ALTER TABLE engines ADD COLUMN IF NOT EXISTS records_exits INTEGER NOT NULL DEFAULT 0;
`;

/** Whether an item has a process still exiting on a live engine (for a claim's WHERE). */
export const NO_PROCESS_EXITING_SQL = `NOT EXISTS (SELECT 1 FROM exiting_processes x JOIN engines e ON e.engine_id = x.engine_id
      WHERE x.item_id = items.id AND e.lease_until >= em_now())`;

/**
 * The items trigger that keeps /stats's counters in step with the rows, adding to counter row
 * `row` (an SQL expression). A service's attempt (running 2 or 3) counts as running, like 1.
 */
function itemsCounters(row: string): string {
  return `CREATE OR REPLACE FUNCTION em_items_counters() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE dl bigint := 0; dp bigint := 0; df bigint := 0; dh bigint := 0; dr bigint := 0;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    IF OLD.outcome = 'launched' THEN dl := dl - 1; ELSIF OLD.outcome = 'pending' THEN dp := dp - 1; ELSE df := df - 1; END IF;
    IF OLD.outcome = 'pending' AND OLD.held = 1 THEN dh := dh - 1; END IF;
    IF OLD.running <> 0 THEN dr := dr - 1; END IF;
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') THEN
    IF NEW.outcome = 'launched' THEN dl := dl + 1; ELSIF NEW.outcome = 'pending' THEN dp := dp + 1; ELSE df := df + 1; END IF;
    IF NEW.outcome = 'pending' AND NEW.held = 1 THEN dh := dh + 1; END IF;
    IF NEW.running <> 0 THEN dr := dr + 1; END IF;
  END IF;
  IF dl <> 0 OR dp <> 0 OR df <> 0 OR dh <> 0 OR dr <> 0 THEN
    UPDATE counters SET launched = launched + dl, pending = pending + dp, failed = failed + df, held = held + dh, running = running + dr WHERE id = ${row};
  END IF;
  RETURN NULL;
END $$;
`;
}

/**
 * Services (schema.ts's version 6): when a service's attempt became ready; and an items row's
 * `running` is 2 (starting) or 3 (ready) for a service's attempt, which the fleet's running
 * counter counts like 1.
 */
export const PG_SCHEMA_V2 = `
ALTER TABLE attempts ADD COLUMN ready_at BIGINT;
${itemsCounters('1')}`;

/**
 * What engines of a fleet need beyond schema 1 to share work across hosts and keep each other
 * moving, applied once per database (the marker function at its end says it was) by the first
 * engine that joins, under the same advisory lock. Idempotent and independent of the schema's
 * version steps: an engine of an older build on the same database is unaffected.
 * - `engines.workspaces`: the engine's workspace folders (a JSON array), which its claims filter on;
 * - a NOTIFY on `engine_monitor_due` whenever an item becomes claimable now (a new pending item, or
 *   one released, unblocked or retried), so idle engines claim at once instead of at their next
 *   look. The payload is empty on purpose: PostgreSQL folds identical notifications of one
 *   transaction into one, so a queue file of 2,000 items wakes each engine once per batch;
 * - the counters in 32 rows instead of one (a service's attempt, running 2 or 3, counts as running), each connection adding to the row of its backend pid
 *   and /stats summing them: with one row, every claim, outcome and ingest of every engine locked
 *   the same row until its commit, so a slow transaction on one engine (a starved host, a long
 *   ingest) held every other engine's main thread, blocked on its own UPDATE, for as long.
 */
export const PG_FLEET_STEP = `
ALTER TABLE engines ADD COLUMN IF NOT EXISTS workspaces TEXT NOT NULL DEFAULT '[]';
CREATE OR REPLACE FUNCTION em_items_due_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('engine_monitor_due', '');
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS items_due_insert ON items;
CREATE TRIGGER items_due_insert AFTER INSERT ON items FOR EACH ROW
  WHEN (NEW.outcome = 'pending' AND NEW.held = 0 AND NEW.blocked = 0 AND NEW.running = 0 AND (NEW.due_at IS NULL OR NEW.due_at <= em_now()))
  EXECUTE FUNCTION em_items_due_notify();
DROP TRIGGER IF EXISTS items_due_update ON items;
CREATE TRIGGER items_due_update AFTER UPDATE ON items FOR EACH ROW
  WHEN (NEW.outcome = 'pending' AND NEW.held = 0 AND NEW.blocked = 0 AND NEW.running = 0 AND (NEW.due_at IS NULL OR NEW.due_at <= em_now())
        AND (OLD.outcome <> 'pending' OR OLD.held <> 0 OR OLD.blocked <> 0 OR OLD.due_at IS DISTINCT FROM NEW.due_at))
  EXECUTE FUNCTION em_items_due_notify();

ALTER TABLE counters DROP CONSTRAINT IF EXISTS counters_id_check;
INSERT INTO counters SELECT g, 0, 0, 0, 0, 0, 0, 0 FROM generate_series(2, 32) AS g ON CONFLICT (id) DO NOTHING;
CREATE OR REPLACE FUNCTION em_counter_row() RETURNS integer LANGUAGE sql STABLE AS $$ SELECT 1 + pg_backend_pid() % 32 $$;
${itemsCounters('em_counter_row()')}CREATE OR REPLACE FUNCTION em_attempts_counters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE counters SET total_launches = total_launches + 1 WHERE id = em_counter_row();
  ELSIF OLD.outcome = 'running' AND NEW.outcome = 'failed' THEN
    UPDATE counters SET total_failed = total_failed + 1 WHERE id = em_counter_row();
  END IF;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION em_fleet_step_3() RETURNS integer LANGUAGE sql IMMUTABLE AS $$ SELECT 3 $$;
`;

/** Whether PG_FLEET_STEP was applied (its DROP/CREATE TRIGGER lock the items table: not at every join). */
export const PG_FLEET_STEP_APPLIED = "SELECT to_regproc('em_fleet_step_3') IS NOT NULL AS applied";

/**
 * Whether an item's `cwd` (in its stored definition) is one of the JSON array of folders `$n`,
 * or below one: isInside() of workingFolder.ts, by spelling, in SQL (an item without a cwd
 * starts anywhere). The spawn still checks where the folder really leads.
 */
export function cwdInsideSql(param: string): string {
  return `((items.definition::jsonb ->> 'cwd') IS NULL OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(${param}::jsonb) AS w(folder)
    WHERE (items.definition::jsonb ->> 'cwd') = w.folder
       OR left(items.definition::jsonb ->> 'cwd', length(rtrim(w.folder, '/')) + 1) = rtrim(w.folder, '/') || '/'))`;
}

/**
 * The named mutations of schema.ts in PostgreSQL's dialect. `null`: nothing to do here (the
 * full-text index is an expression index, kept by PostgreSQL itself). Attempts and log entries get
 * the writing engine's id as a last parameter (pgStore.ts appends it).
 */
export const PG_MUTATIONS: Record<MutationKey, string | null> = {
  meta_set: 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
  // Two engines may scan sources holding the same id: the first one's row stands.
  item_insert: `INSERT INTO items (id, name, source, definition, def_hash, outcome, attempts, max_attempts, run_at, due_at, running, last_error, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, 0, NULL, ?, ?) ON CONFLICT (id) DO NOTHING`,
  item_state: 'UPDATE items SET outcome = ?, attempts = ?, due_at = ?, running = ?, last_error = ?, updated_at = ? WHERE id = ?',
  items_backoff_shift: "UPDATE items SET due_at = due_at + ? WHERE outcome = 'pending' AND running = 0 AND attempts > 0 AND due_at IS NOT NULL",
  item_hold: 'UPDATE items SET held = ?, updated_at = ? WHERE id = ?',
  item_update: 'UPDATE items SET name = ?, source = ?, definition = ?, def_hash = ?, max_attempts = ?, run_at = ?, attempts = ?, due_at = ?, updated_at = ? WHERE id = ?',
  item_priority: 'UPDATE items SET priority = ? WHERE id = ?',
  item_blocked: 'UPDATE items SET blocked = ? WHERE id = ?',
  dependencies_clear: 'DELETE FROM dependencies WHERE item_id = ?',
  // The items trigger takes the item out of its outcome's counter; the attempts trigger leaves the totals.
  item_delete: 'DELETE FROM items WHERE id = ?',
  attempts_delete: 'DELETE FROM attempts WHERE item_id = ?',
  dependency_insert: 'INSERT INTO dependencies (item_id, depends_on) VALUES (?, ?) ON CONFLICT DO NOTHING',
  schedule_upsert: `INSERT INTO schedules (id, name, source, definition, def_hash, enabled, next_from, last_run_at, last_occurrence, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, 1, ?, NULL, NULL, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET name = excluded.name, source = excluded.source, definition = excluded.definition,
                    def_hash = excluded.def_hash, updated_at = excluded.updated_at`,
  schedule_ran: 'UPDATE schedules SET next_from = ?, last_run_at = ?, last_occurrence = ?, updated_at = ? WHERE id = ?',
  schedule_enabled: 'UPDATE schedules SET enabled = ?, next_from = ?, updated_at = ? WHERE id = ?',
  item_running: 'UPDATE items SET running = ?, updated_at = ? WHERE id = ?',
  attempt_ready: 'UPDATE attempts SET ready_at = ? WHERE id = ?',
  attempt_insert: `INSERT INTO attempts (id, item_id, attempt, started_at, outcome, engine_id) VALUES (?, ?, ?, ?, 'running', ?)`,
  attempt_finish: 'UPDATE attempts SET finished_at = ?, outcome = ?, exit_code = ?, signal = ?, error = ?, stdout_tail = ?, stderr_tail = ? WHERE id = ?',
  attempt_output_bytes: 'UPDATE attempts SET output_bytes = ? WHERE id = ?',
  attempt_output_pruned: 'UPDATE attempts SET output_pruned = 1 WHERE id = ?',
  attempt_problems: 'UPDATE attempts SET problems = ? WHERE id = ?',
  attempt_end:
    'UPDATE attempts SET finished_at = ?, outcome = ?, exit_code = ?, signal = ?, error = ?, stdout_tail = ?, stderr_tail = ?, output_bytes = ?, problems = ? WHERE id = ?',
  attempt_end_measured:
    'UPDATE attempts SET finished_at = ?, outcome = ?, exit_code = ?, signal = ?, error = ?, stdout_tail = ?, stderr_tail = ?, output_bytes = ?, problems = ?, cpu_ms = ?, peak_rss_bytes = ?, sampled_every_ms = ?, first_output_ms = ? WHERE id = ?',
  attempt_slow: 'UPDATE attempts SET slow = 1 WHERE id = ?',
  log_insert: 'INSERT INTO logs (id, ts, action, level, message, item_id, details, engine_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  log_fts_insert: null,
  logs_fts_prune: null,
  logs_fts_prune_indexed: null,
  logs_prune: 'DELETE FROM logs WHERE id <= ?',
  source_file_set: 'INSERT INTO source_files (path, fingerprint) VALUES (?, ?) ON CONFLICT (path) DO UPDATE SET fingerprint = excluded.fingerprint',
};

/** Mutations that record which engine wrote them. */
export const WITH_ENGINE_ID: ReadonlySet<MutationKey> = new Set(['attempt_insert', 'log_insert']);

/**
 * The engine's reads are SQLite SQL; these few spellings differ in PostgreSQL. Then `?` become
 * `$n` (no engine query has a `?` inside a string literal).
 */
export function toPostgres(sql: string): string {
  let out = sql
    .replace(/ INDEXED BY \w+/g, '')
    // Whether a definition is a service's (its JSON is text here too).
    .replace(/json_extract\(definition, '\$\.service'\)/g, "(definition::jsonb -> 'service')")
    // A JSON array of item ids (text), or of row ids (numbers).
    .replace(/\b(item_id|depends_on) IN \(SELECT value FROM json_each\(\?\)\)/g, '$1 IN (SELECT jsonb_array_elements_text(?::jsonb))')
    .replace(/SELECT value FROM json_each\(\?\)/g, 'SELECT (jsonb_array_elements_text(?::jsonb))::bigint')
    .replace(/\binstr\(/g, 'strpos(')
    // SQLite's LIKE folds ASCII case; ILIKE folds more, and /items checks the exact rule after it.
    .replace(/ LIKE \?/g, ' ILIKE ?');
  let n = 0;
  out = out.replace(/\?/g, () => `$${++n}`);
  return out;
}

/** `q`'s words as a tsquery: each a prefix, all required. Words are letters and digits (searchWords). */
export function prefixQuery(words: string[]): string {
  return words.map((w) => `'${w.replace(/['\\]/g, '')}':*`).join(' & ');
}
