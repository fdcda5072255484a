// sql.js: its WebAssembly, loaded once per process, and a database with its prepared statements and
// transactions, shared by the store and the checkpoint builder.
import { existsSync } from 'node:fs';
import path from 'node:path';
import initSqlJs, { type Database, type SqlJsStatic, type SqlValue, type Statement } from 'sql.js';

let sqlJs: Promise<SqlJsStatic> | undefined;

export function loadSqlJs(): Promise<SqlJsStatic> {
  if (sqlJs) return sqlJs;
  // A WebAssembly compile holds nothing on the event loop. When nothing else does either (an engine
  // host starting), Node leaves the loop and runs what follows the compile inside
  // NodePlatform::DrainTasks, which afterwards blocks until every background V8 job is done,
  // including the TurboFan tier-up of the sql.js functions that startup made hot: no timer or I/O
  // callback ran until then (docs/PERFORMANCE.md). A referenced timer keeps the loop alive, so the
  // rest of startup runs on it and tier-up stays in the background.
  const keepLoopAlive = setInterval(() => undefined, 60_000);
  // sql.js reads every TEXT value through one `new TextDecoder()` that it makes while initSqlJs runs
  // synchronously. A default TextDecoder drops a leading U+FEFF, so a message, item id or detail that
  // starts with one came back shorter than it was stored (SQLite keeps the bytes; a fast-check seed
  // found it). SQLite's text is never a document with a byte order mark to skip: decode it as is.
  const DefaultDecoder = globalThis.TextDecoder;
  globalThis.TextDecoder = KeepByteOrderMark;
  decodersMade = 0;
  try {
    // The wasm ships beside the bundle (dist/sql-wasm.wasm); in tests run from sources, sql.js's own.
    const init = initSqlJs({
      locateFile: (file: string) => {
        const beside = path.join(__dirname, file);
        return existsSync(beside) ? beside : require.resolve(`sql.js/dist/${file}`);
      },
    });
    // Made while initSqlJs ran: sql.js took ours. None made: sql.js was initialised before and
    // handed back that module, and only reading a text back tells which decoder it has. That check
    // runs SQL a start otherwise does not need (a tenth of the engine host's start): only then.
    const madeOurs = decodersMade > 0;
    sqlJs = init.then((SQL) => (madeOurs ? SQL : keepsByteOrderMarks(SQL))).finally(() => clearInterval(keepLoopAlive));
  } finally {
    globalThis.TextDecoder = DefaultDecoder;
  }
  return sqlJs;
}

/** KeepByteOrderMark decoders made since loadSqlJs() began initialising sql.js. */
let decodersMade = 0;

/**
 * sql.js initialises once per process and hands every later caller the same module: code that
 * called its initSqlJs before this did (a test, say) left it with the default decoder. Found at
 * once rather than as text quietly shortened.
 */
function keepsByteOrderMarks(SQL: SqlJsStatic): SqlJsStatic {
  const db = new SQL.Database();
  try {
    if (db.exec("SELECT char(65279) || 'x'")[0]?.values[0]?.[0] === '\uFEFFx') return SQL;
  } finally {
    db.close();
  }
  throw new Error('sql.js was initialised before loadSqlJs() and drops a leading U+FEFF from text it reads; load it through loadSqlJs() only');
}

class KeepByteOrderMark extends TextDecoder {
  constructor(label?: string, options?: TextDecoderOptions) {
    super(label, { ...options, ignoreBOM: true });
    decodersMade++;
  }
}

/** A sql.js database whose statements are prepared once and cached by SQL text. */
export class SqlDatabase {
  private readonly statements = new Map<string, Statement>();
  private inBatch = false;

  constructor(readonly db: Database) {}

  statement(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  /** Runs `fn` in one SQL transaction: many mutations at the cost of one. */
  batch<T>(fn: () => T): T {
    if (this.inBatch) return fn();
    this.inBatch = true;
    this.db.run('BEGIN');
    try {
      const result = fn();
      this.db.run('COMMIT');
      return result;
    } catch (err) {
      this.db.run('ROLLBACK');
      throw err;
    } finally {
      this.inBatch = false;
    }
  }

  /** Rows as objects. */
  all<T = Record<string, SqlValue>>(sql: string, params: SqlValue[] = []): T[] {
    const stmt = this.statement(sql);
    try {
      stmt.bind(params);
      const rows: T[] = [];
      while (stmt.step()) rows.push(stmt.getAsObject() as T);
      return rows;
    } finally {
      stmt.reset();
    }
  }

  /**
   * Rows as arrays in column order: for large result pages. sql.js's getAsObject() re-reads every
   * column name on every row, which tripled the cost of a 100-entry /logs page.
   */
  rows(sql: string, params: SqlValue[] = []): SqlValue[][] {
    const stmt = this.statement(sql);
    try {
      stmt.bind(params);
      const rows: SqlValue[][] = [];
      while (stmt.step()) rows.push(stmt.get());
      return rows;
    } finally {
      stmt.reset();
    }
  }

  get<T = Record<string, SqlValue>>(sql: string, params: SqlValue[] = []): T | undefined {
    const stmt = this.statement(sql);
    try {
      stmt.bind(params);
      return stmt.step() ? (stmt.getAsObject() as T) : undefined;
    } finally {
      stmt.reset();
    }
  }

  /** Frees the statements and the database. */
  close(): void {
    for (const s of this.statements.values()) s.free();
    this.statements.clear();
    this.db.close();
  }
}
