import assert from 'node:assert/strict';
import { symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { Store } from '../../src/core/store';
import { allLogs, assertInvariants, nodeItem, settled, TempWorkspace, waitFor } from './support/workspace';

describe('engine: polling, launching, retries, outcomes', function () {
  this.timeout(30_000);
  let ws: TempWorkspace;
  let engine: Engine | undefined;

  beforeEach(() => {
    ws = new TempWorkspace();
  });
  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    ws.dispose();
  });

  it('polls once before start() resolves and reports lastPollAt', async () => {
    engine = await Engine.create(ws.options());
    assert.equal(engine.stats().lastPollAt, null, 'a database that was never polled');
    await engine.start();
    const at = engine.stats().lastPollAt;
    assert.ok(at && !Number.isNaN(Date.parse(at)));
    assert.equal(new Date(at).toISOString(), at);
    assert.equal(engine.status().engine.polls, 1);
  });

  it('launches, retries with backoff and reaches every outcome with the counters consistent', async () => {
    ws.enqueue('ok.json', nodeItem('ok', '0'));
    ws.enqueue('flaky.json', nodeItem('flaky', 'process.exit(Number(process.env.ENGINE_ATTEMPT) < 3 ? 1 : 0)'));
    ws.enqueue('bad.json', nodeItem('bad', 'process.exit(4)', { maxAttempts: 2 }));
    engine = await Engine.create(ws.options());
    const seen: string[] = [];
    engine.subscribe((e) => {
      if (e.type === 'stats') assertInvariants(engine!);
      if (e.type === 'log') seen.push(`${e.entry.action}:${e.entry.itemId}`);
    });
    await engine.start();
    await settled(engine);
    assertInvariants(engine);
    const s = engine.stats();
    assert.deepEqual(
      { total: s.total, launched: s.launched, pending: s.pending, failed: s.failed, totalLaunches: s.totalLaunches, totalFailed: s.totalFailed },
      { total: 3, launched: 2, pending: 0, failed: 1, totalLaunches: 1 + 3 + 2, totalFailed: 2 + 2 },
    );
    assert.equal(seen.filter((x) => x === 'retry_scheduled:flaky').length, 2);
    assert.equal(seen.filter((x) => x === 'item_failed:bad').length, 1);
    const failed = allLogs(engine).find((e) => e.action === 'launch_failed' && e.itemId === 'bad')!;
    assert.match(failed.message, /exited with code 4/);
    assert.equal(failed.details?.exitCode, 4);
    const items = engine.listItems({ limit: 10, offset: 0 });
    assert.deepEqual(
      items.items.map((i) => [i.id, i.outcome, i.attempts]),
      [
        ['bad', 'failed', 2],
        ['flaky', 'launched', 3],
        ['ok', 'launched', 1],
      ],
    );
  });

  it('spaces retries by exponential backoff with jitter', async () => {
    ws.enqueue('f.json', nodeItem('f', 'process.exit(1)', { maxAttempts: 4 }));
    engine = await Engine.create(ws.options({ backoffBaseMs: 200, backoffMaxMs: 10_000 }));
    await engine.start();
    await settled(engine);
    const delays = allLogs(engine)
      .filter((e) => e.action === 'retry_scheduled')
      .map((e) => e.details!.delayMs as number);
    assert.equal(delays.length, 3);
    delays.forEach((d, i) => {
      const nominal = 200 * 2 ** i;
      assert.ok(d >= nominal * 0.8 && d <= nominal * 1.2, `delay ${d} within ±20 % of ${nominal}`);
    });
    const starts = allLogs(engine).filter((e) => e.action === 'launch_started').map((e) => Date.parse(e.timestamp));
    for (let i = 1; i < starts.length; i++) assert.ok(starts[i] - starts[i - 1] >= delays[i - 1], 'no attempt before its backoff ends');
  });

  it('never runs more attempts at once than the concurrency limit', async () => {
    const marker = path.join(ws.root, 'running');
    mkdirSync(marker);
    // Each attempt records itself in a folder while it runs; the peak is the real concurrency.
    const code = `const fs=require('fs'),p=require('path');const f=p.join(${JSON.stringify(marker)},String(process.pid));fs.writeFileSync(f,'');
      const n=fs.readdirSync(${JSON.stringify(marker)}).length;fs.appendFileSync(${JSON.stringify(path.join(ws.root, 'peaks'))},n+'\\n');
      setTimeout(()=>{fs.unlinkSync(f)},300);`;
    ws.enqueue('many.json', Array.from({ length: 10 }, (_, i) => nodeItem(`c${i}`, code)));
    engine = await Engine.create(ws.options({ concurrency: 3 }));
    let maxRunning = 0;
    engine.subscribe(() => (maxRunning = Math.max(maxRunning, engine!.status().engine.running)));
    await engine.start();
    await settled(engine);
    const peaks = require('node:fs').readFileSync(path.join(ws.root, 'peaks'), 'utf8').trim().split('\n').map(Number);
    assert.ok(Math.max(...peaks) <= 3, `peak ${Math.max(...peaks)} processes`);
    assert.equal(maxRunning, 3, 'the limit was actually reached');
    assert.equal(engine.stats().launched, 10);
  });

  it('does not launch an item before its runAt', async () => {
    const runAt = new Date(Date.now() + 1500).toISOString();
    ws.enqueue('later.json', nodeItem('later', '0', { runAt }));
    ws.enqueue('far.json', nodeItem('far', '0', { runAt: '2099-01-01T00:00:00.000Z' }));
    engine = await Engine.create(ws.options());
    await engine.start();
    const item = engine.listItems({ limit: 10, offset: 0 }).items.find((i) => i.id === 'later')!;
    assert.equal(item.phase, 'scheduled');
    assert.equal(item.nextAttemptAt, runAt);
    await waitFor('later to launch', () => engine!.stats().launched === 1);
    const started = allLogs(engine).find((e) => e.action === 'launch_started' && e.itemId === 'later')!;
    assert.ok(Date.parse(started.timestamp) >= Date.parse(runAt), `launched at ${started.timestamp}, runAt ${runAt}`);
    assert.equal(engine.stats().pending, 1, 'the far one waits');
  });

  it('ingests idempotently, rejects a redefinition of a launched item, and logs each rejection once', async () => {
    ws.enqueue('a.json', nodeItem('same', '0'));
    ws.enqueue('b.json', [nodeItem('same', '0')]);
    ws.enqueue('bad.json', '{ not json');
    ws.enqueue('mixed.jsonl', `${JSON.stringify(nodeItem('line0', '0'))}\n{"command": 5}\n\n${JSON.stringify({ command: process.execPath, args: ['-e', '0'] })}\n`);
    engine = await Engine.create(ws.options());
    await engine.start();
    await settled(engine);
    // "same" has launched by now: another definition of it is rejected (a launched item's command
    // is history, not something to edit).
    ws.enqueue('c.json', [nodeItem('same', 'process.exit(1)')]);
    for (let i = 0; i < 3; i++) await engine.pollNow();
    const rejected = allLogs(engine).filter((e) => e.action === 'item_rejected');
    assert.deepEqual(
      rejected.map((e) => [e.details!.file, e.details!.entry]),
      [
        ['.engine/queue/bad.json', null],
        ['.engine/queue/mixed.jsonl', 1],
        ['.engine/queue/c.json', 0],
      ],
    );
    assert.match(rejected[0].message, /not valid JSON/);
    assert.match(rejected[1].message, /command must be string/);
    assert.match(rejected[2].message, /"same" has already launched .*give the new item another id/);
    assert.equal(rejected[2].itemId, 'same');
    const ids = engine.listItems({ limit: 10, offset: 0 }).items.map((i) => i.id);
    assert.equal(ids.length, 3);
    assert.ok(ids.includes('same') && ids.includes('line0'));
    assert.ok(ids.some((id) => /^mixed:3:[0-9a-f]{10}$/.test(id)), `derived id from file and line: ${ids}`);
    assert.equal(engine.status().scanner.itemsRejected, 3);

    // A restart does not read unchanged files again, so nothing is rejected twice.
    await engine.shutdown(0);
    engine = await Engine.create(ws.options());
    await engine.start();
    assert.equal(allLogs(engine).filter((e) => e.action === 'item_rejected').length, 3);
    assert.equal(engine.stats().total, 3);
  });

  it('rejects a second entry of one file with the same id, naming the field and the first entry; the first is the item', async () => {
    // 150 entries: the duplicate lies in another ingestion chunk than the entry it repeats. `true`,
    // not a Node.js start each: 150 of those took 10-13 s of a loaded machine.
    const entries: object[] = Array.from({ length: 150 }, (_, i) => ({ id: `unique-${i}`, command: 'true' }));
    entries[3] = nodeItem('deploy', '0', { name: 'Deploy (first)' });
    entries[140] = nodeItem('deploy', 'process.exit(1)', { name: 'Deploy (again)' });
    ws.enqueue('many.json', entries);
    engine = await Engine.create(ws.options());
    await engine.start();
    await settled(engine);
    const rejected = allLogs(engine).filter((e) => e.action === 'item_rejected');
    assert.deepEqual(rejected.map((e) => [e.details!.file, e.details!.entry, e.details!.field, e.itemId]), [['.engine/queue/many.json', 140, 'id', 'deploy']]);
    assert.match(rejected[0].message, /id "deploy" is already used by entry 3 of this file; give this entry an id of its own/);
    assert.equal(allLogs(engine).filter((e) => e.action === 'item_updated').length, 0, 'the second entry did not redefine the first');
    const deploy = engine.itemDetail('deploy');
    assert.equal(deploy?.item.name, 'Deploy (first)');
    assert.equal(deploy?.outcome, 'launched');
    assert.equal(engine.stats().total, 149);
  });

  it('rejects links leaving the workspace, oversized files and cwd outside, and still loads the rest', async () => {
    // Beside the workspace folder, inside the test's own temporary root, so dispose() removes it.
    const outside = path.join(ws.root, 'outside.json');
    writeFileSync(outside, JSON.stringify(nodeItem('outside', '0')));
    symlinkSync(outside, path.join(ws.queue, 'link.json'));
    ws.enqueue('huge.json', JSON.stringify([nodeItem('big', '0', { name: 'x'.repeat(100) })]).padEnd(1024 * 1024 + 10, ' '));
    ws.enqueue('escape.json', nodeItem('escape', '0', { cwd: '../..' }));
    ws.enqueue('shellargs.json', { id: 'sa', command: 'echo', shell: true, args: ['x'] });
    ws.enqueue('good.json', nodeItem('good', '0'));
    engine = await Engine.create(ws.options());
    await engine.start();
    await settled(engine);
    const reasons = allLogs(engine)
      .filter((e) => e.action === 'item_rejected')
      .map((e) => `${e.details!.file}: ${e.details!.reason}`);
    assert.equal(reasons.length, 4, reasons.join('\n'));
    assert.ok(reasons.some((r) => /escape\.json: cwd "\.\.\/\.\." resolves outside the workspace/.test(r)));
    assert.ok(reasons.some((r) => /huge\.json: file is \d+ bytes, over the 1 MiB limit/.test(r)));
    assert.ok(reasons.some((r) => /link\.json: link points outside the workspace/.test(r)));
    assert.ok(reasons.some((r) => /shellargs\.json: "args" is not allowed with "shell": true/.test(r)));
    assert.equal(engine.stats().launched, 1);
  });

  it('stops and starts launching; a failed item can be retried by hand', async () => {
    ws.enqueue('bad.json', nodeItem('bad', 'process.exit(Number(process.env.ENGINE_ATTEMPT) === 1 && !process.env.SECOND ? 2 : 0)', { maxAttempts: 1 }));
    engine = await Engine.create(ws.options());
    await engine.start();
    await settled(engine);
    assert.equal(engine.stats().failed, 1);
    // A failed item leaves the engine healthy. (Waited for: at the tests' 100 ms poll interval a
    // loaded machine can let a poll slip past 3 intervals, which /health rightly calls stalled.)
    await waitFor('the engine healthy', () => engine!.health().status === 'healthy', 5000);

    engine.stopLaunching();
    assert.deepEqual(engine.health(), { status: 'degraded', checks: { database: 'ok', engine: 'stopped' } });
    engine.retryItem('bad');
    assert.equal(engine.stats().pending, 1);
    assert.equal(engine.stats().failed, 0);
    assert.equal(engine.stats().totalFailed, 1, 'history is kept');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(engine.stats().pending, 1, 'nothing launches while stopped');

    engine.startLaunching();
    await waitFor('the retried item to run again', () => engine!.stats().pending === 0);
    // It exits 2 again on attempt 1: failed again, with its attempts counted from 1.
    assert.equal(engine.stats().failed, 1);
    assert.equal(engine.stats().totalLaunches, 2);
    assert.ok(allLogs(engine).some((e) => e.action === 'item_retried' && e.itemId === 'bad'));
    assert.throws(() => engine!.retryItem('nope'), /no item with id "nope"/);
  });

  it('Poll Now sees every file written before it, also while a poll is under way', async () => {
    engine = await Engine.create(ws.options({ initialMode: 'stopped' }));
    await engine.start();
    for (let i = 0; i < 30; i++) {
      ws.enqueue(`n${i}.json`, nodeItem(`n${i}`, '0'));
      // Every other time a poll is already under way when Poll Now is asked for.
      if (i % 2) void engine.pollNow();
      await engine.pollNow();
      assert.equal(engine.stats().total, i + 1, `n${i} was seen by the Poll Now after it was written`);
    }
  });

  it('launches nothing while restricted, until trust is granted', async () => {
    ws.enqueue('a.json', nodeItem('a', '0'));
    engine = await Engine.create(ws.options({ initialMode: 'restricted' }));
    await engine.start();
    assert.equal(engine.stats().pending, 1, 'polled: the item is known');
    assert.deepEqual(engine.health().checks.engine, 'restricted');
    assert.equal(engine.health().status, 'degraded');
    assert.throws(() => engine!.startLaunching(), /not trusted/);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(engine.stats().totalLaunches, 0);
    engine.grantTrust();
    await settled(engine);
    assert.equal(engine.stats().launched, 1);
  });

  it('finds log entries by every filter, text search included', async () => {
    ws.enqueue('x.json', [nodeItem('x1', 'process.exit(3)', { maxAttempts: 1, name: 'Nightly Export' }), nodeItem('x2', '0')]);
    engine = await Engine.create(ws.options());
    await engine.start();
    await settled(engine);
    const q = (query: Parameters<Engine['queryLogs']>[0]) => engine!.queryLogs(query).entries;
    // Kept to x1's entries: x2's success says "exited with code 0 in <duration> ms", and a
    // duration that starts with 3 matches the word "3".
    assert.deepEqual(q({ order: 'asc', limit: 100, itemId: 'x1', words: ['exit', 'code', '3'] }).map((e) => e.action), ['launch_failed', 'item_failed']);
    assert.equal(q({ order: 'asc', limit: 100, words: ['exit', 'code'] }).length, 3, 'the success says "exited with code 0" too');
    assert.deepEqual(q({ order: 'desc', limit: 100, words: ['NIGHT', 'exp'] }).map((e) => e.itemId).filter((x) => x !== 'x1'), []);
    assert.equal(q({ order: 'desc', limit: 100, words: ['ight'] }).length, 0, 'a word must start a word');
    assert.ok(q({ order: 'asc', limit: 100, minLevel: 'warn' }).every((e) => e.level === 'warn' || e.level === 'error'));
    assert.deepEqual([...new Set(q({ order: 'asc', limit: 100, itemId: 'x2' }).map((e) => e.itemId))], ['x2']);
    const both = q({ order: 'asc', limit: 100, actions: ['launch_succeeded', 'item_failed'] });
    assert.deepEqual(both.map((e) => e.action).sort(), ['item_failed', 'launch_succeeded']);
    const all = q({ order: 'asc', limit: 1000 });
    const mid = all[Math.floor(all.length / 2)];
    assert.ok(q({ order: 'asc', limit: 1000, since: mid.timestamp }).every((e) => e.timestamp >= mid.timestamp));
    assert.ok(q({ order: 'asc', limit: 1000, until: mid.timestamp }).every((e) => e.timestamp < mid.timestamp));
    // Keyset paging: pages of 2 in both orders give every entry once.
    for (const order of ['asc', 'desc'] as const) {
      const ids: number[] = [];
      let afterId: number | undefined;
      for (;;) {
        const page = engine.queryLogs({ order, limit: 2, afterId });
        ids.push(...page.entries.map((e) => e.id));
        if (!page.hasMore) break;
        afterId = page.entries[page.entries.length - 1].id;
      }
      const expected = all.map((e) => e.id);
      assert.deepEqual(ids, order === 'asc' ? expected : [...expected].reverse());
    }
  });

  it('prunes the log to its retention limit', async () => {
    ws.enqueue('x.json', Array.from({ length: 10 }, (_, i) => nodeItem(`p${i}`, '0')));
    engine = await Engine.create(ws.options({ logMaxEntries: 5 }));
    await engine.start();
    await settled(engine);
    await engine.shutdown(0);
    engine = await Engine.create(ws.options({ logMaxEntries: 5 }));
    await engine.start(); // prunes at start
    const logs = allLogs(engine);
    assert.ok(logs.length <= 5 + 2, `${logs.length} entries kept`);
    assert.ok(logs[0].id > 25, `the oldest were pruned (first id ${logs[0].id})`);
    assert.deepEqual(engine.queryLogs({ order: 'desc', limit: 10, words: ['discovered'] }).entries, [], 'the text index was pruned too');
  });

  it('prunes entries older than the age limit, and by count keeps the newest ids', async () => {
    // Written through the store, as an earlier engine would have: 30 entries 20 days old, then,
    // after a gap of 10 ids (a crash that lost entries), 30 from a minute ago.
    const day = 86_400_000;
    const { store } = await Store.open({ storageDir: ws.storage });
    store.batch(() => {
      for (let id = 1; id <= 70; id++) {
        if (id > 30 && id <= 40) continue;
        const ts = id <= 30 ? Date.now() - 20 * day + id : Date.now() - 60_000 + id;
        store.mutate('log_insert', [id, ts, 'item_discovered', 1, `entry ${id} oldword${id <= 30 ? 'x' : 'y'}`, null, null]);
        store.mutate('log_fts_insert', [id, `entry ${id} oldword${id <= 30 ? 'x' : 'y'}`]);
      }
    });
    store.close();
    engine = await Engine.create(ws.options({ logMaxAgeDays: 14, initialMode: 'stopped' }));
    await engine.start();
    await waitFor('the 20-day-old entries to be pruned', () => allLogs(engine!).every((e) => e.id > 30));
    const kept = allLogs(engine).filter((e) => e.id <= 70);
    assert.deepEqual(kept.map((e) => e.id), Array.from({ length: 30 }, (_, i) => 41 + i), 'every recent entry is kept');
    assert.deepEqual(engine.queryLogs({ order: 'desc', limit: 10, words: ['oldwordx'] }).entries, [], 'the text index was pruned too');
    await engine.shutdown(0);

    // By count: the newest 20 ids. Ids 61-70 and whatever this engine logged since are newer.
    engine = await Engine.create(ws.options({ logMaxEntries: 20, initialMode: 'stopped' }));
    await engine.start();
    await waitFor('the log to be pruned to 20 entries', () => allLogs(engine!).length <= 20);
    const ids = allLogs(engine).map((e) => e.id);
    const newest = Math.max(...ids);
    assert.deepEqual(ids, Array.from({ length: 20 }, (_, i) => newest - 19 + i), 'the newest 20 ids, contiguous');
  });
});
