// The views show what the HTTP API serves: each test reads an endpoint the way a script would and
// compares it with the nodes the tree providers return. The engine keeps working meanwhile, so
// comparisons retry until a read of the endpoint and of the view agree.
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { HealthResponse, LogEntry, StatsResponse, StatusResponse } from '../../src/shared/api';
import { writeQueueItem } from '../../src/extension/queue';
import { nodeById, getApi, getJson, viewNodes, showViews, sleep, waitFor, waitForEngine } from './helpers';
import { ITEM_GROUPS } from '../../src/extension/engineModel';
import { NodeTreeProvider as NodeTreeProviderClass, type NodeTreeProvider, type TreeNode } from '../../src/extension/views/nodeTree';

const COUNTERS = ['total', 'launched', 'pending', 'failed', 'totalLaunches', 'totalFailed'] as const;

describe('Tree views', () => {
  before(async function () {
    this.timeout(90_000);
    const api = await getApi();
    await waitForEngine(api);
    await showViews(api);
  });

  it('Stats view shows the /stats counters', async () => {
    const api = await getApi();
    await waitFor('the Stats view to match /stats', async () => {
      const { overview } = await getJson<StatsResponse>(api, '/stats');
      for (const key of COUNTERS) {
        const node = nodeById(api, 'stats', `stats.${key}`);
        if (node?.description !== String(overview[key])) return false;
      }
      const poll = nodeById(api, 'stats', 'stats.lastPollAt');
      return !!poll && overview.lastPollAt !== null && poll.description !== 'never';
    });
    const { overview } = await getJson<StatsResponse>(api, '/stats');
    assert.equal(overview.total, overview.launched + overview.pending + overview.failed);
  });

  it('Health view shows the /health status and each check', async () => {
    const api = await getApi();
    await waitFor('the Health view to match /health', async () => {
      const h = await getJson<HealthResponse>(api, '/health');
      const status = nodeById(api, 'health', 'health.status');
      const db = nodeById(api, 'health', 'health.check.database');
      const engine = nodeById(api, 'health', 'health.check.engine');
      return (
        status?.label.toLowerCase() === h.status &&
        db?.description === h.checks.database &&
        engine?.description === h.checks.engine &&
        status.icon !== undefined
      );
    });
  });

  it('Status view has the engine, scanner (with sources), last launch, database and server groups', async () => {
    const api = await getApi();
    const roots = api._testing.views.providers.status.getRoots().map((n) => n.id);
    for (const g of ['status.engine', 'status.scanner', 'status.lastLaunch', 'status.database', 'status.server']) {
      assert.ok(roots.includes(g), `missing group ${g} in ${roots.join(', ')}`);
    }
    const status = await getJson<StatusResponse>(api, '/status');
    const sources = nodeById(api, 'status', 'status.scanner.sources');
    assert.equal(sources?.children?.length ?? 0, status.scanner.sources.length);
    assert.equal(nodeById(api, 'status', 'status.server.url')?.description, status.server.url);
    assert.equal(nodeById(api, 'status', 'status.engine.pollInterval')?.description, `${status.engine.pollIntervalMs} ms`);
  });

  it('Logs view lists /logs newest first, with escaped Markdown tooltips', async () => {
    const api = await getApi();
    await waitFor('the Logs view to start with the newest /logs entry', async () => {
      const [newest] = await getJson<LogEntry[]>(api, '/logs?limit=1');
      const first = api._testing.views.providers.logs.getRoots()[0];
      return newest && first?.id === `log.${newest.id}`;
    });
    const nodes = api._testing.views.providers.logs.getRoots();
    const ids = nodes.map((n) => Number(n.id.slice('log.'.length)));
    assert.deepEqual(ids, [...ids].sort((a, b) => b - a), 'newest first');
    const ids2 = new Set(viewNodes(api, 'logs').map((n) => n.id));
    assert.equal(ids2.size, nodes.length, 'ids are unique');
    const provider = api._testing.views.providers.logs;
    for (const n of nodes) {
      assert.ok(n.icon, `${n.id} has an icon`);
      assert.equal(provider.getTreeItem(n).tooltip, undefined, 'the tooltip waits for a hover');
      const md = hoverTooltip(provider, n) as { isTrusted?: unknown; supportHtml?: boolean };
      assert.ok(md instanceof vscode.MarkdownString, `${n.id} resolves a Markdown tooltip`);
      assert.ok(!md.isTrusted, 'tooltips are not trusted Markdown');
      assert.ok(!md.supportHtml, 'tooltips do not render HTML');
    }
  });

  it('Logs filter narrows the view and shows in its description', async () => {
    const api = await getApi();
    const { logs, views } = api._testing;
    await logs.setFilter({ actions: ['item_discovered'] });
    try {
      assert.match(views.views.logs.description ?? '', /item_discovered/);
      await waitFor('filtered log entries', () => logs.entries.length > 0);
      assert.ok(logs.entries.every((e) => e.action === 'item_discovered'));
      const expected = await getJson<LogEntry[]>(api, '/logs?action=item_discovered&limit=200');
      await waitFor('the filtered view to match /logs?action=item_discovered', () =>
        api._testing.views.providers.logs.getRoots().length === expected.length);
    } finally {
      await logs.setFilter({});
    }
    assert.equal(views.views.logs.description, undefined);
  });

  it('Items view groups items by state with the /stats counts; failed items offer Retry', async () => {
    const api = await getApi();
    await waitFor('the Items view to match /stats, once the demo has failed an item', async () => {
      const { overview } = await getJson<StatsResponse>(api, '/stats');
      const count = (g: string) => Number(nodeById(api, 'items', `items.${g}`)?.description ?? 0);
      return (
        overview.failed > 0 &&
        count('failed') === overview.failed &&
        count('launched') === overview.launched &&
        count('running') + count('waiting') + count('held') + count('blocked') === overview.pending
      );
    });
    const roots = api._testing.views.providers.items.getRoots().map((n) => n.id);
    const order = ITEM_GROUPS.map((g) => `items.${g}`).filter((id) => roots.includes(id));
    assert.deepEqual(roots, order, 'groups in a fixed order, empty ones hidden');
    const failed = nodeById(api, 'items', 'items.failed');
    assert.ok(failed?.children?.length, 'the demo has a failed item');
    for (const child of failed.children) {
      if (child.item) assert.equal(child.contextValue, 'item.failed', 'failed items offer Retry');
    }
    // Expanded by default: the failed items are what the user opens the view for.
    assert.equal(api._testing.views.providers.items.getTreeItem(failed).collapsibleState, vscode.TreeItemCollapsibleState.Expanded);
  });

  it('Items view shows a running item first, with its elapsed time ticking, then moves it to Failed', async function () {
    this.timeout(60_000);
    const api = await getApi();
    const queueDir = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue');
    // Runs long enough to be seen ticking, then fails by itself (exit 4, one attempt).
    await writeQueueItem(queueDir, { id: 'ticking', name: 'Sleeps, then fails', command: 'node', args: ['-e', 'setTimeout(() => process.exit(4), 6000)'], maxAttempts: 1 });
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    const node = await waitFor('the running item', () => nodeById(api, 'items', 'items.running.ticking'), 30_000);
    assert.equal(api._testing.views.providers.items.getRoots()[0].id, 'items.running', 'Running is the first group');
    assert.equal(node.contextValue, 'item.running');
    assert.match(node.description ?? '', /^running \d+ s · attempt 1\/1$/);
    const first = node.description;
    // The same node object (VS Code knows elements by identity) shows a later time.
    await waitFor('the elapsed time to move on', () => nodeById(api, 'items', 'items.running.ticking') === node && node.description !== first, 5_000);
    const seconds = (d: string | undefined) => Number(/running (\d+) s/.exec(d ?? '')?.[1]);
    assert.ok(seconds(node.description) > seconds(first), `${node.description} after ${first}`);
    const failedNode = await waitFor('the item in the Failed group', () => nodeById(api, 'items', 'items.failed.ticking'), 30_000);
    assert.equal(failedNode.contextValue, 'item.failed');
    assert.equal(nodeById(api, 'items', 'items.running.ticking'), undefined, 'no longer running');
  });

  it('Items view says why a blocked item waits ("waits for: …"), then runs it once its dependency launched', async function () {
    this.timeout(60_000);
    const api = await getApi();
    const queueDir = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue');
    await writeQueueItem(queueDir, { id: 'waits-on-prep', name: 'Waits on prep', command: 'node', args: ['-e', '0'], dependsOn: ['prep-step'] });
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    const node = await waitFor('the blocked item', () => nodeById(api, 'items', 'items.blocked.waits-on-prep'), 30_000);
    assert.equal(node.description, 'waits for: prep-step');
    const md = hoverTooltip(api._testing.views.providers.items, node) as vscode.MarkdownString;
    // Engine strings are escaped Markdown text ("prep\\-step").
    assert.match(md.value, /\*\*Waits for:\*\* prep\\-step {2}\n/);
    await writeQueueItem(queueDir, { id: 'prep-step', command: 'node', args: ['-e', '0'] });
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    await waitFor('the blocked item to launch', () => nodeById(api, 'items', 'items.launched.waits-on-prep'), 30_000);
    assert.equal(nodeById(api, 'items', 'items.blocked.waits-on-prep'), undefined);
  });

  it('Items view refreshes only the rows that changed, not the whole tree', async function () {
    this.timeout(60_000);
    const api = await getApi();
    const provider = api._testing.views.providers.items;
    const queueDir = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue');
    await writeQueueItem(queueDir, { id: 'ticking-2', name: 'Sleeps a while', command: 'node', args: ['-e', 'setTimeout(() => {}, 8000)'], maxAttempts: 1 });
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    const running = await waitFor('the running item', () => nodeById(api, 'items', 'items.running.ticking-2'), 30_000);
    const unchanged = nodeById(api, 'items', 'items.failed')?.children?.find((n) => n.item);
    assert.ok(unchanged, 'a failed item that does not change meanwhile');
    const events: (TreeNode | TreeNode[] | undefined | void)[] = [];
    const sub = provider.onDidChangeTreeData((e) => events.push(e));
    try {
      await sleep(3_000);
    } finally {
      sub.dispose();
    }
    assert.ok(nodeById(api, 'items', 'items.running.ticking-2'), 'still running after the window (8 s)');
    const full = events.filter((e) => e === undefined).length;
    const elements = events.filter((e) => e !== undefined).flatMap((e) => (Array.isArray(e) ? e : [e]));
    assert.equal(full, 0, 'no full refresh while only elapsed times moved');
    assert.ok(elements.includes(running), `the running row was refreshed (${elements.map((n) => n.id).join(', ')})`);
    assert.ok(!elements.includes(unchanged), 'an unchanged failed row was not');
    const shown = new Set(viewNodes(api, 'items'));
    for (const n of elements) assert.ok(shown.has(n), `${n.id} is the instance the view shows`);
  });

  it('NodeTreeProvider fires the changed elements only, and a full refresh when the roots change', () => {
    const provider = new NodeTreeProviderClass();
    const events: (TreeNode | TreeNode[] | undefined | void)[] = [];
    provider.onDidChangeTreeData((e) => events.push(e));
    const tree = (desc: string, extra = false): TreeNode[] => [
      { id: 'g', label: 'Group', children: [{ id: 'g.a', label: 'A', description: desc }, { id: 'g.b', label: 'B' }] },
      ...(extra ? [{ id: 'h', label: 'Other' }] : []),
    ];
    provider.setRoots(tree('1'));
    const [group] = provider.getRoots();
    const [a, b] = group.children!;
    events.length = 0;
    provider.setRoots(tree('1'));
    assert.deepEqual(events, [], 'nothing changed, nothing fired');
    provider.setRoots(tree('2'));
    assert.equal(events.length, 1);
    assert.deepEqual(events[0], [a], 'only the changed row');
    assert.equal(events[0] && (events[0] as TreeNode[])[0], a, 'as the same object');
    assert.equal(a.description, '2');
    assert.equal(provider.getRoots()[0].children![1], b);
    events.length = 0;
    provider.setRoots([{ id: 'g', label: 'Group', children: [{ id: 'g.b', label: 'B' }] }]);
    assert.deepEqual(events, [[group]], 'a child list that changed refreshes its parent');
    events.length = 0;
    provider.setRoots(tree('2', true));
    assert.deepEqual(events, [undefined], 'new roots: the whole view');
    provider.dispose();
  });

  it('tooltips show engine strings as escaped text (untrusted, no HTML, no live links)', async function () {
    this.timeout(60_000);
    const api = await getApi();
    const hostile = '**bold** <img src=x onerror=alert(1)> [stop](command:engineMonitor.stop) ```';
    const queueDir = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue');
    // Scheduled far ahead, so it stays pending and launches nothing.
    await writeQueueItem(queueDir, { id: 'hostile-name', name: hostile, command: 'node', runAt: '2099-01-01T00:00:00.000Z' });
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    const node = await waitFor('the hostile item', () => nodeById(api, 'items', 'items.waiting.hostile-name'), 30_000);
    assert.equal(node.label, hostile, 'labels are plain text');
    const md = hoverTooltip(api._testing.views.providers.items, node) as vscode.MarkdownString;
    assert.ok(!md.isTrusted && !md.supportHtml);
    assert.ok(!md.value.includes('**bold**'), `Markdown escaped: ${md.value}`);
    assert.ok(!md.value.includes('[stop](command:'), `links escaped: ${md.value}`);
    const log = await waitFor('its item_discovered entry', () =>
      api._testing.views.providers.logs.getRoots().find((n) => n.label.includes('<img src=x')), 15_000);
    const logMd = hoverTooltip(api._testing.views.providers.logs, log) as vscode.MarkdownString;
    assert.ok(!logMd.isTrusted && !logMd.supportHtml && !logMd.value.includes('[stop](command:'));
  });

  it('status bar shows health, the pending count and the failed items, even while healthy', async () => {
    const api = await getApi();
    const seen = await waitFor('status bar text', async () => {
      const h = await getJson<HealthResponse>(api, '/health');
      const { overview } = await getJson<StatsResponse>(api, '/stats');
      const text = api._testing.statusBar.text;
      return (
        text.includes(h.status === 'degraded' ? h.checks.engine : h.status) &&
        text.includes(`${overview.pending} pending`) &&
        text.endsWith(`· $(error) ${overview.failed} failed`) && { h, overview, text }
      );
    });
    assert.equal(seen.h.status, 'healthy', `healthy: ${seen.text}`);
    assert.ok(seen.overview.failed > 0, 'the demo has failed items');
  });
});

/** What VS Code shows on hover: resolveTreeItem fills in the tooltip getTreeItem left out. */
function hoverTooltip(provider: NodeTreeProvider, node: TreeNode): vscode.TreeItem['tooltip'] {
  const item = provider.getTreeItem(node);
  return provider.resolveTreeItem(item, node).tooltip;
}
