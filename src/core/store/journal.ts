// The journal: every mutation since the last snapshot, one JSON record `[seq, key, params]` a line,
// appended to engine.journal (engine.journal.next while a checkpoint folds engine.journal in).
// Records are written as soon as they are committed, where a crash of this process cannot lose
// them; an fdatasync makes them survive a crash of the machine. The journal counts its writes and
// which of them are known to be on disk, so a launch can wait for exactly its own records.
import { closeSync, existsSync, fdatasync, fdatasyncSync, fstatSync, ftruncateSync, openSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { SqlValue } from 'sql.js';
import type { StoreNote } from './backend';
import { JOURNAL_FILE, writeFully } from './files';
import { MUTATIONS, type MutationKey } from './schema';
import type { SqlDatabase } from './sqlJs';

/** What a background fdatasync reports to the store. */
export interface JournalSyncEvents {
  /** The records written before it are on disk. */
  synced(): void;
  failed(message: string): void;
}

export class Journal {
  private fd: number | null = null;
  /** `dev:ino` of the file `fd` appends to, to tell when the path no longer leads to it. */
  private identity: string | null = null;
  /** The file `fd` appends to: JOURNAL_NEXT_FILE while a checkpoint runs. */
  private name = JOURNAL_FILE;
  /** Background fdatasyncs in flight. */
  private backgroundSyncs = 0;
  /** Writes so far, and how many of them are known to be on disk (fdatasync done). */
  private writeSeq = 0;
  private syncedSeq = 0;
  /** Bumped whenever the descriptor changes, so a late fdatasync knows it is stale. */
  private generation = 0;
  /** whenDurable() calls waiting for their write (`seq`) to be on disk. */
  private durableWaiters: { seq: number; resolve: (durable: boolean) => void }[] = [];
  /** Bytes in the file records are appended to: what the next checkpoint would fold in. */
  private fileBytes = 0;

  /** `dir` is null for a store kept in memory: its journal is never opened. */
  constructor(
    private readonly dir: string | null,
    private readonly events: JournalSyncEvents,
  ) {}

  get isOpen(): boolean {
    return this.fd !== null;
  }

  /** About the bytes in the file records are appended to (characters, see write()). */
  get bytes(): number {
    return this.fileBytes;
  }

  /** Whether every record written is on disk. */
  get synced(): boolean {
    return this.syncedSeq === this.writeSeq;
  }

  /** Whether a background fdatasync is still running. */
  get syncPending(): boolean {
    return this.backgroundSyncs > 0;
  }

  /**
   * Opens `name` for appending: to continue what it holds, or emptied to start it over. Every
   * record written before counts as on disk: the caller made it so (a synchronous commit before a
   * rotation, or a full snapshot), or the old descriptor had nothing unsynced.
   */
  open(name = JOURNAL_FILE, start: 'continue' | 'empty' = 'continue'): void {
    const file = path.join(this.dir!, name);
    this.generation++;
    this.syncedSeq = this.writeSeq;
    if (this.fd !== null) {
      try {
        closeSync(this.fd);
      } catch {
        // already unusable
      }
      this.fd = null;
    }
    const fd = openSync(file, 'a');
    // A leftover with records in it must be empty on disk before new records follow; a new or
    // empty file needs no fdatasync (one can wait behind the disk).
    if (start === 'empty' && fstatSync(fd).size > 0) {
      ftruncateSync(fd, 0);
      fdatasyncSync(fd);
    }
    this.fd = fd;
    this.name = name;
    const st = fstatSync(fd);
    this.fileBytes = st.size;
    this.identity = `${st.dev}:${st.ino}`;
    this.settleDurableWaiters();
  }

  /** The file was renamed to `name` (a checkpoint's continuation becoming the journal); the descriptor followed it. */
  renamed(name: string): void {
    this.name = name;
  }

  /**
   * Appends records, without an fdatasync; with none, only checks that the file is still ours.
   * Throws when it is gone, replaced or unwritable.
   */
  write(records: string[]): void {
    this.checkIdentity();
    if (records.length === 0) return;
    const text = records.join('\n') + '\n';
    writeFully(this.fd!, text);
    // Characters, not bytes: records are mostly ASCII, and this only weighs when to checkpoint.
    this.fileBytes += text.length;
    this.writeSeq++;
  }

  /** fdatasyncs on this thread: every record written is on disk afterwards. Throws on failure. */
  syncNow(): void {
    fdatasyncSync(this.fd!);
    this.syncedSeq = this.writeSeq;
    this.settleDurableWaiters();
  }

  /** Resolves once what is written now is on disk (true), or when a failure means it may never be (false). */
  whenDurable(): Promise<boolean> {
    const seq = this.writeSeq;
    return new Promise((resolve) => {
      this.durableWaiters.push({ seq, resolve });
      this.syncInBackground();
    });
  }

  /**
   * One fdatasync on the thread pool at a time, covering every write made before it started; what
   * is written meanwhile is synced by the next one, started at once if a launch waits for it and
   * otherwise by the store's next background commit.
   */
  syncInBackground(): void {
    if (this.backgroundSyncs > 0 || this.synced || this.fd === null) return;
    const fd = this.fd;
    const generation = this.generation;
    const upTo = this.writeSeq;
    this.backgroundSyncs++;
    fdatasync(fd, (err) => {
      this.backgroundSyncs--;
      // Rotated or closed meanwhile: a rotation happens only once the old journal's records are on
      // disk (synced already, or by a synchronous commit or a full snapshot first), so an error on
      // the old descriptor means nothing.
      if (generation === this.generation) {
        if (err) this.events.failed(`journal fsync failed: ${err.message}`);
        else {
          this.syncedSeq = Math.max(this.syncedSeq, upTo);
          this.events.synced();
        }
      }
      this.settleDurableWaiters();
      if (this.durableWaiters.length > 0) this.syncInBackground();
    });
  }

  /** Storage failed: the records the waiters wait for may never reach the disk. */
  failWaiters(): void {
    for (const w of this.durableWaiters.splice(0)) w.resolve(false);
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  /** Resolves the whenDurable() calls whose records are on disk. */
  private settleDurableWaiters(): void {
    if (this.durableWaiters.length === 0) return;
    const waiting = this.durableWaiters;
    this.durableWaiters = [];
    for (const w of waiting) {
      if (w.seq <= this.syncedSeq) w.resolve(true);
      else this.durableWaiters.push(w);
    }
  }

  /**
   * An open descriptor keeps writing into a journal whose folder was deleted or replaced, and
   * those writes would be lost silently; so every commit checks that the path is still our file.
   */
  private checkIdentity(): void {
    const file = path.join(this.dir!, this.name);
    let st;
    try {
      st = statSync(file);
    } catch (err) {
      throw new Error(`journal ${file} is gone (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    if (`${st.dev}:${st.ino}` !== this.identity) throw new Error(`journal ${file} was replaced`);
  }
}

/**
 * Applies a journal file's records after `afterSeq` to the database, in one transaction. Returns
 * the last record applied and whether new records can be appended to the file as it is (no torn
 * or unreadable record).
 */
export function replayJournal(file: string, sql: SqlDatabase, afterSeq: number, notes: StoreNote[]): { seq: number; appendable: boolean } {
  let last = afterSeq;
  if (!existsSync(file)) return { seq: last, appendable: true };
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  let applied = 0;
  let skipped = 0;
  sql.batch(() => {
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (!line) continue;
      let record: [number, MutationKey, SqlValue[]];
      try {
        record = JSON.parse(line) as [number, MutationKey, SqlValue[]];
      } catch {
        if (i === lines.length - 1) {
          // A crash in the middle of an append leaves a torn final record; it was never
          // acknowledged (the fsync did not return), so dropping it loses nothing.
          notes.push({
            level: 'warn',
            action: 'database_recovered',
            message: `journal ended in a torn record (${line.length} bytes), left by an interrupted write; ignored it`,
            details: { file, bytes: line.length },
          });
        } else {
          skipped++;
        }
        continue;
      }
      const [seq, key, params] = record;
      if (seq <= last) continue; // already in the snapshot
      const statement = MUTATIONS[key];
      if (!statement) {
        skipped++;
        continue;
      }
      try {
        sql.statement(statement).run(params);
        applied++;
      } catch {
        skipped++;
      }
      last = seq;
    }
  });
  if (skipped > 0) {
    notes.push({
      level: 'error',
      action: 'database_recovered',
      message: `journal replay skipped ${skipped} unreadable record(s); applied ${applied}`,
      details: { file, applied, skipped },
    });
  }
  return { seq: last, appendable: skipped === 0 && (text.length === 0 || text.endsWith('\n')) };
}
