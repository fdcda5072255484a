// The item detail's source link: the queue file an item came from, opened beside the dashboard
// with the cursor on the item's entry. The path comes from the engine (`GET /items/{id}`), never
// from the webview, and only a file inside one of this window's workspace folders is opened.
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ItemDetail } from '../../shared/api';
import { itemPath } from '../output/outputTerminal';
import { readQueueEntries } from '../queueLensModel';

/** What the engine writes as the source of an item submitted over HTTP rather than by a file. */
const SUBMITTED_SOURCE = 'api';

/** The id of the entry that defines `itemId`: a schedule's or watch's occurrence (`<template>@<time>`) comes from its template's entry. */
export function entryIdOf(itemId: string): string {
  const at = itemId.indexOf('@');
  return at > 0 ? itemId.slice(0, at) : itemId;
}

export async function openItemSource(reader: { get<T>(pathAndQuery: string): Promise<T> }, itemId: string): Promise<vscode.TextEditor> {
  const detail = await reader.get<ItemDetail>(itemPath(itemId));
  const source = detail.item.source;
  if (source === SUBMITTED_SOURCE) {
    throw new Error(`"${detail.item.name}" was submitted over HTTP (POST /items or engine-monitor add), so it has no queue file to open.`);
  }
  const parts = source.split('/');
  const folder = (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.scheme === 'file' && existsSync(path.join(f.uri.fsPath, ...parts)));
  if (!folder) {
    throw new Error(`The queue file of "${detail.item.name}" (${source}) is not in this window's workspace folders; the engine reads it from its own.`);
  }
  const uri = vscode.Uri.joinPath(folder.uri, ...parts);
  const document = await vscode.workspace.openTextDocument(uri);
  const text = document.getText();
  const wanted = entryIdOf(detail.item.id);
  const entry = readQueueEntries(text, source, source.endsWith('.jsonl')).find((e) => e.id === wanted);
  const at = document.positionAt(entry?.start ?? 0);
  const editor = await vscode.window.showTextDocument(document, {
    viewColumn: vscode.ViewColumn.Beside,
    selection: new vscode.Range(at, at),
    preview: false,
  });
  editor.revealRange(new vscode.Range(at, at), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  if (!entry) void vscode.window.showWarningMessage(`${source} no longer has an entry with id "${wanted}": the file changed since the engine read it.`);
  return editor;
}
