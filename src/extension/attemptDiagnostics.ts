// Problems an item's problem matcher found, in the Problems panel: for each item, the
// problems of its latest failed attempt, as diagnostics whose source is the item's name, at the
// file, line and column the engine stored (GET /items/{id}). Driven by the live log:
// - launch_failed / launch_interrupted: the engine records the attempt's problems before it logs
//   its outcome, and the entry's details.problems says how many; the item is read and its
//   diagnostics replaced (an item without a matcher has no details.problems and is not read);
// - launch_succeeded: the item's diagnostics go (a later attempt succeeded);
// - on connecting (a reload, another engine): the newest attempt outcomes are read from /logs and
//   the items whose newest outcome is a failure with problems are read; items the engine no
//   longer knows (404) are dropped.
// Remote engines print their own paths: a file that does not exist here is looked up in the local
// workspace folders by the longest tail of its path that exists there (two segments at least, or
// the file name under a folder of the same name), and kept as it is otherwise.
import * as vscode from 'vscode';
import type { AttemptProblem, ItemDetail, LogEntry } from '../shared/api';
import { Disposable, toDisposable } from './dispose';
import type { EngineConnection } from './engineConnection';

/** How many of the newest attempt outcomes a reload reads back. */
const RECENT_OUTCOMES = 1000;
/** At most this many items are read on a reload (the newest failures first). */
const RELOAD_ITEMS = 100;

const FAILED = new Set(['launch_failed', 'launch_interrupted']);
const OUTCOMES = ['launch_failed', 'launch_interrupted', 'launch_succeeded'];

interface Shown {
  name: string;
  attempt: number;
  diagnostics: [vscode.Uri, vscode.Diagnostic][];
}

export class AttemptDiagnostics extends Disposable {
  readonly collection: vscode.DiagnosticCollection;
  /** Item id → what is shown for it. */
  private readonly shown = new Map<string, Shown>();
  /** Item id → the number of its newest read, so an older answer arriving late is dropped. */
  private readonly reads = new Map<string, number>();
  private readCounter = 0;

  constructor(private readonly connection: EngineConnection) {
    super();
    this.collection = this._register(vscode.languages.createDiagnosticCollection('engine-monitor-problems'));
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
    this._register(toDisposable(() => this.shown.clear()));
    if (connection.connected) void this.loadRecent();
  }

  /** The item ids with problems shown now (for the tests). */
  items(): string[] {
    return [...this.shown.keys()];
  }

  private onLog(e: LogEntry): void {
    const id = e.itemId;
    if (!id) return;
    if (e.action === 'launch_succeeded') {
      this.reads.set(id, ++this.readCounter); // a read under way must not bring them back
      this.clear(id);
    } else if (FAILED.has(e.action) && (typeof e.details?.problems === 'number' || this.shown.has(id))) {
      void this.read(id);
    }
  }

  private async loadRecent(): Promise<void> {
    let entries: LogEntry[];
    try {
      entries = await this.connection.get<LogEntry[]>(`/logs?action=${OUTCOMES.join(',')}&limit=${RECENT_OUTCOMES}`);
    } catch {
      return; // the connection reports its own problem; live outcomes still arrive
    }
    const newest = new Map<string, LogEntry>();
    for (const e of entries) if (e.itemId && !newest.has(e.itemId)) newest.set(e.itemId, e); // newest first
    const toRead: string[] = [];
    for (const [id, e] of newest) {
      if (e.action === 'launch_succeeded') this.clear(id);
      else if (typeof e.details?.problems === 'number' && e.details.problems > 0 && toRead.length < RELOAD_ITEMS) toRead.push(id);
    }
    // Shown from before (another engine, a reconnect) but not among the recent outcomes: read again.
    for (const id of this.shown.keys()) if (!newest.has(id) && toRead.length < RELOAD_ITEMS) toRead.push(id);
    for (const id of toRead) await this.read(id);
  }

  /** Shows the problems of the item's latest failed attempt (none: its diagnostics go). */
  private async read(id: string): Promise<void> {
    const seq = ++this.readCounter;
    this.reads.set(id, seq);
    let detail: ItemDetail | undefined;
    try {
      detail = await this.connection.get<ItemDetail>(`/items/${encodeURIComponent(id)}`);
    } catch (err) {
      // An item the engine does not know (any more) has nothing to show; other errors keep what is shown.
      if (/HTTP 404\b/.test((err as Error).message)) detail = undefined;
      else return;
    }
    if (this.reads.get(id) !== seq) return;
    const latest = detail ? [...detail.attempts].reverse().find((a) => a.outcome !== 'running') : undefined;
    if (!detail || !latest || latest.outcome !== 'failed' || latest.problems.length === 0) {
      this.clear(id);
      return;
    }
    const diagnostics: [vscode.Uri, vscode.Diagnostic][] = [];
    for (const p of latest.problems) diagnostics.push([await localUri(p.file), toDiagnostic(p, detail.item.name)]);
    if (this.reads.get(id) !== seq) return;
    const before = this.shown.get(id);
    this.shown.set(id, { name: detail.item.name, attempt: latest.attempt, diagnostics });
    this.render([...(before?.diagnostics ?? []), ...diagnostics].map(([uri]) => uri));
  }

  private clear(id: string): void {
    const before = this.shown.get(id);
    if (!before) return;
    this.shown.delete(id);
    this.render(before.diagnostics.map(([uri]) => uri));
  }

  /** Sets each file's diagnostics: every shown item's problems in it. */
  private render(uris: vscode.Uri[]): void {
    const byFile = new Map<string, { uri: vscode.Uri; diagnostics: vscode.Diagnostic[] }>();
    for (const uri of uris) byFile.set(uri.toString(), { uri, diagnostics: [] });
    for (const s of this.shown.values()) {
      for (const [uri, d] of s.diagnostics) byFile.get(uri.toString())?.diagnostics.push(d);
    }
    for (const { uri, diagnostics } of byFile.values()) {
      if (diagnostics.length === 0) this.collection.delete(uri);
      else this.collection.set(uri, diagnostics);
    }
  }
}

function toDiagnostic(p: AttemptProblem, itemName: string): vscode.Diagnostic {
  const line = Math.max(0, p.line - 1);
  const column = p.column === null ? 0 : Math.max(0, p.column - 1);
  const severity =
    p.severity === 'warning' ? vscode.DiagnosticSeverity.Warning : p.severity === 'info' ? vscode.DiagnosticSeverity.Information : vscode.DiagnosticSeverity.Error;
  const d = new vscode.Diagnostic(new vscode.Range(line, column, line, column), p.message, severity);
  d.source = itemName;
  if (p.code !== null) d.code = p.code;
  return d;
}

/**
 * The engine's absolute path as a file here: itself when it exists, else the longest tail of it
 * that exists under a local workspace folder (an engine on another machine, its checkout
 * elsewhere), else itself.
 */
async function localUri(file: string): Promise<vscode.Uri> {
  const direct = vscode.Uri.file(file);
  if (await exists(direct)) return direct;
  const segments = file.split(/[\\/]+/).filter((s) => s !== '');
  for (let from = 1; from < segments.length; from++) {
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      // A lone file name only under a folder of the same name as the engine's (`…/ws/a.ts` → `ws`):
      // a bare `index.ts` could be any of many.
      if (from === segments.length - 1 && segments[from - 1] !== folder.uri.path.split('/').filter(Boolean).pop()) continue;
      const candidate = vscode.Uri.joinPath(folder.uri, ...segments.slice(from));
      if (await exists(candidate)) return candidate;
    }
  }
  return direct;
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}
