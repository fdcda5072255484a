// Remote mode: with engineMonitor.remote.url set, this window forks no engine host of its own and
// monitors a headless engine started elsewhere, through the same client, so the views, the status
// bar and the terminals' environment follow that engine. Its token lives in SecretStorage.
// Control commands travel over the engine's HTTP control endpoints, which
// answer only when that engine has a token; without one they are refused with what to do.
import * as vscode from 'vscode';
import type { ItemSummary } from '../shared/api';
import type { ControlCommand } from '../shared/hostProtocol';
import { parseRemoteUrl, readConfig } from './config';
import { REMOTE_TOKEN_SECRET } from './constants';
import { Disposable } from './dispose';
import { HttpError, type EngineClient } from './engineClient';
import type { EngineMode } from './engineMode';

/**
 * A control command that cannot reach the engine from this window, with what to do instead
 * (control it from the window that owns it, give the remote engine a token…). Commands show it
 * as a warning, not as a failure of the command.
 */
export class ControlUnavailableError extends Error {
  override readonly name: string = 'ControlUnavailableError';
}

/** The remote engine refused control over HTTP because it was started without a token (HTTP 403). */
export class ControlNeedsTokenError extends ControlUnavailableError {
  override readonly name = 'ControlNeedsTokenError';
}

/** The HTTP control endpoint of each command a remote engine accepts. */
function controlPath(command: ControlCommand): string | undefined {
  const item = (action: string, itemId: string) => `/items/${encodeURIComponent(itemId)}/${action}`;
  switch (command.command) {
    case 'start':
      return '/engine/start';
    case 'stop':
      return '/engine/stop';
    case 'pollNow':
      return '/engine/poll';
    case 'retryItem':
      return item('retry', command.itemId);
    case 'cancelItem':
      return item('cancel', command.itemId);
    case 'restartItem':
      return item('restart', command.itemId);
    case 'holdItem':
      return item('hold', command.itemId);
    case 'releaseItem':
      return item('release', command.itemId);
    case 'runAgain':
      return item('run-again', command.itemId);
    case 'clearFinished':
      return '/engine/clear-finished';
    case 'removeItem':
      // DELETE /items/{id} (see post below).
      return `/items/${encodeURIComponent(command.itemId)}`;
    default:
      return undefined;
  }
}

/** Failed items retried per "Retry All Failed" on a remote engine (one POST each). */
const RETRY_ALL_LIMIT = 500;

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

  /**
   * Sends a control command to the remote engine over its HTTP control endpoints (POST, with the
   * token from SecretStorage) and resolves with the engine's answer. A remote engine without a
   * token refuses every POST (403): that becomes a ControlNeedsTokenError saying what to do.
   */
  async control(command: ControlCommand): Promise<unknown> {
    const url = this.url;
    if (url === undefined) throw new ControlUnavailableError('This window does not monitor a remote engine.');
    if (command.command === 'retryAllFailed') {
      const failed = (await this.client.get<{ items: ItemSummary[] }>(`/items?outcome=failed&limit=${RETRY_ALL_LIMIT}`)).items;
      for (const item of failed) await this.post(url, { command: 'retryItem', itemId: item.id });
      return { retried: failed.length };
    }
    return this.post(url, command);
  }

  /** Why `what` cannot be sent to the remote engine at all (restarting its process, trust). */
  refusal(what: string): string {
    return (
      `This window monitors the remote engine at ${this.url ?? '(none)'}; "${what}" cannot be done over HTTP. ` +
      'Do it where that engine runs (its terminal, service or container), or clear engineMonitor.remote.url to run an engine in this window.'
    );
  }

  private async post(url: string, command: ControlCommand): Promise<unknown> {
    const path = controlPath(command);
    if (!path) throw new ControlUnavailableError(this.refusal(command.command));
    try {
      return await this.client.post(path, command.command === 'removeItem' ? 'DELETE' : 'POST');
    } catch (err) {
      if (err instanceof HttpError && err.status === 403) {
        throw new ControlNeedsTokenError(
          `The remote engine at ${url} refused "${command.command}": control over HTTP needs a token (${err.detail}). ` +
            'Start that engine with a token (--token, or the setting engineMonitor.server.token where it runs in VS Code), ' +
            'then give this window the same token with "Engine Monitor: Set Remote Engine Token…".',
        );
      }
      if (err instanceof HttpError && err.status === 401) {
        throw new ControlUnavailableError(
          `The remote engine at ${url} refused this window's token (${err.detail}). Run "Engine Monitor: Set Remote Engine Token…" with the token it was started with.`,
        );
      }
      throw err;
    }
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
