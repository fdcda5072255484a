// The composition root: builds every part once, in dependency order, and disposes them in
// reverse. activate() only creates this; deactivate() awaits shutdown().
import * as vscode from 'vscode';
import path from 'node:path';
import { compareCommands, registerOutputDocuments } from './commands/compareCommands';
import { engineCommands } from './commands/engineCommands';
import { itemCommands, OpenItemPick } from './commands/itemCommands';
import { logCommands } from './commands/logCommands';
import { terminalCommands } from './commands/openInTerminal';
import { queueCommands } from './commands/queueCommands';
import { serviceCommands } from './commands/serviceCommands';
import { registerCommands } from './commands/register';
import { cliCommands } from './commands/cliCommands';
import { removeCommands } from './commands/removeCommands';
import { itemsViewCommands } from './commands/itemsViewCommands';
import { secretCommands } from './commands/secretCommands';
import { ContextKeys } from './constants';
import { registerDashboard } from './dashboard/dashboard';
import { Disposable } from './dispose';
import { EngineClient } from './engineClient';
import { EngineController } from './engineController';
import { HostProcess } from './hostProcess';
import { EngineModel } from './engineModel';
import { QueueDiagnostics } from './diagnostics';
import { AttemptDiagnostics } from './attemptDiagnostics';
import { LiveLog } from './liveLog';
import { LogsModel } from './logsModel';
import { OutputTerminals } from './output/outputTerminal';
import { QueueFolders } from './queue';
import { QueueDrafts } from './queueDrafts';
import { QueueLenses } from './queueLens';
import { EngineStatusBar } from './statusBar';
import { TerminalEnvironment } from './terminalEnv';
import { EngineViews } from './views/treeViews';
import { registerItemTasks, type ItemTaskProvider } from './tasks/itemTask';

export class Container extends Disposable {
  readonly output: vscode.LogOutputChannel;
  readonly client: EngineClient;
  readonly queue: QueueFolders;
  readonly host: HostProcess;
  readonly model: EngineModel;
  readonly logs: LogsModel;
  readonly controller: EngineController;
  readonly views: EngineViews;
  readonly statusBar: EngineStatusBar;
  readonly outputTerminals: OutputTerminals;
  readonly diagnostics: QueueDiagnostics;
  readonly lenses: QueueLenses;
  readonly attemptDiagnostics: AttemptDiagnostics;
  readonly terminalEnv: TerminalEnvironment;
  readonly openItemPick = new OpenItemPick();
  /** The `engine-monitor` task type's provider (its terminals, for the tests). */
  readonly tasks: ItemTaskProvider;
  /** How long activate() took (it does not wait for the engine), for the output and the tests. */
  activationMs = 0;

  constructor(readonly context: vscode.ExtensionContext) {
    super();
    this.output = this._register(vscode.window.createOutputChannel('Engine Monitor', { log: true }));
    this.client = this._register(new EngineClient());
    this.queue = this._register(new QueueFolders());
    this.host = this._register(new HostProcess(this.output));
    this.model = this._register(new EngineModel(this.client));
    this.logs = this._register(new LogsModel(this.client, context.workspaceState));
    // The views' first reads go out with the stream's request, not a round trip after it; one
    // answered before the stream started is read again once it runs (EngineClient.setFirstReads).
    this.client.setFirstReads(() => this.model.firstReads());
    this._register(this.client.onDidServeEarlyRead(() => this.model.refresh()));
    this.controller = this._register(
      new EngineController(context, this.host, this.client, this.queue, this.output, () => this.model.health?.checks.engine),
    );
    this.views = this._register(new EngineViews(this.model, this.logs));
    this.statusBar = this._register(new EngineStatusBar(this.model, this.controller, this.queue, this.client));
    this.outputTerminals = this._register(new OutputTerminals(this.client));
    this._register(new LiveLog(this.client, this.output));
    this.diagnostics = this._register(new QueueDiagnostics(this.client));
    const drafts = this._register(new QueueDrafts((command) => (this.controller.isOwner ? this.controller.control(command) : undefined), this.client.onDidChangeConnection, context.workspaceState, this.output, context.storageUri?.fsPath));
    this.lenses = this._register(new QueueLenses(this.client, this.diagnostics, drafts));
    this.attemptDiagnostics = this._register(new AttemptDiagnostics(this.client));
    const tasks = registerItemTasks({ client: this.client, controller: this.controller });
    this.tasks = tasks.provider;
    this._register(tasks.disposable);
    this._register(new TerminalEnvironment(context.environmentVariableCollection, this.client));
    this.terminalEnv = this._register(
      new TerminalEnvironment(context.environmentVariableCollection, this.client, {
        binDir: path.join(context.globalStorageUri.fsPath, 'bin'),
        cliPath: vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath,
        log: (m) => this.output.warn(m),
      }),
    );
    this._register(this.client.onDidChangeConnection((c) => void vscode.commands.executeCommand('setContext', ContextKeys.connected, c)));
    this._register(this.client.onDidChangeProblem((p) => void vscode.commands.executeCommand('setContext', ContextKeys.connectionProblem, p?.kind ?? '')));
    const updateLoaded = () => this.updateLoaded();
    this._register(this.model.onDidChange(updateLoaded));
    this._register(this.logs.onDidChange(updateLoaded));
    this._register(this.controller.onDidChangeState(updateLoaded));
    this._register(this.client.onDidChangeConnection(updateLoaded));
    this.registerCommands(context);
    this._register(registerDashboard(context, this.client, this.controller));
  }

  /** The item quick pick open now (Find Item, or the pick of Cancel/Hold/Release): the tests type into it. */
  get itemPick(): vscode.QuickPick<vscode.QuickPickItem> | undefined {
    return this.openItemPick.current;
  }

  /** Each feature's commands, given only the services they use. */
  private registerCommands(context: vscode.ExtensionContext): void {
    const { controller, client, model, logs, queue, views, outputTerminals, openItemPick: openPick } = this;
    const items = { client, controller, model, outputTerminals, views, openPick };
    const handlers = {
      ...engineCommands({ context, controller, client, model, logs }),
      ...itemCommands(items),
      ...terminalCommands(items),
      ...logCommands({ logs }),
      ...queueCommands({ queue, controller }),
      ...secretCommands({ secrets: context.secrets, controller }),
      ...serviceCommands({ client, controller, model }),
      ...compareCommands(items),
      ...cliCommands({ launcher: this.terminalEnv.launcher }),
      ...removeCommands(items),
      ...itemsViewCommands({ model }),
    };
    for (const d of registerCommands(handlers, this.output)) this._register(d);
    this._register(registerOutputDocuments(client));
  }

  private loaded: boolean | undefined;

  /**
   * The `engineMonitor.loaded` context key: whether the views may show what they hold (data, or an
   * empty state such as "No items yet" or "The engine is not running"). Connected: once every
   * visible view has the engine's first answer. Not connected: once autoStart() has decided and
   * nothing is starting or connecting. Until then the views' welcome says "Connecting to the engine…".
   */
  private updateLoaded(): void {
    const loaded = this.isLoaded();
    if (loaded === this.loaded || (loaded && this.loadedPending)) return;
    if (!loaded) {
      this.loaded = false;
      void vscode.commands.executeCommand('setContext', ContextKeys.loaded, false);
      return;
    }
    // The rows first, then the key: set together, the window can apply the key before it has
    // fetched the rows and show the empty state ("No items yet") in between.
    this.loadedPending = true;
    void this.views
      .rowsShown()
      .then((notAsked) => {
        // Said in the output so that an empty state seen before data can be told apart from a
        // window that was simply slow to ask.
        if (notAsked.length) this.output.info(`Views shown before the window asked for their rows: ${notAsked.join(', ')}`);
        return new Promise((r) => setTimeout(r, 0));
      })
      .then(() => {
        this.loadedPending = false;
        if (this.isDisposed || !this.isLoaded() || this.loaded === true) return;
        this.loaded = true;
        void vscode.commands.executeCommand('setContext', ContextKeys.loaded, true);
      });
  }

  private loadedPending = false;

  private isLoaded(): boolean {
    const state = this.controller.state;
    return this.client.connected
      ? this.model.loaded && this.logs.loaded
      : this.controller.decided && (state === 'off' || state === 'failed' || state === 'remote');
  }

  /** Second phase: start the engine if this workspace wants one. Not awaited by activate(). */
  start(): Promise<void> {
    return this.controller.autoStart();
  }

  async shutdown(): Promise<void> {
    await this.controller.shutdown();
    this.dispose();
  }
}
