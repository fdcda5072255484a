// Integrated terminals get ENGINE_MONITOR_URL and ENGINE_MONITOR_TOKEN, so scripts run there can
// reach the engine without configuration, and the `engine-monitor` launcher's folder first on PATH
// (cliLauncher.ts), so the command line the README shows works there. The token is the one the
// client uses: the server.token setting, a remote engine's token from SecretStorage, or, for the
// window's own engine without either, the token its host tells attached windows only, so the
// terminals may control it over HTTP while HTTP control stays closed to everyone else. The
// collection is not persistent, so no token ever reaches disk.
import type * as vscode from 'vscode';
import path from 'node:path';
import { writeTerminalLauncher } from './cliLauncher';
import { Disposable } from './dispose';
import type { EngineClient } from './engineClient';

export class TerminalEnvironment extends Disposable {
  /** Where the launcher was written; undefined if it could not be. */
  readonly launcher: string | undefined;

  constructor(
    private readonly collection: vscode.GlobalEnvironmentVariableCollection,
    private readonly client: EngineClient,
    launcher?: { binDir: string; cliPath: string; log(message: string): void },
  ) {
    super();
    // The URL changes with every engine start: do not carry a stale one across reloads.
    collection.persistent = false;
    collection.description = 'Engine Monitor: the engine API endpoint (ENGINE_MONITOR_URL, ENGINE_MONITOR_TOKEN) and the engine-monitor command on PATH';
    if (launcher) {
      try {
        this.launcher = writeTerminalLauncher(launcher.binDir, launcher.cliPath);
        collection.prepend('PATH', launcher.binDir + path.delimiter);
      } catch (err) {
        launcher.log(`Could not write the engine-monitor launcher into ${launcher.binDir}: ${(err as Error).message}`);
      }
    }
    // setEndpoint fires this for a new URL or a new token.
    this._register(client.onDidChangeEndpoint(() => this.update()));
    this.update();
  }

  private update(): void {
    const url = this.client.baseUrl;
    const token = this.client.token;
    if (url) this.collection.replace('ENGINE_MONITOR_URL', url);
    else this.collection.delete('ENGINE_MONITOR_URL');
    if (url && token) this.collection.replace('ENGINE_MONITOR_TOKEN', token);
    else this.collection.delete('ENGINE_MONITOR_TOKEN');
  }
}
