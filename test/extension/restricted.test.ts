// Run by the second pass of test/extension/runInCodeServer.ts, with Workspace Trust on and the
// folder untrusted: the engine serves (views work) but launches nothing (state "restricted").
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { HealthResponse, StatsResponse } from '../../src/shared/api';
import { getApi, getJson, nodeById, sleep, waitFor, waitForEngine } from './helpers';

describe('Restricted Mode (untrusted workspace)', () => {
  it('runs the engine restricted: it serves, the views say so, and nothing is launched', async function () {
    this.timeout(90_000);
    assert.equal(vscode.workspace.isTrusted, false, 'this suite needs an untrusted folder');
    const api = await getApi();
    await waitForEngine(api);
    const health = await getJson<HealthResponse>(api, '/health');
    assert.equal(health.checks.engine, 'restricted');
    assert.equal(health.status, 'degraded');
    await waitFor('the status bar to say restricted', () => api._testing.statusBar.text.includes('restricted'));
    await waitFor('the Stats view to explain', () => nodeById(api, 'stats', 'stats.banner.restricted'));
    await sleep(3000);
    const { overview } = await getJson<StatsResponse>(api, '/stats');
    assert.equal(overview.totalLaunches, 0, 'nothing launched in Restricted Mode');
    assert.ok(overview.total > 0, 'items are still discovered and shown');
  });
});

describe('Remote mode in Restricted Mode', () => {
  it('ignores a workspace value of engineMonitor.remote.url (a restricted configuration)', async function () {
    this.timeout(30_000);
    const api = await getApi();
    await waitForEngine(api);
    // The threat: a cloned folder's .vscode/settings.json points the extension at any server
    // (which would then get the remote token). editor.tabSize shows the file was read.
    const folder = vscode.workspace.workspaceFolders![0].uri.fsPath;
    const file = path.join(folder, '.vscode', 'settings.json');
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, JSON.stringify({ 'editor.tabSize': 7, 'engineMonitor.remote.url': 'http://127.0.0.1:9/' }));
    try {
      await waitFor('the workspace settings to be read', () => vscode.workspace.getConfiguration('editor').get('tabSize') === 7, 15_000);
      await sleep(1000);
      assert.equal(vscode.workspace.getConfiguration('engineMonitor').get('remote.url'), '', 'the workspace value is not applied while untrusted');
      assert.notEqual(api._testing.controller.state, 'remote');
      assert.notEqual(api.baseUrl(), 'http://127.0.0.1:9');
      assert.equal(api._testing.model.available, true);
    } finally {
      await fs.rm(path.dirname(file), { recursive: true, force: true });
    }
  });
});

describe('Queue-file CodeLens in Restricted Mode', () => {
  it('shows the state only: no action lenses, and Open Attempt in Terminal opens nothing', async function () {
    this.timeout(60_000);
    const api = await getApi();
    await waitForEngine(api);
    const file = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue', 'restricted-lens.json');
    await fs.writeFile(file, JSON.stringify([{ id: 'restricted-lens', command: 'node', args: ['-e', '0'] }]));
    try {
      const doc = await vscode.workspace.openTextDocument(file);
      await vscode.window.showTextDocument(doc);
      await vscode.commands.executeCommand('engineMonitor.pollNow');
      const lenses = await waitFor('the entry\'s state lens', async () => {
        const got = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', doc.uri)) ?? [];
        return got.length > 0 && /waiting · 0\/3/.test(got[0].command?.title ?? '') && got;
      });
      assert.equal(lenses.length, 1, `the state only: ${lenses.map((l) => l.command?.title).join(', ')}`);
      assert.equal(lenses[0].command?.command, '', 'a state lens runs nothing');
      const terminals = vscode.window.terminals.length;
      assert.equal(await vscode.commands.executeCommand('engineMonitor.openInTerminal', 'restricted-lens'), undefined);
      assert.equal(vscode.window.terminals.length, terminals, 'no terminal opened');
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    } finally {
      await fs.rm(file, { force: true });
    }
  });
});
