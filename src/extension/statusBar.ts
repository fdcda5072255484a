// The status-bar health indicator: health, pending count and failed items, theme backgrounds for
// degraded and unhealthy, a tooltip with the checks and the endpoint URL; a click shows the
// dashboard.
//
// Failed items show as `$(error) 3 failed` whatever the engine's health ("Engine
// healthy · 0 pending" while 14 items had failed), but do not colour the background: the
// warning and error backgrounds keep meaning "the engine itself needs you" (degraded, unhealthy,
// unreachable). A failed item stays failed until retried, so a background for it would stay on
// for days and teach users to ignore the colour that matters when the engine stops. A remote
// engine (engineMonitor.remote.url) shows the same, plus why it is not connected (a refused token
// is an error whose click asks for the token).
import * as vscode from 'vscode';
import { Commands, STATUS_BAR_ID } from './constants';
import { Disposable } from './dispose';
import type { EngineClient } from './engineClient';
import type { EngineController } from './engineController';
import type { EngineModel } from './engineModel';
import type { QueueFolders } from './queue';
import { appendField, safeMarkdown } from './views/format';

export class EngineStatusBar extends Disposable {
  private readonly item: vscode.StatusBarItem;
  private hasQueueFolder = false;
  private readonly _onDidChangeText = this._register(new vscode.EventEmitter<string>());
  /** What the item says changed (or it was hidden: ''); the start-up trace logs each step. */
  readonly onDidChangeText = this._onDidChangeText.event;
  private shownText = '';

  constructor(
    private readonly model: EngineModel,
    private readonly controller: EngineController,
    queue: QueueFolders,
    private readonly client: EngineClient,
  ) {
    super();
    this.item = this._register(vscode.window.createStatusBarItem(STATUS_BAR_ID, vscode.StatusBarAlignment.Left, 10));
    this.item.name = 'Engine Monitor';
    this.item.command = Commands.showStatus;
    this._register(model.onDidChange(() => this.update()));
    this._register(controller.onDidChangeState(() => this.update()));
    this._register(client.onDidChangeProblem(() => this.update()));
    this._register(client.onDidChangeConnection(() => this.update()));
    this._register(client.onDidChangeEndpoint(() => this.update()));
    const setHasQueueFolder = (has: boolean) => {
      this.hasQueueFolder = has;
      this.update();
    };
    this._register(queue.onDidChange(setHasQueueFolder));
    void queue.exists().then(setHasQueueFolder);
    this.update();
  }

  /** What the item shows now (read by the extension-host tests). */
  get text(): string {
    return this.item.text;
  }

  private update(): void {
    const { model, controller, item } = this;
    const state = controller.state;
    if (state === 'off' && !this.hasQueueFolder) {
      item.hide();
      this.setShownText('');
      return;
    }
    const tooltip = safeMarkdown();
    tooltip.appendMarkdown('**Engine Monitor**\n\n');
    let background: vscode.ThemeColor | undefined;
    let command: string = Commands.showStatus;
    const remote = controller.remote;
    const health = model.available ? model.health : undefined;
    if (health) {
      const pending = model.stats?.pending ?? 0;
      const failed = model.stats?.failed ?? 0;
      const count = ` · ${pending} pending${failed > 0 ? ` · $(error) ${failed} failed` : ''}`;
      switch (health.status) {
        case 'healthy':
          item.text = `$(pulse) Engine healthy${count}`;
          break;
        case 'degraded':
          item.text = `$(warning) Engine ${health.checks.engine}${count}`;
          background = new vscode.ThemeColor('statusBarItem.warningBackground');
          break;
        default:
          item.text = `$(error) Engine unhealthy${count}`;
          background = new vscode.ThemeColor('statusBarItem.errorBackground');
      }
      appendField(tooltip, 'Status', health.status);
      appendField(tooltip, 'Database', health.checks.database);
      appendField(tooltip, 'Engine', health.checks.engine);
      if (model.stats) {
        const s = model.stats;
        appendField(tooltip, 'Items', `${s.total} (${s.launched} launched, ${s.pending} pending, ${s.failed} failed)`);
        if (s.failed > 0) {
          // A paragraph of its own: the Endpoint line that follows must not run on from its full stop.
          tooltip.appendMarkdown(
            `\n\n$(error) **${s.failed} failed item${s.failed === 1 ? '' : 's'}**: click to open the dashboard and see why; the Items view's Failed group offers Retry, and Remove Item clears one you no longer need.\n\n`,
          );
        }
      }
      appendField(tooltip, 'Endpoint', model.baseUrl);
      if (state === 'attached') tooltip.appendMarkdown('\n\nShared with another VS Code window that runs the engine.');
      if (remote) tooltip.appendMarkdown('\n\nA remote engine (`engineMonitor.remote.url`): monitored here, controlled where it runs.');
    } else if (remote) {
      const problem = this.client.problem;
      if (problem?.kind === 'unauthorized' || problem?.kind === 'forbidden') {
        item.text = problem.kind === 'unauthorized' ? '$(lock) Engine token rejected' : '$(lock) Engine forbidden';
        background = new vscode.ThemeColor('statusBarItem.errorBackground');
        tooltip.appendText(`The remote engine at ${remote} refused this window: ${problem.message}.`);
        tooltip.appendMarkdown('\n\nClick to set the token (Engine Monitor: Set Remote Engine Token…).');
        if (problem.kind === 'unauthorized') command = Commands.setRemoteToken;
      } else if (problem) {
        item.text = '$(debug-disconnect) Engine unreachable';
        background = new vscode.ThemeColor('statusBarItem.warningBackground');
        tooltip.appendText(`The remote engine at ${remote} is ${problem.message}; reconnecting.`);
      } else {
        item.text = '$(loading~spin) Engine connecting…';
        tooltip.appendText(`Connecting to the remote engine at ${remote}.`);
      }
    } else if (state === 'failed') {
      item.text = '$(error) Engine failed';
      background = new vscode.ThemeColor('statusBarItem.errorBackground');
      tooltip.appendText(controller.lastError ?? 'The engine could not start.');
    } else if (state === 'off' && controller.decided) {
      item.text = '$(circle-slash) Engine off';
      tooltip.appendText('The engine is not running. Run "Engine Monitor: Start Engine" to start it.');
    } else if (state !== 'starting' && this.client.problem && !this.client.connected) {
      // An engine we know of (ours or another window's) refused or dropped the stream: it was
      // reachable or should be, so this is a warning, not a start-up phase.
      item.text = '$(debug-disconnect) Engine unreachable';
      background = new vscode.ThemeColor('statusBarItem.warningBackground');
      tooltip.appendText('The engine is not answering; reconnecting.');
      appendEndpoint(tooltip, model.baseUrl);
    } else {
      // Starting, or an engine that runs (ours or attached) whose first answers are not in yet, or
      // activation has not decided yet whether this window starts or attaches: all of them end in
      // data within moments, so none of them may read "off" or "unreachable" meanwhile.
      const starting = state === 'starting';
      item.text = starting ? '$(loading~spin) Engine starting…' : '$(loading~spin) Engine connecting…';
      tooltip.appendText(starting ? 'The engine is starting.' : 'Connecting to the engine.');
      appendEndpoint(tooltip, model.baseUrl);
    }
    if (command === Commands.showStatus) tooltip.appendMarkdown('\n\n---\n\nClick to show the engine status.');
    item.tooltip = tooltip;
    item.command = command;
    item.backgroundColor = background;
    item.accessibilityInformation = { label: item.text.replace(/\$\([^)]*\)\s*/g, ''), role: 'button' };
    item.show();
    this.setShownText(item.text);
  }

  private setShownText(text: string): void {
    if (text === this.shownText) return;
    this.shownText = text;
    this._onDidChangeText.fire(text);
  }
}

function appendEndpoint(tooltip: vscode.MarkdownString, baseUrl: string | undefined): void {
  if (!baseUrl) return;
  tooltip.appendMarkdown('\n\n');
  appendField(tooltip, 'Endpoint', baseUrl);
}
