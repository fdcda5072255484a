// Last in the suite: deactivation must leave no engine process behind.
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { EXTENSION_ID, getApi, isAlive, waitFor, waitForEngine } from './helpers';

describe('Deactivation', () => {
  it('stops the engine host process and leaves none behind', async function () {
    this.timeout(30_000);
    const api = await getApi();
    await waitForEngine(api);
    const pid = api._testing.controller.enginePid!;
    assert.ok(isAlive(pid));
    // The same module instance VS Code loaded (require cache), so this is the real deactivate().
    const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
    const main = require(path.join(ext.extensionPath, 'dist', 'extension.js')) as { deactivate(): Promise<void> };
    const started = Date.now();
    await main.deactivate();
    await waitFor(`engine host ${pid} to exit`, () => !isAlive(pid), 10_000);
    assert.ok(Date.now() - started < 10_000);
    assert.equal(api._testing.controller.state, 'off');
  });
});
