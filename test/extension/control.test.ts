// Cancel, Hold and Release from the Items view and the palette's commands,
// in this window's own engine (the private channel); the outcome is read over HTTP, as a script
// would.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { ItemSummary, StatsResponse } from '../../src/shared/api';
import { acceptInQuickPick, addItem, getApi, getJson, itemDetail, showViews, viewNodes, waitFor, waitForEngine } from './helpers';

/** Picks the first entry of the item quick pick a running command shows, and waits for the command. */
async function acceptFirst(command: Thenable<unknown>): Promise<void> {
  const api = await getApi();
  // A command that ends before its pick is seen would otherwise look like a pick that never came.
  let ended: string | undefined;
  void Promise.resolve(command).then(
    (r) => (ended = `the command ended without a pick, returning ${JSON.stringify(r)}`),
    (e: unknown) => (ended = `the command failed: ${e instanceof Error ? e.message : String(e)}`),
  );
  const qp = await waitFor('the item quick pick', () => {
    if (ended !== undefined && !api._testing.itemPick) throw new Error(ended);
    return (api._testing.itemPick?.items.length ?? 0) > 0 && api._testing.itemPick;
  });
  await acceptInQuickPick(qp, qp.items[0]);
  await command;
}

describe('Cancel, Hold and Release', function () {
  this.timeout(90_000);

  before(async function () {
    this.timeout(90_000);
    const api = await getApi();
    await waitForEngine(api);
    await showViews(api);
  });

  it('Cancel on a running item\'s node ends its attempt: the item fails with "cancelled", without a retry', async () => {
    const api = await getApi();
    const id = 'control-sleep';
    await addItem({ id, name: 'Sleeps five minutes', command: 'sleep', args: ['300'], maxAttempts: 3 });
    await waitFor(`${id} to run`, async () => (await itemDetail(id)).state === 'running');
    const node = await waitFor('the running item in the Items view', () => viewNodes(api, 'items').find((n) => n.item?.id === id && n.item.state === 'running'));
    assert.match(node.contextValue ?? '', /^item\.(running|pending)$/, 'the context value the Cancel action is shown for');

    // As the inline action invokes it: with the tree node.
    await vscode.commands.executeCommand('engineMonitor.cancelItem', node);
    const detail = await waitFor(`${id} to fail`, async () => {
      const d = await itemDetail(id);
      return d.outcome === 'failed' && d;
    }, 20_000);
    assert.equal(detail.state, 'failed');
    assert.equal(detail.error, 'cancelled');
    assert.equal(detail.attempts.length, 1, 'no automatic retry after a cancel, although 3 attempts were allowed');
    assert.equal(detail.attempts[0].outcome, 'failed');
    assert.equal(detail.attempts[0].error, 'cancelled');
  });

  it('Hold keeps a pending item from launching and Release lets it go', async () => {
    const id = 'control-held';
    await addItem({ id, name: 'Held for later', command: 'node', args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' });
    assert.equal((await itemDetail(id)).state, 'scheduled');
    await vscode.commands.executeCommand('engineMonitor.holdItem', id);
    await waitFor(`${id} held`, async () => (await itemDetail(id)).state === 'held');
    const api = await getApi();
    await waitFor('the held item\'s node to offer Release', () => viewNodes(api, 'items').find((n) => n.item?.id === id && n.item.state === 'held'));
    await vscode.commands.executeCommand('engineMonitor.releaseItem', { itemId: id });
    await waitFor(`${id} released (scheduled again)`, async () => (await itemDetail(id)).state === 'scheduled');
    const detail = await itemDetail(id);
    assert.equal(detail.outcome, 'pending');
    assert.equal(detail.attempts.length, 0);
  });

  it('from the palette, Hold and Release offer a quick pick of the items they apply to', async () => {
    const api = await getApi();
    const held = async () => (await getJson<StatsResponse>(api, '/stats')).overview.held;
    assert.equal(await held(), 0);
    // Only items that stay put (scheduled for 2099) may be pending: one that launches between the
    // pick and the accept is refused, rightly, and would make this test about timing.
    await waitFor('the demo queue to settle', async () =>
      (await getJson<{ items: ItemSummary[] }>(api, '/items?outcome=pending&limit=500')).items.every((i) => i.state === 'scheduled'), 60_000);
    // No argument: a quick pick of the pending items that are not held; accept its first entry.
    await acceptFirst(vscode.commands.executeCommand('engineMonitor.holdItem'));
    await waitFor('one item held', async () => (await held()) === 1);
    const heldItems = (await getJson<{ items: ItemSummary[] }>(api, '/items?state=held')).items;
    assert.equal(heldItems.length, 1);
    // Release lists only held items: there is one.
    await acceptFirst(vscode.commands.executeCommand('engineMonitor.releaseItem'));
    await waitFor('no item held', async () => (await held()) === 0);
    assert.notEqual((await itemDetail(heldItems[0].id)).state, 'held');
  });

  it('refuses to cancel an item that has launched, saying why (no silent success)', async () => {
    const api = await getApi();
    const launched = 'control-quick';
    await addItem({ id: launched, name: 'Quick', command: 'node', args: ['-e', '0'], maxAttempts: 1 });
    await waitFor(`${launched} to launch`, async () => (await itemDetail(launched)).outcome === 'launched');
    await assert.rejects(api._testing.controller.control({ command: 'cancelItem', itemId: launched }), /launched|cannot|not pending/i);
    assert.equal((await itemDetail(launched)).outcome, 'launched');
  });
});
