// What the /events log stream does besides feeding the views: a LogOutputChannel mirroring the
// engine's log, a notification when an item fails for good (item_failed, or dependency_failed) offering Retry and Show
// Output, and a warning when a queue file's new definition of a running or launched item was
// rejected (item_rejected naming a known item), offering to open the file.
import * as vscode from 'vscode';
import type { LogEntry } from '../shared/api';
import { Commands } from './constants';
import { Disposable, toDisposable } from './dispose';
import type { EngineConnection } from './engineConnection';
import { queueFileUri } from './diagnostics';
import { escapeControls } from '../shared/format';

/** Entries older than this are history replayed on reconnect, not news worth a notification. */
const NOTIFY_MAX_AGE_MS = 60_000;
const NOTIFY_BATCH_MS = 750;
/**
 * Log lines reach the output channel in batches: during a burst of launches the engine logs
 * hundreds of entries a second, and one channel call per entry was part of what kept the extension
 * host's event loop busy (docs/PERFORMANCE.md, scenario 4).
 */
const MIRROR_BATCH_MS = 200;

export class LiveLog extends Disposable {
  private failed: LogEntry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private lines: Array<{ level: LogEntry['level']; text: string }> = [];
  private mirrorTimer: NodeJS.Timeout | undefined;

  constructor(
    connection: EngineConnection,
    private readonly output: vscode.LogOutputChannel,
  ) {
    super();
    this._register(toDisposable(() => clearTimeout(this.timer)));
    this._register(toDisposable(() => clearTimeout(this.mirrorTimer)));
    this._register(
      connection.onDidReceiveEvent((e) => {
        if (e.name !== 'log') return;
        this.mirror(e.data);
        // An item failed for good: by its attempts, or without one by its dependency or a cycle.
        if (e.data.action === 'item_failed' || (e.data.action === 'dependency_failed' && e.data.itemId)) this.queueNotification(e.data);
        if (e.data.action === 'item_rejected' && e.data.itemId) this.warnRejectedDefinition(e.data);
      }),
    );
  }

  private mirror(e: LogEntry): void {
    // Escaped: a message with a newline would otherwise read as a second, forged entry.
    this.lines.push({ level: e.level, text: escapeControls(`${e.action}${e.itemId ? ` [${e.itemId}]` : ''}: ${e.message}`) });
    this.mirrorTimer ??= setTimeout(() => this.flush(), MIRROR_BATCH_MS);
  }

  /**
   * One channel call per entry, in the engine's order: the channel stamps each call with a time and
   * a level, so lines joined into one call lost both.
   */
  private flush(): void {
    clearTimeout(this.mirrorTimer);
    this.mirrorTimer = undefined;
    const lines = this.lines;
    this.lines = [];
    for (const { level, text } of lines) {
      switch (level) {
        case 'error':
          this.output.error(text);
          break;
        case 'warn':
          this.output.warn(text);
          break;
        case 'debug':
          this.output.debug(text);
          break;
        default:
          this.output.info(text);
      }
    }
  }

  /**
   * A new definition of an item that is running or has launched was rejected: the edit the user
   * just saved did nothing, which a log row alone would hide. (A rejection without an item id is a
   * broken entry; the Problems panel is its place.)
   */
  private warnRejectedDefinition(e: LogEntry): void {
    if (!isRecent(e)) return;
    const file = typeof e.details?.file === 'string' ? e.details.file : undefined;
    const reason = typeof e.details?.reason === 'string' ? e.details.reason : e.message;
    const actions = file ? ['Open File'] : [];
    void vscode.window.showWarningMessage(`Engine Monitor: the new definition of "${e.itemId}" was not applied: ${escapeControls(reason)}`, ...actions).then(async (choice) => {
      if (choice !== 'Open File' || !file) return;
      const uri = await queueFileUri(file);
      if (uri) await vscode.window.showTextDocument(uri);
      else void vscode.window.showWarningMessage(`Engine Monitor: ${file} is not in any folder of this workspace.`);
    });
  }

  private queueNotification(e: LogEntry): void {
    if (!isRecent(e)) return;
    this.failed.push(e);
    // A burst of failures becomes one notification, not a wall of toasts.
    this.timer ??= setTimeout(() => this.notify(), NOTIFY_BATCH_MS);
  }

  private notify(): void {
    this.timer = undefined;
    const batch = this.failed;
    this.failed = [];
    if (batch.length === 0) return;
    if (batch.length === 1) {
      const e = batch[0];
      // Show Output only when an attempt ran (a cancelled pending item failed without one).
      const ran = typeof e.details?.attempt === 'number' && e.details.attempt > 0;
      const actions = e.itemId ? (ran ? ['Retry', 'Show Output', 'Compare with Last Success', 'Show Logs'] : ['Retry', 'Show Logs']) : ['Show Logs'];
      void vscode.window.showErrorMessage(`Engine Monitor: ${escapeControls(e.message)}`, ...actions).then((choice) => {
        if (choice === 'Show Logs') void vscode.commands.executeCommand(Commands.showItemLogs, e.itemId);
        if (choice === 'Retry' && e.itemId) void vscode.commands.executeCommand(Commands.retryItem, e.itemId);
        if (choice === 'Show Output' && e.itemId) void vscode.commands.executeCommand(Commands.showOutput, { itemId: e.itemId, attempt: e.details?.attempt });
        if (choice === 'Compare with Last Success' && e.itemId) void vscode.commands.executeCommand(Commands.compareOutput, { itemId: e.itemId, attempt: e.details?.attempt });
      });
      return;
    }
    void vscode.window
      .showErrorMessage(`Engine Monitor: ${batch.length} items failed for good.`, 'Show Logs', 'Retry All Failed')
      .then((choice) => {
        if (choice === 'Show Logs') void vscode.commands.executeCommand(Commands.showItemLogs);
        if (choice === 'Retry All Failed') void vscode.commands.executeCommand(Commands.retryAllFailed);
      });
  }
}

/** Entries older than NOTIFY_MAX_AGE_MS are history replayed on reconnect, not news. */
function isRecent(e: LogEntry): boolean {
  return Date.now() - new Date(e.timestamp).getTime() <= NOTIFY_MAX_AGE_MS;
}
