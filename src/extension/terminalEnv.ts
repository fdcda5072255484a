// Integrated terminals get ENGINE_MONITOR_URL (and ENGINE_MONITOR_TOKEN when a token is set), so
// scripts run there can reach the engine without configuration. The token is the one the client
// uses: the server.token setting, or a remote engine's token from SecretStorage (the collection is
// not persistent, so it never reaches disk).
import type * as vscode from 'vscode';
import { Disposable } from './dispose';
import type { EngineClient } from './engineClient';

export class TerminalEnvironment extends Disposable {
  constructor(
    private readonly collection: vscode.GlobalEnvironmentVariableCollection,
    private readonly client: EngineClient,
  ) {
    super();
    // The URL changes with every engine start: do not carry a stale one across reloads.
    collection.persistent = false;
    collection.description = 'Engine Monitor: the engine API endpoint (ENGINE_MONITOR_URL)';
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
