// CodeLens above every entry of a queue file: the item's state, attempts and
// last finish, and the Items view's own commands (Show Output, Retry, Cancel, Hold/Release, Open
// in Terminal) with the item's id.
//
// Cheap by construction: a document's entries (ranges and ids) are read once per document version,
// and the items of a file come from one paged `GET /items?source=<file>` kept in memory, read again
// (throttled) only when /events says one of its items changed. Providing lenses reads neither the
// disk nor the engine.
//
// Which files: `.json`/`.jsonl` files directly in a workspace folder's queue directory
// (`engineMonitor.queue.directory`). A file is named as the engine names it: its path relative to
// its workspace folder. With a remote engine the same rule maps its items to local files: an item
// whose `source` is `.engine/queue/jobs.json` belongs to `<local folder>/.engine/queue/jobs.json`,
// so lenses show when the remote engine reads a workspace laid out like the local one.
import * as vscode from 'vscode';
import type { ItemSummary, ScheduleSummary } from '../shared/api';
import type { QueueDiagnostics } from './diagnostics';
import { Disposable } from './dispose';
import type { EngineConnection } from './engineConnection';
import { readConfig } from './config';
import type { QueueDrafts } from './queueDrafts';
import { lensesFor, readQueueEntries, type QueueEntry } from './queueLensModel';
import { Throttled } from './throttle';

/** One page of /items; a file of 10,000 entries is read in ten. */
const PAGE = 1000;
/** Reads of changed files at most this often: a busy engine's events become one read per interval. */
const RELOAD_INTERVAL_MS = 500;
/** "3 min ago" ages: the lenses are redrawn this often while a queue file is visible. */
const AGE_REFRESH_MS = 30_000;

interface ParsedDocument {
  version: number;
  entries: QueueEntry[];
  /** The lenses last provided, and what they were made from: a redraw with nothing changed reuses them. */
  lenses?: vscode.CodeLens[];
  madeFrom?: string;
}

interface FileItems {
  byId: Map<string, ItemSummary>;
  /** Read again at the next reload. */
  stale: boolean;
  loading?: Promise<void>;
}

export class QueueLenses extends Disposable implements vscode.CodeLensProvider {
  private readonly _onDidChangeCodeLenses = this._register(new vscode.EventEmitter<void>());
  readonly onDidChangeCodeLenses = this._onDidChangeCodeLenses.event;
  private readonly parsed = new Map<string, ParsedDocument>();
  /** Engine file name → derived ids by entry index (see readQueueEntries). */
  private readonly derivedIds = new Map<string, Map<number, string>>();
  /** Engine file name → its items. Only files someone opened are here. */
  private readonly files = new Map<string, FileItems>();
  private schedules = new Map<string, ScheduleSummary>();
  private readonly reloader: Throttled;
  /** Bumped whenever items, rejections, trust or the connection change: part of each document's lens cache key. */
  private generation = 0;

  constructor(
    private readonly connection: EngineConnection,
    private readonly diagnostics: QueueDiagnostics,
    /** Which open queue files are drafts the engine does not read yet. */
    private readonly drafts?: QueueDrafts,
  ) {
    super();
    if (drafts) this._register(drafts.onDidChange(() => this.changed()));
    this.reloader = this._register(new Throttled(() => this.reloadStale(), RELOAD_INTERVAL_MS));
    this._register(
      vscode.languages.registerCodeLensProvider(
        [
          { scheme: 'file', pattern: '**/*.json' },
          { scheme: 'file', pattern: '**/*.jsonl' },
        ],
        this,
      ),
    );
    this._register(
      connection.onDidReceiveEvent((e) => {
        if (e.name !== 'log') return;
        const file = typeof e.data.details?.file === 'string' ? e.data.details.file : undefined;
        const itemId = e.data.itemId;
        // A template fired (or its occurrence ended): its next run and last outcome changed.
        const scheduled = e.data.action === 'schedule_fired' || e.data.action === 'schedule_skipped' || (itemId !== null && itemId.includes('@'));
        let changed = false;
        for (const [name, f] of this.files) {
          if (name === file || scheduled || (itemId !== null && f.byId.has(itemId))) {
            f.stale = true;
            changed = true;
          }
        }
        if (changed) this.reloader.trigger();
      }),
    );
    this._register(
      connection.onDidChangeConnection(() => {
        for (const f of this.files.values()) {
          f.byId.clear();
          f.stale = true;
        }
        this.reloader.trigger(true);
        this.changed();
      }),
    );
    this._register(vscode.languages.onDidChangeDiagnostics((e) => {
      if (e.uris.some((u) => this.parsed.has(u.toString()))) this.changed();
    }));
    this._register(vscode.workspace.onDidGrantWorkspaceTrust(() => this._onDidChangeCodeLenses.fire()));
    this._register(vscode.workspace.onDidCloseTextDocument((d) => this.forget(d)));
    this._register(vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('engineMonitor.queue.directory')) this.changed();
    }));
    const ageTimer = setInterval(() => {
      if (vscode.window.visibleTextEditors.some((ed) => this.parsed.has(ed.document.uri.toString()))) this._onDidChangeCodeLenses.fire();
    }, AGE_REFRESH_MS);
    this._register({ dispose: () => clearInterval(ageTimer) });
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const file = queueFileName(document.uri);
    if (!file) return [];
    const key = document.uri.toString();
    let parsed = this.parsed.get(key);
    if (!parsed || parsed.version !== document.version) {
      let derived = this.derivedIds.get(file);
      if (!derived) this.derivedIds.set(file, (derived = new Map<number, string>()));
      parsed = { version: document.version, entries: readQueueEntries(document.getText(), file, file.endsWith('.jsonl'), derived) };
      this.parsed.set(key, parsed);
    }
    const items = this.itemsOf(file);
    const now = Date.now();
    // "3 min ago" changes by the minute at most (seconds only in the first minute, redrawn by events anyway).
    const draft = this.drafts?.isDraft(document.uri) ?? false;
    const madeFrom = `${this.generation}|${vscode.workspace.isTrusted}|${this.connection.connected}|${draft}|${Math.floor(now / 60_000)}`;
    if (parsed.lenses && parsed.madeFrom === madeFrom) return parsed.lenses;
    const specs = lensesFor(parsed.entries, {
      item: (id) => items.get(id),
      // A file the engine could not read at all (not JSON) has one reason for every entry.
      rejection: (index) => this.diagnostics.rejectionReason(file, index) ?? this.diagnostics.rejectionReason(file, null),
      schedule: (id) => this.schedules.get(id),
      trusted: vscode.workspace.isTrusted,
      connected: this.connection.connected,
      now,
      draft,
    });
    // Entries are in document order, so positions are found walking forward once.
    const positions = new ForwardPositions(document);
    let range: vscode.Range | undefined;
    let rangeStart = -1;
    parsed.lenses = specs.map((s) => {
      // The lenses of one entry share its range.
      if (s.start !== rangeStart) {
        const at = positions.at(s.start);
        range = new vscode.Range(at, at);
        rangeStart = s.start;
      }
      return new vscode.CodeLens(range!, s.command ? { title: s.title, tooltip: s.tooltip, command: s.command.id, arguments: s.command.args } : { title: s.title, tooltip: s.tooltip, command: '' });
    });
    parsed.madeFrom = madeFrom;
    return parsed.lenses;
  }

  private changed(): void {
    this.generation++;
    this._onDidChangeCodeLenses.fire();
  }

  /** The known items of a file; the first ask starts their read and the lenses redraw when it ends. */
  private itemsOf(file: string): Map<string, ItemSummary> {
    let f = this.files.get(file);
    if (!f) {
      f = { byId: new Map(), stale: true };
      this.files.set(file, f);
      this.reloader.trigger(true);
    }
    return f.byId;
  }

  private forget(document: vscode.TextDocument): void {
    this.parsed.delete(document.uri.toString());
    const file = queueFileName(document.uri);
    const stillOpen = file && vscode.workspace.textDocuments.some((d) => d !== document && queueFileName(d.uri) === file);
    if (file && !stillOpen) {
      this.files.delete(file);
      this.derivedIds.delete(file);
    }
  }

  private async reloadStale(): Promise<void> {
    if (!this.connection.connected) return;
    const reads = [...this.files].filter(([, f]) => f.stale).map(([name, f]) => this.load(name, f));
    if (reads.length === 0) return;
    await Promise.all([...reads, this.loadSchedules()]);
    this.changed();
  }

  /** The schedule templates (GET /schedules), whose entries are no items: their lenses tell the next run. */
  private async loadSchedules(): Promise<void> {
    try {
      const schedules = await this.connection.get<ScheduleSummary[]>('/schedules');
      this.schedules = new Map(schedules.map((s) => [s.id, s]));
    } catch {
      // An engine without schedules, or a lost connection: the templates' lenses wait for the next read.
    }
  }

  private async load(name: string, f: FileItems): Promise<void> {
    f.stale = false;
    const byId = new Map<string, ItemSummary>();
    try {
      for (let offset = 0; ; offset += PAGE) {
        const page = await this.connection.get<{ items: ItemSummary[]; total: number }>(`/items?source=${encodeURIComponent(name)}&limit=${PAGE}&offset=${offset}`);
        for (const item of page.items) byId.set(item.id, item);
        if (page.items.length < PAGE || offset + PAGE >= page.total) break;
      }
    } catch {
      // An engine before `source=` (400) or a lost connection: the lenses say "not yet scanned"
      // rather than something wrong; the connection's own reporting says why.
      return;
    }
    f.byId.clear();
    for (const [id, item] of byId) f.byId.set(id, item);
  }

  /** For the tests and the bench: lenses as they would be provided now, once items are read. */
  async settled(): Promise<void> {
    await this.reloadStale();
  }
}

/** A queue file's name as the engine gives it (relative to its workspace folder), or undefined for any other file. */
export function queueFileName(uri: vscode.Uri): string | undefined {
  if (!/\.jsonl?$/.test(uri.path)) return undefined;
  const folder = vscode.workspace.getWorkspaceFolder(uri);
  if (!folder) return undefined;
  const rel = uri.path.slice(folder.uri.path.replace(/\/$/, '').length + 1);
  const dir = readConfig().queue.directory.replace(/\\/g, '/').replace(/^\.\//, '').replace(/\/+$/, '');
  const slash = rel.lastIndexOf('/');
  const relDir = slash < 0 ? '' : rel.slice(0, slash);
  return relDir === dir || (dir === '.' && relDir === '') ? rel : undefined;
}

/** Offsets to positions for offsets that only grow: one walk through the text instead of a search per lens. */
class ForwardPositions {
  private line = 0;
  private lineStart = 0;
  private readonly text: string;
  constructor(document: vscode.TextDocument) {
    this.text = document.getText();
  }
  at(offset: number): vscode.Position {
    if (offset < this.lineStart) {
      this.line = 0;
      this.lineStart = 0;
    }
    for (let nl = this.text.indexOf('\n', this.lineStart); nl >= 0 && nl < offset; nl = this.text.indexOf('\n', this.lineStart)) {
      this.line++;
      this.lineStart = nl + 1;
    }
    return new vscode.Position(this.line, offset - this.lineStart);
  }
}
