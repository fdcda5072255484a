// What the engine promises under abuse: no item lost or run twice across crashes at random
// moments, and a clear rejection for every bad queue file in a corpus of them.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { crashLoop } from './support/crashLoop';
import { allLogs, assertInvariants, nodeItem, settled, TempWorkspace } from './support/workspace';

describe('reliability: crashes and bad input', function () {
  this.timeout(240_000);
  let ws: TempWorkspace;
  let engine: Engine | undefined;
  beforeEach(() => (ws = new TempWorkspace('engine-rel-')));
  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    ws.dispose();
  });

  it('survives 10 kill -9s at random moments on 300 items: nothing lost, duplicates = interruptions', async () => {
    const result = await crashLoop(ws, { items: 300, kills: 10, seed: 20261122 });
    // crashLoop checked every item: each duplicate launch of a success is one of its interruptions.
    // Interruptions of failing items use up one of their attempts instead of adding a launch.
    assert.ok(result.interrupted >= result.duplicates);
    assert.ok(result.interrupted > 0, 'the kills did interrupt running attempts');
    console.log(`      crash loop: ${JSON.stringify(result)}`);
  });

  it('rejects each bad queue file once, clearly, and launches every valid item beside them', async () => {
    const ok = (id: string) => ({ id, command: 'true' });
    // Beside the workspace folder, inside the test's own temporary root, so dispose() removes it.
    const outside = path.join(ws.root, 'outside.json');
    writeFileSync(outside, JSON.stringify(ok('outside')));
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const corpus: Array<[string, string | Buffer, RegExp]> = [
      ['invalid.json', '{"id": "a", "command": ', /not valid JSON/],
      ['wrong-types.json', JSON.stringify({ id: 'w', command: 'true', args: 'not-an-array', timeoutMs: '10' }), /args must be array.*timeoutMs must be integer|timeoutMs must be integer.*args must be array/],
      ['unknown-field.json', JSON.stringify({ id: 'u', command: 'true', retries: 3 }), /unknown field "retries"/],
      ['deep.json', deep, /item must be a JSON object|an item must be a JSON object|not valid JSON/],
      ['huge.json', Buffer.alloc(5 * 1024 * 1024, 0x20), /over the 1 MiB limit/],
      ['binary.json', Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80, 0x81, 0xc3, 0x28]), /not UTF-8 text/],
      ['scalar.json', '42', /one item object or an array/],
      ['escape.json', JSON.stringify({ id: 'e', command: 'true', cwd: '../..' }), /resolves outside the workspace/],
      ['conflict.json', JSON.stringify({ id: 'valid-0', command: 'false' }), /has already launched/],
    ];
    ws.enqueue('valid.json', [ok('valid-0'), ok('valid-1')]);
    ws.enqueue('bom.json', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(ok('bom')))]));
    engine = await Engine.create(ws.options({ concurrency: 8 }));
    await engine.start();
    await settled(engine);
    for (const [name, content] of corpus) ws.enqueue(name, content);
    symlinkSync(outside, path.join(ws.queue, 'link.json'));
    await engine.pollNow();
    await engine.pollNow();
    await settled(engine);

    const rejected = allLogs(engine).filter((e) => e.action === 'item_rejected');
    for (const [name, , reason] of corpus) {
      const mine = rejected.filter((e) => e.details!.file === `.engine/queue/${name}`);
      assert.equal(mine.length, 1, `${name}: exactly one item_rejected, got ${mine.map((e) => e.message).join(' | ')}`);
      assert.match(mine[0].message, reason, name);
      assert.ok(mine[0].message.includes(name), `${name}: the message names the file`);
    }
    const link = rejected.filter((e) => e.details!.file === '.engine/queue/link.json');
    assert.equal(link.length, 1);
    assert.match(link[0].message, /link points outside the workspace/);
    assert.equal(rejected.length, corpus.length + 1, 'nothing else was rejected');
    assert.deepEqual(
      engine.listItems({ limit: 100, offset: 0 }).items.map((i) => [i.id, i.outcome]).sort(),
      [
        ['bom', 'launched'],
        ['valid-0', 'launched'],
        ['valid-1', 'launched'],
      ],
    );
  });

  it('ingests 10,000 queue files at once and launches every item', async function () {
    this.timeout(900_000);
    for (let i = 0; i < 10_000; i++) writeFileSync(path.join(ws.queue, `f${String(i).padStart(5, '0')}.json`), JSON.stringify({ command: 'true' }));
    engine = await Engine.create(ws.options({ concurrency: 16, pollIntervalMs: 60_000 }));
    const started = Date.now();
    await engine.start();
    const ingestMs = Date.now() - started;
    assert.equal(engine.stats().total, 10_000);
    await settled(engine, 600_000);
    assertInvariants(engine);
    assert.equal(engine.stats().launched, 10_000);
    console.log(`      10,000 files: first poll ${ingestMs} ms; all launched after ${Date.now() - started} ms`);
  });

  it('leaks no process: output floods, orphaned grandchildren, SIGTERM-deaf and self-signalling items', async () => {
    // The marker is this run's own: another test run on the machine has leak probes too.
    const marker = `engine-leak-probe-${process.pid}-${Date.now()}`;
    const countMine = () =>
      execFileSync('ps', ['-e', '-o', 'ppid=,pgid=,args='])
        .toString()
        .split('\n')
        .filter((l) => l.includes(marker)).length;
    const before = countMine();
    const probe = `// ${marker}`;
    ws.enqueue('nasty.json', [
      nodeItem('flood', `const s='y'.repeat(65536);for(let i=0;i<200;i++)process.stdout.write(s) ${probe}`),
      nodeItem(
        'orphans',
        `const {spawn}=require('child_process');for(let i=0;i<3;i++)spawn(process.execPath,['-e','setInterval(()=>{},1000) ${probe}'],{stdio:'ignore'}).unref(); ${probe}`,
      ),
      nodeItem('deaf', `process.on('SIGTERM',()=>{});setInterval(()=>{},1000) ${probe}`, { timeoutMs: 1000, maxAttempts: 1 }),
      nodeItem('suicide', `process.kill(process.pid,'SIGSEGV') ${probe}`, { maxAttempts: 1 }),
    ]);
    engine = await Engine.create(ws.options({ launchHelpers: 2 }));
    await engine.start();
    await settled(engine, 30_000);
    const items = Object.fromEntries(engine.listItems({ limit: 10, offset: 0 }).items.map((i) => [i.id, i]));
    assert.equal(items.flood.outcome, 'launched');
    assert.equal(items.orphans.outcome, 'launched');
    assert.equal(items.deaf.outcome, 'failed');
    assert.match(items.deaf.lastError ?? '', /timed out/);
    assert.equal(items.suicide.outcome, 'failed');
    assert.match(items.suicide.lastError ?? '', /signal SIGSEGV/);
    const flood = allLogs(engine).find((e) => e.action === 'launch_succeeded' && e.itemId === 'flood')!;
    assert.ok(String(flood.details!.stdoutTail).length <= 4100, 'output stays bounded');
    // Leftovers get SIGTERM, then SIGKILL after 5 s.
    const deadline = Date.now() + 8000;
    while (countMine() > before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    assert.equal(countMine(), before, 'no process of these items is left');
    // Nor the launch helpers that spawned them, once the engine has shut down.
    const helpers = () => execFileSync('ps', ['-e', '-o', 'args=']).toString().split('\n').filter((l) => l.includes(`--engine-pid=${process.pid}`)).length;
    assert.equal(helpers(), 2, 'the items ran in the pool of two launch helpers');
    await engine.shutdown(0);
    engine = undefined;
    assert.equal(helpers(), 0, 'no launch helper is left');
  });
});
