import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import * as path from 'node:path';
import type { HealthResponse } from '../../src/shared/api';
import { EXTENSION_ID, getApi, getJson, isAlive, waitForEngine } from './helpers';

describe('Activation', () => {
  it('activates in a workspace with a queue folder and starts the engine', async function () {
    this.timeout(90_000);
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, 'extension is installed');
    const api = await getApi();
    assert.ok(ext.isActive);
    const t0 = Date.now();
    const url = await waitForEngine(api);
    console.log(`      activate() took ${api._testing.activationMs} ms; the engine answered ${Date.now() - t0} ms later`);
    assert.ok(api._testing.activationMs < 1000, 'activate() does not wait for the engine');
    assert.match(url, /^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):\d+$/);
    const health = await getJson<HealthResponse>(api, '/health');
    assert.equal(health.engine, 'launch-engine');
    assert.equal(health.checks.database, 'ok');
  });

  it('registers every command contributed in package.json', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
    const contributed = (ext.packageJSON.contributes.commands as { command: string }[]).map((c) => c.command);
    assert.ok(contributed.includes('engineMonitor.showStatus'));
    const registered = new Set(await vscode.commands.getCommands(true));
    const missing = contributed.filter((c) => !registered.has(c));
    assert.deepEqual(missing, [], `contributed but not registered: ${missing.join(', ')}`);
    // And every menu entry points at a contributed command.
    const menus = ext.packageJSON.contributes.menus as Record<string, { command: string }[]>;
    for (const [menu, entries] of Object.entries(menus)) {
      for (const e of entries) assert.ok(contributed.includes(e.command), `${menu} uses unknown command ${e.command}`);
    }
  });

  it('runs the engine in a separate process', async () => {
    const api = await getApi();
    await waitForEngine(api);
    const pid = api._testing.controller.enginePid;
    assert.ok(pid, 'the engine host has a pid');
    assert.notEqual(pid, process.pid, 'the engine does not run in the extension host process');
    assert.ok(isAlive(pid), `engine host process ${pid} is alive`);
    const status = await getJson<{ server: { url: string } }>(api, '/status');
    assert.equal(status.server.url.replace(/\/$/, ''), api.baseUrl());
  });

  it('gives integrated terminals ENGINE_MONITOR_URL, the host\'s terminal token and engine-monitor on PATH', async () => {
    const api = await getApi();
    const url = await waitForEngine(api);
    const env = api._testing.context.environmentVariableCollection;
    assert.equal(env.get('ENGINE_MONITOR_URL')?.value, url);
    // No token configured: the one the engine host tells attached windows, for their terminals only.
    const terminalToken = api._testing.host.info?.terminalToken;
    assert.ok(terminalToken);
    assert.equal(env.get('ENGINE_MONITOR_TOKEN')?.value, terminalToken);
    const launcher = api._testing.terminalEnv.launcher;
    assert.ok(launcher, 'the launcher was written');
    assert.equal(env.get('PATH')?.type, vscode.EnvironmentVariableMutatorType.Prepend);
    assert.ok(env.get('PATH')?.value.startsWith(path.dirname(launcher)), env.get('PATH')?.value);
  });
});
