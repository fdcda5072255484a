// Cancelling running attempts in the real engine, on each store (a real sql.js database on disk
// and a real PostgreSQL database): their real processes, SIGTERM-deaf ones too, are gone within
// the SIGKILL grace, and a retry waits for them. The timing bounds are why this file runs alone
// (.mocharc.cjs, serial group); the rest of control is in control.test.ts.
import assert from 'node:assert/strict';
import type { Engine } from '../../src/core/kernel/engine';
import type { ItemDetail, StatsOverview } from '../../src/shared/api';
import { processesMentioning } from './support/cli';
import { assertControlInvariants, uniqueSleep } from './support/control';
import { engineStores } from './support/engineStores';
import { allLogs, assertInvariants, TempWorkspace, waitFor } from './support/workspace';

for (const store of engineStores()) describe(`control: cancelling running processes (${store.name})`, function () {
  this.timeout(60_000);
  store.setUp();
  let ws: TempWorkspace;
  let engine: Engine | undefined;

  beforeEach(() => {
    ws = new TempWorkspace('engine-control-');
  });
  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    ws.dispose();
  });

  it('cancels running attempts: their processes are gone within 6 s (SIGTERM, or SIGKILL for one that ignores it) and the items fail with "cancelled"', async () => {
    const plain = uniqueSleep();
    const stubborn = uniqueSleep();
    ws.enqueue('long.json', [
      { id: 'plain', command: 'sleep', args: [plain], maxAttempts: 3 },
      // The shell ignores SIGTERM and waits for its sleep, which ignores it too (inherited): only SIGKILL ends them.
      { id: 'stubborn', command: `trap '' TERM; sleep ${stubborn}; true`, shell: true, maxAttempts: 3 },
    ]);
    engine = await store.engine(ws);
    const seen: StatsOverview[] = [];
    engine.subscribe((e) => e.type === 'stats' && seen.push(engine!.stats()));
    await engine.start();
    // The stubborn one's shell names the sleep on its command line too: two processes.
    await waitFor('both sleeps to run', () => processesMentioning(`sleep ${plain}`).length === 1 && processesMentioning(`sleep ${stubborn}`).length === 2);
    assert.equal(engine.stats().running, 2);

    const cancelledAt = Date.now();
    engine.cancelItem('plain');
    engine.cancelItem('stubborn');
    // Failed at once, before the processes are gone.
    const s = engine.stats();
    assert.deepEqual([s.failed, s.pending, s.running, s.totalFailed, s.totalLaunches], [2, 0, 0, 2, 2]);
    assertControlInvariants(s);
    for (const id of ['plain', 'stubborn']) {
      const detail: ItemDetail = engine.itemDetail(id)!;
      assert.equal(detail.outcome, 'failed');
      assert.equal(detail.state, 'failed');
      assert.equal(detail.error, 'cancelled');
      assert.equal(detail.attempts.length, 1);
      assert.equal(detail.attempts[0].outcome, 'failed');
      assert.equal(detail.attempts[0].error, 'cancelled');
    }
    await waitFor('the plain sleep to end', () => processesMentioning(`sleep ${plain}`).length === 0, 6000);
    await waitFor('the stubborn sleep to be killed', () => processesMentioning(`sleep ${stubborn}`).length === 0, 6000 - (Date.now() - cancelledAt));
    assert.ok(Date.now() - cancelledAt < 6000);
    assert.ok(Date.now() - cancelledAt > 4000, 'the stubborn one needed the SIGKILL, 5 s after the SIGTERM');
    // Once the processes have exited, their attempts say how: the signal that ended them.
    await waitFor('the signals to be recorded', () => engine!.itemDetail('stubborn')!.attempts[0].signal !== null && engine!.itemDetail('plain')!.attempts[0].signal !== null);
    assert.equal(engine.itemDetail('plain')!.attempts[0].signal, 'SIGTERM');
    assert.equal(engine.itemDetail('stubborn')!.attempts[0].signal, 'SIGKILL');
    assert.equal(engine.itemDetail('plain')!.attempts[0].error, 'cancelled');

    const cancelled = allLogs(engine).filter((e) => e.action === 'launch_cancelled');
    assert.deepEqual(cancelled.map((e) => [e.itemId, e.details!.attempt, e.details!.spawned]).sort(), [
      ['plain', 1, true],
      ['stubborn', 1, true],
    ]);
    assert.equal(allLogs(engine).filter((e) => e.action === 'retry_scheduled' || e.action === 'item_failed').length, 0, 'no retry, no item_failed');
    assert.equal(engine.stats().totalLaunches, 2, 'nothing launched again');
    seen.forEach(assertControlInvariants);
    assertInvariants(engine);
  });

  it('Retry right after Cancel waits for the cancelled process to exit: one item, one process at a time', async function () {
    this.timeout(30_000);
    const deaf = uniqueSleep();
    // SIGTERM-deaf: it lives until the SIGKILL 5 s after the cancel.
    ws.enqueue('deaf.json', { id: 'deaf', command: `trap '' TERM; sleep ${deaf}; true`, shell: true, maxAttempts: 1 });
    engine = await store.engine(ws);
    await engine.start();
    await waitFor('the deaf item to run', () => processesMentioning(`sleep ${deaf}`).length === 2);
    // What the cancelled attempt's row says at the moment the retried one starts.
    const atRelaunch: (string | null)[] = [];
    engine.subscribe((e) => {
      if (e.type === 'log' && e.entry.action === 'launch_started' && e.entry.itemId === 'deaf') {
        const first = engine!.itemDetail('deaf')!.attempts.find((a) => a.error === 'cancelled');
        atRelaunch.push(first?.signal ?? null);
      }
    });
    engine.cancelItem('deaf');
    engine.retryItem('deaf');
    assert.equal(engine.itemDetail('deaf')!.outcome, 'pending');
    await waitFor('the retried attempt to start', () => atRelaunch.length === 1, 20_000);
    assert.deepEqual(atRelaunch, ['SIGKILL'], 'the retried attempt started only after the cancelled process had been killed and recorded');
    await waitFor('the retried attempt\'s shell and sleep, and nothing more', () => processesMentioning(`sleep ${deaf}`).length === 2);
    engine.cancelItem('deaf');
  });
});
