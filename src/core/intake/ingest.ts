// Turning what a poll reads from the queue sources into items. Ingestion is idempotent: an item
// read again with the same definition is skipped; one whose id is already known with another
// definition replaces it when the item is pending and not running, or failed (`item_updated`),
// and is rejected when it is running or launched. Each update or rejection is logged once,
// because a file whose fingerprint is recorded is not read again until it changes.
import * as path from 'node:path';
import type { ItemOutcome, LogAction, LogLevel, SourceStatus, StatusResponse } from '../../shared/api';
import { definitionHash, itemFromRow, sameDefinitionHash, storedDefinition, type DefinitionColumns, type ItemDefinition } from './items';
import { DraftHolds } from './draftHolds';
import { QueueDirectorySource, type QueueFileRead } from './queueSource';
import type { Transitions } from '../kernel/transitions';
import type { StoreBackend } from '../store/backend';

/** The engine's log: an entry in the store, and an event for its listeners. */
export type LogWriter = (action: LogAction, level: LogLevel, message: string, itemId: string | null, details: Record<string, unknown> | null) => void;

export interface IngestionOptions {
  workspaceFolders: string[];
  queueDirectory: string;
  /** Defaults for items that do not set their own. */
  timeoutMs: number;
  maxAttempts: number;
  /** Test-only (EngineOptions.scheduleClock): the clock a new template's first occurrence is computed from. */
  scheduleClock?: () => number;
  /** Where the drafts' holds are kept across restarts (draftHolds.ts); null: nowhere. */
  storageDir: string | null;
}

export interface IngestionHooks {
  log: LogWriter;
  /** Records a new or redefined item (and tells the features), in the batch of its queue file. */
  transitions: Pick<Transitions, 'discovered' | 'redefined'>;
  /** True once the engine has closed: ingestion stops where it is. */
  isClosed(): boolean;
}

/** The `source` of items submitted over HTTP (POST /items, `engine-monitor add`). */
export const SUBMITTED_SOURCE = 'api';

/** Where an entry came from, for log messages: a queue file, or a request. */
function origin(source: string): string {
  return source === SUBMITTED_SOURCE ? 'POST /items' : source;
}

/** Ingestion works in chunks of this many entries and yields once a turn has run this long. */
type ScanStatus = Omit<SourceStatus, 'itemsKnown'>;

const INGEST_CHUNK = 100;
const INGEST_SLICE_MS = 10;

/** What ingestion reads of an item already known, to tell a re-read from a new definition. */
interface KnownItem extends DefinitionColumns {
  def_hash: string;
  source: string;
  definition: string;
  outcome: ItemOutcome;
  running: number;
  attempts: number;
  due_at: number | null;
}

const DEFINITION_FIELDS = ['name', 'command', 'args', 'shell', 'cwd', 'env', 'timeoutMs', 'maxAttempts', 'runAt', 'schedule', 'overlap', 'dependsOn', 'priority', 'problemMatcher', 'watch'] as const;

/** The fields of a definition that differ, in the queue file's order. */
export function changedFields(before: ItemDefinition, after: ItemDefinition): string[] {
  const canonical = (v: unknown): string =>
    JSON.stringify(v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) : v);
  return DEFINITION_FIELDS.filter((f) => canonical(before[f]) !== canonical(after[f]));
}

export class ItemIngestion {
  private readonly sources: QueueDirectorySource[];
  /** Per source, what this process saw (itemsKnown comes from the store, see itemsKnownPerSource). */
  private readonly sourceStatus: ScanStatus[];
  private lastScanAt: number | null = null;
  private lastScanDurationMs: number | null = null;
  private scans = 0;
  private itemsDiscovered = 0;
  private itemsRejected = 0;
  /**
   * Items known per source, from the store (so a restarted engine still counts what its queue
   * holds, where itemsDiscovered starts at 0): read once, on first use, then kept in step by
   * insertItem.
   */
  private knownPerSource: number[] | undefined;
  /** When ingestion last let the event loop run (see ingestFile). */
  private sliceStartedAt = 0;
  private readonly scheduleClock: () => number;
  /** Queue files a window is still editing: scans pass over them (holdDrafts, ingestDraft). */
  readonly drafts: DraftHolds;
  /** What submitted items count as in the scanner's figures: not a queue folder's. */
  private readonly submittedStatus: ScanStatus = { kind: 'queue-directory', location: SUBMITTED_SOURCE, lastScanAt: null, lastError: null, itemsDiscovered: 0 };
  /** Set by the poller: a queue folder's watch reported a change (a file renamed in, written). */
  onQueueChanged: (() => void) | undefined;

  constructor(
    private readonly store: StoreBackend,
    options: IngestionOptions,
    private readonly hooks: IngestionHooks,
  ) {
    this.scheduleClock = options.scheduleClock ?? Date.now;
    this.drafts = new DraftHolds(options.storageDir);
    this.sources = options.workspaceFolders.map(
      (folder) =>
        new QueueDirectorySource(folder, options.queueDirectory, {
          timeoutMs: options.timeoutMs,
          maxAttempts: options.maxAttempts,
        }, undefined, this.drafts, () => this.onQueueChanged?.()),
    );
    this.sourceStatus = this.sources.map((s) => ({
      kind: s.kind,
      location: s.location,
      lastScanAt: null,
      lastError: null,
      itemsDiscovered: 0,
    }));
  }

  /**
   * Scans every source and ingests the files that changed since their last read. `pollStartedAt`
   * times the scan. False when the engine closed before the scan was complete. `prompted`: the
   * scan follows a change notification (queueSource.ts: a file may be half written).
   */
  async scanSources(pollStartedAt: number, everyFile = false, prompted = false): Promise<boolean> {
    this.sliceStartedAt = performance.now();
    for (let i = 0; i < this.sources.length; i++) {
      const source = this.sources[i];
      const status = this.sourceStatus[i];
      // Each file is ingested as soon as it is read, so that one file's items are in memory at a time.
      const error = await source.scanEach(
        (p) => this.knownFingerprint(p),
        async (file) => {
          if (this.hooks.isClosed()) return false;
          await this.ingestFile(file, status);
        },
        everyFile,
        prompted,
      );
      if (this.hooks.isClosed()) return false;
      status.lastScanAt = new Date().toISOString();
      // A source that keeps failing the same way is logged when the error first appears.
      if (error !== status.lastError && error !== null) {
        this.hooks.log('source_error', 'error', error, null, { source: source.location });
      }
      status.lastError = error;
    }
    this.scans++;
    this.lastScanAt = Date.now();
    this.lastScanDurationMs = this.lastScanAt - pollStartedAt;
    return true;
  }

  /** Stops watching the sources' folders (engine shutdown). */
  close(): void {
    for (const source of this.sources) source.close();
  }

  /**
   * Why a valid entry submitted as `item` would not be taken, or undefined: the rules a queue
   * file's entry meets (a running or launched item keeps its definition; an id is an item or a
   * schedule template, not both). Read before anything of a submission is recorded, so that one
   * refused entry leaves the others unrecorded too.
   */
  submitConflict(item: ItemDefinition): string | undefined {
    const template = this.store.get<{ source: string }>('SELECT source FROM schedules WHERE id = ?', [item.id]);
    if (template && !item.schedule) return `id "${item.id}" is a schedule template (from ${template.source}); give the item another id, or add "schedule"`;
    if (item.schedule) {
      if (!template && this.store.get('SELECT 1 AS x FROM items WHERE id = ?', [item.id])) return `id "${item.id}" is already an item; a scheduled item needs an id of its own`;
      return undefined;
    }
    const known = this.store.get<{ def_hash: string; source: string; outcome: ItemOutcome; running: number; attempts: number }>(
      'SELECT def_hash, source, outcome, running, attempts FROM items WHERE id = ?',
      [item.id],
    );
    if (!known || sameDefinitionHash(known.def_hash, definitionHash(item))) return undefined;
    if (known.outcome === 'launched') return `id "${item.id}" has already launched (from ${known.source}); a launched item keeps its definition: give the new item another id`;
    if (known.running === 1) {
      return `id "${item.id}" is running (attempt ${known.attempts}); its definition cannot change while it runs: cancel it, or wait until the attempt ends, then submit it again`;
    }
    return undefined;
  }

  /**
   * Records submitted entries, each already parsed and judged (submitConflict), in one batch with
   * the source `source`: new items, redefinitions and templates exactly as a queue file's entries.
   */
  ingestSubmitted(entries: { index: number; item: ItemDefinition }[], source = SUBMITTED_SOURCE): void {
    const file: QueueFileRead = { absPath: '', relPath: source, fingerprint: '', entries: entries.map(({ index, item }) => ({ index, result: { ok: true, item } })) };
    this.store.batch(() => this.ingestEntries(file, file.entries, this.submittedStatus, new Map()));
  }

  /** /status's scanner section: a copy, so a reader never sees the next scan's changes. */

  scannerStatus(): StatusResponse['scanner'] {
    const known = this.itemsKnownPerSource();
    return {
      sources: this.sourceStatus.map((s, i) => ({ ...s, itemsKnown: known[i] })),
      lastScanAt: this.lastScanAt === null ? null : new Date(this.lastScanAt).toISOString(),
      lastScanDurationMs: this.lastScanDurationMs,
      scans: this.scans,
      itemsDiscovered: this.itemsDiscovered,
      itemsRejected: this.itemsRejected,
    };
  }

  private itemsKnownPerSource(): number[] {
    if (!this.knownPerSource) {
      const known = this.sources.map(() => 0);
      let rows: { source: string; n: number }[];
      try {
        // Grouped by file, so this reads one row per queue file, once per engine start.
        rows = this.store.all<{ source: string; n: number }>('SELECT source, COUNT(*) AS n FROM items GROUP BY source');
      } catch {
        // A fleet's database that is down right now: /status must still answer, saying
        // why in `database.lastError`; what this process discovered is the best it knows, and the
        // store is asked again next time.
        return this.sourceStatus.map((s) => s.itemsDiscovered);
      }
      for (const { source, n } of rows) {
        const i = this.sourceIndexOf(source);
        if (i >= 0) known[i] += n;
      }
      this.knownPerSource = known;
    }
    return this.knownPerSource;
  }

  /**
   * The source an item's file (`items.source`, relative to its workspace folder) belongs to, or
   * -1. Workspace folders with the same queue directory give the same relative path: then the one
   * whose folder holds the file, by the recorded file fingerprints, gets it.
   */
  private sourceIndexOf(relFile: string): number {
    const candidates: number[] = [];
    this.sources.forEach((src, i) => {
      const dir = path.relative(src.workspaceFolder, src.location).split(path.sep).join('/');
      const prefix = dir === '' ? '' : `${dir}/`;
      if (relFile.startsWith(prefix) && !relFile.slice(prefix.length).includes('/')) candidates.push(i);
    });
    if (candidates.length <= 1) return candidates[0] ?? -1;
    const read = candidates.find((i) => this.knownFingerprint(path.join(this.sources[i].workspaceFolder, relFile)) !== undefined);
    return read ?? candidates[0];
  }

  private knownFingerprint(absPath: string): string | undefined {
    return this.store.get<{ fingerprint: string }>('SELECT fingerprint FROM source_files WHERE path = ?', [absPath])?.fingerprint;
  }

  /**
   * Ingests a file's entries in chunks, yielding to the event loop between them, so that a large
   * queue does not hold up the API and the launches in flight. The file's fingerprint is recorded
   * last, so an engine stopped half way reads the file again and skips what it has.
   */
  private async ingestFile(file: QueueFileRead, status: ScanStatus): Promise<void> {
    if (file.fileError) this.store.batch(() => this.reject(file.relPath, null, file.fileError!));
    // Item id → the first entry of this file that has it, across the chunks below.
    const idsInFile = new Map<string, number>();
    const chunk = this.store.ingestChunk ?? INGEST_CHUNK;
    for (let start = 0; start < file.entries.length; start += chunk) {
      if (performance.now() - this.sliceStartedAt > INGEST_SLICE_MS) {
        await new Promise((r) => setImmediate(r));
        this.sliceStartedAt = performance.now();
        if (this.hooks.isClosed()) return;
      }
      this.store.batch(() => this.ingestEntries(file, file.entries.slice(start, start + chunk), status, idsInFile));
    }
    this.store.mutate('source_file_set', [file.absPath, file.fingerprint]);
  }

  private ingestEntries(file: QueueFileRead, entries: QueueFileRead['entries'], status: ScanStatus, idsInFile: Map<string, number>): void {
    // Whether any template exists, read once for the chunk: without one, no entry can name one,
    // and the per-entry lookup (about 5 µs each) is skipped.
    const templates = this.store.get('SELECT 1 AS x FROM schedules LIMIT 1') !== undefined;
    for (const entry of entries) {
      if (!entry.result.ok) {
        this.reject(file.relPath, entry.index, entry.result.reason, null, entry.result.field);
        continue;
      }
      const item = entry.result.item;
      // Two entries of one file with one id: the second would silently redefine the first in the
      // same read. The first stands; the second is rejected where the editor can point at it.
      const first = idsInFile.get(item.id);
      if (first !== undefined) {
        this.reject(file.relPath, entry.index, `id "${item.id}" is already used by entry ${first} of this file; give this entry an id of its own`, item.id, 'id');
        continue;
      }
      idsInFile.set(item.id, entry.index);
      const hash = definitionHash(item);
      const template = templates
        ? this.store.get<{ def_hash: string; source: string; definition: string }>('SELECT def_hash, source, definition FROM schedules WHERE id = ?', [item.id])
        : undefined;
      if (item.schedule || item.watch || template) {
        this.ingestTemplate(file, entry.index, item, hash, template);
        continue;
      }
      const known = this.store.get<KnownItem>('SELECT id, name, max_attempts, run_at, def_hash, source, definition, outcome, running, attempts, due_at FROM items WHERE id = ?', [item.id]);
      if (known) {
        // The same item read again: ingestion is idempotent. Another definition replaces the old
        // one while the item is pending and not running, or failed (a running attempt keeps the
        // definition it started with).
        if (!sameDefinitionHash(known.def_hash, hash)) this.redefine(file, entry.index, item, hash, known);
        continue;
      }
      const now = Date.now();
      this.insertItem(item, file.relPath, now, hash);
      this.itemsDiscovered++;
      status.itemsDiscovered++;
      const when = item.runAt && item.runAt > now ? `, scheduled for ${new Date(item.runAt).toISOString()}` : '';
      this.hooks.log('item_discovered', 'info', `discovered "${item.name}" in ${origin(file.relPath)}${when}`, item.id, {
        file: file.relPath,
        entry: entry.index,
        command: item.command,
        runAt: item.runAt === null ? null : new Date(item.runAt).toISOString(),
      });
    }
  }

  /**
   * Records a new pending item (from a queue file, or a schedule's occurrence).
   */
  insertItem(item: ItemDefinition, source: string, now: number, hash = definitionHash(item)): void {
    this.hooks.transitions.discovered(item, source, storedDefinition(item), hash, now);
    if (this.knownPerSource) {
      const i = this.sourceIndexOf(source);
      if (i >= 0) this.knownPerSource[i]++;
    }
  }

  /**
   * An entry that is a schedule template, or names one. A template is not an item: it is recorded
   * in `schedules` (new: `item_discovered`; another definition: `item_updated`, its schedule state
   * kept). An id cannot be both a template and an item: the later one is rejected.
   */
  private ingestTemplate(
    file: QueueFileRead,
    entry: number,
    item: ItemDefinition,
    hash: string,
    template: { def_hash: string; source: string; definition: string } | undefined,
  ): void {
    if (!item.schedule && !item.watch) {
      this.reject(file.relPath, entry, `id "${item.id}" is a template (from ${template!.source}); give the item another id, or add "schedule" or "watch"`, item.id, 'id');
      return;
    }
    if (!template && this.store.get('SELECT 1 AS x FROM items WHERE id = ?', [item.id])) {
      this.reject(file.relPath, entry, `id "${item.id}" is already an item; a ${item.watch ? 'watched' : 'scheduled'} item needs an id of its own`, item.id, 'id');
      return;
    }
    if (template && sameDefinitionHash(template.def_hash, hash)) return;
    const now = Date.now();
    // A new template's first occurrence is the first after its discovery (next_from).
    this.store.mutate('schedule_upsert', [item.id, item.name, file.relPath, JSON.stringify(item), hash, this.scheduleClock(), now, now]);
    // A watched template says what it watches where a scheduled one says its cron and zone.
    const { cron, timezone } = item.schedule ?? {};
    const trigger = item.schedule ? { schedule: cron, timezone } : { watch: item.watch!.paths };
    const kind = item.schedule ? 'schedule' : 'watched item';
    if (template) {
      const changed = changedFields(JSON.parse(template.definition) as ItemDefinition, item);
      this.hooks.log('item_updated', 'info', `${kind} "${item.name}" updated from ${origin(file.relPath)} (${changed.join(', ')} changed)`, item.id, { changed, file: file.relPath, entry, ...trigger });
    } else {
      this.itemsDiscovered++;
      const what = item.schedule ? `${cron}, ${timezone}` : item.watch!.paths.join(', ');
      this.hooks.log('item_discovered', 'info', `discovered ${kind} "${item.name}" (${what}) in ${origin(file.relPath)}`, item.id, {
        file: file.relPath,
        entry,
        command: item.command,
        ...trigger,
      });
    }
  }

  /**
   * A known id read with another definition. A pending item that is not running, or a failed one,
   * takes the new definition (`item_updated`, naming the changed fields): a pending item starts
   * over (attempts reset, due at its runAt or now); a failed item stays failed until retried,
   * and Retry runs the new definition. A running or launched item keeps its definition and the
   * new one is rejected, saying why and what to do.
   */
  private redefine(file: QueueFileRead, entry: number, item: ItemDefinition, hash: string, known: KnownItem): void {
    if (known.outcome === 'launched') {
      this.reject(
        file.relPath,
        entry,
        `id "${item.id}" has already launched (from ${known.source}); a launched item keeps its definition: give the new item another id`,
        item.id,
      );
      return;
    }
    if (known.running !== 0) {
      this.reject(
        file.relPath,
        entry,
        `id "${item.id}" is running (attempt ${known.attempts}); its definition cannot change while it runs: cancel it, or wait until the attempt ends, then save ${file.relPath} again`,
        item.id,
      );
      return;
    }
    const old = itemFromRow(known.definition, known);
    const changed = changedFields(old, item);
    const now = Date.now();
    const pending = known.outcome === 'pending';
    this.hooks.transitions.redefined(item, old, file.relPath, storedDefinition(item), hash, known, now);
    const after = pending ? 'it starts over with its attempts reset' : 'it stays failed until retried, and Retry runs the new definition';
    this.hooks.log('item_updated', 'info', `"${item.name}" updated from ${origin(file.relPath)} (${changed.join(', ')} changed); ${after}`, item.id, {
      changed,
      file: file.relPath,
      entry,
      previousSource: known.source === file.relPath ? null : known.source,
      outcome: known.outcome,
    });
  }

  /** `field`: the entry's top-level field at fault, when the check knows it (the editor points there). */
  private reject(file: string, entry: number | null, reason: string, itemId: string | null = null, field?: string): void {
    this.itemsRejected++;
    const where = entry === null ? file : `${file} entry ${entry}`;
    this.hooks.log('item_rejected', 'warn', `rejected ${where}: ${reason}`, itemId, field === undefined ? { file, entry, reason } : { file, entry, reason, field });
  }
}
