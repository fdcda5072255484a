// Compare Output with Last Success: VS Code's diff editor between an attempt's output and that of
// the item's latest succeeded attempt. Both sides are read-only virtual documents of the
// `engine-output` scheme, fetched from the engine (GET /items/{id}/attempts/{n}/output) when VS
// Code opens them, with the masks of `engineMonitor.output.compareMasks` applied so that only what
// really changed is marked.
import * as vscode from 'vscode';
import type { AttemptDetail, ItemDetail } from '../../shared/api';
import { SETTINGS_SECTION, settingValue } from '../../shared/settings';
import type { EngineClient } from '../engineClient';
import { itemPath, outputPath } from './outputTerminal';
import { compileMasks, maskOutput } from './outputMasks';

export const OUTPUT_SCHEME = 'engine-output';

/**
 * `engine-output:/<item id>/attempt-<n>.log?attempt=<n>&started=<ISO>&masked=1`: the path reads
 * well as the editor's title; `started` keeps two attempts of the same number (after a retry by
 * hand) apart.
 */
export function outputUri(itemId: string, attempt: AttemptDetail, masked: boolean): vscode.Uri {
  const query = new URLSearchParams({ attempt: String(attempt.attempt), started: attempt.startedAt, masked: masked ? '1' : '0' });
  return vscode.Uri.from({ scheme: OUTPUT_SCHEME, path: `/${encodeURIComponent(itemId)}/attempt-${attempt.attempt}.log`, query: query.toString() });
}

export function parseOutputUri(uri: vscode.Uri): { itemId: string; attempt: number; masked: boolean } {
  const itemId = decodeURIComponent(uri.path.split('/')[1] ?? '');
  const q = new URLSearchParams(uri.query);
  const attempt = Number(q.get('attempt'));
  if (!itemId || !Number.isInteger(attempt) || attempt < 1) throw new Error(`Not an attempt's output: ${uri.toString()}`);
  return { itemId, attempt, masked: q.get('masked') === '1' };
}

/** Serves `engine-output:` documents: an attempt's stored output, masked when its URI asks. */
export class EngineOutputDocuments implements vscode.TextDocumentContentProvider {
  /** Patterns already reported as invalid: one warning each, not one per document. */
  private readonly warned = new Set<string>();

  constructor(private readonly client: Pick<EngineClient, 'getText'>) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const { itemId, attempt, masked } = parseOutputUri(uri);
    const { text } = await this.client.getText(outputPath(itemId, attempt));
    if (!masked) return text;
    const patterns = settingValue('output.compareMasks', vscode.workspace.getConfiguration(SETTINGS_SECTION).get('output.compareMasks'));
    const { regexps, invalid } = compileMasks(patterns);
    for (const { pattern, error } of invalid) {
      if (this.warned.has(pattern)) continue;
      this.warned.add(pattern);
      void vscode.window.showWarningMessage(`Engine Monitor: the compare mask ${JSON.stringify(pattern)} is not a valid regular expression (${error}); it is skipped. Fix it in the setting engineMonitor.output.compareMasks.`);
    }
    return maskOutput(text, regexps);
  }
}

/** Started last (attempt numbers restart after a retry by hand). */
function newest(attempts: readonly AttemptDetail[]): AttemptDetail | undefined {
  let latest: AttemptDetail | undefined;
  for (const a of attempts) if (!latest || a.startedAt >= latest.startedAt) latest = a;
  return latest;
}

/** Which attempt is compared with which: the one asked for (else the latest finished), and the latest success other than it. */
export function comparedAttempts(detail: ItemDetail, attempt?: number): { attempt?: AttemptDetail; success?: AttemptDetail } {
  const finished = detail.attempts.filter((a) => a.finishedAt !== null);
  const chosen = newest(attempt === undefined ? finished : detail.attempts.filter((a) => a.attempt === attempt));
  const success = newest(finished.filter((a) => a.outcome === 'succeeded' && a !== chosen));
  return { attempt: chosen, success };
}

/** The diff editor's two sides, for the caller (and the tests) to read. */
export interface OutputComparison {
  success: vscode.Uri;
  attempt: vscode.Uri;
}

/** Opens the diff editor for the item's attempt (the latest finished by default); undefined when there is nothing to compare. */
export async function compareWithLastSuccess(client: Pick<EngineClient, 'get'>, itemId: string, attemptNumber?: number): Promise<OutputComparison | undefined> {
  const detail = await client.get<ItemDetail>(itemPath(itemId));
  const name = detail.item.name || detail.item.id;
  const { attempt, success } = comparedAttempts(detail, attemptNumber);
  if (!attempt) {
    if (attemptNumber !== undefined) throw new Error(`Item "${itemId}" has no attempt ${attemptNumber} (it has ${detail.attempts.length}).`);
    void vscode.window.showInformationMessage(`"${name}" has no finished attempt to compare yet (${detail.state}).`);
    return undefined;
  }
  if (!success) {
    void vscode.window.showInformationMessage(`"${name}" has no other succeeded attempt to compare attempt ${attempt.attempt} with.`);
    return undefined;
  }
  const left = outputUri(detail.item.id, success, true);
  const right = outputUri(detail.item.id, attempt, true);
  const title = `${name}: attempt ${success.attempt} (succeeded) ↔ attempt ${attempt.attempt} (${attempt.outcome})`;
  await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: true });
  return { success: left, attempt: right };
}
