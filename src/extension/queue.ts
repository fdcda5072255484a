// The queue folders: `<workspace folder>/<engineMonitor.queue.directory>`.
// Knows whether any exists (for auto-start and the views' welcome), watches for one appearing,
// and implements Create Queue Folder and Open Queue Folder (Add Item… is commands/addItem.ts).
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { onDidChangeConfig, readConfig } from './config';
import { Commands, ContextKeys } from './constants';
import { Disposable } from './dispose';

export class QueueFolders extends Disposable {
  private watchers: vscode.Disposable[] = [];
  private _exists: boolean | undefined;
  private readonly _onDidChange = this._register(new vscode.EventEmitter<boolean>());
  /** Fires with the new value of "some workspace folder has a queue folder". */
  readonly onDidChange = this._onDidChange.event;

  constructor() {
    super();
    this._register(onDidChangeConfig(() => this.rewatch()));
    this._register(vscode.workspace.onDidChangeWorkspaceFolders(() => this.rewatch()));
    this._register({ dispose: () => this.disposeWatchers() });
    this.rewatch();
  }

  /** Local workspace folders: the engine runs processes, so only file: folders count. */
  folders(): readonly vscode.WorkspaceFolder[] {
    return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
  }

  workspaceFolderPaths(): string[] {
    return this.folders().map((f) => f.uri.fsPath);
  }

  queueUri(folder: vscode.WorkspaceFolder): vscode.Uri {
    return vscode.Uri.file(path.resolve(folder.uri.fsPath, readConfig().queue.directory));
  }

  async existingQueueFolders(): Promise<vscode.WorkspaceFolder[]> {
    const found: vscode.WorkspaceFolder[] = [];
    for (const f of this.folders()) {
      try {
        if ((await fs.stat(this.queueUri(f).fsPath)).isDirectory()) found.push(f);
      } catch {
        // missing: not a queue folder
      }
    }
    return found;
  }

  async exists(): Promise<boolean> {
    const value = (await this.existingQueueFolders()).length > 0;
    if (value !== this._exists) {
      const changed = this._exists !== undefined;
      this._exists = value;
      void vscode.commands.executeCommand('setContext', ContextKeys.hasQueueFolder, value);
      if (changed) this._onDidChange.fire(value);
    }
    return value;
  }

  async create(folder: vscode.WorkspaceFolder): Promise<vscode.Uri> {
    const uri = this.queueUri(folder);
    await fs.mkdir(uri.fsPath, { recursive: true });
    await this.exists();
    return uri;
  }

  private rewatch(): void {
    this.disposeWatchers();
    const dir = readConfig().queue.directory;
    for (const f of this.folders()) {
      // The folder itself, and files in it (creating a file may create the folder in one go).
      for (const glob of [dir, `${dir}/*`]) {
        const w = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(f, glob), false, true, false);
        w.onDidCreate(() => void this.exists());
        w.onDidDelete(() => void this.exists());
        this.watchers.push(w);
      }
    }
    void this.exists();
  }

  private disposeWatchers(): void {
    for (const w of this.watchers) w.dispose();
    this.watchers = [];
  }
}

/** Pick a workspace folder: the only one, or ask. */
export async function pickFolder(
  folders: readonly vscode.WorkspaceFolder[],
  placeHolder: string,
): Promise<vscode.WorkspaceFolder | undefined> {
  if (folders.length === 0) {
    void vscode.window.showInformationMessage('Open a folder first: Engine Monitor reads its queue from a workspace folder.');
    return undefined;
  }
  if (folders.length === 1) return folders[0];
  const pick = await vscode.window.showQuickPick(
    folders.map((f) => ({ label: f.name, description: f.uri.fsPath, folder: f })),
    { placeHolder },
  );
  return pick?.folder;
}

export async function createQueueFolderCommand(queue: QueueFolders): Promise<void> {
  const folder = await pickFolder(queue.folders(), 'Create the queue folder in which workspace folder?');
  if (!folder) return;
  const uri = await queue.create(folder);
  // Stay in the Engine Monitor views (the engine starts now); offer the next steps.
  const choice = await vscode.window.showInformationMessage(
    `Created ${vscode.workspace.asRelativePath(uri, (vscode.workspace.workspaceFolders?.length ?? 0) > 1)}. Items are JSON files in it.`,
    'Add Item…',
    'Open Queue Folder',
  );
  if (choice === 'Add Item…') await vscode.commands.executeCommand(Commands.addItem);
  if (choice === 'Open Queue Folder') await revealInExplorer(uri);
}

export async function openQueueFolderCommand(queue: QueueFolders): Promise<void> {
  const existing = await queue.existingQueueFolders();
  const folder = await pickFolder(existing.length ? existing : queue.folders(), 'Open the queue folder of which workspace folder?');
  if (!folder) return;
  let uri = queue.queueUri(folder);
  if (!existing.includes(folder)) {
    const rel = readConfig().queue.directory;
    const ok = await vscode.window.showInformationMessage(`${folder.name} has no queue folder (${rel}). Create it?`, 'Create');
    if (ok !== 'Create') return;
    uri = await queue.create(folder);
  }
  await revealInExplorer(uri);
}

async function revealInExplorer(uri: vscode.Uri): Promise<void> {
  await vscode.commands.executeCommand('workbench.view.explorer');
  await vscode.commands.executeCommand('revealInExplorer', uri);
}

/** A filesystem- and id-safe slug of an item name. */
export function slugify(name: string): string {
  return (
    name
      .normalize('NFKD')
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^[-.]+|[-.]+$/g, '')
      .toLowerCase()
      .slice(0, 60) || 'item'
  );
}

/** Id of a new item: the name's slug plus a UTC timestamp, within `^[A-Za-z0-9._:-]{1,128}$`. */
export function newItemId(name: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').replace(/\..*$/, '');
  return `${slugify(name)}-${stamp}`;
}

/**
 * Write one item file the way scripts are asked to: a temporary name the scanner ignores
 * (not ending in .json/.jsonl), then an atomic rename.
 */
export async function writeQueueItem(queueDir: string, item: Record<string, unknown> & { id: string }): Promise<string> {
  await fs.mkdir(queueDir, { recursive: true });
  const final = path.join(queueDir, `${item.id}.json`);
  const temp = path.join(queueDir, `.${item.id}.json.${process.pid}.tmp`);
  await fs.writeFile(temp, JSON.stringify(item, null, 2) + '\n', { flag: 'wx' });
  try {
    await fs.rename(temp, final);
  } catch (err) {
    await fs.rm(temp, { force: true });
    throw err;
  }
  return final;
}
