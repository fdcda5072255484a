// EngineController: the policy around the engine host process. When to start it (auto-start only
// with a queue folder and engine.autoStart), restarts after a crash (with backoff, telling the
// user once), restarts when a setting the host reads changes, Workspace Trust, attaching to
// another window's engine when the storage folder is locked, remote mode (monitoring a headless
// engine at engineMonitor.remote.url instead of forking one), and the control commands.
import * as fs from 'node:fs/promises';
import * as vscode from 'vscode';
import type { EngineState } from '../shared/api';
import type { ControlCommand, EngineLock } from '../shared/hostProtocol';
import { hostArgsFor, onDidChangeConfig, parseRemoteUrl, readConfig } from './config';
import { ContextKeys, REMOTE_TOKEN_SECRET } from './constants';
import { Disposable, toDisposable } from './dispose';
import type { EngineClient } from './engineClient';
import type { HostExit, HostProcess, HostStartResult } from './hostProcess';
import type { QueueFolders } from './queue';

/**
 * off: no engine; starting; running: our own host; attached: another window's engine; remote: a
 * headless engine at engineMonitor.remote.url; failed: gave up (or a bad remote URL).
 */
export type HostState = 'off' | 'starting' | 'running' | 'attached' | 'remote' | 'failed';

/**
 * A control command (start, stop, retry…) that this window cannot send: control travels over the
 * engine host's IPC channel, and a remote engine's HTTP API is read-only. The message says where
 * to control it; commands show it as information, not as a failure.
 */
export class ControlUnavailableError extends Error {
  override readonly name = 'ControlUnavailableError';
}

const CRASH_BACKOFF_MS = [1000, 2000, 4000, 8000, 16000, 30000];
/** A host that ran this long before dying is considered healthy again: the backoff restarts. */
const STABLE_UPTIME_MS = 60_000;
const ATTACH_RETRY_MS = 3000;

export class EngineController extends Disposable {
  private _state: HostState = 'off';
  private _lastError: string | undefined;
  private attachedTo: EngineLock | undefined;
  /** The remote engine's base URL while in remote mode. */
  private remoteUrl: string | undefined;
  /** engineMonitor.remote.url is set but is not a usable URL (state failed). */
  private remoteInvalid = false;
  private argsKey: string | undefined;
  private crashes = 0;
  private toldAboutCrash = false;
  private toldAboutPort = new Set<number>();
  private restartTimer: NodeJS.Timeout | undefined;
  private attachTimer: NodeJS.Timeout | undefined;
  /** Serialises start/stop/restart so two commands never fork two hosts. */
  private queue: Promise<unknown> = Promise.resolve();
  private shuttingDown = false;

  private readonly _onDidChangeState = this._register(new vscode.EventEmitter<HostState>());
  readonly onDidChangeState = this._onDidChangeState.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly host: HostProcess,
    private readonly client: EngineClient,
    private readonly queueFolders: QueueFolders,
    private readonly output: vscode.LogOutputChannel,
    /** The engine's last known checks.engine (from the model), to keep "stopped" across restarts. */
    private readonly engineState: () => EngineState | undefined,
  ) {
    super();
    this._register(host.onDidExit((e) => this.onHostExit(e)));
    this._register(onDidChangeConfig(() => void this.onConfigChanged()));
    this._register(vscode.workspace.onDidChangeWorkspaceFolders(() => void this.onConfigChanged()));
    this._register(vscode.workspace.onDidGrantWorkspaceTrust(() => void this.onTrustGranted()));
    this._register(queueFolders.onDidChange(() => void this.onQueueFoldersChanged()));
    this._register(client.onDidChangeConnection((connected) => this.onConnectionChanged(connected)));
    this._register(
      context.secrets.onDidChange((e) => {
        if (e.key === REMOTE_TOKEN_SECRET) void this.onRemoteTokenChanged();
      }),
    );
    this._register(
      toDisposable(() => {
        clearTimeout(this.restartTimer);
        clearTimeout(this.attachTimer);
      }),
    );
    void vscode.commands.executeCommand('setContext', ContextKeys.hostState, this._state);
  }

  get state(): HostState {
    return this._state;
  }

  /** Why the last start failed, for the views' welcome text. */
  get lastError(): string | undefined {
    return this._lastError;
  }

  /** Pid of the engine host we talk to: our child, or the owner we attached to (none for a remote engine). */
  get enginePid(): number | undefined {
    if (this._state === 'remote') return undefined;
    return this._state === 'attached' ? this.attachedTo?.pid : this.host.pid;
  }

  /** The remote engine's base URL while this window monitors one (engineMonitor.remote.url). */
  get remote(): string | undefined {
    return this._state === 'remote' ? this.remoteUrl : undefined;
  }

  get isOwner(): boolean {
    return this._state === 'running' && this.host.isRunning;
  }

  /**
   * Activation: with engineMonitor.remote.url set, monitor that engine; otherwise start our own
   * only when the workspace has a queue folder and engine.autoStart is on.
   */
  async autoStart(): Promise<void> {
    if (readConfig().remote.url) return this.useRemote();
    if (!readConfig().engine.autoStart) return;
    if (!(await this.queueFolders.exists())) return;
    await this.startHost(false);
  }

  /** Command "Start Engine": fork the host if needed, else tell a stopped engine to launch again. */
  async start(): Promise<void> {
    this.throwIfRemote('start');
    if (this._state === 'attached') return this.notOwner();
    if (this.isOwner) {
      await this.control({ command: 'start' });
      return;
    }
    await this.startHost(false);
  }

  /** Command "Stop Engine": the engine stops launching; the server keeps answering (state "stopped"). */
  async stop(): Promise<void> {
    this.throwIfRemote('stop');
    if (this._state === 'attached') return this.notOwner();
    if (!this.isOwner) {
      void vscode.window.showInformationMessage('The engine is not running.');
      return;
    }
    await this.control({ command: 'stop' });
  }

  /** Command "Restart Engine": a fresh host process, keeping a user's "stopped". */
  async restart(): Promise<void> {
    this.throwIfRemote('restart');
    if (this._state === 'attached') {
      this.client.reconnectNow();
      return;
    }
    await this.restartHost(this.engineState() === 'stopped');
  }

  async control(command: ControlCommand): Promise<unknown> {
    this.throwIfRemote(command.command);
    if (this._state === 'attached') {
      this.notOwner();
      return undefined;
    }
    return this.host.control(command);
  }

  /** deactivate(): stop our host and wait for it (it persists on SIGTERM). */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    clearTimeout(this.restartTimer);
    clearTimeout(this.attachTimer);
    this.client.setEndpoint(undefined, undefined);
    await this.host.shutdown();
    this.setState('off');
  }

  private throwIfRemote(what: string): void {
    if (this._state !== 'remote') return;
    throw new ControlUnavailableError(
      `This window monitors the remote engine at ${this.remoteUrl}; its HTTP API is read-only, so "${what}" cannot be sent from here. ` +
        'Control a remote engine where it runs (its terminal, service or container), or clear engineMonitor.remote.url to run an engine in this window.',
    );
  }

  private notOwner(): void {
    const pid = this.attachedTo?.pid;
    void vscode.window.showInformationMessage(
      `This window shows the engine started by another VS Code window (pid ${pid ?? '?'}). Control it from that window.`,
    );
  }

  private setState(state: HostState): void {
    if (this._state === state) return;
    this._state = state;
    void vscode.commands.executeCommand('setContext', ContextKeys.hostState, state);
    this._onDidChangeState.fire(state);
  }

  private serialize<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private startHost(stopped: boolean): Promise<void> {
    return this.serialize(() => this.doStartHost(stopped));
  }

  private restartHost(stopped: boolean): Promise<void> {
    return this.serialize(async () => {
      clearTimeout(this.restartTimer);
      await this.host.shutdown();
      await this.doStartHost(stopped);
    });
  }

  private async doStartHost(stopped: boolean): Promise<void> {
    if (this.shuttingDown || this.isDisposed || this.host.isRunning) return;
    // A remote engine replaces ours (a start queued before the setting changed must not fork one).
    if (readConfig().remote.url) return;
    clearTimeout(this.attachTimer);
    const storage = this.context.storageUri;
    const folders = this.queueFolders.workspaceFolderPaths();
    if (!storage || folders.length === 0) {
      this._lastError = 'Open a folder to run the engine.';
      this.setState('failed');
      return;
    }
    await fs.mkdir(storage.fsPath, { recursive: true });
    const config = readConfig();
    const args = hostArgsFor(config);
    this.argsKey = JSON.stringify([args, folders]);
    this.setState('starting');
    const result = await this.host.start({
      cliPath: vscode.Uri.joinPath(this.context.extensionUri, 'dist', 'cli.js').fsPath,
      storageDir: storage.fsPath,
      workspaces: folders,
      args,
      restricted: !vscode.workspace.isTrusted,
      stopped,
    });
    this.onStartResult(result, config.server.token);
  }

  /**
   * Remote mode: stop our own host if one runs (a remote engine replaces it), then point the
   * client at engineMonitor.remote.url with the token from SecretStorage.
   */
  private useRemote(): Promise<void> {
    return this.serialize(async () => {
      if (this.shuttingDown || this.isDisposed) return;
      const parsed = parseRemoteUrl(readConfig().remote.url);
      if (!parsed.url) return this.leaveRemoteOrFail(parsed.error);
      clearTimeout(this.restartTimer);
      clearTimeout(this.attachTimer);
      this.attachedTo = undefined;
      if (this.host.isRunning) {
        this.output.info('engineMonitor.remote.url is set: stopping this window\'s engine host.');
        await this.host.shutdown();
      }
      const token = await this.context.secrets.get(REMOTE_TOKEN_SECRET);
      this._lastError = undefined;
      this.remoteInvalid = false;
      this.remoteUrl = parsed.url;
      this.output.info(`Monitoring the remote engine at ${parsed.url} (${token ? 'with' : 'without'} a token).`);
      this.client.setEndpoint(parsed.url, token);
      this.setState('remote');
    });
  }

  /** A remote URL that is not one: say so (state failed) instead of silently running locally. */
  private async leaveRemoteOrFail(error: string | undefined): Promise<void> {
    if (!error) return;
    if (this.host.isRunning) await this.host.shutdown();
    this.remoteUrl = undefined;
    this.remoteInvalid = true;
    this.client.setEndpoint(undefined, undefined);
    this._lastError = error;
    this.setState('failed');
    void vscode.window.showErrorMessage(`Engine Monitor: ${error}`, 'Open Settings').then((choice) => {
      if (choice) void vscode.commands.executeCommand('workbench.action.openSettings', 'engineMonitor.remote.url');
    });
  }

  private async onRemoteTokenChanged(): Promise<void> {
    if (this._state !== 'remote') return;
    const token = await this.context.secrets.get(REMOTE_TOKEN_SECRET);
    if (this._state === 'remote') this.client.setEndpoint(this.remoteUrl, token);
  }

  private onStartResult(result: HostStartResult, token: string): void {
    switch (result.kind) {
      case 'ready':
        this._lastError = undefined;
        this.attachedTo = undefined;
        this.setState('running');
        this.client.setEndpoint(result.url, token);
        if (result.requestedPort !== undefined && !this.toldAboutPort.has(result.requestedPort)) {
          this.toldAboutPort.add(result.requestedPort);
          void vscode.window.showInformationMessage(
            `Port ${result.requestedPort} was in use, so the engine is serving on ${result.url}.`,
          );
        }
        break;
      case 'locked':
        this._lastError = undefined;
        this.attachedTo = result.lock;
        this.setState('attached');
        this.client.setEndpoint(result.lock.url, token);
        // If the owner does not answer either, try again to take over (onConnectionChanged).
        if (!this.client.connected) this.onConnectionChanged(false);
        break;
      case 'failed':
        this._lastError = result.message;
        this.client.setEndpoint(undefined, undefined);
        this.setState('failed');
        void vscode.window
          .showErrorMessage(`Engine Monitor could not start the engine: ${result.message}`, 'Show Output', 'Open Settings')
          .then((choice) => {
            if (choice === 'Show Output') this.output.show(true);
            if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'engineMonitor');
          });
        break;
    }
  }

  private onHostExit(e: HostExit): void {
    if (e.expected || this.shuttingDown || this.isDisposed) return;
    // A host that never got ready already reported failure through start(): do not loop on it.
    if (e.uptimeMs === 0) return;
    this.client.setEndpoint(undefined, undefined);
    if (e.uptimeMs >= STABLE_UPTIME_MS) this.crashes = 0;
    const delay = CRASH_BACKOFF_MS[this.crashes];
    this.crashes++;
    const how = e.signal ?? `exit code ${e.code}`;
    if (delay === undefined) {
      this._lastError = `The engine host kept exiting (${how}).`;
      this.setState('failed');
      void vscode.window.showErrorMessage(`Engine Monitor: ${this._lastError} It was not restarted again.`, 'Show Output')
        .then((c) => c && this.output.show(true));
      return;
    }
    this.output.warn(`Engine host exited unexpectedly (${how}); restarting in ${delay} ms.`);
    this.setState('starting');
    if (!this.toldAboutCrash) {
      this.toldAboutCrash = true;
      void vscode.window.showWarningMessage(`The engine stopped unexpectedly (${how}). Engine Monitor is restarting it.`, 'Show Output')
        .then((c) => c && this.output.show(true));
    }
    const wasStopped = this.engineState() === 'stopped';
    this.restartTimer = setTimeout(() => void this.startHost(wasStopped), delay);
  }

  private async onConfigChanged(): Promise<void> {
    const config = readConfig();
    if (config.remote.url) {
      // Switch to (or between) remote engines without a reload.
      if (this._state !== 'remote' || parseRemoteUrl(config.remote.url).url !== this.remoteUrl) await this.useRemote();
      return;
    }
    if (this._state === 'remote' || this.remoteInvalid) {
      // The remote URL was cleared: back to this window's own engine.
      this.output.info('engineMonitor.remote.url was cleared: running the engine in this window again.');
      this.remoteUrl = undefined;
      this.remoteInvalid = false;
      this.client.setEndpoint(undefined, undefined);
      this._lastError = undefined;
      this.setState('off');
      await this.autoStart();
      return;
    }
    if (this._state === 'attached') {
      this.client.setEndpoint(this.attachedTo?.url, config.server.token);
      return;
    }
    if (this.isOwner) {
      const key = JSON.stringify([hostArgsFor(config), this.queueFolders.workspaceFolderPaths()]);
      if (key !== this.argsKey) {
        this.output.info('Settings the engine host reads have changed; restarting it.');
        await this.restartHost(this.engineState() === 'stopped');
      }
      return;
    }
    if (this._state === 'off' || this._state === 'failed') await this.autoStart();
  }

  private async onQueueFoldersChanged(): Promise<void> {
    if (this._state === 'off') await this.autoStart();
  }

  private async onTrustGranted(): Promise<void> {
    if (!this.isOwner) return;
    try {
      await this.host.control({ command: 'grantTrust' });
    } catch (err) {
      this.output.warn(`grantTrust failed (${String(err)}); restarting the engine host trusted.`);
      await this.restartHost(false);
    }
  }

  /** Attached to another window's engine and it went away: take over (or attach to its successor). */
  private onConnectionChanged(connected: boolean): void {
    clearTimeout(this.attachTimer);
    if (connected || this._state !== 'attached' || this.shuttingDown) return;
    this.attachTimer = setTimeout(() => {
      if (this._state !== 'attached' || this.client.connected) return;
      this.output.info('The engine this window was attached to is gone; starting one here.');
      this.setState('off');
      void this.startHost(false);
    }, ATTACH_RETRY_MS);
  }
}
