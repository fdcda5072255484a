// Queue-file rejections in the Problems panel: each item_rejected log entry becomes a
// diagnostic, source "Engine Monitor", at the rejected entry (at its field when the engine names
// one). These are the checks JSON Schema cannot make in the editor: a changed definition of a
// launched or running item, cwd leaving the workspace, an invalid cron expression, an id clash
// with a schedule template, an id used twice in one file; and a dependency cycle
// (dependency_failed with `cycle`), at each of its items' dependsOn.
//
// When a diagnostic goes away — the rule: a rejection is shown while it is newer than the queue
// file's last change. The engine reads a file after it changed and logs a new rejection for each
// entry still wrong, so a rejection older than the file's modification time speaks of content that
// is gone. Concretely:
// - a new rejection for (file, entry) replaces the one shown for that entry;
// - an item_discovered or item_updated for (file, entry) logged after the rejection removes it
//   (the entry was accepted);
// - when the file changes on disk, rejections logged before its new modification time are removed;
//   when it is deleted, all of its diagnostics go;
// - on connecting (a reload), the recent item_rejected entries are read from /logs and the same
//   rule is applied to them against each file's modification time.
// The comparison uses the engine's timestamps and this machine's file times: for a remote engine
// on another machine whose clock differs, a fix may show until the next rejection or acceptance.
import * as vscode from 'vscode';
import type { LogEntry } from '../shared/api';
import { Disposable, toDisposable } from './dispose';
import type { EngineConnection } from './engineConnection';
import { entryRange, type OffsetRange } from './queueFileRanges';
import { readQueueEntries } from './queueLensModel';

export const DIAGNOSTIC_SOURCE = 'Engine Monitor';
/** How many of the newest rejections a reload reads back. */
const RECENT_REJECTIONS = 500;

interface Rejection {
  entry: number | null;
  reason: string;
  field: string | undefined;
  /** The engine's log timestamp, in ms. */
  at: number;
}

export class QueueDiagnostics extends Disposable {
  readonly collection: vscode.DiagnosticCollection;
  /** Queue file (as the engine names it, relative to the workspace folder) → entry → rejection. */
  private readonly rejections = new Map<string, Map<number | null, Rejection>>();
  private generation = 0;

  constructor(private readonly connection: EngineConnection) {
    super();
    this.collection = this._register(vscode.languages.createDiagnosticCollection('engine-monitor'));
    this._register(
      connection.onDidReceiveEvent((e) => {
        if (e.name === 'log') this.onLog(e.data);
      }),
    );
    this._register(
      connection.onDidChangeConnection((connected) => {
        if (connected) void this.loadRecent();
      }),
    );
    // Queue files are .json/.jsonl anywhere the engine reads; watching every one of them costs
    // nothing when none changes, and only files with diagnostics are looked at.
    const watcher = this._register(vscode.workspace.createFileSystemWatcher('**/*.{json,jsonl}'));
    this._register(watcher.onDidChange((uri) => void this.onFileChanged(uri)));
    this._register(watcher.onDidCreate((uri) => void this.onFileChanged(uri)));
    this._register(watcher.onDidDelete((uri) => this.onFileDeleted(uri)));
    this._register(toDisposable(() => this.rejections.clear()));
    if (connection.connected) void this.loadRecent();
  }

  /** Why the engine rejected this entry of a file (the engine's name for it), while that is shown. */
  /** `entry` null: the reason the whole file was rejected (not JSON, not an item list). */
  rejectionReason(file: string, entry: number | null): string | undefined {
    return this.rejections.get(file)?.get(entry)?.reason;
  }

  private onLog(e: LogEntry): void {
    const file = typeof e.details?.file === 'string' ? e.details.file : undefined;
    if (!file) return;
    const entry = typeof e.details?.entry === 'number' ? e.details.entry : null;
    if (e.action === 'item_rejected') {
      this.add(file, toRejection(e, entry));
      void this.render(file);
    } else if (isCycle(e)) {
      void this.addCycle(file, e).then((added) => (added ? this.render(file) : undefined));
    } else if (e.action === 'item_discovered' || e.action === 'item_updated') {
      const entries = this.rejections.get(file);
      const shown = entries?.get(entry);
      if (shown && shown.at <= Date.parse(e.timestamp)) {
        entries!.delete(entry);
        // The file as a whole was readable this time, so a file-level rejection is stale too.
        entries!.delete(null);
        void this.render(file);
      }
    }
  }

  private add(file: string, r: Rejection): void {
    let entries = this.rejections.get(file);
    if (!entries) this.rejections.set(file, (entries = new Map<number | null, Rejection>()));
    const shown = entries.get(r.entry);
    if (!shown || shown.at <= r.at) entries.set(r.entry, r);
  }

  /**
   * A dependency cycle (dependency_failed with `cycle`) is shown at the item's `dependsOn`. The
   * engine names the item and its file, not the entry: the entry is found in the file as it is.
   */
  private async addCycle(file: string, e: LogEntry): Promise<boolean> {
    const uri = await queueFileUri(file);
    if (!uri) return false;
    let text: string;
    try {
      text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    } catch {
      return false;
    }
    const entry = readQueueEntries(text, file, file.endsWith('.jsonl')).find((q) => q.id === e.itemId);
    if (!entry) return false;
    const error = typeof e.details?.error === 'string' ? e.details.error : e.message;
    this.add(file, { entry: entry.index, reason: error, field: 'dependsOn', at: Date.parse(e.timestamp) });
    return true;
  }

  /** A reload: the recent rejections, less those the files' later changes made stale. */
  private async loadRecent(): Promise<void> {
    const generation = ++this.generation;
    let entries: LogEntry[];
    try {
      entries = await this.connection.get<LogEntry[]>(`/logs?action=item_rejected,dependency_failed&limit=${RECENT_REJECTIONS}`);
    } catch {
      return; // the connection's own problem reporting says why; live rejections still arrive
    }
    if (generation !== this.generation) return;
    for (const e of [...entries].sort((a, b) => a.id - b.id)) {
      const file = typeof e.details?.file === 'string' ? e.details.file : undefined;
      if (!file) continue;
      if (e.action === 'item_rejected') this.add(file, toRejection(e, typeof e.details?.entry === 'number' ? e.details.entry : null));
      else if (isCycle(e)) await this.addCycle(file, e);
    }
    for (const file of [...this.rejections.keys()]) {
      const uri = await queueFileUri(file);
      if (!uri) {
        this.rejections.delete(file);
        continue;
      }
      await this.dropOlderThanFile(file, uri);
      await this.render(file);
    }
  }

  private async onFileChanged(uri: vscode.Uri): Promise<void> {
    const file = this.fileOf(uri);
    if (!file || !this.rejections.has(file)) return;
    await this.dropOlderThanFile(file, uri);
    await this.render(file);
  }

  private onFileDeleted(uri: vscode.Uri): void {
    const file = this.fileOf(uri);
    if (!file) return;
    this.rejections.delete(file);
    this.collection.delete(uri);
  }

  private async dropOlderThanFile(file: string, uri: vscode.Uri): Promise<void> {
    let mtime: number;
    try {
      mtime = (await vscode.workspace.fs.stat(uri)).mtime;
    } catch {
      this.rejections.delete(file);
      return;
    }
    const entries = this.rejections.get(file);
    if (!entries) return;
    for (const [entry, r] of entries) if (r.at < mtime) entries.delete(entry);
  }

  /** Sets the file's diagnostics from what is known now, ranges read from the file as it is. */
  private async render(file: string): Promise<void> {
    const uri = await queueFileUri(file);
    if (!uri) return;
    let text = '';
    try {
      text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    } catch {
      // Gone between the event and now: its delete event clears it.
    }
    // The window may have closed (the extension deactivated) while the file was read: its
    // collection is disposed then, and setting it would throw.
    if (this.isDisposed) return;
    // Looked up after the reads: a rejection, acceptance or deletion may have come meanwhile, and
    // whichever render ends last must show the state as it is then.
    const entries = this.rejections.get(file);
    if (!entries || entries.size === 0) {
      this.rejections.delete(file);
      this.collection.delete(uri);
      return;
    }
    const positions = lineStarts(text);
    const diagnostics = [...entries.values()].map((r) => {
      const range = entryRange(text, file.endsWith('.jsonl'), r.entry, r.field) ?? { start: 0, end: 0 };
      const d = new vscode.Diagnostic(toRange(positions, range), r.reason, vscode.DiagnosticSeverity.Error);
      d.source = DIAGNOSTIC_SOURCE;
      d.code = 'item_rejected';
      return d;
    });
    this.collection.set(uri, diagnostics);
  }

  /** The engine's name for a file of this workspace (relative path with `/`), if it has one. */
  private fileOf(uri: vscode.Uri): string | undefined {
    const folder = vscode.workspace.getWorkspaceFolder(uri);
    if (!folder) return undefined;
    const rel = uri.path.slice(folder.uri.path.replace(/\/$/, '').length + 1);
    return rel || undefined;
  }
}

/** A dependency_failed entry for a cycle among queue entries (the engine names its file). */
function isCycle(e: LogEntry): boolean {
  return e.action === 'dependency_failed' && Array.isArray(e.details?.cycle) && e.itemId !== null;
}

function toRejection(e: LogEntry, entry: number | null): Rejection {
  return {
    entry,
    reason: typeof e.details?.reason === 'string' ? e.details.reason : e.message,
    field: typeof e.details?.field === 'string' ? e.details.field : undefined,
    at: Date.parse(e.timestamp),
  };
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

function toPosition(starts: number[], offset: number): vscode.Position {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return new vscode.Position(lo, offset - starts[lo]);
}

function toRange(starts: number[], r: OffsetRange): vscode.Range {
  return new vscode.Range(toPosition(starts, r.start), toPosition(starts, r.end));
}

/** A queue file named as the engine names it (relative to its workspace folder), as a URI. */
export async function queueFileUri(relPath: string): Promise<vscode.Uri | undefined> {
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const uri = vscode.Uri.joinPath(folder.uri, ...relPath.split('/'));
    try {
      await vscode.workspace.fs.stat(uri);
      return uri;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}
