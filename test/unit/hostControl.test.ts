// The engine host's private channel (src/host/controlChannel.ts), as the extension uses it: the
// built CLI forked with an IPC channel, control messages in, controlResult messages out.
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import type { ItemDetail } from '../../src/shared/api';
import type { ControlCommand, FromHostMessage } from '../../src/shared/hostProtocol';
import { assertBuilt, CLI } from './support/cli';
import { nodeItem, TempWorkspace } from './support/workspace';

describe('engine host: cancel, hold and release over the private channel', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let child: ChildProcess | undefined;
  let nextId = 0;

  beforeEach(() => {
    ws = new TempWorkspace('engine-host-control-');
  });
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    child = undefined;
    ws.dispose();
  });

  function control(command: ControlCommand): Promise<{ ok: true; result?: unknown } | { ok: false; error: string }> {
    const requestId = ++nextId;
    return new Promise((resolve) => {
      const onMessage = (m: FromHostMessage) => {
        if (m.type !== 'controlResult' || m.requestId !== requestId) return;
        child!.off('message', onMessage);
        resolve(m.ok ? { ok: true, result: m.result } : { ok: false, error: m.error });
      };
      child!.on('message', onMessage);
      child!.send({ type: 'control', requestId, ...command });
    });
  }

  it('answers with the item as GET /items/{id} reports it, and with the reason when it refuses', async () => {
    assertBuilt();
    ws.enqueue('items.json', [nodeItem('later', '0', { runAt: '2099-01-01T00:00:00.000Z' }), nodeItem('other', '0', { runAt: '2099-01-01T00:00:00.000Z' })]);
    child = fork(CLI, ['serve', '--workspace', ws.folder, '--storage', ws.storage, '--port', '0', '--quiet'], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      child!.on('message', (m: FromHostMessage) => m.type === 'ready' && resolve());
      child!.once('exit', (code) => reject(new Error(`the host exited with ${code} before it was ready`)));
    });

    const held = await control({ command: 'holdItem', itemId: 'later' });
    assert.equal(held.ok, true);
    assert.equal(((held as { result: ItemDetail }).result).state, 'held');
    const released = await control({ command: 'releaseItem', itemId: 'later' });
    assert.equal(((released as { result: ItemDetail }).result).state, 'scheduled');
    const cancelled = await control({ command: 'cancelItem', itemId: 'later' });
    const detail = (cancelled as { result: ItemDetail }).result;
    assert.deepEqual([detail.outcome, detail.state, detail.error, detail.item.id], ['failed', 'failed', 'cancelled', 'later']);

    assert.deepEqual(await control({ command: 'holdItem', itemId: 'later' }), {
      ok: false,
      error: 'item "later" has already failed (cancelled); only a pending item can be held',
    });
    assert.deepEqual(await control({ command: 'cancelItem', itemId: 'nope' }), { ok: false, error: 'no item with id "nope"' });
    const retried = await control({ command: 'retryItem', itemId: 'later' });
    assert.equal(((retried as { result: ItemDetail }).result).outcome, 'pending');
  });
});
