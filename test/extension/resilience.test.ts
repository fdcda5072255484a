// The engine host's life around the user: a crash is restarted, a taken port falls back to a free
// one, and a storage folder owned by another engine is attached to (and taken over when that
// engine goes away).
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { StatsResponse, StatusResponse } from '../../src/shared/api';
import { getApi, getJson, isAlive, waitFor, waitForEngine } from './helpers';

/** engineMonitor.server.port's default, as package.json declares it. */
const DEFAULT_PORT = 7411;

describe('Engine host resilience', () => {
  const config = () => vscode.workspace.getConfiguration('engineMonitor');

  it('restarts the engine host after it crashes, losing no item', async function () {
    this.timeout(60_000);
    const api = await getApi();
    await waitForEngine(api);
    const before = (await getJson<StatsResponse>(api, '/stats')).overview;
    const pid = api._testing.controller.enginePid!;
    process.kill(pid, 'SIGKILL');
    await waitFor('the engine to be reported down', () => !api._testing.model.available, 10_000);
    await waitFor('a new engine host', () => {
      const p = api._testing.controller.enginePid;
      return p !== undefined && p !== pid && api._testing.model.available;
    }, 30_000);
    assert.equal(api._testing.controller.state, 'running');
    const after = (await getJson<StatsResponse>(api, '/stats')).overview;
    assert.ok(after.total >= before.total, `no item lost (${before.total} → ${after.total})`);
  });

  it('uses a free port when the configured one is taken', async function () {
    this.timeout(60_000);
    const api = await getApi();
    const oldUrl = await waitForEngine(api);
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const taken = (blocker.address() as net.AddressInfo).port;
    let fallbackPid: number | undefined;
    try {
      await config().update('server.port', taken, vscode.ConfigurationTarget.Workspace);
      const url = await waitFor('the engine on another port', () => {
        const u = api._testing.model.available ? api.baseUrl() : undefined;
        return u && u !== oldUrl && !u.endsWith(`:${taken}`) && u;
      }, 30_000);
      fallbackPid = api._testing.controller.enginePid;
      const status = await getJson<StatusResponse>(api, '/status');
      assert.equal(status.server.url.replace(/\/$/, ''), url);
    } finally {
      blocker.close();
      await config().update('server.port', undefined, vscode.ConfigurationTarget.Workspace);
    }
    // The setting's removal restarts the host once more. Where it lands depends on the machine: the
    // default port when it is free, another free port when the user's own engine holds it.
    await waitFor('the engine restarted on the default setting', () => {
      const pid = api._testing.controller.enginePid;
      return api._testing.model.available && pid !== undefined && pid !== fallbackPid;
    }, 30_000);
    const back = api.baseUrl() ?? '';
    if (oldUrl.endsWith(`:${DEFAULT_PORT}`)) assert.equal(back, oldUrl);
    else assert.ok(back !== '' && !back.endsWith(`:${taken}`), `not on the port that was taken (${back})`);
  });

  it('attaches to the engine that owns the storage folder, controls it, and takes over when it goes away', async function () {
    this.timeout(90_000);
    const api = await getApi();
    await waitForEngine(api);
    const { controller, host, context } = api._testing;
    const storage = context.storageUri!.fsPath;
    const folder = vscode.workspace.workspaceFolders![0].uri.fsPath;

    // Free the storage folder, then let a headless engine (as another window would) take it.
    await host.shutdown();
    const cli = path.join(vscode.extensions.getExtension('engine-monitor.engine-monitor')!.extensionPath, 'dist', 'cli.js');
    const other = spawn(process.execPath, [cli, 'serve', '--workspace', folder, '--storage', storage, '--port', '0', '--quiet'], {
      env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      other.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const otherUrl = await waitFor('the headless engine', () => /listening on (\S+)/.exec(out)?.[1], 30_000);

      await vscode.commands.executeCommand('engineMonitor.restart');
      // Its start is refused (the folder is locked): it attaches to the owner over its control
      // connection, as to any engine another window started, and controls it as its own.
      await waitFor('this window to attach', () => controller.enginePid === other.pid && controller.state === 'running' && api._testing.model.available, 30_000);
      assert.equal(api.baseUrl(), otherUrl.replace(/\/$/, ''));
      await controller.control({ command: 'stop' });
      await waitFor('the owner to stop launching', async () => (await getJson<StatusResponse>(api, '/status')).engine.state === 'stopped');
      await controller.control({ command: 'start' });

      // The owner goes away: this window starts its own engine on the freed storage folder.
      other.kill('SIGTERM');
      // A pid of its own, not merely "not the old owner's": between the old owner's connection
      // closing and the window hearing that it exited, the window has no pid at all while its
      // state still says running (this waited on `!== other.pid` alone and passed there, twice,
      // beside a run of the whole suite at load 8-12).
      await waitFor('this window to take over', () => {
        const pid = controller.enginePid;
        return pid !== undefined && pid !== other.pid && controller.state === 'running' && api._testing.model.available;
      }, 45_000);
      // Say which engine this window thought it had, and how it got there.
      const pid = controller.enginePid!;
      const mode = JSON.stringify((controller as unknown as { mode: unknown }).mode);
      assert.ok(isAlive(pid), `the engine this window took over with (pid ${pid}; the old owner ${other.pid}; mode ${mode}; ${api.baseUrl()}) is alive`);
    } finally {
      if (other.exitCode === null) other.kill('SIGKILL');
    }
  });
});
