// Turning what a poll reads from the queue sources into items. Ingestion is idempotent: an item
// read again with the same definition is skipped, one whose id is already known with another
// definition is rejected (items are never redefined), and each rejection is logged once, because
// a file whose fingerprint is recorded is not read again until it changes.
import type { LogAction, LogLevel, SourceStatus, StatusResponse } from '../shared/api';
import { definitionHash } from './items';
import { QueueDirectorySource, type QueueFileRead } from './queueSource';
import type { Store } from './store';

/** The engine's log: an entry in the store, and an event for its listeners. */
export type LogWriter = (action: LogAction, level: LogLevel, message: string, itemId: string | null, details: Record<string, unknown> | null) => void;

export interface IngestionOptions {
  workspaceFolders: string[];
  queueDirectory: string;
  /** Defaults for items that do not set their own. */
  timeoutMs: number;
  maxAttempts: number;
}

export interface IngestionHooks {
  log: LogWriter;
  /** A new item was recorded as pending (the engine keeps its counters in step). */
  onItemDiscovered(): void;
  /** True once the engine has closed: ingestion stops where it is. */
  isClosed(): boolean;
}

/** Ingestion works in chunks of this many entries and yields once a turn has run this long. */
const INGEST_CHUNK = 100;
const INGEST_SLICE_MS = 10;

export class ItemIngestion {
  private readonly sources: QueueDirectorySource[];
  private readonly sourceStatus: SourceStatus[];
  private lastScanAt: number | null = null;
  private lastScanDurationMs: number | null = null;
  private scans = 0;
  private itemsDiscovered = 0;
  private itemsRejected = 0;
  /** When ingestion last let the event loop run (see ingestFile). */
  private sliceStartedAt = 0;

  constructor(
    private readonly store: Store,
    options: IngestionOptions,
    private readonly hooks: IngestionHooks,
  ) {
    this.sources = options.workspaceFolders.map(
      (folder) =>
        new QueueDirectorySource(folder, options.queueDirectory, {
          timeoutMs: options.timeoutMs,
          maxAttempts: options.maxAttempts,
        }),
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
   * times the scan. False when the engine closed before the scan was complete.
   */
  async scanSources(pollStartedAt: number, everyFile = false): Promise<boolean> {
    this.sliceStartedAt = performance.now();
    for (let i = 0; i < this.sources.length; i++) {
      const source = this.sources[i];
      const status = this.sourceStatus[i];
      const scan = await source.scan((p) => this.knownFingerprint(p), everyFile);
      if (this.hooks.isClosed()) return false;
      status.lastScanAt = new Date().toISOString();
      // A source that keeps failing the same way is logged when the error first appears.
      if (scan.error !== status.lastError && scan.error !== null) {
        this.hooks.log('source_error', 'error', scan.error, null, { source: source.location });
      }
      status.lastError = scan.error;
      for (const file of scan.changed) {
        await this.ingestFile(file, status);
        if (this.hooks.isClosed()) return false;
      }
    }
    this.scans++;
    this.lastScanAt = Date.now();
    this.lastScanDurationMs = this.lastScanAt - pollStartedAt;
    return true;
  }

  /** /status's scanner section: a copy, so a reader never sees the next scan's changes. */
  /** Stops watching the sources' folders (engine shutdown). */
  close(): void {
    for (const source of this.sources) source.close();
  }

  scannerStatus(): StatusResponse['scanner'] {
    return {
      sources: this.sourceStatus.map((s) => ({ ...s })),
      lastScanAt: this.lastScanAt === null ? null : new Date(this.lastScanAt).toISOString(),
      lastScanDurationMs: this.lastScanDurationMs,
      scans: this.scans,
      itemsDiscovered: this.itemsDiscovered,
      itemsRejected: this.itemsRejected,
    };
  }

  private knownFingerprint(absPath: string): string | undefined {
    return this.store.get<{ fingerprint: string }>('SELECT fingerprint FROM source_files WHERE path = ?', [absPath])?.fingerprint;
  }

  /**
   * Ingests a file's entries in chunks, yielding to the event loop between them, so that a large
   * queue does not hold up the API and the launches in flight. The file's fingerprint is recorded
   * last, so an engine stopped half way reads the file again and skips what it has.
   */
  private async ingestFile(file: QueueFileRead, status: SourceStatus): Promise<void> {
    if (file.fileError) this.store.batch(() => this.reject(file.relPath, null, file.fileError!));
    for (let start = 0; start < file.entries.length; start += INGEST_CHUNK) {
      if (performance.now() - this.sliceStartedAt > INGEST_SLICE_MS) {
        await new Promise((r) => setImmediate(r));
        this.sliceStartedAt = performance.now();
        if (this.hooks.isClosed()) return;
      }
      this.store.batch(() => this.ingestEntries(file, file.entries.slice(start, start + INGEST_CHUNK), status));
    }
    this.store.mutate('source_file_set', [file.absPath, file.fingerprint]);
  }

  private ingestEntries(file: QueueFileRead, entries: QueueFileRead['entries'], status: SourceStatus): void {
    for (const entry of entries) {
      if (!entry.result.ok) {
        this.reject(file.relPath, entry.index, entry.result.reason);
        continue;
      }
      const item = entry.result.item;
      const hash = definitionHash(item);
      const known = this.store.get<{ def_hash: string; source: string }>('SELECT def_hash, source FROM items WHERE id = ?', [item.id]);
      if (known) {
        if (known.def_hash !== hash) {
          this.reject(
            file.relPath,
            entry.index,
            `id "${item.id}" is already known with a different definition (from ${known.source}); give the new item another id`,
          );
        }
        continue; // the same item read again: ingestion is idempotent
      }
      const now = Date.now();
      this.store.mutate('item_insert', [
        item.id,
        item.name,
        file.relPath,
        JSON.stringify(item),
        hash,
        item.maxAttempts,
        item.runAt,
        item.runAt ?? 0,
        now,
        now,
      ]);
      this.hooks.onItemDiscovered();
      this.itemsDiscovered++;
      status.itemsDiscovered++;
      const when = item.runAt && item.runAt > now ? `, scheduled for ${new Date(item.runAt).toISOString()}` : '';
      this.hooks.log('item_discovered', 'info', `discovered "${item.name}" in ${file.relPath}${when}`, item.id, {
        file: file.relPath,
        entry: entry.index,
        command: item.command,
        runAt: item.runAt === null ? null : new Date(item.runAt).toISOString(),
      });
    }
  }

  private reject(file: string, entry: number | null, reason: string): void {
    this.itemsRejected++;
    const where = entry === null ? file : `${file} entry ${entry}`;
    this.hooks.log('item_rejected', 'warn', `rejected ${where}: ${reason}`, null, { file, entry, reason });
  }
}
