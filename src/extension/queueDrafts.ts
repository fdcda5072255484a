// Queue files being typed in this window: drafts. With auto-save on (`files.autoSave`), the editor
// writes the buffer to disk every few hundred milliseconds, and an auto-closed quote or brace can
// make half an entry valid JSON that the engine would launch. So a queue file edited here is held:
// the engine passes over it (src/core/draftHolds.ts) until the user saves it on purpose (Ctrl+S,
// Save All: TextDocumentSaveReason.Manual) or closes its editor. Auto-saves never queue anything.
//
// - A document becomes a draft at its first edit (a change that leaves it dirty: a reload from
//   disk after a script wrote the file is not an edit), or at an auto-save that finds it unheld;
//   that save waits until the engine has the hold, so no auto-saved text is read before it.
// - It stops being a draft at an explicit save (the engine reads it now) or when its last tab
//   closes (read now too).
// - Holds are renewed every few seconds and lapse in the engine if not (the window died), and are
//   remembered in workspace state, so a reloaded window holds again the drafts it reopens before
//   the old window's holds lapse.
// - A file opened and never changed is not held: a script may still write to it.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { DRAFT_HOLDS_FILE, type ControlCommand } from '../shared/hostProtocol';
import { Disposable } from './dispose';
import { queueFileName } from './queueLens';

/** How often the holds are renewed, and how long each lasts in the engine without renewal. */
const RENEW_MS = 5000;
const HOLD_MS = 30_000;
/** An auto-save waits at most this long for the engine to take the hold. */
const SAVE_WAIT_MS = 3000;
/** workspaceState key: the drafts' paths, for the next window on this workspace (a reload). */
const STATE_KEY = 'engineMonitor.drafts';

/** Sends a control command to this window's engine; undefined when there is none to tell. */
export type DraftControl = (command: ControlCommand) => Promise<unknown> | undefined;

export class QueueDrafts extends Disposable {
  /** This window, as the engine knows its holds. */
  private readonly client = randomUUID();
  /** fsPath of each draft. */
  private readonly drafts = new Set<string>();
  /** Why each document is being saved, from onWillSave to onDidSave. */
  private readonly saveReasons = new Map<string, vscode.TextDocumentSaveReason>();
  /** The last holdDrafts sent (an auto-save waits for it). */
  private lastSent: Promise<unknown> = Promise.resolve();
  private readonly _onDidChange = this._register(new vscode.EventEmitter<void>());
  /** The set of drafts changed (the CodeLens says "draft"). */
  readonly onDidChange = this._onDidChange.event;

  constructor(
    private readonly send: DraftControl,
    onDidConnect: vscode.Event<boolean>,
    private readonly state: vscode.Memento,
    private readonly log: vscode.LogOutputChannel,
    /** The storage folder of the engine this window starts (undefined: no folder open). */
    private readonly storageDir: string | undefined,
  ) {
    super();
    // A reload: the drafts the previous window held and this one shows again (a restored tab's
    // document is not loaded until the tab is shown, so the tabs say what is open).
    for (const p of state.get<string[]>(STATE_KEY, [])) if (isInTab(vscode.Uri.file(p))) this.drafts.add(p);
    for (const d of vscode.workspace.textDocuments) if (d.isDirty && this.isQueueFile(d)) this.drafts.add(d.uri.fsPath);
    this._register(
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length > 0 && e.document.isDirty && this.isQueueFile(e.document)) this.add(e.document);
      }),
    );
    this._register(vscode.workspace.onWillSaveTextDocument((e) => this.willSave(e)));
    this._register(vscode.workspace.onDidSaveTextDocument((d) => this.didSave(d)));
    this._register(
      vscode.window.tabGroups.onDidChangeTabs((e) => {
        for (const tab of e.closed) {
          const uri = tab.input instanceof vscode.TabInputText ? tab.input.uri : undefined;
          if (uri && this.drafts.has(uri.fsPath) && !isInTab(uri)) this.letGo(uri.fsPath);
        }
      }),
    );
    // Tabs are the editor's own account; a document closed without one (an API's close) ends here.
    this._register(vscode.workspace.onDidCloseTextDocument((d) => this.drafts.has(d.uri.fsPath) && !isInTab(d.uri) && this.letGo(d.uri.fsPath)));
    // A new engine (started, restarted, attached to) learns the holds at once, not at the next renewal.
    this._register(onDidConnect((connected) => connected && this.sendHolds()));
    const renew = setInterval(() => this.drafts.size > 0 && this.sendHolds(), RENEW_MS);
    this._register({ dispose: () => clearInterval(renew) });
    if (this.drafts.size > 0) this.sendHolds();
  }

  /** Whether the engine passes over this document's file until it is saved on purpose or closed. */
  isDraft(uri: vscode.Uri): boolean {
    return this.drafts.has(uri.fsPath);
  }

  private isQueueFile(document: vscode.TextDocument): boolean {
    return document.uri.scheme === 'file' && queueFileName(document.uri) !== undefined;
  }

  private add(document: vscode.TextDocument): void {
    if (this.drafts.has(document.uri.fsPath)) return;
    this.drafts.add(document.uri.fsPath);
    this.changed();
  }

  private willSave(e: vscode.TextDocumentWillSaveEvent): void {
    if (!this.isQueueFile(e.document)) return;
    this.saveReasons.set(e.document.uri.fsPath, e.reason);
    if (e.reason === vscode.TextDocumentSaveReason.Manual) return;
    // An auto-save: the file must be held before it is written. Usually it is already (the first
    // keystroke held it); otherwise, or while that hold is on its way, the save waits for it.
    if (!this.drafts.has(e.document.uri.fsPath)) this.add(e.document);
    // Bounded: an engine that does not answer must not stop the editor from saving.
    e.waitUntil(Promise.race([this.lastSent, new Promise((r) => setTimeout(r, SAVE_WAIT_MS))]));
  }

  private didSave(document: vscode.TextDocument): void {
    const p = document.uri.fsPath;
    const reason = this.saveReasons.get(p);
    this.saveReasons.delete(p);
    if (reason !== vscode.TextDocumentSaveReason.Manual || !this.drafts.has(p)) return;
    this.letGo(p);
  }

  /** An explicit save or a closed editor: the draft is the user's word now; the engine reads it. */
  private letGo(p: string): void {
    if (!this.drafts.delete(p)) return;
    this.changed();
    void this.control({ command: 'ingestDraft', path: p });
  }

  private changed(): void {
    void this.state.update(STATE_KEY, [...this.drafts]);
    this.sendHolds();
    this._onDidChange.fire();
  }

  private sendHolds(): void {
    const command: ControlCommand = { command: 'holdDrafts', client: this.client, paths: [...this.drafts], forMs: HOLD_MS };
    const sent = this.send(command);
    if (sent) {
      this.lastSent = this.reported(command, sent);
    } else {
      this.lastSent = Promise.resolve();
      this.keepForNextEngine(command.paths);
    }
  }

  /**
   * No engine to tell (not started yet, or stopped): the holds go where an engine starting on this
   * storage folder reads them before its first scan, so starting it does not launch a draft.
   */
  private keepForNextEngine(paths: string[]): void {
    if (!this.storageDir) return;
    const file = path.join(this.storageDir, DRAFT_HOLDS_FILE);
    let saved: Record<string, string[]> = {};
    try {
      saved = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string[]>;
    } catch {
      // none yet
    }
    const before = JSON.stringify(saved[this.client] ?? []);
    if (before === JSON.stringify(paths)) return;
    if (paths.length > 0) saved[this.client] = paths;
    else delete saved[this.client];
    try {
      mkdirSync(this.storageDir, { recursive: true });
      writeFileSync(`${file}.${this.client}.tmp`, JSON.stringify(saved));
      renameSync(`${file}.${this.client}.tmp`, file);
    } catch (err) {
      this.log.warn(`Engine Monitor could not keep the drafts for the engine's start: ${(err as Error).message}`);
    }
  }

  private control(command: ControlCommand): Promise<unknown> {
    const sent = this.send(command);
    return sent ? this.reported(command, sent) : Promise.resolve();
  }

  /** A failure to tell the engine goes to the log: the next renewal tries again. */
  private reported(command: ControlCommand, sent: Promise<unknown>): Promise<unknown> {
    return sent.catch((err: unknown) => {
      this.log.warn(`Engine Monitor could not ${command.command === 'holdDrafts' ? 'hold the drafts' : 'read the saved queue file'}: ${(err as Error).message}`);
    });
  }
}

/** Whether a tab in any group still shows `uri`. */
function isInTab(uri: vscode.Uri): boolean {
  const key = uri.toString();
  return vscode.window.tabGroups.all.some((g) => g.tabs.some((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === key));
}
