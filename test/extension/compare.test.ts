// Compare Output with Last Success against the real engine of this window: the diff editor opens
// over two engine-output: documents whose only difference is the line that really changed, though
// the raw outputs also differ in their timestamps and durations (masked by the default settings).
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { OutputComparison } from '../../src/extension/output/outputCompare';
import { addItem, getApi, itemDetail, showViews, viewNodes, waitFor, waitForEngine } from './helpers';

/** Prints a timestamp, a time of day and a duration that differ from run to run; attempt 1 fails at step 2. */
const SCRIPT = [
  'const n = Number(process.env.ENGINE_ATTEMPT);',
  "console.log('[' + new Date(Date.now() + n * 61_000).toISOString() + '] build started');",
  "console.log('compiling 12 files');",
  "console.log('compiled in ' + (100 + n * 37) + ' ms');",
  "console.log(n === 1 ? 'step 2: FAILED (disk full)' : 'step 2: ok');",
  "console.log('done at ' + new Date(Date.now() + n * 3_600_000).toTimeString().slice(0, 8));",
  'process.exit(n === 1 ? 1 : 0);',
].join('\n');

function linesOf(text: string): string[] {
  return text.replace(/\r\n/g, '\n').trimEnd().split('\n');
}

describe('Compare Output with Last Success', function () {
  this.timeout(90_000);

  before(async function () {
    this.timeout(90_000);
    await waitForEngine(await getApi());
  });

  afterEach(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('opens the diff editor between a failed attempt and the last success; only the real change differs', async () => {
    const api = await getApi();
    const id = 'compare-output';
    await addItem({ id, name: 'Compare me', command: 'node', args: ['-e', SCRIPT], maxAttempts: 2 });
    await waitFor(`${id} to fail once and then succeed`, async () => (await itemDetail(id)).outcome === 'launched', 60_000);

    const result = await vscode.commands.executeCommand<OutputComparison>('engineMonitor.compareOutput', { itemId: id, attempt: 1 });
    assert.ok(result, 'the command says what it compared');
    assert.equal(result.success.scheme, 'engine-output');

    const tab = await waitFor('the diff editor', () => {
      const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
      return input instanceof vscode.TabInputTextDiff && input;
    });
    assert.equal(tab.original.toString(), result.success.toString(), 'the last success on the left');
    assert.equal(tab.modified.toString(), result.attempt.toString(), 'the failed attempt on the right');
    assert.match(vscode.window.tabGroups.activeTabGroup.activeTab!.label, /Compare me: attempt 2 \(succeeded\) ↔ attempt 1 \(failed\)/);

    const left = linesOf((await vscode.workspace.openTextDocument(tab.original)).getText());
    const right = linesOf((await vscode.workspace.openTextDocument(tab.modified)).getText());
    assert.equal(left.length, right.length, `${JSON.stringify(left)} / ${JSON.stringify(right)}`);
    const changed = left.map((line, i) => [line, right[i]]).filter(([a, b]) => a !== b);
    assert.deepEqual(changed, [['step 2: ok', 'step 2: FAILED (disk full)']], 'only the real change differs');
    assert.equal(left[0], '[…] build started', 'the timestamp is masked');

    // Unmasked, the two runs differ in three more lines: the masks are what hides them.
    const raw = async (n: number) => linesOf(await (await fetch(`${api.baseUrl()}/items/${id}/attempts/${n}/output`)).text());
    const [ok, failed] = [await raw(2), await raw(1)];
    assert.equal(ok.filter((line, i) => line !== failed[i]).length, 4, `the raw outputs: ${JSON.stringify(ok)} / ${JSON.stringify(failed)}`);

    // The Items view's tooltip says what the last attempt cost, as the launch helper measured it.
    await showViews(api);
    const node = await waitFor('the item in the Items view', () => viewNodes(api, 'items').find((n) => n.item?.id === id && n.item.lastResources));
    const tooltip = typeof node.tooltip === 'function' ? node.tooltip() : node.tooltip;
    const text = typeof tooltip === 'string' ? tooltip : (tooltip?.value ?? '');
    // appendText keeps spaces as &nbsp; in the Markdown.
    assert.match(text, /Last attempt:\*\* CPU(&nbsp;| )\d+(&nbsp;| )ms/, text);
  });

  it('says so when there is no success to compare with', async () => {
    const id = 'compare-never-succeeded';
    await addItem({ id, name: 'Never succeeded', command: 'node', args: ['-e', 'process.exit(3)'], maxAttempts: 1 });
    await waitFor(`${id} to fail`, async () => (await itemDetail(id)).outcome === 'failed');
    const result = await vscode.commands.executeCommand('engineMonitor.compareOutput', id);
    assert.equal(result, undefined, 'nothing opened');
    assert.ok(!(vscode.window.tabGroups.activeTabGroup.activeTab?.input instanceof vscode.TabInputTextDiff), 'no diff editor');
  });
});
