// Entry point. activate() builds the composition root and returns at once; the engine host
// starts in the background (second phase), so activation never waits for a process. The tree
// data providers are registered inside the Container's constructor, before anything is awaited:
// a view restored by a reload must never find no provider.
import * as vscode from 'vscode';
import { ContextKeys } from './constants';
import { Container } from './container';
import { traceStartup } from './startupTrace';

export interface EngineMonitorApi {
  /** Base URL of the engine's HTTP API, or undefined while no engine is known. */
  baseUrl(): string | undefined;
  /** For the extension-host tests: the live parts, read-only by convention. */
  readonly _testing: Container;
}

let container: Container | undefined;

export function activate(context: vscode.ExtensionContext): EngineMonitorApi {
  const started = Date.now();
  const c = new Container(context);
  container = c;
  context.subscriptions.push(c);
  void vscode.commands.executeCommand('setContext', ContextKeys.activated, true);
  void c.start().catch((err) => c.output.error(`Starting the engine failed: ${String(err)}`));
  c.activationMs = Date.now() - started;
  c.output.info(`Engine Monitor activated in ${c.activationMs} ms.`);
  context.subscriptions.push(traceStartup(c, started));
  return {
    baseUrl: () => c.client.baseUrl,
    _testing: c,
  };
}

export async function deactivate(): Promise<void> {
  const c = container;
  container = undefined;
  await c?.shutdown();
}
