// Remote mode: with engineMonitor.remote.url set, this window forks no engine host of its own and
// monitors a headless engine started elsewhere, through the same client, so the views, the status
// bar and the terminals' environment follow that engine. Its token lives in SecretStorage. Its
// HTTP API is read-only, so control commands are refused with where to control it instead.
import * as vscode from 'vscode';
import { parseRemoteUrl, readConfig } from './config';
import { REMOTE_TOKEN_SECRET } from './constants';
import { Disposable } from './dispose';
import type { EngineClient } from './engineClient';
import type { EngineMode } from './engineMode';

/** What remote mode needs from the EngineController, which owns the window's mode. */
export interface ModeOwner {
  mode(): EngineMode;
  setMode(mode: EngineMode): void;
  /** Stops this window's own engine host, if one runs, and its pending restarts; `why` is logged. */
  stopLocal(why?: string): Promise<void>;
}

export class RemoteEngine extends Disposable {
  constructor(
    private readonly owner: ModeOwner,
    private readonly secrets: vscode.SecretStorage,
    private readonly client: EngineClient,
    private readonly output: vscode.LogOutputChannel,
  ) {
    super();
    this._register(
      secrets.onDidChange((e) => {
        if (e.key === REMOTE_TOKEN_SECRET) void this.onTokenChanged();
      }),
    );
  }

  /** The remote engine's base URL while this window monitors one. */
  get url(): string | undefined {
    const mode = this.owner.mode();
    return mode.kind === 'remote' ? mode.url : undefined;
  }

  /** True while this window monitors the engine that the setting `setting` names. */
  monitors(setting: string): boolean {
    const url = this.url;
    return url !== undefined && parseRemoteUrl(setting).url === url;
  }

  /**
   * Monitor the engine at engineMonitor.remote.url: stop our own host if one runs (a remote engine
   * replaces it), then point the client at it with the token from SecretStorage. A setting that
   * is not a usable URL is said to be so (state failed) instead of silently running locally.
   */
  async use(): Promise<void> {
    const parsed = parseRemoteUrl(readConfig().remote.url);
    if (!parsed.url) return this.refuse(parsed.error);
    await this.owner.stopLocal("engineMonitor.remote.url is set: stopping this window's engine host.");
    const token = await this.secrets.get(REMOTE_TOKEN_SECRET);
    this.output.info(`Monitoring the remote engine at ${parsed.url} (${token ? 'with' : 'without'} a token).`);
    const mode: EngineMode = { kind: 'remote', url: parsed.url };
    // From one remote engine to another: whoever the endpoint change reaches sees the new URL.
    if (this.url !== undefined) this.owner.setMode(mode);
    this.client.setEndpoint(parsed.url, token);
    this.owner.setMode(mode);
  }

  /** The setting was cleared: no engine, until the controller starts this window's own. */
  leave(): void {
    this.output.info('engineMonitor.remote.url was cleared: running the engine in this window again.');
    this.client.setEndpoint(undefined, undefined);
    this.owner.setMode({ kind: 'local', state: 'off' });
  }

  /** Why a control command cannot be sent from this window; undefined unless it monitors a remote engine. */
  controlRefusal(what: string): string | undefined {
    const url = this.url;
    if (url === undefined) return undefined;
    return (
      `This window monitors the remote engine at ${url}; its HTTP API is read-only, so "${what}" cannot be sent from here. ` +
      'Control a remote engine where it runs (its terminal, service or container), or clear engineMonitor.remote.url to run an engine in this window.'
    );
  }

  private async refuse(error: string | undefined): Promise<void> {
    if (!error) return;
    await this.owner.stopLocal();
    this.client.setEndpoint(undefined, undefined);
    this.owner.setMode({ kind: 'remote', url: undefined, error });
    void vscode.window.showErrorMessage(`Engine Monitor: ${error}`, 'Open Settings').then((choice) => {
      if (choice) void vscode.commands.executeCommand('workbench.action.openSettings', 'engineMonitor.remote.url');
    });
  }

  private async onTokenChanged(): Promise<void> {
    if (this.url === undefined) return;
    const token = await this.secrets.get(REMOTE_TOKEN_SECRET);
    const url = this.url;
    if (url !== undefined) this.client.setEndpoint(url, token);
  }
}
