// Control of items in the real engine: cancel, hold and release, edited
// definitions, with real processes and real queue files, on each store: a real sql.js database on
// disk and a real PostgreSQL database. Cancelling running processes, whose ends are timed against
// the SIGKILL grace, is in control.cancel.test.ts (run alone, in the serial group).
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadSqlJs } from '../../src/core/store/sqlJs';
import { Engine } from '../../src/core/kernel/engine';
import { ControlError } from '../../src/core/kernel/monitoredEngine';
import { SCHEMA_V1 } from '../../src/core/store/schema';
import { processesMentioning } from './support/cli';
import { assertControlInvariants, uniqueSleep } from './support/control';
import { engineStores } from './support/engineStores';
import { seededRandom } from './support/testEngine';
import { allLogs, nodeItem, settled, TempWorkspace, waitFor } from './support/workspace';

function rejectsWith(fn: () => void, reason: 'not_found' | 'conflict', message: RegExp): void {
  assert.throws(fn, (err: unknown) => err instanceof ControlError && err.reason === reason && message.test(err.message));
}

for (const store of engineStores()) describe(`control: cancel, hold, release and edited definitions (${store.name})`, function () {
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

  it('cancels a waiting and a backing-off item without an attempt, and refuses unknown and finished items with reasons', async () => {
    ws.enqueue('items.json', [
      nodeItem('later', '0', { runAt: '2099-01-01T00:00:00.000Z' }),
      nodeItem('flaky', 'process.exit(1)', { maxAttempts: 5 }),
      nodeItem('done', '0'),
    ]);
    // A long backoff: flaky waits in it after its first attempt.
    engine = await store.engine(ws, { backoffBaseMs: 60_000, backoffMaxMs: 60_000 });
    await engine.start();
    await waitFor('flaky to back off and done to launch', () => engine!.itemDetail('flaky')!.state === 'backoff' && engine!.stats().launched === 1);

    engine.cancelItem('later');
    engine.cancelItem('flaky');
    const later = engine.itemDetail('later')!;
    assert.deepEqual([later.outcome, later.error, later.attempts.length], ['failed', 'cancelled', 0]);
    const flaky = engine.itemDetail('flaky')!;
    assert.deepEqual([flaky.outcome, flaky.error, flaky.attempts.length], ['failed', 'cancelled', 1]);
    assert.deepEqual([flaky.attempts[0].exitCode, flaky.attempts[0].error], [1, null], 'its one attempt keeps its own failure');
    const entries = allLogs(engine).filter((e) => e.action === 'launch_cancelled');
    assert.deepEqual(
      entries.map((e) => [e.itemId, e.details!.attempt, e.details!.state]),
      [
        ['later', null, 'scheduled'],
        ['flaky', null, 'backoff'],
      ],
    );
    const s = engine.stats();
    assert.deepEqual([s.failed, s.pending, s.launched, s.totalFailed], [2, 0, 1, 1]);
    assertControlInvariants(s);

    rejectsWith(() => engine!.cancelItem('nope'), 'not_found', /no item with id "nope"/);
    rejectsWith(() => engine!.cancelItem('done'), 'conflict', /"done" has already launched .*only a pending item can be cancelled/);
    rejectsWith(() => engine!.cancelItem('later'), 'conflict', /"later" has already failed \(cancelled\)/);
    rejectsWith(() => engine!.holdItem('done'), 'conflict', /only a pending item can be held/);
    rejectsWith(() => engine!.retryItem('done'), 'conflict', /only a failed item can be retried/);

    // Retry by hand works as for any failed item.
    engine.retryItem('later');
    assert.equal(engine.itemDetail('later')!.state, 'scheduled');
    assert.equal(engine.itemDetail('later')!.error, null);
  });

  // The window between an attempt's journal record and its spawn is sql.js's: the spawn waits
  // for the journal's fdatasync. On PostgreSQL the claim commits the attempt and spawns it in the
  // same turn, so no cancel can come in between.
  if (store.onDisk) it('a cancel that comes after the attempt is journaled but before it is spawned: no process ever starts', async () => {
    const ran = path.join(ws.root, 'ran');
    ws.enqueue('race.json', nodeItem('race', `require('fs').writeFileSync(${JSON.stringify(ran)}, '')`));
    engine = await store.engine(ws, { initialMode: 'stopped' });
    await engine.start();
    let cancelled = false;
    engine.subscribe((e) => {
      // The entry is written in the same turn that journals the attempt; the spawn waits for the
      // journal's fdatasync (a later turn). A microtask runs in between.
      if (e.type === 'log' && e.entry.action === 'launch_started' && e.entry.itemId === 'race') {
        queueMicrotask(() => {
          engine!.cancelItem('race');
          cancelled = true;
        });
      }
    });
    engine.startLaunching();
    await waitFor('the cancel', () => cancelled);
    const entry = allLogs(engine).find((e) => e.action === 'launch_cancelled')!;
    assert.equal(entry.details!.spawned, false);
    assert.match(entry.message, /had not been spawned yet and never will be/);
    // Give a spawn every chance to happen (it would have within a few ms) before checking it did not.
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(existsSync(ran), false, 'the command never ran');
    const detail = engine.itemDetail('race')!;
    assert.deepEqual([detail.outcome, detail.error, detail.attempts[0].error, detail.attempts[0].exitCode], ['failed', 'cancelled', 'cancelled', null]);
    assertControlInvariants(engine.stats());
    assert.equal(engine.stats().running, 0);
  });

  it('keeps every invariant on every stats event while cancels, holds and releases hit a run of 50 items', async () => {
    const random = seededRandom(8);
    const items = Array.from({ length: 50 }, (_, i) =>
      nodeItem(`i${i}`, i % 7 === 3 ? 'setTimeout(() => process.exit(1), 50)' : `setTimeout(() => {}, ${50 + (i % 5) * 40})`, { maxAttempts: 2 }),
    );
    ws.enqueue('many.json', items);
    engine = await store.engine(ws, { concurrency: 4 });
    let events = 0;
    engine.subscribe((e) => {
      if (e.type !== 'stats') return;
      events++;
      assertControlInvariants(engine!.stats());
    });
    await engine.start();
    const heldNow = new Set<string>();
    // An item held while it ran is no longer held once its attempt reaches an outcome.
    const forgetFinished = () => {
      for (const h of heldNow) if (engine!.itemDetail(h)!.outcome !== 'pending') heldNow.delete(h);
    };
    const actions = { cancel: 0, hold: 0, release: 0, refused: 0 };
    while ((forgetFinished(), engine.stats().pending > heldNow.size || engine.stats().running > 0)) {
      const id = `i${Math.floor(random() * 50)}`;
      const pick = random();
      try {
        if (pick < 0.2) {
          engine.cancelItem(id);
          heldNow.delete(id);
          actions.cancel++;
        } else if (pick < 0.6) {
          engine.holdItem(id);
          heldNow.add(id);
          actions.hold++;
        } else {
          engine.releaseItem(id);
          heldNow.delete(id);
          actions.release++;
        }
      } catch (err) {
        assert.ok(err instanceof ControlError && err.reason === 'conflict', String(err));
        actions.refused++;
      }
      forgetFinished();
      const s = engine.stats();
      assertControlInvariants(s);
      assert.equal(s.held, heldNow.size, 'held counts exactly the held items');
      assert.equal(s.held, engine.listItems({ filter: { states: ['held'] }, limit: 1, offset: 0 }).total + engine.listItems({ filter: { states: ['running'] }, limit: 100, offset: 0 }).items.filter((i) => heldNow.has(i.id)).length);
      await new Promise((r) => setTimeout(r, 5 + random() * 20));
    }
    // (Checked again in the loop's condition, after the sleep in which a held running item may finish.)
    for (const id of heldNow) engine.releaseItem(id);
    await settled(engine);
    const s = engine.stats();
    assertControlInvariants(s);
    assert.equal(s.held, 0);
    assert.equal(s.total, 50);
    assert.ok(actions.cancel > 0 && actions.hold > 0 && actions.release > 0, JSON.stringify(actions));
    assert.ok(events > 20, `${events} stats events`);
    // Every cancelled item is failed with "cancelled"; every other failure is its own.
    const cancelledIds = new Set(allLogs(engine).filter((e) => e.action === 'launch_cancelled').map((e) => e.itemId));
    assert.equal(cancelledIds.size, actions.cancel);
    for (const id of cancelledIds) assert.equal(engine.itemDetail(id!)!.error, 'cancelled');
  });

  it('a held item is never launched, survives a restart still held, and launches once released; its failed attempt waits for the release', async () => {
    const ran = path.join(ws.root, 'ran');
    ws.enqueue('held.json', [
      nodeItem('held', `require('fs').writeFileSync(${JSON.stringify(ran)}, '')`),
      nodeItem('far', '0', { runAt: '2099-01-01T00:00:00.000Z' }),
    ]);
    engine = await store.engine(ws, { initialMode: 'stopped' });
    await engine.start();
    engine.holdItem('held');
    engine.holdItem('far');
    engine.holdItem('far'); // holding a held item changes nothing
    assert.equal(allLogs(engine).filter((e) => e.action === 'item_held').length, 2);
    assert.equal(engine.itemDetail('far')!.state, 'held', 'held, whatever its runAt');
    assert.deepEqual([engine.stats().held, engine.stats().pending], [2, 2]);
    engine.startLaunching();
    await engine.pollNow();
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(existsSync(ran), false, 'not launched while held');
    await engine.shutdown(0);

    engine = await store.engine(ws);
    await engine.start();
    assert.equal(engine.itemDetail('held')!.state, 'held');
    assert.equal(engine.stats().held, 2);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(existsSync(ran), false, 'still not launched after the restart');
    engine.releaseItem('held');
    engine.releaseItem('held'); // releasing an item not held changes nothing
    assert.equal(allLogs(engine).filter((e) => e.action === 'item_released').length, 1);
    await waitFor('the released item to launch', () => engine!.itemDetail('held')!.outcome === 'launched');
    assert.ok(existsSync(ran));
    engine.releaseItem('far');
    assert.equal(engine.itemDetail('far')!.state, 'scheduled');
    assert.equal(engine.stats().held, 0);
  });

  it('a hold does not touch a running attempt: one that fails waits, held, for its retry; one that succeeds launches', async () => {
    const gate = path.join(ws.root, 'gate');
    const waitGate = `const fs=require('fs');const t=setInterval(()=>{if(fs.existsSync(${JSON.stringify(gate)})){clearInterval(t);process.exit(EXIT)}},20)`;
    ws.enqueue('running.json', [nodeItem('fails', waitGate.replace('EXIT', '1'), { maxAttempts: 3 }), nodeItem('wins', waitGate.replace('EXIT', '0'))]);
    engine = await store.engine(ws);
    await engine.start();
    await waitFor('both to run', () => engine!.stats().running === 2);
    engine.holdItem('fails');
    engine.holdItem('wins');
    assert.equal(engine.itemDetail('fails')!.state, 'running', 'a running item shows running while held');
    writeFileSync(gate, '');
    await waitFor('both attempts to end', () => engine!.stats().running === 0);
    await new Promise((r) => setTimeout(r, 300)); // past the 20 ms backoff
    assert.equal(engine.itemDetail('wins')!.outcome, 'launched');
    const fails = engine.itemDetail('fails')!;
    assert.deepEqual([fails.state, fails.attempts.length], ['held', 1], 'not retried while held');
    assert.deepEqual([engine.stats().held, engine.stats().pending], [1, 1]);
    engine.releaseItem('fails');
    await waitFor('the retry after release', () => engine!.itemDetail('fails')!.attempts.length === 3);
    await settled(engine);
    assert.equal(engine.itemDetail('fails')!.outcome, 'failed');
    assert.equal(engine.stats().held, 0);
  });

  it('a new definition of a failed item replaces it; Retry runs the new command', async () => {
    ws.enqueue('fix.json', nodeItem('fix', 'process.exit(3)', { maxAttempts: 1 }));
    engine = await store.engine(ws);
    await engine.start();
    await settled(engine);
    assert.equal(engine.itemDetail('fix')!.error, 'exited with code 3');
    ws.enqueue('fix.json', nodeItem('fix', 'console.log("fixed by the edit"); process.exit(0)', { maxAttempts: 2 }));
    await engine.pollNow();
    const updated = allLogs(engine).filter((e) => e.action === 'item_updated');
    assert.equal(updated.length, 1);
    assert.deepEqual(updated[0].details!.changed, ['args', 'maxAttempts']);
    assert.match(updated[0].message, /stays failed until retried/);
    const detail = engine.itemDetail('fix')!;
    assert.deepEqual([detail.outcome, detail.item.maxAttempts, detail.item.args[1]], ['failed', 2, 'console.log("fixed by the edit"); process.exit(0)']);
    engine.retryItem('fix');
    await settled(engine);
    const after = engine.itemDetail('fix')!;
    assert.equal(after.outcome, 'launched');
    assert.equal(after.attempts.at(-1)!.exitCode, 0);
    const succeeded = allLogs(engine).find((e) => e.action === 'launch_succeeded' && e.itemId === 'fix')!;
    assert.match(String(succeeded.details!.stdoutTail), /fixed by the edit/);
  });

  it('a new definition of a pending item replaces it and starts it over; one of a running item is rejected, saying what to do', async () => {
    const sleep = uniqueSleep();
    ws.enqueue('edit.json', [
      nodeItem('later', '0', { runAt: '2099-01-01T00:00:00.000Z', name: 'Later' }),
      { id: 'busy', command: 'sleep', args: [sleep] },
    ]);
    engine = await store.engine(ws);
    await engine.start();
    await waitFor('busy to run', () => processesMentioning(`sleep ${sleep}`).length === 1);
    engine.holdItem('later');
    ws.enqueue('edit.json', [
      nodeItem('later', 'process.exit(0)', { runAt: '2098-01-01T00:00:00.000Z', name: 'Later, edited', env: { A: '1' } }),
      { id: 'busy', command: 'sleep', args: ['1'] },
    ]);
    await engine.pollNow();
    const updated = allLogs(engine).filter((e) => e.action === 'item_updated');
    assert.deepEqual(
      updated.map((e) => [e.itemId, e.details!.changed]),
      [['later', ['name', 'args', 'env', 'runAt']]],
    );
    const later = engine.itemDetail('later')!;
    assert.deepEqual([later.item.name, later.item.runAt, later.item.env, later.state], ['Later, edited', '2098-01-01T00:00:00.000Z', { A: '1' }, 'held']);
    assert.equal(engine.listItems({ filter: { q: 'edited' }, limit: 10, offset: 0 }).items[0].name, 'Later, edited');

    const rejected = allLogs(engine).filter((e) => e.action === 'item_rejected');
    assert.equal(rejected.length, 1);
    assert.equal(rejected[0].itemId, 'busy');
    assert.match(rejected[0].message, /"busy" is running \(attempt 1\); its definition cannot change while it runs: cancel it, or wait until the attempt ends, then save \.engine\/queue\/edit\.json again/);
    assert.deepEqual(engine.itemDetail('busy')!.item.args, [sleep], 'the running item keeps its definition');
    engine.cancelItem('busy');
    assertControlInvariants(engine.stats());
  });

  it('filters /items by state and by words of id, name, command and args', async () => {
    ws.enqueue('f.json', [
      nodeItem('build-42', '0', { name: 'Nightly Export' }),
      nodeItem('deploy-7', 'process.exit(1)', { maxAttempts: 1, name: 'Déploiement' }),
      nodeItem('later', '0', { runAt: '2099-01-01T00:00:00.000Z' }),
      nodeItem('held-one', '0', { runAt: '2099-01-01T00:00:00.000Z' }),
    ]);
    engine = await store.engine(ws);
    await engine.start();
    await waitFor('two outcomes', () => engine!.stats().launched + engine!.stats().failed === 2);
    engine.holdItem('held-one');
    const ids = (filter: Parameters<Engine['listItems']>[0]['filter']) => {
      const page = engine!.listItems({ filter, limit: 100, offset: 0 });
      assert.equal(page.total, page.items.length);
      return page.items.map((i) => i.id);
    };
    assert.deepEqual(ids({ q: 'build 42' }), ['build-42']);
    assert.deepEqual(ids({ q: 'EXPORT nightly' }), ['build-42'], 'any order, any case');
    assert.deepEqual(ids({ q: 'xport' }), [], 'words must start words');
    assert.deepEqual(ids({ q: 'déploi' }), ['deploy-7'], 'letters beyond ASCII');
    assert.deepEqual(ids({ q: 'exit' }), ['deploy-7'], 'a word of the args');
    assert.equal(ids({ q: path.basename(process.execPath) }).length, 4, 'a word of the command');
    assert.deepEqual(ids({ states: ['held'] }), ['held-one']);
    assert.deepEqual(ids({ states: ['scheduled', 'failed'] }), ['deploy-7', 'later']);
    assert.deepEqual(ids({ states: ['launched'], q: 'nightly' }), ['build-42']);
    assert.deepEqual(ids({ states: ['held'], outcome: 'launched' }), []);
    assert.deepEqual(ids({ states: ['blocked'] }), []);
    const page = engine.listItems({ filter: { states: ['scheduled', 'held', 'failed'] }, limit: 2, offset: 1 });
    assert.deepEqual([page.items.map((i) => i.id), page.total], [['later', 'held-one'], 3]);
  });

  it('a restricted engine stays restricted through a stop and a start: trust is granted, never bypassed', async () => {
    ws.enqueue('a.json', nodeItem('a', '0'));
    engine = await store.engine(ws, { initialMode: 'restricted' });
    await engine.start();
    engine.stopLaunching();
    assert.equal(engine.state, 'restricted');
    rejectsWith(() => engine!.startLaunching(), 'conflict', /not trusted: grant Workspace Trust/);
    assert.equal(engine.stats().launched, 0);
    engine.grantTrust();
    await settled(engine);
    assert.equal(engine.stats().launched, 1);
  });

  // The migration of a sql.js database file written by an older engine: PostgreSQL has its own
  // schema steps, which the store conformance suite covers.
  if (store.onDisk) it('opens a database written by schema version 1 (snapshot and journal) and migrates it', async () => {
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    db.run(SCHEMA_V1);
    db.run('PRAGMA user_version = 1');
    const def = (id: string, runAt: number | null) =>
      JSON.stringify({ id, name: id, command: process.execPath, args: ['-e', '0'], shell: false, cwd: ws.folder, env: {}, timeoutMs: 30_000, maxAttempts: 3, runAt });
    const now = Date.now();
    db.run(
      "INSERT INTO items (id, name, source, definition, def_hash, outcome, attempts, max_attempts, run_at, due_at, running, last_error, created_at, updated_at) VALUES ('old', 'old', '.engine/queue/old.json', ?, 'h1', 'launched', 1, 3, NULL, NULL, 0, NULL, ?, ?)",
      [def('old', null), now, now],
    );
    db.run("INSERT INTO attempts (id, item_id, attempt, started_at, finished_at, outcome, exit_code) VALUES (1, 'old', 1, ?, ?, 'succeeded', 0)", [now - 10, now]);
    db.run("INSERT INTO meta (key, value) VALUES ('total_launches', '1'), ('total_failed', '0'), ('journal_seq', '0')");
    const { mkdirSync } = await import('node:fs');
    mkdirSync(ws.storage, { recursive: true });
    writeFileSync(path.join(ws.storage, 'engine.sqlite'), db.export());
    db.close();
    // A v1 journal record after the snapshot: an item the v1 engine ingested before it stopped.
    const record = [1, 'item_insert', ['journaled', 'journaled', '.engine/queue/j.json', def('journaled', 4070908800000), 'h2', 3, 4070908800000, 4070908800000, now, now]];
    writeFileSync(path.join(ws.storage, 'engine.journal'), `${JSON.stringify(record)}\n`);

    engine = await store.engine(ws);
    await engine.start();
    assert.equal(allLogs(engine).filter((e) => e.action === 'database_recovered').length, 0, 'nothing needed repair');
    const old = engine.itemDetail('old')!;
    assert.deepEqual([old.outcome, old.state, old.attempts[0].outputBytes, old.attempts[0].outcome], ['launched', 'launched', null, 'succeeded']);
    assert.equal(engine.itemDetail('journaled')!.state, 'scheduled');
    engine.holdItem('journaled');
    assert.deepEqual([engine.stats().total, engine.stats().held, engine.stats().totalLaunches], [2, 1, 1]);
    await engine.shutdown(0);
    engine = await store.engine(ws);
    assert.equal(engine.itemDetail('journaled')!.state, 'held', 'the migrated database keeps the hold');
  });
});
