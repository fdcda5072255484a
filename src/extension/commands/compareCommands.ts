// Compare Output with Last Success: from the Items view, a CodeLens, the failure notification
// (given the item, and the attempt when the caller knows it), or the palette (Find Item asks).
import * as vscode from 'vscode';
import { Commands } from '../constants';
import { compareWithLastSuccess, EngineOutputDocuments, OUTPUT_SCHEME } from '../output/outputCompare';
import { findItem, type ItemCommandServices } from './itemCommands';
import { targetOf } from './itemTarget';
import type { CommandHandlers } from './register';

/** The `engine-output:` documents the diff editor shows; registered once, with the commands. */
export function registerOutputDocuments(client: ItemCommandServices['client'] & ConstructorParameters<typeof EngineOutputDocuments>[0]): vscode.Disposable {
  return vscode.workspace.registerTextDocumentContentProvider(OUTPUT_SCHEME, new EngineOutputDocuments(client));
}

export function compareCommands(s: ItemCommandServices): CommandHandlers<typeof Commands.compareOutput> {
  return {
    [Commands.compareOutput]: async (arg) => {
      const target = targetOf(arg) ?? (await findItem(s, 'Compare the output of which item with its last success?', false));
      if (!target) return undefined;
      return compareWithLastSuccess(s.client, target.itemId, target.attempt);
    },
  };
}
