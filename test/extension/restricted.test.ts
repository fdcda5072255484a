// Run by the second pass of test/extension/runInCodeServer.ts, with Workspace Trust on and the
// folder untrusted: the engine serves (views work) but launches nothing (state "restricted").
import * as assert from 'node:assert/strict';
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
