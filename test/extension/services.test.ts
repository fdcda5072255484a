// Services in the editor, with this window's real engine: a real process listening on a real port
// is shown in the Items view's Services group and on its queue file's CodeLens (`ready · 0 min`),
// Restart Service from its node ends it and starts it again (`1 restart`), and Stop from the lens
// stops it for good.
import * as assert from 'node:assert/strict';
import * as net from 'node:net';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { addItem, getApi, itemDetail, showViews, viewNodes, waitFor, waitForEngine } from './helpers';

/** A port nothing listens on now (the kernel's choice, released at once). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function lensTitles(lenses: vscode.CodeLens[]): string[] {
  return lenses.map((l) => (l.command?.title ?? '').replace(/^\$\([^)]+\) /, ''));
}

describe('Services', function () {
  this.timeout(120_000);

  before(async function () {
    this.timeout(90_000);
    const api = await getApi();
    await waitForEngine(api);
    await showViews(api);
  });

  it('shows a ready service in the Services group and its lens, restarts it from its node, and stops it from its lens', async () => {
    const api = await getApi();
    const id = 'svc-listener';
    const port = await freePort();
    await addItem({
      id,
      name: 'Listener',
      command: process.execPath,
      args: ['-e', `setTimeout(() => require('net').createServer((s) => s.end()).listen(${port}, '127.0.0.1'), 300)`],
      service: true,
      ready: { port },
    });
    await waitFor(`${id} to be ready`, async () => (await itemDetail(id)).state === 'ready');

    const group = await waitFor('the Services group', () => viewNodes(api, 'items').find((n) => n.id === 'items.services'));
    assert.equal(group.label, 'Services');
    const node = await waitFor('the ready service in the Services group', () => group.children?.find((n) => n.item?.id === id && n.item.state === 'ready') ?? viewNodes(api, 'items').find((n) => n.id === 'items.services')?.children?.find((n) => n.item?.id === id && n.item.state === 'ready'));
    assert.equal(node.contextValue, 'item.running.service', 'the context value Restart Service and Cancel (Stop) are shown for');
    assert.match(String(node.description), /^ready · 0 min$/);
    assert.ok(!viewNodes(api, 'items').some((g) => g.id !== 'items.services' && g.children?.some((n) => n.item?.id === id)), 'a service is listed in the Services group only');

    // As the node's inline action invokes it.
    await vscode.commands.executeCommand('engineMonitor.restartItem', node);
    const restarted = await waitFor(`${id} to be ready again`, async () => {
      const d = await itemDetail(id);
      return d.attempts.length === 2 && d.state === 'ready' && d;
    });
    assert.equal(restarted.attempts[0].error, 'restarted by the user');
    assert.notEqual(restarted.attempts[1].readyAt, null);
    await waitFor('the node to count the restart', () =>
      viewNodes(api, 'items').find((n) => n.id === 'items.services')?.children?.some((n) => n.item?.id === id && n.description === 'ready · 0 min · 1 restart'));

    const doc = await vscode.workspace.openTextDocument(path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue', `${id}.json`));
    await vscode.window.showTextDocument(doc);
    const lenses = await waitFor('the service\'s lens', async () => {
      const got = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', doc.uri)) ?? [];
      return lensTitles(got)[0] === 'ready · 0 min · 1 restart' && got;
    });
    assert.deepEqual(lensTitles(lenses), ['ready · 0 min · 1 restart', 'Restart', 'Stop', 'Show Output']);
    const stop = lenses.find((l) => l.command?.title === 'Stop')!;
    await vscode.commands.executeCommand(stop.command!.command, ...(stop.command!.arguments ?? []));
    const stopped = await waitFor(`${id} to be stopped`, async () => {
      const d = await itemDetail(id);
      return d.state === 'failed' && d;
    });
    assert.equal(stopped.error, 'cancelled');
    await waitFor('the node to say it is stopped', () =>
      viewNodes(api, 'items').find((n) => n.id === 'items.services')?.children?.some((n) => n.item?.id === id && /^stopped · failed: cancelled$/.test(String(n.description))));
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });
});
