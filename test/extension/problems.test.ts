// Problem matchers in the Problems panel (contract §10): an item running the project's own tsc on a
// broken file fails, and its `$tsc` problems are diagnostics with the item's name as source at the
// right line and column; after the file is fixed and the item retried, the successful attempt
// clears them. The engine is this window's own, real one; tsc is real.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { addItem, getApi, itemDetail, nodeById, showViews, waitFor, waitForEngine } from './helpers';

// dist/test/extension/index.js → the repository's node_modules.
const TSC = path.resolve(__dirname, '../../../node_modules/typescript/bin/tsc');
const BROKEN = [
  'export function total(prices: number[]): number {',
  '  let sum: number = 0;',
  '  for (const p of prices) sum += p;',
  '  const label: string = sum;',
  '  return label.length;',
  '}',
  '',
].join('\n');

describe('Problem matcher diagnostics', function () {
  this.timeout(180_000);

  it('shows a failed item\'s $tsc problem with the item\'s name as source, and clears it once a retry succeeds', async () => {
    const api = await getApi();
    await waitForEngine(api);
    await showViews(api);
    const folder = vscode.workspace.workspaceFolders![0].uri.fsPath;
    const file = path.join(folder, 'typecheck-demo', 'src', 'total.ts');
    const uri = vscode.Uri.file(file);
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, BROKEN);
    const id = 'problems-typecheck';
    await addItem({
      id,
      name: 'Typecheck total.ts',
      command: process.execPath,
      args: [TSC, '--noEmit', '--strict', '--target', 'ES2022', 'src/total.ts'],
      cwd: 'typecheck-demo',
      maxAttempts: 1,
      problemMatcher: '$tsc',
    });

    const [d] = await waitFor(
      'the $tsc problem in the Problems panel',
      () => {
        const found = vscode.languages.getDiagnostics(uri).filter((x) => x.source === 'Typecheck total.ts');
        return found.length > 0 && found;
      },
      120_000,
    );
    assert.equal(vscode.languages.getDiagnostics(uri).filter((x) => x.source === 'Typecheck total.ts').length, 1);
    assert.equal(d.message, "Type 'number' is not assignable to type 'string'.");
    assert.equal(d.code, '2322');
    assert.equal(d.severity, vscode.DiagnosticSeverity.Error);
    // tsc's (4,9): line 4, column 9, 1-based; VS Code's positions are 0-based.
    assert.deepEqual([d.range.start.line, d.range.start.character], [3, 8]);
    const detail = await itemDetail(id);
    assert.equal(detail.outcome, 'failed');
    assert.deepEqual(detail.attempts[0].problems.map((p) => [p.file, p.line, p.column]), [[file, 4, 9]]);

    await fs.writeFile(file, BROKEN.replace('const label: string = sum;', 'const label: string = String(sum);'));
    const node = await waitFor('the failed item in the Items view', () => nodeById(api, 'items', `items.failed.${id}`));
    await vscode.commands.executeCommand('engineMonitor.retryItem', node);
    await waitFor('the retried item to launch', async () => (await itemDetail(id)).outcome === 'launched', 120_000);
    await waitFor('the problem to clear', () => vscode.languages.getDiagnostics(uri).every((x) => x.source !== 'Typecheck total.ts'));
    assert.deepEqual(api._testing.attemptDiagnostics.items(), [], 'nothing shown for the item any more');
  });
});
