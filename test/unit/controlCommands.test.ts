// The control-command table that the extension's channel and the HTTP routes both dispatch
// through, run against a real engine with real processes and a real database on disk: each
// command reaches its one handler and answers as the channel promises.
import assert from 'node:assert/strict';
import { Engine } from '../../src/core/kernel/engine';
import { CONTROL_COMMANDS, httpControlCommand, httpControlNames, httpDeleteCommand, runChannelCommand } from '../../src/core/features/control/commands';
import type { ItemDetail } from '../../src/shared/api';
import { nodeItem, TempWorkspace, waitFor } from './support/workspace';

describe('control commands: one table for the channel and the HTTP routes', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let engine: Engine | undefined;

  beforeEach(() => {
    ws = new TempWorkspace('engine-commands-');
  });
  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    ws.dispose();
  });

  it('names every HTTP control path the server has taken: cancel, retry, hold, release, restart, run-again on items; start, stop, poll, clear-finished on the engine', () => {
    assert.deepEqual(httpControlNames('item').sort(), ['cancel', 'hold', 'release', 'restart', 'retry', 'run-again']);
    assert.deepEqual(httpControlNames('engine').sort(), ['clear-finished', 'poll', 'start', 'stop']);
    assert.equal(httpDeleteCommand(), CONTROL_COMMANDS.removeItem, 'DELETE /items/{id}');
    assert.equal(httpControlCommand('item', 'hold'), CONTROL_COMMANDS.holdItem);
    assert.equal(httpControlCommand('engine', 'hold'), undefined, 'hold is an item command');
    // The extension alone may grant trust or retry every failed item at once.
    assert.equal(CONTROL_COMMANDS.grantTrust.http, undefined);
    assert.equal(CONTROL_COMMANDS.retryAllFailed.http, undefined);
  });

  it('answers item commands with the item after the change, retryAllFailed with a count, and refuses an unknown command', async () => {
    ws.enqueue('items.json', [nodeItem('later', '0', { runAt: '2099-01-01T00:00:00.000Z' }), nodeItem('bad', 'process.exit(2)', { maxAttempts: 1 })]);
    engine = await Engine.create(ws.options());
    await engine.start();
    await waitFor('"bad" to fail', () => engine!.itemDetail('bad')?.outcome === 'failed');

    const held = (await runChannelCommand(engine, { command: 'holdItem', itemId: 'later' })) as ItemDetail;
    assert.equal(held.state, 'held');
    const released = (await runChannelCommand(engine, { command: 'releaseItem', itemId: 'later' })) as ItemDetail;
    assert.equal(released.state, 'scheduled');
    assert.equal(await runChannelCommand(engine, { command: 'retryAllFailed' }), 1);
    assert.equal(await runChannelCommand(engine, { command: 'stop' }), undefined);
    assert.equal(engine.state, 'stopped');
    const cancelled = (await runChannelCommand(engine, { command: 'cancelItem', itemId: 'later' })) as ItemDetail;
    assert.deepEqual([cancelled.outcome, cancelled.error], ['failed', 'cancelled']);
    await assert.rejects(runChannelCommand(engine, { command: 'holdItem', itemId: 'nobody' }), /no item with id "nobody"/);
    await assert.rejects(runChannelCommand(engine, { command: 'reboot' } as never), /unknown control command reboot/);
  });

  it('checkItem judges an entry as a queue file\'s entry is judged, takes nothing, and is not an HTTP command', async () => {
    engine = await Engine.create(ws.options());
    await engine.start();
    assert.equal(CONTROL_COMMANDS.checkItem.http, undefined);
    const check = (entry: unknown, workspaceFolder: string = ws.folder) => runChannelCommand(engine!, { command: 'checkItem', entry, workspaceFolder });
    assert.deepEqual(await check({ id: 'nightly', command: 'echo hi', shell: true, schedule: { cron: '0 2 * * *', timezone: 'UTC' }, priority: 5 }), { ok: true, id: 'nightly' });
    const badZone = (await check({ id: 'n', command: 'x', schedule: { cron: '0 2 * * *', timezone: 'Mars/Olympus' } })) as { ok: false; reason: string; field: string };
    assert.equal(badZone.ok, false);
    assert.equal(badZone.field, 'schedule');
    assert.match(badZone.reason, /Mars\/Olympus/);
    assert.deepEqual(await check({ id: 'p', command: 'x', priority: 500 }), { ok: false, reason: '"priority" must be an integer from -100 to 100 (higher launches first among due items)', field: 'priority' });
    assert.equal(((await check({ id: 'w', command: 'x', watch: { paths: ['../out/**'] } })) as { field?: string }).field, 'watch');
    assert.equal(((await check({ id: 's', command: 'x', service: true, ready: { logPattern: 'on (' } })) as { field?: string }).field, 'ready');
    assert.match(((await check({ id: 'x', command: 'x' }, 'relative/folder')) as { reason: string }).reason, /absolute path/);
    assert.equal(engine.itemDetail('nightly'), undefined, 'nothing was taken');
  });
});
