import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { StatusResponse } from '../../src/shared/api';
import { getApi, getJson, isAlive, waitFor, waitForEngine } from './helpers';

describe('Settings', () => {
  const config = () => vscode.workspace.getConfiguration('engineMonitor');

  after(async function () {
    this.timeout(60_000);
    await config().update('engine.pollIntervalMs', undefined, vscode.ConfigurationTarget.Workspace);
    // The reset restarts the host too: let it finish before the next suite.
    const api = await getApi();
    await waitFor('the default poll interval back', async () =>
      api._testing.model.available && (await getJson<StatusResponse>(api, '/status')).engine.pollIntervalMs === 2000, 45_000);
  });

  it('a changed poll interval reaches the engine (restarting its host)', async function () {
    this.timeout(90_000);
    const api = await getApi();
    await waitForEngine(api);
    const oldPid = api._testing.controller.enginePid!;
    const current = (await getJson<StatusResponse>(api, '/status')).engine.pollIntervalMs;
    const wanted = current === 1500 ? 1700 : 1500;
    await config().update('engine.pollIntervalMs', wanted, vscode.ConfigurationTarget.Workspace);
    await waitFor(`/status pollIntervalMs = ${wanted}`, async () => {
      if (!api._testing.model.available) return false;
      return (await getJson<StatusResponse>(api, '/status')).engine.pollIntervalMs === wanted;
    }, 60_000);
    const newPid = api._testing.controller.enginePid!;
    assert.notEqual(newPid, oldPid, 'a new engine host process');
    await waitFor(`old engine host ${oldPid} to exit`, () => !isAlive(oldPid), 10_000);
  });

  it('a setting the host does not read (autoStart) does not restart it', async () => {
    const api = await getApi();
    await waitForEngine(api);
    const pid = api._testing.controller.enginePid;
    await config().update('engine.autoStart', false, vscode.ConfigurationTarget.Workspace);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(api._testing.controller.enginePid, pid);
    await config().update('engine.autoStart', undefined, vscode.ConfigurationTarget.Workspace);
  });
});
