// The two secrets a user types in: the remote engine's token and the PostgreSQL store's password.
// Both live in VS Code's SecretStorage, never in settings (a settings file is plain text and often
// committed); EngineController listens to them and reconnects or restarts when one changes.
import * as vscode from 'vscode';
import { Commands, REMOTE_TOKEN_SECRET, STORE_PASSWORD_SECRET } from '../constants';
import type { EngineController } from '../engineController';
import type { CommandHandlers } from './register';

export interface SecretCommandServices {
  secrets: vscode.SecretStorage;
  /** Only to say which engine the token is for. */
  controller: Pick<EngineController, 'remote'>;
}

type SecretCommandId = (typeof Commands)['setRemoteToken' | 'setStorePassword'];

async function setRemoteToken({ secrets, controller }: SecretCommandServices): Promise<void> {
  const had = (await secrets.get(REMOTE_TOKEN_SECRET)) !== undefined;
  const token = await vscode.window.showInputBox({
    title: 'Remote Engine Token',
    prompt: `The token the remote engine was started with (--token). Kept in VS Code's secret storage, never in settings.${had ? ' Leave empty to remove the stored token.' : ''}`,
    password: true,
    ignoreFocusOut: true,
    validateInput: (v) => (/\s/.test(v) ? 'A token has no spaces or line breaks.' : undefined),
  });
  if (token === undefined) return;
  if (token) await secrets.store(REMOTE_TOKEN_SECRET, token);
  else if (had) await secrets.delete(REMOTE_TOKEN_SECRET);
  else return;
  const where = controller.remote ? ` for ${controller.remote}` : '; it is used when engineMonitor.remote.url is set';
  void vscode.window.setStatusBarMessage(token ? `$(key) Remote engine token stored${where}` : '$(key) Remote engine token removed', 4000);
}

/**
 * The PostgreSQL store's password, kept in SecretStorage: a settings file is plain
 * text and often committed. Storing or removing it restarts this window's engine on the store
 * (EngineController listens to the secret).
 */
async function setStorePassword({ secrets }: SecretCommandServices): Promise<void> {
  const had = (await secrets.get(STORE_PASSWORD_SECRET)) !== undefined;
  const password = await vscode.window.showInputBox({
    title: 'Store Password',
    prompt: `The password of the user in engineMonitor.store.url. Kept in VS Code's secret storage, never in settings; the engine host gets it as PGPASSWORD.${had ? ' Leave empty to remove the stored password.' : ''}`,
    password: true,
    ignoreFocusOut: true,
  });
  if (password === undefined) return;
  if (password) await secrets.store(STORE_PASSWORD_SECRET, password);
  else if (had) await secrets.delete(STORE_PASSWORD_SECRET);
  else return;
  void vscode.window.setStatusBarMessage(password ? '$(key) Store password stored' : '$(key) Store password removed', 4000);
}

export function secretCommands(services: SecretCommandServices): CommandHandlers<SecretCommandId> {
  return {
    [Commands.setRemoteToken]: () => setRemoteToken(services),
    [Commands.setStorePassword]: () => setStorePassword(services),
  };
}
