// A window reload does not touch the engine's work, in a real VS Code (code-server + Chromium, see
// test/vscode/codeServer.ts): with a 20 s item running, "Developer: Reload Window" leaves the same
// engine host process running; the reloaded window attaches to it; the attempt succeeds as the only
// attempt, a ready service stays ready in the same attempt, and nothing is recorded interrupted. Screenshots land in test-results/screenshots/reload-*.png.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ItemDetail, LogEntry } from '../../src/shared/api';
import { attachToHost } from '../../src/extension/hostConnection';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, screenshot, waitForWorkbench, type Workbench } from '../vscode/codeServer';
import { findEndpointFile, getJson, readEndpoint, waitUntil } from '../vscode/engineProbe';

/** A port nothing listens on now (the kernel's choice, released at once). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Windows attached to the engine host now, not counting the probe's own attachment. */
async function windowsAttached(storage: string): Promise<{ pid: number; windows: number } | undefined> {
  const r = await attachToHost(storage, 'reload test probe');
  if (r.kind !== 'attached') return undefined;
  r.connection.close();
  return { pid: r.connection.info.pid, windows: r.connection.info.attached - 1 };
}

describe('Reload: the engine outlives the window (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;

  before(async function () {
    assertUiBuild();
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-reload-ui-'));
    const queue = path.join(folder, '.engine', 'queue');
    mkdirSync(queue, { recursive: true });
    // A deploy: 20 s of work in steps, printing each, so a cut would show in its output too.
    const work = 'let n = 0; const t = setInterval(() => { console.log(`step ${++n}`); if (n === 20) { clearInterval(t); console.log("deployed"); } }, 1000)';
    writeFileSync(path.join(queue, 'deploy.json'), JSON.stringify({ id: 'deploy', name: 'Deploy', command: process.execPath, args: ['-e', work] }));
    // A service, ready once it listens (on a port the kernel picks; it writes it where the probe looks).
    const port = await freePort();
    const listen = `require('net').createServer((s) => s.end()).listen(${port}, '127.0.0.1')`;
    writeFileSync(path.join(queue, 'svc.json'), JSON.stringify({ id: 'svc', name: 'Service', command: process.execPath, args: ['-e', listen], service: true, ready: { port } }));
    wb = await openWorkbench({ folder, extensionDevelopmentPath: REPO_ROOT, userSettings: { 'engineMonitor.server.port': 0 } });
  });

  after(async function () {
    // Closing the workbench ends the engine host too (codeServer.ts: it outlives VS Code by design).
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('same engine pid before and after, the running attempt succeeds as attempt 1, nothing interrupted', async () => {
    const page = wb.page;
    const root = wb.server.userDataDir;
    const url = await waitUntil('the engine endpoint', async () => readEndpoint(root)?.url, 60_000);
    const storage = path.dirname(findEndpointFile(root)!);
    const before = readEndpoint(root)!.pid;
    await waitUntil('the deploy to run', async () => (await getJson<ItemDetail>(`${url}/items/deploy`)).state === 'running', 30_000);
    const ready = await waitUntil('the service to be ready', async () => {
      const d = await getJson<ItemDetail>(`${url}/items/svc`);
      return d.state === 'ready' && d;
    }, 30_000);
    // The host starts launching before the window that started it has attached (it waits for
    // control.json, then connects): wait for the attachment rather than expect it at once.
    await waitUntil('the window to be attached to the engine', async () => (await windowsAttached(storage))?.windows === 1, 30_000);

    await page.evaluate(() => ((window as unknown as { beforeReload?: boolean }).beforeReload = true));
    const reloadAt = Date.now();
    await runCommand(page, 'Developer: Reload Window');
    await waitUntil('the page to reload', async () => !(await page.evaluate(() => (window as unknown as { beforeReload?: boolean }).beforeReload).catch(() => true)), 60_000);
    await waitForWorkbench(page);
    // The reloaded window attaches to the same host (its old attachment ended with its extension host).
    const attached = await waitUntil('the reloaded window to attach', async () => {
      const a = await windowsAttached(storage);
      return a && a.windows === 1 && a;
    }, 60_000);
    console.log(`      reload → attached again: ${Date.now() - reloadAt} ms`);
    console.log(`      screenshot: ${await screenshot(page, 'reload-attached')}`);
    assert.equal(attached.pid, before, 'a new engine host after the reload');
    assert.equal(readEndpoint(root)?.pid, before);

    const detail = await waitUntil('the deploy to finish', async () => {
      const d = await getJson<ItemDetail>(`${url}/items/deploy`);
      return d.outcome !== 'pending' && d;
    }, 90_000);
    console.log(`      screenshot: ${await screenshot(page, 'reload-finished')}`);
    assert.equal(detail.outcome, 'launched', `the deploy did not succeed: ${JSON.stringify(detail)}`);
    assert.equal(detail.attempts.length, 1, 'the deploy was run again after the reload');
    const logs = await getJson<LogEntry[]>(`${url}/logs?limit=1000`);
    assert.deepEqual(logs.filter((e) => e.action === 'launch_interrupted').map((e) => e.message), []);
    assert.equal(readEndpoint(root)?.pid, before, 'the engine host changed while the deploy ran');
    const svc = await getJson<ItemDetail>(`${url}/items/svc`);
    assert.equal(svc.state, 'ready', 'the service is still ready after the reload');
    assert.deepEqual(svc.attempts.map((a) => [a.attempt, a.readyAt]), [[1, ready.attempts[0].readyAt]], 'the reload did not restart the service');
  });
});
