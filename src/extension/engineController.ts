// EngineController: the policy around the engine host process. Attaching to the engine already
// running on this workspace's storage (a reload, a second window), when to start one (auto-start
// only with a queue folder and engine.autoStart), restarts after a crash (with backoff, telling
// the user once), restarts when a setting the host reads changes, Workspace Trust, and the control
// commands. The host outlives the window (hostProcess.ts): every attached window controls it
// alike, and a window going away only detaches. It owns the window's mode (engineMode.ts); remote
// mode, monitoring a headless engine at engineMonitor.remote.url instead, is in remoteEngine.ts.
import * as fs from 'node:fs/promises';
import * as vscode from 'vscode';
import type { EngineState } from '../shared/api';
import type { ControlCommand, EngineLock } from '../shared/hostProtocol';
import { onDidChangeConfig, readConfig, type EngineMonitorConfig } from './config';
import { parseStoreUrl } from '../shared/storeUrl';
import { hostArgsFor, isNotifyUrl, launchKeyFor } from './hostLaunch';
import { ContextKeys, STORE_PASSWORD_SECRET } from './constants';
import { Disposable, toDisposable } from './dispose';
import type { EngineClient } from './engineClient';
import { hostStateOf, type EngineMode, type HostState } from './engineMode';
import { isAlive } from '../shared/processAlive';
import type { HostExit, HostProcess, HostStartResult } from './hostProcess';
import type { QueueFolders } from './queue';
import { ControlUnavailableError, RemoteEngine } from './remoteEngine';

const CRASH_BACKOFF_MS = [1000, 2000, 4000, 8000, 16000, 30000];
/** A host that ran this long before dying is considered healthy again: the backoff restarts. */
const STABLE_UPTIME_MS = 60_000;
const ATTACH_RETRY_MS = 3000;
/** Another window restarts the host: this window attaches to the new one after this pause. */
const SUCCESSOR_WAIT_MS = 300;
/** How long a locked storage folder's owner may take to accept this window before it reads it only. */
const LOCKED_ATTACH_MS = 30_000;

export class EngineController extends Disposable {
  private mode: EngineMode = { kind: 'local', state: 'off' };
  private readonly remoteEngine: RemoteEngine;
  private crashes = 0;
  private toldAboutCrash = false;
  private toldAboutPort = new Set<number>();
  private restartTimer: NodeJS.Timeout | undefined;
  private attachTimer: NodeJS.Timeout | undefined;
  /** Serialises start/stop/restart so two commands never fork two hosts. */
  private queue: Promise<unknown> = Promise.resolve();
  /** deactivate() has begun: whatever mode this window is in, nothing starts or restarts now. */
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
    this.remoteEngine = this._register(
      new RemoteEngine({ mode: () => this.mode, setMode: (m) => this.setMode(m), stopLocal: (why) => this.stopLocal(why) }, context.secrets, client, output),
    );
    this._register(host.onDidExit((e) => this.onHostExit(e)));
    this._register(onDidChangeConfig(() => void this.onConfigChanged()));
    this._register(vscode.workspace.onDidChangeWorkspaceFolders(() => void this.onConfigChanged()));
    this._register(vscode.workspace.onDidGrantWorkspaceTrust(() => void this.onTrustGranted()));
    // A new store password restarts an engine on the store with it, as a changed setting would.
    this._register(context.secrets.onDidChange((e) => e.key === STORE_PASSWORD_SECRET && void this.onConfigChanged()));
    this._register(queueFolders.onDidChange(() => void this.onQueueFoldersChanged()));
    this._register(client.onDidChangeConnection((connected) => this.onConnectionChanged(connected)));
    this._register(
      toDisposable(() => {
        clearTimeout(this.restartTimer);
        clearTimeout(this.attachTimer);
      }),
    );
    // No hostState context key yet: 'off' before autoStart() has looked for a queue folder would
    // show "No queue folder" or "not running" for a moment in a workspace about to start its
    // engine. The views say "Connecting to the engine…" until decided (see `decided`).
  }

  /** autoStart() has decided what this window does (start, attach, remote, or stay off). */
  get decided(): boolean {
    return this._decided;
  }
  private _decided = false;

  private decide(): void {
    if (this._decided) return;
    this._decided = true;
    void vscode.commands.executeCommand('setContext', ContextKeys.hostState, this.state);
    this._onDidChangeState.fire(this.state);
  }

  get state(): HostState {
    return hostStateOf(this.mode);
  }

  /** Why the engine failed (state failed), for the status bar. */
  get lastError(): string | undefined {
    return 'error' in this.mode ? this.mode.error : undefined;
  }

  /** Pid of the engine host we talk to: our child, or the owner we attached to (none for a remote engine). */
  get enginePid(): number | undefined {
    if (this.state === 'remote') return undefined;
    return this.mode.kind === 'attached' ? this.mode.lock.pid : this.host.pid;
  }

  /** The remote engine's base URL while this window monitors one (engineMonitor.remote.url). */
  get remote(): string | undefined {
    return this.remoteEngine.url;
  }

  get isOwner(): boolean {
    return this.state === 'running' && this.host.isRunning;
  }

  /**
   * Activation: with engineMonitor.remote.url set, monitor that engine; otherwise start our own
   * only when the workspace has a queue folder and engine.autoStart is on.
   */
  async autoStart(): Promise<void> {
    try {
      if (readConfig().remote.url) return await this.useRemote();
      // An engine already running on this storage (the window reloaded): attach, whatever autoStart says.
      if (await this.attachExisting()) return;
      // Known before the decision, so the views' welcome (queue folder or not) is right at once.
      const hasQueueFolder = await this.queueFolders.exists();
      if (!readConfig().engine.autoStart || !hasQueueFolder) return;
      await this.startHost(false);
    } finally {
      this.decide();
    }
  }

  /** Command "Start Engine": fork the host if needed, else tell a stopped engine to launch again. */
  async start(): Promise<void> {
    if (this.mode.kind === 'remote') {
      await this.control({ command: 'start' });
      return;
    }
    if (this.mode.kind === 'attached') return this.notOwner();
    if (this.isOwner) {
      await this.control({ command: 'start' });
      return;
    }
    await this.startHost(false);
  }

  /** Command "Stop Engine": the engine stops launching; the server keeps answering (state "stopped"). */
  async stop(): Promise<void> {
    if (this.mode.kind === 'remote') {
      await this.control({ command: 'stop' });
      return;
    }
    if (this.mode.kind === 'attached') return this.notOwner();
    if (!this.isOwner) {
      void vscode.window.showInformationMessage('The engine is not running.');
      return;
    }
    await this.control({ command: 'stop' });
  }

  /** Command "Restart Engine": a fresh host process (from any attached window), keeping a user's "stopped". */
  async restart(): Promise<void> {
    this.throwIfRemote('restart');
    if (this.mode.kind === 'attached') {
      this.client.reconnectNow();
      return;
    }
    await this.restartHost(this.engineState() === 'stopped');
  }

  /**
   * Sends a control command: over the host's control connection to the engine this window is
   * attached to (whichever window started it), over HTTP (POST, with the token) to a remote
   * engine. Rejects with the engine's reason (no such item, not running…) or, for a remote engine
   * that refuses control, a ControlUnavailableError.
   */
  async control(command: ControlCommand): Promise<unknown> {
    if (this.mode.kind === 'remote') {
      if (this.mode.url === undefined) throw new ControlUnavailableError(`engineMonitor.remote.url is not usable: ${this.mode.error}`);
      return this.remoteEngine.control(command);
    }
    if (this.mode.kind === 'attached') {
      this.notOwner();
      return undefined;
    }
    return this.host.control(command);
  }

  /**
   * deactivate() (a reload, a closed window): detach. The engine runs on, its attempts untouched;
   * the next window on this workspace attaches to it, and with none it stops by itself after
   * engineMonitor.engine.keepAliveSeconds once nothing runs.
   */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    clearTimeout(this.restartTimer);
    clearTimeout(this.attachTimer);
    this.client.setEndpoint(undefined, undefined);
    this.host.detach();
    // No state event: the views and the status bar are being disposed with this window, and work
    // they would start now would find them gone.
    this.mode = { kind: 'local', state: 'off' };
  }

  /** Restarting a process cannot be done over HTTP: a remote engine is restarted where it runs. */
  private throwIfRemote(what: string): void {
    if (this.remoteEngine.url !== undefined) throw new ControlUnavailableError(this.remoteEngine.refusal(what));
  }

  private notOwner(): void {
    const pid = this.mode.kind === 'attached' ? this.mode.lock.pid : undefined;
    void vscode.window.showInformationMessage(
      `This window shows an engine (pid ${pid ?? '?'}) it cannot control: it did not accept this window's attachment. Control it where it was started, or restart it there.`,
    );
  }

  /** Listeners hear of a new state only; a mode's data may change under the same state. */
  private setMode(mode: EngineMode): void {
    const before = this.state;
    this.mode = mode;
    const state = this.state;
    if (state === before && this._decided) return;
    this._decided = true;
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
      // The other attached windows hear a fresh host follows, and attach to it.
      await this.host.shutdown(undefined, true);
      await this.doStartHost(stopped, false);
    });
  }

  /** The fast path: attach to the engine running on this storage folder, if there is one. */
  private attachExisting(): Promise<boolean> {
    return this.serialize(async () => {
      const storage = this.context.storageUri;
      if (this.shuttingDown || this.isDisposed || !storage || readConfig().remote.url) return false;
      if (this.host.isRunning) return true;
      // An engine that looks alive: say "starting" while connecting, never "off" for a moment.
      if (this.host.mayAttach(storage.fsPath)) this.setMode({ kind: 'local', state: 'starting' });
      const result = await this.host.attach(storage.fsPath);
      if (!result) {
        if (this.mode.kind === 'local' && this.mode.state === 'starting') this.mode = { kind: 'local', state: 'off' };
        return false;
      }
      await this.onAttached(result);
      return true;
    });
  }

  private async doStartHost(stopped: boolean, attachFirst = true): Promise<void> {
    if (this.shuttingDown || this.isDisposed || this.host.isRunning) return;
    // A remote engine replaces ours (a start queued before the setting changed must not fork one).
    if (readConfig().remote.url) return;
    clearTimeout(this.attachTimer);
    const storage = this.context.storageUri;
    if (attachFirst && storage) {
      const attached = await this.host.attach(storage.fsPath);
      if (attached) return this.onAttached(attached);
    }
    const folders = this.queueFolders.workspaceFolderPaths();
    if (!storage || folders.length === 0) {
      this.setMode({ kind: 'local', state: 'failed', error: 'Open a folder to run the engine.' });
      return;
    }
    await fs.mkdir(storage.fsPath, { recursive: true });
    const config = readConfig();
    const args = hostArgsFor(config, vscode.workspace.isTrusted);
    if (config.hooks.notifyUrl && !isNotifyUrl(config.hooks.notifyUrl)) {
      this.output.warn(`engineMonitor.hooks.notifyUrl is not an http:// or https:// URL (${JSON.stringify(config.hooks.notifyUrl)}); no notifications are sent.`);
    }
    const store = parseStoreUrl(config.store.url);
    if (store.error) this.output.warn(`${store.error} The engine uses its embedded database until then.`);
    else if (store.url && !vscode.workspace.isTrusted) this.output.info('engineMonitor.store.url is not used in Restricted Mode: the engine uses its embedded database.');
    const storePassword = store.url ? await this.context.secrets.get(STORE_PASSWORD_SECRET) : undefined;
    const argsKey = await this.argsKey(config, vscode.workspace.isTrusted);
    this.setMode({ kind: 'local', state: 'starting' });
    const result = await this.host.start({
      cliPath: vscode.Uri.joinPath(this.context.extensionUri, 'dist', 'cli.js').fsPath,
      storageDir: storage.fsPath,
      workspaces: folders,
      args,
      token: config.server.token,
      storePassword,
      restricted: !vscode.workspace.isTrusted,
      stopped,
      keepAliveSeconds: config.engine.keepAliveSeconds,
      launchKey: argsKey,
    });
    if (result.kind === 'locked') return this.onLocked(result.lock, storage.fsPath, config.server.token);
    this.onStartResult(result, config.server.token, argsKey);
  }

  /**
   * Attached to an engine this window did not start (a reload, another window): it runs with the
   * settings its starter had. When this window's differ (a change made while no window watched), or
   * it waits for trust this window has, this window restarts or trusts it, as for a change here.
   */
  private async onAttached(result: Extract<HostStartResult, { kind: 'ready' }>): Promise<void> {
    const config = readConfig();
    this.onStartResult(result, config.server.token, result.info.launchKey);
    // No launch key: `engine-monitor serve` started from a shell, with flags of the user's choosing,
    // which no window's settings replace.
    if (result.info.launchKey === '') return;
    const key = await this.argsKey(config, vscode.workspace.isTrusted);
    if (key !== result.info.launchKey) {
      this.output.info('The running engine host was started with other settings than this window has; restarting it.');
      void this.restartHost(this.engineState() === 'stopped');
    } else if (result.info.restricted && vscode.workspace.isTrusted) {
      void this.onTrustGranted();
    }
  }

  /** Another engine won the storage folder's lock: attach to it once it is ready, else read it only. */
  private async onLocked(lock: EngineLock, storageDir: string, token: string): Promise<void> {
    const until = Date.now() + LOCKED_ATTACH_MS;
    while (Date.now() < until && !this.shuttingDown && !this.isDisposed && (lock.pid === 0 || isAlive(lock.pid))) {
      const attached = await this.host.attach(storageDir);
      if (attached) return this.onAttached(attached);
      await new Promise((r) => setTimeout(r, 100));
    }
    if (this.shuttingDown || this.isDisposed) return;
    this.onStartResult({ kind: 'locked', lock }, token, '');
  }

  private useRemote(): Promise<void> {
    return this.serialize(async () => {
      if (this.shuttingDown || this.isDisposed) return;
      await this.remoteEngine.use();
    });
  }

  /** A remote engine (or a bad remote URL) replaces this window's own engine host. */
  private async stopLocal(why?: string): Promise<void> {
    clearTimeout(this.restartTimer);
    clearTimeout(this.attachTimer);
    if (!this.host.isRunning) return;
    if (why) this.output.info(why);
    await this.host.shutdown();
  }

  /** What the running host was started with (launchKeyFor), to restart it when that changes. */
  private async argsKey(config: EngineMonitorConfig, trusted: boolean): Promise<string> {
    const args = hostArgsFor(config, trusted);
    const password = args.includes('--store') ? await this.context.secrets.get(STORE_PASSWORD_SECRET) : undefined;
    return launchKeyFor(args, config.server.token, this.queueFolders.workspaceFolderPaths(), password);
  }

  private onStartResult(result: HostStartResult, token: string, argsKey: string): void {
    switch (result.kind) {
      case 'ready':
        this.setMode({ kind: 'local', state: 'running', argsKey });
        // Else the host's terminal token, which the terminals get from the client (terminalEnv.ts).
        this.client.setEndpoint(result.url, token || result.info.terminalToken);
        if (result.requestedPort !== undefined && !this.toldAboutPort.has(result.requestedPort)) {
          this.toldAboutPort.add(result.requestedPort);
          void vscode.window.showInformationMessage(
            `Port ${result.requestedPort} was in use, so the engine is serving on ${result.url}.`,
          );
        }
        break;
      case 'locked':
        this.setMode({ kind: 'attached', lock: result.lock });
        this.client.setEndpoint(result.lock.url, token);
        // If the owner does not answer either, try again to take over (onConnectionChanged).
        if (!this.client.connected) this.onConnectionChanged(false);
        break;
      case 'failed':
        this.client.setEndpoint(undefined, undefined);
        this.setMode({ kind: 'local', state: 'failed', error: result.message });
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
    this.client.setEndpoint(undefined, undefined);
    if (e.restartFollows) {
      // Another window restarts the engine: attach to its new host (or start one, should it fail).
      this.setMode({ kind: 'local', state: 'starting' });
      const wasStopped = this.engineState() === 'stopped';
      this.restartTimer = setTimeout(() => void this.startHost(wasStopped), SUCCESSOR_WAIT_MS);
      return;
    }
    if (e.uptimeMs >= STABLE_UPTIME_MS) this.crashes = 0;
    const delay = CRASH_BACKOFF_MS[this.crashes];
    this.crashes++;
    const how = e.reason ?? 'its process ended without saying why';
    if (delay === undefined) {
      const error = `The engine host kept exiting (${how}).`;
      this.setMode({ kind: 'local', state: 'failed', error });
      void vscode.window.showErrorMessage(`Engine Monitor: ${error} It was not restarted again.`, 'Show Output')
        .then((c) => c && this.output.show(true));
      return;
    }
    this.output.warn(`Engine host exited unexpectedly (${how}); restarting in ${delay} ms.`);
    this.setMode({ kind: 'local', state: 'starting' });
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
      if (!this.remoteEngine.monitors(config.remote.url)) await this.useRemote();
      return;
    }
    if (this.mode.kind === 'remote') {
      // The remote URL was cleared: back to this window's own engine.
      this.remoteEngine.leave();
      await this.autoStart();
      return;
    }
    if (this.mode.kind === 'attached') {
      this.client.setEndpoint(this.mode.lock.url, config.server.token);
      return;
    }
    const mode = this.mode;
    if (mode.kind === 'local' && mode.state === 'running' && this.host.isRunning) {
      // This window is attached to the engine (isOwner): restart it if what it was started with
      // changed, unless a shell started it (no launch key): its flags are the user's, not settings.
      if (mode.argsKey === '') return;
      const key = await this.argsKey(config, vscode.workspace.isTrusted);
      if (key !== mode.argsKey) {
        this.output.info('Settings the engine host reads have changed; restarting it.');
        await this.restartHost(this.engineState() === 'stopped');
      }
      return;
    }
    if (this.state === 'off' || this.state === 'failed') await this.autoStart();
  }

  private async onQueueFoldersChanged(): Promise<void> {
    if (this.state === 'off') await this.autoStart();
  }

  private async onTrustGranted(): Promise<void> {
    if (!this.isOwner) return;
    // Hooks are passed to a trusted host only: with any set, trust changes the command line.
    const mode = this.mode;
    if (mode.kind === 'local' && mode.state === 'running' && this.host.isRunning) {
      const config = readConfig();
      const key = await this.argsKey(config, true);
      if (mode.argsKey !== '' && key !== mode.argsKey) {
        this.output.info('The workspace is trusted now; restarting the engine host with the hooks from the settings.');
        await this.restartHost(false);
        return;
      }
    }
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
    if (connected || this.mode.kind !== 'attached' || this.shuttingDown) return;
    this.attachTimer = setTimeout(() => {
      if (this.mode.kind !== 'attached' || this.client.connected) return;
      this.output.info('The engine this window was attached to is gone; starting one here.');
      this.setMode({ kind: 'local', state: 'off' });
      void this.startHost(false);
    }, ATTACH_RETRY_MS);
  }
}
