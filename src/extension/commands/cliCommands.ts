// Install the engine-monitor Command for Your Shell…: the integrated terminals have the command
// on PATH already (terminalEnv.ts); a shell outside VS Code does not. This writes a launcher that
// runs the one the extension keeps current into ~/.local/bin (or a folder the user picks), after
// asking, and says where it went and whether that folder is on PATH.
import * as vscode from 'vscode';
import os from 'node:os';
import path from 'node:path';
import { forwardingLauncherText, isOnPath, isOursOrMissing, launcherName, writeLauncher } from '../cliLauncher';
import { Commands } from '../constants';
import type { CommandHandlers } from './register';

export interface CliCommandServices {
  /** The launcher the terminals run (TerminalEnvironment.launcher); undefined if it could not be written. */
  launcher: string | undefined;
}

/** The folder offered first: where per-user programs go on Linux and macOS. */
export function defaultCliFolder(): string {
  return path.join(os.homedir(), '.local', 'bin');
}

async function installCli(launcher: string | undefined): Promise<void> {
  if (!launcher) throw new Error('the engine-monitor launcher could not be written into the extension\'s storage folder (see the Engine Monitor output channel)');
  let folder = defaultCliFolder();
  const shown = folder.startsWith(os.homedir()) ? `~${folder.slice(os.homedir().length)}` : folder;
  const choice = await vscode.window.showInformationMessage(
    `Install the engine-monitor command for your shell as ${path.join(shown, launcherName())}?`,
    {
      modal: true,
      detail: 'It runs the command-line client of this extension (the version installed now and after updates). VS Code\'s integrated terminals have it already.',
    },
    'Install',
    'Choose Folder…',
  );
  if (!choice) return;
  if (choice === 'Choose Folder…') {
    const picked = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, openLabel: 'Install Here', defaultUri: vscode.Uri.file(os.homedir()) });
    if (!picked?.[0]) return;
    folder = picked[0].fsPath;
  }
  const file = path.join(folder, launcherName());
  if (!isOursOrMissing(file)) {
    const overwrite = await vscode.window.showWarningMessage(`${file} exists and was not written by Engine Monitor. Replace it?`, { modal: true }, 'Replace');
    if (overwrite !== 'Replace') return;
  }
  writeLauncher(file, forwardingLauncherText(launcher));
  const onPath = isOnPath(folder);
  const hint = process.platform === 'win32' ? `add ${folder} to your PATH` : `add export PATH="${folder}:$PATH" to your shell's profile (~/.bashrc, ~/.zshrc)`;
  void vscode.window.showInformationMessage(
    onPath ? `Installed engine-monitor as ${file}. Try "engine-monitor status" in a new shell.` : `Installed engine-monitor as ${file}. ${folder} is not on your PATH: ${hint}.`,
  );
}

export function cliCommands({ launcher }: CliCommandServices): CommandHandlers<typeof Commands.installCli> {
  return { [Commands.installCli]: () => installCli(launcher) };
}
