// Remote mode: with engineMonitor.remote.url set, this window stops forking its
// own engine host and monitors a headless engine started elsewhere, through the same client, so
// the views, the status bar and the terminals' environment follow that engine. Its token lives in
// SecretStorage and is really required: a wrong one is a clear error state. Control commands go
// over HTTP, which an engine without a token refuses with a clear message.
// Clearing the setting brings this window's own engine back, without a reload.
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { HealthResponse, ItemDetail, StatsResponse } from '../../src/shared/api';
import { EXTENSION_ID, getApi, isAlive, nodeById, showViews, viewNodes, waitFor, waitForEngine } from './helpers';

const TOKEN = 'remote-test-token-3f9a';
const SECRET_KEY = 'engineMonitor.remote.token';

interface Headless {
  child: ChildProcess;
  url: string;
  dir: string;
}

/** `node dist/cli.js serve` on its own workspace and storage, any free port, with a token (none: ''). */
async function startHeadless(token = TOKEN): Promise<Headless> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-remote-'));
  const workspace = path.join(dir, 'workspace');
  const queue = path.join(workspace, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  const node = process.execPath;
  const items = [
    { id: 'remote-ok-1', name: 'Remote OK 1', command: node, args: ['-e', '0'] },
    { id: 'remote-ok-2', name: 'Remote OK 2', command: node, args: ['-e', '0'] },
    { id: 'remote-broken', name: 'Remote broken', command: node, args: ['-e', 'process.exit(3)'], maxAttempts: 1 },
    { id: 'remote-later', name: 'Remote later', command: node, args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' },
    { id: 'remote-sleep', name: 'Remote sleep', command: 'sleep', args: ['300'], maxAttempts: 3 },
  ];
  writeFileSync(path.join(queue, 'remote.json'), JSON.stringify(items));
  const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
  const cli = path.join(ext.extensionPath, 'dist', 'cli.js');
  const tokenArgs = token ? ['--token', token] : [];
  const child = spawn(node, [cli, 'serve', '--workspace', workspace, '--storage', path.join(dir, 'state'), '--port', '0', ...tokenArgs, '--poll-interval', '300', '--quiet'], {
    // In desktop VS Code process.execPath is Electron; this makes it a plain Node.
    env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the headless engine did not start: ${out}`)), 30_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /^listening on (http:\/\/\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the headless engine exited (${code}): ${out}`));
    });
  });
  return { child, url, dir };
}

async function stopHeadless(h: Headless | undefined): Promise<void> {
  if (!h) return;
  h.child.kill('SIGTERM');
  await new Promise((r) => (h.child.exitCode !== null ? r(undefined) : h.child.once('exit', r)));
  rmSync(h.dir, { recursive: true, force: true });
}

async function remoteGet<T>(h: Headless, pathAndQuery: string, token = TOKEN): Promise<{ status: number; body: T }> {
  const res = await fetch(h.url + pathAndQuery, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  return { status: res.status, body: (await res.json()) as T };
}

describe('Remote mode (engineMonitor.remote.url)', function () {
  this.timeout(120_000);
  const config = () => vscode.workspace.getConfiguration('engineMonitor');
  let headless: Headless | undefined;
  let tokenless: Headless | undefined;

  before(async () => {
    headless = await startHeadless();
    // Its own queue settles: two launched, one failed, one scheduled for 2099, one running.
    await waitFor('the headless engine to launch its queue', async () => {
      const { overview } = (await remoteGet<StatsResponse>(headless!, '/stats')).body;
      return overview.launched === 2 && overview.failed === 1 && overview.pending === 2 && overview.running === 1;
    }, 60_000);
  });

  after(async function () {
    this.timeout(60_000);
    const api = await getApi();
    await config().update('remote.url', undefined, vscode.ConfigurationTarget.Workspace);
    await api._testing.context.secrets.delete(SECRET_KEY);
    await stopHeadless(headless);
    await stopHeadless(tokenless);
    // The next suite needs this window's own engine back.
    await waitFor('the local engine back', () => api._testing.controller.state === 'running' && api._testing.model.available, 45_000);
  });

  it('requires the token: without it, or with a wrong one, the status bar and views say it was refused', async () => {
    assert.equal((await remoteGet(headless!, '/stats', '')).status, 401, 'the headless engine really wants a token');
    const api = await getApi();
    await waitForEngine(api);
    const { controller, client, statusBar } = api._testing;
    const localPid = controller.enginePid!;
    assert.ok(isAlive(localPid));

    await api._testing.context.secrets.store(SECRET_KEY, 'not-the-token');
    await config().update('remote.url', headless!.url, vscode.ConfigurationTarget.Workspace);

    await waitFor('remote mode', () => controller.state === 'remote');
    // This window's own engine host is gone: a remote engine replaces it.
    await waitFor(`the local engine host ${localPid} to exit`, () => !isAlive(localPid), 15_000);
    assert.equal(controller.enginePid, undefined);
    assert.equal(api.baseUrl(), headless!.url);

    const problem = await waitFor('the refused token to be noticed', () => client.problem?.kind === 'unauthorized' && client.problem);
    assert.match(problem.message, /token was refused \(HTTP 401/);
    await waitFor('the status bar to say the token was rejected', () => statusBar.text.includes('Engine token rejected'));
    assert.equal(api._testing.model.available, false);
    // The views show nothing (their welcome text offers Set Remote Engine Token…).
    assert.deepEqual(viewNodes(api, 'stats'), []);
  });

  it('monitors the remote engine once the right token is in SecretStorage: views and status bar show its /stats', async () => {
    const api = await getApi();
    const { controller, statusBar, context } = api._testing;
    await context.secrets.store(SECRET_KEY, TOKEN);
    await waitFor('the remote engine to be connected', () => api._testing.model.available, 20_000);
    assert.equal(controller.state, 'remote');
    assert.equal(api.baseUrl(), headless!.url);
    await showViews(api);

    const { overview } = (await remoteGet<StatsResponse>(headless!, '/stats')).body;
    await waitFor('the Stats view to show the remote /stats', () =>
      (['total', 'launched', 'pending', 'failed', 'totalLaunches', 'totalFailed'] as const).every(
        (k) => nodeById(api, 'stats', `stats.${k}`)?.description === String(overview[k]),
      ));
    const health = (await remoteGet<HealthResponse>(headless!, '/health')).body;
    await waitFor('the Health view to show the remote /health', () => nodeById(api, 'health', 'health.status')?.label === 'Healthy' && health.status === 'healthy');
    await waitFor('the status bar to show the remote pending count', () => statusBar.text.includes(`Engine healthy · ${overview.pending} pending`));
    await waitFor('the Items view to list the remote items', () =>
      ['remote-ok-1', 'remote-ok-2', 'remote-broken', 'remote-later'].every((id) => viewNodes(api, 'items').some((n) => n.item?.id === id)), 20_000);

    // Terminals reach the same engine; the token is not a setting anywhere.
    const env = context.environmentVariableCollection;
    assert.equal(env.get('ENGINE_MONITOR_URL')?.value, headless!.url);
    assert.equal(env.get('ENGINE_MONITOR_TOKEN')?.value, TOKEN);
    assert.ok(!JSON.stringify(config()).includes(TOKEN), 'the token is in no setting');
  });

  it('maps the remote engine\'s items to a local queue file at the same path relative to the workspace folder: its lenses show their states', async () => {
    const api = await getApi();
    await waitFor('the remote engine to be connected', () => api._testing.model.available, 20_000);
    const relPath = path.join('.engine', 'queue', 'remote.json');
    const local = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, relPath);
    copyFileSync(path.join(headless!.dir, 'workspace', relPath), local);
    try {
      const doc = await vscode.workspace.openTextDocument(local);
      await vscode.window.showTextDocument(doc);
      const titles = await waitFor('lenses with the remote states', async () => {
        const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', doc.uri)) ?? [];
        const states = lenses.map((l) => l.command?.title ?? '').filter((t) => / · \d+\/\d+/.test(t)).map((t) => t.replace(/^\$\([^)]+\) /, '').split(' · ')[0]);
        return states.length === 5 && states.join(',') === 'launched,launched,failed,scheduled,running' && states;
      }, 20_000);
      assert.deepEqual(titles, ['launched', 'launched', 'failed', 'scheduled', 'running']);
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    } finally {
      rmSync(local, { force: true });
    }
  });

  it('controls the remote engine over HTTP with its token: Cancel ends a running item there', async () => {
    const api = await getApi();
    const { controller } = api._testing;
    assert.equal((await remoteGet<ItemDetail>(headless!, '/items/remote-sleep')).body.state, 'running');
    // As the Items view's inline action invokes it: with the tree node.
    const node = await waitFor('the remote running item in the Items view', () => viewNodes(api, 'items').find((n) => n.item?.id === 'remote-sleep'));
    await vscode.commands.executeCommand('engineMonitor.cancelItem', node);
    const detail = await waitFor('remote-sleep to be cancelled on the remote engine', async () => {
      const d = (await remoteGet<ItemDetail>(headless!, '/items/remote-sleep')).body;
      return d.outcome === 'failed' && d;
    }, 20_000);
    assert.equal(detail.error, 'cancelled');
    assert.equal(detail.attempts.length, 1);
    // Remove Item goes to the remote engine too (DELETE /items/{id} with the token).
    await vscode.commands.executeCommand('engineMonitor.removeItem', node);
    assert.equal((await remoteGet<ItemDetail>(headless!, '/items/remote-sleep')).status, 404, 'removed on the remote engine');
    // Restarting the remote process is not an HTTP action: said, not attempted.
    await assert.rejects(controller.restart(), (err: Error) => {
      // (By name: this suite is a separate bundle with its own copy of the class.)
      assert.equal(err.name, 'ControlUnavailableError');
      assert.match(err.message, /remote engine at http:\/\/127\.0\.0\.1:\d+/);
      return true;
    });
  });

  it('without a token on the remote engine, control is refused with a message saying that it needs one', async () => {
    const api = await getApi();
    const { controller } = api._testing;
    tokenless = await startHeadless('');
    await config().update('remote.url', tokenless.url, vscode.ConfigurationTarget.Workspace);
    await waitFor('the token-less remote engine to be connected', () => api.baseUrl() === tokenless!.url && api._testing.model.available, 20_000);
    await waitFor('remote-sleep to run there', async () => (await remoteGet<ItemDetail>(tokenless!, '/items/remote-sleep', '')).body.state === 'running');

    await assert.rejects(controller.control({ command: 'cancelItem', itemId: 'remote-sleep' }), (err: Error) => {
      assert.equal(err.name, 'ControlNeedsTokenError');
      assert.match(err.message, /needs a token/);
      assert.match(err.message, /engineMonitor\.server\.token/);
      assert.match(err.message, /Set Remote Engine Token/);
      return true;
    });
    // The command reports it (a warning with "Set Remote Engine Token…") and does not throw.
    await vscode.commands.executeCommand('engineMonitor.cancelItem', 'remote-sleep');
    assert.equal((await remoteGet<ItemDetail>(tokenless, '/items/remote-sleep', '')).body.state, 'running', 'nothing was cancelled');
    await config().update('remote.url', headless!.url, vscode.ConfigurationTarget.Workspace);
    await waitFor('the first remote engine again', () => api.baseUrl() === headless!.url && api._testing.model.available, 20_000);
  });

  it('refuses a remote URL that is not http(s), saying why', async () => {
    const api = await getApi();
    const { controller, statusBar } = api._testing;
    await config().update('remote.url', 'ftp://example.invalid/', vscode.ConfigurationTarget.Workspace);
    await waitFor('the failed state', () => controller.state === 'failed');
    assert.match(controller.lastError ?? '', /must start with http:\/\/ or https:\/\//);
    assert.equal(api.baseUrl(), undefined);
    await waitFor('the status bar to say failed', () => statusBar.text.includes('Engine failed'));
  });

  it('runs this window\'s own engine again when the setting is cleared, without a reload', async () => {
    const api = await getApi();
    const { controller } = api._testing;
    await config().update('remote.url', undefined, vscode.ConfigurationTarget.Workspace);
    await waitFor('the local engine', () => controller.state === 'running' && api._testing.model.available, 45_000);
    assert.notEqual(api.baseUrl(), headless!.url);
    assert.ok(isAlive(controller.enginePid!));
    assert.equal(api._testing.context.environmentVariableCollection.get('ENGINE_MONITOR_URL')?.value, api.baseUrl());
    // Not the remote engine's token: the terminal token of this window's own engine host.
    const terminalToken = api._testing.host.info?.terminalToken;
    assert.ok(terminalToken, 'the host tells its terminal token');
    assert.equal(api._testing.context.environmentVariableCollection.get('ENGINE_MONITOR_TOKEN')?.value, terminalToken);
  });
});
