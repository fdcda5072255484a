// Last in the suite: deactivation (a reload, a closed window) detaches from the engine host and
// leaves it running, so attempts are never ended by the window going away; the test then ends the
// host itself (it would otherwise stop after engineMonitor.engine.keepAliveSeconds).
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { attachToHost } from '../../src/extension/hostConnection';
import { EXTENSION_ID, getApi, isAlive, waitFor, waitForEngine } from './helpers';

describe('Deactivation', () => {
  it('detaches: the engine host runs on, with no window attached, until its keep-alive or a stop', async function () {
    this.timeout(30_000);
    const api = await getApi();
    await waitForEngine(api);
    const pid = api._testing.controller.enginePid!;
    const storage = api._testing.context.storageUri!.fsPath;
    assert.ok(isAlive(pid));
    // The same module instance VS Code loaded (require cache), so this is the real deactivate().
    const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
    const main = require(path.join(ext.extensionPath, 'dist', 'extension.js')) as { deactivate(): Promise<void> };
    const started = Date.now();
    await main.deactivate();
    assert.ok(Date.now() - started < 2_000, `deactivate() took ${Date.now() - started} ms: it must only detach`);
    assert.equal(api._testing.controller.state, 'off');
    assert.ok(isAlive(pid), 'the engine host ended with the window');

    // Attaching as the next window would: the same host, and this window no longer counted. The
    // host learns of the closed connection on its own event loop, so a connection opened at once
    // may still see it: attach again (closing the extra connection) until the count says one.
    let counts: number[] = [];
    const next = await waitFor('the host to count the deactivated window gone', async () => {
      const attempt = await attachToHost(storage, 'lifecycle test');
      assert.equal(attempt.kind, 'attached', attempt.kind === 'none' ? attempt.why : '');
      if (attempt.kind !== 'attached') return undefined;
      counts = [...counts, attempt.connection.info.attached];
      if (attempt.connection.info.attached === 1) return attempt;
      attempt.connection.close();
      return undefined;
    }, 10_000).catch(() => assert.fail(`the deactivated window is still attached (windows counted: ${counts.join(', ')})`));
    assert.equal(next.connection.info.pid, pid);
    assert.equal(next.connection.info.keepAliveSeconds, vscode.workspace.getConfiguration('engineMonitor').get('engine.keepAliveSeconds'));

    // Stop it as Stop Engine's "fresh process" path does: it exits and leaves nothing behind.
    await next.connection.shutdown(false);
    await waitFor(`engine host ${pid} to exit`, () => !isAlive(pid), 15_000);
  });
});
