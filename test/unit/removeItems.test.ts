// Remove Item, Clear Finished and Run Again, black-box over real HTTP and the built CLI, on the
// embedded sql.js store on disk and on a real PostgreSQL server: `total` and the outcome's counter
// drop, totalLaunches/totalFailed and the log keep the history, a running item's process is ended
// before it goes, the removal survives a restart, and HTTP control stays behind the token.
import assert from 'node:assert/strict';
import type { ItemDetail, LogEntry, StatsOverview } from '../../src/shared/api';
import { processesMentioning, runCli, serve, type ServeProcess } from './support/cli';
import { PostgresServer, startPostgresOrSkip } from './support/postgres';
import { request } from './support/http';
import { nodeItem, TempWorkspace, waitFor } from './support/workspace';

const TOKEN = 'remove-token-5d2a';
const AUTH = { authorization: `Bearer ${TOKEN}` };

for (const kind of ['sql.js', 'PostgreSQL'] as const) {
  describe(`Remove Item, Clear Finished, Run Again (${kind})`, function () {
    this.timeout(120_000);
    let pg: PostgresServer | undefined;
    let ws: TempWorkspace;
    let run: ServeProcess | undefined;
    let databases = 0;

    before(async function () {
      if (kind === 'PostgreSQL') pg = await startPostgresOrSkip(this);
    });
    after(() => pg?.stop());
    beforeEach(() => {
      ws = new TempWorkspace('engine-remove-');
    });
    afterEach(async () => {
      await stop();
      ws.dispose();
    });

    async function stop(): Promise<void> {
      if (run && run.child.exitCode === null && run.child.signalCode === null) {
        run.child.kill('SIGTERM');
        await run.exited;
      }
      run = undefined;
    }

    let storeArgs: string[] = [];
    async function start(fresh: boolean): Promise<string> {
      if (fresh) storeArgs = pg ? ['--store', pg.createDatabase(`remove_${process.pid}_${++databases}`)] : [];
      run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '200', ...storeArgs], 60_000, { ENGINE_MONITOR_TOKEN: TOKEN });
      return run.url;
    }
    const stats = async (url: string) => ((await request(url, '/stats', { headers: AUTH })).json as { overview: StatsOverview }).overview;
    const item = (url: string, id: string) => request(url, `/items/${encodeURIComponent(id)}`, { headers: AUTH });

    it('removes a failed, a launched and a running item; counters, log and restart as promised', async () => {
      const marker = `removeme${process.pid}${Date.now() % 100000}`;
      ws.enqueue('items.json', [
        nodeItem('good', '0'),
        nodeItem('bad', 'process.exit(3)', { maxAttempts: 1 }),
        nodeItem('long', `setTimeout(() => {}, 300000) // ${marker}`),
        nodeItem('later', '0', { runAt: '2099-01-01T00:00:00.000Z' }),
      ]);
      const url = await start(true);
      await waitFor('good launched, bad failed, long running', async () => {
        const s = await stats(url);
        return s.launched === 1 && s.failed === 1 && s.running === 1 && s;
      }, 30_000);
      await waitFor('the long process', () => processesMentioning(marker).length > 0);
      const before = await stats(url);
      assert.deepEqual([before.total, before.pending, before.totalLaunches, before.totalFailed], [4, 2, 3, 1]);

      // Without the token: refused, nothing changed.
      const refused = await request(url, '/items/bad', { method: 'DELETE' });
      assert.equal(refused.status, 401);

      const removedBad = await request(url, '/items/bad', { method: 'DELETE', headers: AUTH });
      assert.equal(removedBad.status, 204);
      assert.equal((await item(url, 'bad')).status, 404);
      let s = await stats(url);
      assert.deepEqual([s.total, s.failed, s.totalLaunches, s.totalFailed], [3, 0, 3, 1], 'failed drops; the totals keep the history');

      // The CLI's remove, on the launched one.
      const cli = runCli(['remove', 'good', '--url', url], { ENGINE_MONITOR_TOKEN: TOKEN });
      assert.equal((await cli.exited).code, 0, cli.stderr());
      assert.match(cli.stdout(), /^removed good$/m);
      s = await stats(url);
      assert.deepEqual([s.total, s.launched], [2, 0]);

      // A running item: cancelled, its process ended, then removed.
      const removedLong = await request(url, '/items/long', { method: 'DELETE', headers: AUTH });
      assert.equal(removedLong.status, 204);
      assert.deepEqual(processesMentioning(marker), [], 'its process is gone before the answer');
      s = await stats(url);
      assert.deepEqual([s.total, s.pending, s.failed, s.running, s.totalFailed], [1, 1, 0, 0, 2]);

      const missing = await request(url, '/items/long', { method: 'DELETE', headers: AUTH });
      assert.equal(missing.status, 404);

      // The log keeps every entry of the removed items, and says who removed what.
      const logs = (await request(url, '/logs?action=item_removed&limit=10', { headers: AUTH })).json as LogEntry[];
      assert.deepEqual(logs.map((e) => e.itemId).sort(), ['bad', 'good', 'long']);
      assert.ok(((await request(url, '/logs?item=bad', { headers: AUTH })).json as LogEntry[]).some((e) => e.action === 'item_failed'));

      // After a restart: still gone, the counters as they were (the queue file is unchanged).
      await stop();
      const again = await start(false);
      const after = await stats(again);
      assert.deepEqual([after.total, after.launched, after.pending, after.failed, after.totalLaunches, after.totalFailed], [1, 0, 1, 0, 3, 2]);
      assert.equal((await item(again, 'good')).status, 404);
    });

    it('Run Again makes a launched item pending and launches it; Clear Finished removes every finished item', async () => {
      ws.enqueue('items.json', [nodeItem('one', '0'), nodeItem('two', 'process.exit(1)', { maxAttempts: 1 }), nodeItem('three', '0', { runAt: '2099-01-01T00:00:00.000Z' })]);
      const url = await start(true);
      await waitFor('one launched, two failed', async () => {
        const s = await stats(url);
        return s.launched === 1 && s.failed === 1 && s;
      }, 30_000);
      const refused = await request(url, '/items/two/run-again', { method: 'POST', headers: AUTH });
      assert.equal(refused.status, 409, 'a failed item is retried, not run again');
      const ran = await request(url, '/items/one/run-again', { method: 'POST', headers: AUTH });
      assert.equal(ran.status, 202);
      await waitFor('one launched again', async () => {
        const d = (await item(url, 'one')).json as ItemDetail;
        return d.outcome === 'launched' && d.attempts.length === 2 && d;
      }, 30_000);
      let s = await stats(url);
      assert.deepEqual([s.total, s.launched, s.totalLaunches], [3, 1, 3]);

      const cleared = await request(url, '/engine/clear-finished', { method: 'POST', headers: AUTH });
      assert.equal(cleared.status, 202);
      s = await stats(url);
      assert.deepEqual([s.total, s.launched, s.pending, s.failed, s.totalLaunches, s.totalFailed], [1, 0, 1, 0, 3, 1]);
      assert.equal((await item(url, 'three')).status, 200, 'a pending item stays');
    });
  });
}
