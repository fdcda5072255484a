// The Fleet view in a real VS Code (code-server + Chromium, see test/vscode/codeServer.ts): two
// headless engines share a real PostgreSQL server (Debian's, started here in a temporary folder,
// test/unit/support/postgres.ts); the window monitors one of them (engineMonitor.remote.url). The
// Fleet view appears because /status lists two engines, shows each by host and pid with the one
// this window talks to first, and says "lost" once the other engine is killed -9 and its lease
// runs out.
//
// Needs a build (`npm run build`), code-server (`bash test/vscode/setup-code-server.sh`) and
// PostgreSQL (`apt-get install postgresql`; missing under CI=true it fails).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Locator } from 'playwright-core';
import type { StatusResponse } from '../../src/shared/api';
import { serve, type ServeProcess } from '../unit/support/cli';
import { startPostgresOrSkip, type PostgresServer } from '../unit/support/postgres';
import { TempWorkspace } from '../unit/support/workspace';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, screenshot, type Workbench, viewPane } from '../vscode/codeServer';
import { getJson, waitUntil } from '../vscode/engineProbe';

/** Short, so the killed engine is "lost" within seconds rather than the default 30. */
const LEASE_MS = '3000';

async function rows(view: Locator): Promise<{ label: string; description: string }[]> {
  return view.locator('.monaco-list-row').evaluateAll((els) =>
    els.map((el) => ({
      label: el.querySelector('.label-name')?.textContent?.trim() ?? '',
      description: el.querySelector('.label-description')?.textContent?.trim() ?? '',
    })),
  );
}

describe('Fleet view (code-server, two engines on a real PostgreSQL)', function () {
  this.timeout(300_000);
  let pg: PostgresServer | undefined;
  let ws: TempWorkspace | undefined;
  let folder: string | undefined;
  const engines: ServeProcess[] = [];
  let wb: Workbench | undefined;

  before(async function () {
    assertUiBuild();
    pg = await startPostgresOrSkip(this);
    const url = pg!.createDatabase('fleet_ui');
    ws = new TempWorkspace('engine-fleet-ui-');
    mkdirSync(path.join(ws.folder, '.engine', 'queue-b'), { recursive: true });
    for (const [i, own] of [[], ['--queue-dir', '.engine/queue-b']].entries()) {
      engines.push(await serve(['--workspace', ws.folder, '--storage', `${ws.storage}-${i}`, '--store', url, '--lease-ms', LEASE_MS, '--poll-interval', '200', ...own], 60_000));
    }
    ws.enqueue('work.json', Array.from({ length: 6 }, (_, i) => ({ id: `work-${i}`, command: 'true' })));
    // The window's own folder has no queue: in remote mode it starts no engine of its own anyway.
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-fleet-ui-'));
    wb = await openWorkbench({ folder, extensionDevelopmentPath: REPO_ROOT, userSettings: { 'engineMonitor.remote.url': engines[0].url } });
  });

  after(async function () {
    await wb?.close();
    for (const e of engines) e.child.kill('SIGTERM');
    await Promise.all(engines.map((e) => e.exited));
    pg?.stop();
    ws?.dispose();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('lists both engines, this window\'s first, and shows the killed one as lost', async () => {
    const page = wb!.page;
    const status = await waitUntil('/status to list two engines', async () => {
      const s = await getJson<StatusResponse>(`${engines[0].url}/status`);
      return (s.fleet?.length ?? 0) === 2 && s;
    }, 60_000);
    const self = status.fleet!.find((e) => e.engineId === status.engine.engineId)!;
    const other = status.fleet!.find((e) => e.engineId !== status.engine.engineId)!;

    await page.locator('.part.activitybar .action-item a[aria-label^="Engine Monitor"], .part.activitybar .action-item[aria-label^="Engine Monitor"]').first().click();
    const fleet = viewPane(page, 'Fleet');
    // Give the Fleet view room: collapse the views above it that list the most.
    for (const name of ['Logs', 'Items', 'Status']) {
      const header = viewPane(page, name).locator('.pane-header');
      if ((await header.count()) > 0 && (await header.getAttribute('aria-expanded')) === 'true') await header.click();
    }
    const header = fleet.locator('.pane-header');
    await header.waitFor({ timeout: 60_000 });
    if ((await header.getAttribute('aria-expanded')) !== 'true') await header.click();

    const before = await waitUntil('two engines in the Fleet view', async () => {
      const r = await rows(fleet);
      return r.length === 2 && r;
    }, 60_000);
    assert.equal(before[0].label, `${self.host} · pid ${self.pid} (this engine)`, 'the engine this window talks to comes first');
    assert.equal(before[1].label, `${other.host} · pid ${other.pid}`);
    for (const r of before) assert.match(r.description, /^running · \d+ running · heartbeat /);

    const victim = engines.find((e) => e.child.pid === other.pid);
    assert.ok(victim, `the other engine (pid ${other.pid}) is one this test started`);
    victim.child.kill('SIGKILL');
    const after = await waitUntil('the killed engine shown as lost', async () => {
      const r = await rows(fleet);
      return r.length === 2 && r[1].description.startsWith('lost · last heartbeat') && r;
    }, 60_000);
    assert.equal(after[1].label, `${other.host} · pid ${other.pid}`);
    assert.match(after[0].description, /^running · /, 'this window\'s engine is still running');
    assert.match((await header.textContent()) ?? '', /1 of 2 live/, 'the view says how many engines are live');

    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    console.log(`      screenshot: ${await screenshot(page, 'fleet-view-lost-engine')}`);
  });
});
