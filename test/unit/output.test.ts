// Attempt output end to end: the headless CLI (dist/cli.js) launching real
// processes through its launch helper, real files under <storage>/output, real HTTP on loopback.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, mkdirSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { startHttpServer } from '../../src/server/server';
import { openFollowers } from '../../src/server/outputRoute';
import type { ItemSummary } from '../../src/shared/api';
import { EXIT_USAGE } from '../../src/shared/hostProtocol';
import { request, sleep } from './support/http';
import { allLogs, getJson, processesMentioning, runCli, serve, type ServeProcess } from './support/cli';
import { nodeItem, outputOnFullDisk, TempWorkspace, waitFor } from './support/workspace';

const MiB = 1024 * 1024;

/** The bytes of an output: fetch keeps them as they are (no UTF-8 decoding). */
async function outputBytes(url: string, init?: RequestInit): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

async function itemOutcome(url: string, id: string): Promise<ItemSummary | undefined> {
  const { items } = await getJson<{ items: ItemSummary[] }>(`${url}/items?limit=1000`);
  return items.find((i) => i.id === id);
}

async function finished(url: string, id: string, timeoutMs = 30_000): Promise<ItemSummary> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const item = await itemOutcome(url, id);
    if (item && item.outcome !== 'pending') return item;
    if (Date.now() > deadline) throw new Error(`item ${id} did not finish within ${timeoutMs} ms: ${JSON.stringify(item)}`);
    await sleep(50);
  }
}

/** A format=runs body as [stream, text] pairs, adjacent runs of one stream joined. */
function parseRuns(body: Buffer): [string, string][] {
  const runs: [string, string][] = [];
  let at = 0;
  while (at < body.length) {
    const eol = body.indexOf(0x0a, at);
    const m = /^(stdout|stderr|engine) (\d+)$/.exec(body.toString('latin1', at, eol));
    assert.ok(m, `a run header at ${at}: ${JSON.stringify(body.toString('latin1', at, at + 40))}`);
    const text = body.toString('utf8', eol + 1, eol + 1 + Number(m[2]));
    if (runs.length > 0 && runs[runs.length - 1][0] === m[1]) runs[runs.length - 1][1] += text;
    else runs.push([m[1], text]);
    at = eol + 1 + Number(m[2]);
  }
  return runs;
}

async function stop(run: ServeProcess): Promise<void> {
  run.child.kill('SIGTERM');
  await run.exited;
}

/** The pattern a test program prints: byte i is i % 251 (a prime, so no chunk boundary lines up with it). */
const pattern = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => i % 251));

describe('attempt output: capture and GET /items/{id}/attempts/{n}/output', function () {
  this.timeout(120_000);
  let ws: TempWorkspace;
  let run: ServeProcess | undefined;
  beforeEach(() => (ws = new TempWorkspace('engine-output-')));
  afterEach(async () => {
    if (run) await stop(run);
    run = undefined;
    ws.dispose();
  });

  const start = async (...flags: string[]) => (run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '100', ...flags]));

  it('keeps stdout and stderr in arrival order with their stream tags, serves one stream, and survives a restart', async () => {
    // Each line waits 60 ms before the next so that the helper reads them in the order written.
    const lines = ['out one\n', 'err one\n', 'out two\n', 'out three\n', 'err two\n', 'out four\n'];
    const code = `const lines = ${JSON.stringify(lines)}; let i = 0;
      const next = () => { if (i === lines.length) return; const l = lines[i++]; require('fs').writeSync(l.startsWith('err') ? 2 : 1, l); setTimeout(next, 60); }; next();`;
    ws.enqueue('a.json', nodeItem('mixed', code));
    let url = (await start()).url;
    assert.equal((await finished(url, 'mixed')).outcome, 'launched');
    const check = async () => {
      const all = await outputBytes(`${url}/items/mixed/attempts/1/output`);
      assert.equal(all.status, 200);
      assert.equal(all.headers.get('content-type'), 'text/plain; charset=utf-8');
      assert.equal(all.headers.get('cache-control'), 'no-store');
      assert.equal(all.body.toString(), lines.join(''));
      const stderr = await outputBytes(`${url}/items/mixed/attempts/1/output?stream=stderr`);
      assert.equal(stderr.body.toString(), 'err one\nerr two\n');
      const stdout = await outputBytes(`${url}/items/mixed/attempts/1/output?stream=stdout`);
      assert.equal(stdout.body.toString(), 'out one\nout two\nout three\nout four\n');
      // format=runs: the same bytes, each run of one stream after a "<stream> <length>" line.
      const framed = await outputBytes(`${url}/items/mixed/attempts/1/output?format=runs`);
      assert.equal(framed.headers.get('content-type'), 'application/octet-stream');
      assert.deepEqual(parseRuns(framed.body), [
        ['stdout', 'out one\n'],
        ['stderr', 'err one\n'],
        ['stdout', 'out two\nout three\n'],
        ['stderr', 'err two\n'],
        ['stdout', 'out four\n'],
      ]);
    };
    await check();
    // The index on disk: a header, then one (stream, length) record per run of one stream.
    const index = readFileSync(path.join(ws.storage, 'output', '1.idx'));
    assert.equal(index.toString('latin1', 0, 4), 'EMO1');
    const records: [string, number][] = [];
    for (let r = 8; r < index.length; r += 8) {
      const [stream, length] = [String.fromCharCode(index[r]), index.readUInt32LE(r + 4)];
      // Two records of one stream in a row are one run (written in two batches).
      if (records.length > 0 && records[records.length - 1][0] === stream) records[records.length - 1][1] += length;
      else records.push([stream, length]);
    }
    assert.deepEqual(records, [['o', 8], ['e', 8], ['o', 18], ['e', 8], ['o', 9]]);
    await stop(run!);
    url = (await start()).url;
    await check();
  });

  it('keeps the first quarter and the last three quarters of a 3 MB output under a 1 MiB cap, joined by one marker line', async () => {
    const total = 3 * MiB;
    ws.enqueue('a.json', nodeItem('big', `const n = ${total}; const b = Buffer.alloc(n); for (let i = 0; i < n; i++) b[i] = i % 251; process.stdout.write(b);`));
    const { url } = await start('--output-max-bytes', String(MiB));
    assert.equal((await finished(url, 'big')).outcome, 'launched');
    const { status, body } = await outputBytes(`${url}/items/big/attempts/1/output`);
    assert.equal(status, 200);
    const all = pattern(total);
    const head = MiB / 4;
    const tail = MiB - head;
    const marker = Buffer.from(`\n[engine-monitor: ${total - MiB} bytes of output dropped here]\n`);
    assert.equal(body.length, MiB + marker.length);
    assert.ok(body.subarray(0, head).equals(all.subarray(0, head)), 'the head is the first quarter of the cap, byte for byte');
    assert.ok(body.subarray(head, head + marker.length).equals(marker), `one marker line: ${JSON.stringify(body.subarray(head, head + marker.length + 10).toString('latin1'))}`);
    assert.ok(body.subarray(head + marker.length).equals(all.subarray(total - tail)), 'the tail is the last three quarters, byte for byte');
    // What is on disk stays near the cap (no file holds all 3 MB).
    const onDisk = readdirSync(path.join(ws.storage, 'output')).reduce((n, f) => n + readFileSync(path.join(ws.storage, 'output', f)).length, 0);
    assert.ok(onDisk < 1.5 * MiB, `${onDisk} bytes on disk`);

    // Range: the tail, as curl -r -2000 asks for it; a start past the end is 416; HEAD has the length.
    const ranged = await outputBytes(`${url}/items/big/attempts/1/output`, { headers: { Range: 'bytes=-2000' } });
    assert.equal(ranged.status, 206);
    assert.equal(ranged.headers.get('content-range'), `bytes ${body.length - 2000}-${body.length - 1}/${body.length}`);
    assert.ok(ranged.body.equals(body.subarray(body.length - 2000)));
    const middle = await outputBytes(`${url}/items/big/attempts/1/output`, { headers: { Range: `bytes=${head - 5}-${head + 9}` } });
    assert.equal(middle.status, 206);
    assert.ok(middle.body.equals(body.subarray(head - 5, head + 10)));
    const open = await outputBytes(`${url}/items/big/attempts/1/output`, { headers: { Range: `bytes=${body.length - 3}-` } });
    assert.ok(open.body.equals(body.subarray(body.length - 3)));
    const beyond = await request(url, '/items/big/attempts/1/output', { headers: { Range: `bytes=${body.length}-` } });
    assert.equal(beyond.status, 416);
    assert.equal(beyond.headers['content-range'], `bytes */${body.length}`);
    assert.equal((beyond.json as { error: { code: string } }).error.code, 'range_not_satisfiable');
    const framed = parseRuns((await outputBytes(`${url}/items/big/attempts/1/output?format=runs`)).body);
    assert.deepEqual(framed.map(([stream]) => stream), ['stdout', 'engine', 'stdout']);
    assert.equal(framed[1][1], marker.toString());
    const headOnly = await request(url, '/items/big/attempts/1/output', { method: 'HEAD' });
    assert.equal(headOnly.status, 200);
    assert.equal(headOnly.headers['content-length'], String(body.length));
    assert.equal(headOnly.text, '');
  });

  it('serves binary and invalid UTF-8 bytes exactly as printed', async () => {
    ws.enqueue('a.json', nodeItem('bin', `const b = Buffer.alloc(512); for (let i = 0; i < 512; i++) b[i] = (i * 7) % 256; process.stdout.write(b); process.stderr.write(Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0x00]));`));
    const { url } = await start();
    await finished(url, 'bin');
    const expected = Buffer.alloc(512);
    for (let i = 0; i < 512; i++) expected[i] = (i * 7) % 256;
    const stdout = await outputBytes(`${url}/items/bin/attempts/1/output?stream=stdout`);
    assert.ok(stdout.body.equals(expected));
    const stderr = await outputBytes(`${url}/items/bin/attempts/1/output?stream=stderr`);
    assert.ok(stderr.body.equals(Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0x00])));
  });

  it('answers 404 for an unknown item, an attempt never made and one that never started a process; 400 for an unknown parameter', async () => {
    ws.enqueue('a.json', [nodeItem('ok', 'console.log("hi")'), { id: 'missing:cmd', command: 'engine-monitor-no-such-command', maxAttempts: 1 }]);
    const { url } = await start();
    await finished(url, 'ok');
    assert.equal((await finished(url, 'missing:cmd')).outcome, 'failed');
    const ok = await request(url, '/items/ok/attempts/1/output');
    assert.equal(ok.text, 'hi\n');
    for (const [p, why] of [
      ['/items/nope/attempts/1/output', 'unknown item'],
      ['/items/ok/attempts/2/output', 'attempt never made'],
      ['/items/ok/attempts/0/output', 'attempt 0'],
      ['/items/ok/attempts/x/output', 'not a number'],
      ['/items/ok/attempts/%/output', 'a broken encoding where the attempt number goes'],
      [`/items/${encodeURIComponent('missing:cmd')}/attempts/1/output`, 'never spawned'],
    ]) {
      const res = await request(url, p);
      assert.equal(res.status, 404, `${why}: ${res.text}`);
      assert.equal((res.json as { error: { code: string } }).error.code, 'not_found');
    }
    const bad = await request(url, '/items/ok/attempts/1/output?stream=both');
    assert.equal(bad.status, 400);
    const unknown = await request(url, '/items/ok/attempts/1/output?tail=5');
    assert.equal(unknown.status, 400);
    // Broken percent-encoding is the client's mistake: a 400 that says so, and no stack trace.
    for (const p of ['/items/%zz/attempts/1/output', '/items/%E0%A4%A/attempts/1/output']) {
      const res = await request(url, p);
      assert.equal(res.status, 400, `${p}: ${res.text}`);
      assert.match((res.json as { error: { message: string } }).error.message, /not valid percent-encoding; encode the id with encodeURIComponent/);
    }
    assert.doesNotMatch(run!.stderr(), /unexpected error|URIError/);
  });

  it('follow=true streams a running attempt as it prints and closes when it ends', async () => {
    const go = path.join(ws.root, 'go');
    // Prints a line, waits for the test to create `go`, prints two more and exits.
    const code = `const fs = require('fs'); console.log('first line');
      const t = setInterval(() => { if (fs.existsSync(${JSON.stringify(go)})) { clearInterval(t); console.log('second line'); console.error('third line'); } }, 20);`;
    ws.enqueue('a.json', nodeItem('slow', code));
    const { url } = await start();
    await waitFor('the first line', () => existsSync(path.join(ws.storage, 'output', '1.out')) && readFileSync(path.join(ws.storage, 'output', '1.out'), 'utf8') === 'first line\n');
    const received: string[] = [];
    let ended = false;
    const response = new Promise<number>((resolve, reject) => {
      const u = new URL(`${url}/items/slow/attempts/1/output?follow=true`);
      const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname + u.search, agent: false }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => received.push(d));
        res.on('end', () => {
          ended = true;
          resolve(res.statusCode!);
        });
      });
      req.on('error', reject);
      req.end();
    });
    await waitFor('the follower to get what exists', () => received.join('') === 'first line\n');
    assert.equal(ended, false, 'open while the attempt runs');
    writeFileSync(go, '');
    assert.equal(await response, 200);
    assert.equal(received.join(''), 'first line\nsecond line\nthird line\n');
    assert.equal((await finished(url, 'slow')).outcome, 'launched');
  });

  it('deletes the oldest output beyond the total cap: 410 for it, the newest still served', async () => {
    const big = (id: string) => nodeItem(id, `process.stdout.write(Buffer.alloc(700 * 1024, 'a'))`);
    ws.enqueue('a.json', [big('older'), big('newer')]);
    const { url } = await start('--output-max-total-mb', '1', '--concurrency', '1');
    await finished(url, 'older');
    await finished(url, 'newer');
    // Pruning runs on a later turn of the engine's event loop than the outcome.
    let gone = await request(url, '/items/older/attempts/1/output');
    for (let i = 0; i < 100 && gone.status !== 410; i++) {
      await sleep(50);
      gone = await request(url, '/items/older/attempts/1/output');
    }
    assert.equal(gone.status, 410, gone.text);
    assert.equal((gone.json as { error: { code: string } }).error.code, 'output_pruned');
    assert.equal(existsSync(path.join(ws.storage, 'output', '1.out')), false, 'its file is gone');
    const newer = await outputBytes(`${url}/items/newer/attempts/1/output`);
    assert.equal(newer.status, 200);
    assert.equal(newer.body.length, 700 * 1024);
    // The log entries stay.
    assert.ok((await allLogs(url)).some((e) => e.itemId === 'older' && e.action === 'launch_succeeded'));
  });

  it('deletes an item\'s output once log retention has pruned every log entry of that item', async () => {
    // More items than the engine deletes the files of at once (REMOVERS in outputRetention.ts):
    // the queue must reach the last ones too.
    const others = ['old-2', 'old-3', 'old-4', 'old-5', 'old-6'];
    ws.enqueue('a.json', [nodeItem('old', 'console.log("old output")'), ...others.map((id) => nodeItem(id, `console.log(${JSON.stringify(id)})`))]);
    let url = (await start()).url;
    await finished(url, 'old');
    for (const id of others) await finished(url, id);
    assert.equal((await request(url, '/items/old/attempts/1/output')).text, 'old output\n');
    await stop(run!);
    // Restarted keeping 2 entries: pruning at start leaves the last engine_stopped and the new
    // engine_started, none of item "old".
    url = (await start('--log-max-entries', '2')).url;
    let res = await request(url, '/items/old/attempts/1/output');
    for (let i = 0; i < 100 && res.status !== 410; i++) {
      await sleep(50);
      res = await request(url, '/items/old/attempts/1/output');
    }
    assert.equal(res.status, 410, res.text);
    assert.equal((await allLogs(url)).some((e) => e.itemId === 'old'), false);
    // Its short output was one file (src/core/outputFiles.ts): it was there, and is gone; so are
    // the other items' (attempts 2 to 6).
    await waitFor('the files to go', () => ['1.o', '1.out', '1.idx'].every((f) => !existsSync(path.join(ws.storage, 'output', f))));
    await waitFor('every item\'s files to go', () => readdirSync(path.join(ws.storage, 'output')).every((f) => !/^[1-6]\./.test(f)));
  });

  it('an attempt printing 100 MB does not slow /stats, and the launch helper stays small', async function () {
    ws.enqueue('a.json', nodeItem('warmup', '0'));
    const { url } = await start();
    await finished(url, 'warmup');
    const p99 = async (n: number): Promise<number> => {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        const res = await fetch(`${url}/stats`);
        await res.arrayBuffer();
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      return times[Math.floor(times.length * 0.99)];
    };
    const idle = await p99(300);
    // The pool's helpers together: the flood runs in one of them.
    const helpers = await waitFor('the launch helpers', () => {
      const found = processesMentioning(`--engine-pid=${run!.child.pid}`);
      return found.length > 0 && found;
    });
    const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
    const rss = () => helpers.reduce((sum, h) => sum + rssOf(h.pid), 0);
    const rssBefore = rss();
    ws.enqueue('b.json', nodeItem('flood', `const b = Buffer.alloc(1024 * 1024, 'y'); let i = 0; const w = () => { while (i < 100) { i++; if (!process.stdout.write(b)) return process.stdout.once('drain', w); } }; w();`));
    await waitFor('the flood to start', () => existsSync(path.join(ws.storage, 'output', '2.out')), 20_000);
    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 20);
    // /stats as fast as one client asks, for as long as the flood runs.
    let flooding = true;
    const done = finished(url, 'flood', 60_000).finally(() => (flooding = false));
    const times: number[] = [];
    while (flooding) {
      const t0 = performance.now();
      await (await fetch(`${url}/stats`)).arrayBuffer();
      times.push(performance.now() - t0);
    }
    await done;
    clearInterval(sampler);
    assert.ok(times.length >= 50, `only ${times.length} requests while the attempt printed`);
    times.sort((a, b) => a - b);
    const loaded = times[Math.floor(times.length * 0.99)];
    if (process.env.OUTPUT_TEST_FIGURES) console.log({ idle, loaded, requests: times.length, rssBefore, peak });
    assert.ok(loaded < 10 * idle + 50, `/stats p99 ${loaded.toFixed(1)} ms under load vs ${idle.toFixed(1)} ms idle`);
    assert.ok(peak - rssBefore < 48 * MiB, `the helpers' RSS grew by ${((peak - rssBefore) / MiB).toFixed(1)} MiB (from ${(rssBefore / MiB).toFixed(1)} MiB)`);
    const head = await request(url, '/items/flood/attempts/1/output', { method: 'HEAD' });
    assert.equal(head.headers['content-length'], String(10 * MiB + `\n[engine-monitor: ${90 * MiB} bytes of output dropped here]\n`.length));
  });

  it('a full disk cuts the output, the attempt still runs and is recorded, and /health reports the storage error', async function () {
    if (!existsSync('/dev/full')) {
      if (process.env.CI) assert.fail('this test needs /dev/full (Linux)');
      this.skip();
    }
    const { url } = await start();
    // Attempt 1's output file is /dev/full, where every write fails with ENOSPC. Made once the
    // engine runs: at its start it removes files of attempts its database never had.
    outputOnFullDisk(path.join(ws.storage, 'output'), 1);
    ws.enqueue('a.json', nodeItem('full', 'console.log("x".repeat(1000))'));
    assert.equal((await finished(url, 'full')).outcome, 'launched');
    const health = await request(url, '/health');
    assert.equal(health.status, 503);
    assert.equal((health.json as { checks: { database: string } }).checks.database, 'error');
    const logs = await allLogs(url);
    assert.ok(logs.some((e) => e.action === 'database_error' && /ENOSPC/.test(e.message)), JSON.stringify(logs.map((e) => e.message)));
    // The next attempt writes its output: storage is reported healthy again.
    ws.enqueue('b.json', nodeItem('fine', 'console.log("ok")'));
    await finished(url, 'fine');
    assert.equal((await request(url, '/health')).status, 200);
    assert.equal((await request(url, '/items/fine/attempts/1/output')).text, 'ok\n');
  });

  it('a full disk mid-output: the output ends with a line saying it was cut (needs a tmpfs mount: root)', async function () {
    const dir = path.join(ws.storage, 'output');
    mkdirSync(dir, { recursive: true });
    // A 256 KiB file system for the output alone: the journal and snapshot stay writable.
    const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', dir], { encoding: 'utf8' });
    if (mount.status !== 0) {
      // In CI a missing prerequisite fails the run (.ci/run runs as root); elsewhere it is skipped.
      if (process.env.CI) assert.fail(`this test mounts a tmpfs and needs root: mount said ${mount.stderr || mount.error?.message}`);
      this.skip();
    }
    try {
      ws.enqueue('a.json', nodeItem('cut', `process.stdout.write(Buffer.alloc(1024 * 1024, 'z'))`, { maxAttempts: 1 }));
      const { url } = await start();
      assert.equal((await finished(url, 'cut')).outcome, 'launched', 'the attempt ran to its end');
      const { body } = await outputBytes(`${url}/items/cut/attempts/1/output`);
      const cut = body.lastIndexOf('\n[engine-monitor: output cut here');
      assert.ok(cut > 0, body.subarray(-200).toString('latin1'));
      assert.match(body.subarray(cut).toString('latin1'), /^\n\[engine-monitor: output cut here, it could not be written: ENOSPC[^\]\n]*\]\n$/);
      assert.ok(/^z+$/.test(body.subarray(0, cut).toString('latin1')), `the ${cut} bytes before the marker are what was printed`);
      const stdout = await outputBytes(`${url}/items/cut/attempts/1/output?stream=stdout`);
      assert.ok(stdout.body.equals(body), 'the marker is in the index too');
      assert.equal((await request(url, '/health')).status, 503);
      await stop(run!);
      run = undefined;
    } finally {
      spawnSync('umount', [dir]);
    }
  });

  it('at start removes output files of attempts its database never had (a database lost and begun again)', async () => {
    const dir = path.join(ws.storage, 'output');
    mkdirSync(dir, { recursive: true });
    for (const f of ['1.out', '1.idx', '1.tails', '1.t3.out', '1.t3.idx', 'pack-1-7.p']) writeFileSync(path.join(dir, f), 'stale');
    ws.enqueue('a.json', nodeItem('fresh', 'console.log("fresh")'));
    const { url } = await start();
    await finished(url, 'fresh');
    assert.equal((await request(url, '/items/fresh/attempts/1/output')).text, 'fresh\n');
    // A short attempt's output is a link to the launch helper's pack (src/core/outputFiles.ts); the
    // stale files are gone, a killed helper's pack name too.
    const names = readdirSync(dir);
    assert.deepEqual(names.filter((n) => !/^pack-\d+-\d+\.p$/.test(n)), ['1.o']);
    assert.equal(names.includes('pack-1-7.p'), false);
  });

  it('refuses a per-attempt cap under 64 KiB with a usage error', async () => {
    const cli = runCli(['serve', '--workspace', ws.folder, '--storage', ws.storage, '--output-max-bytes', '1000']);
    assert.equal((await cli.exited).code, EXIT_USAGE);
    assert.match(cli.stderr(), /--output-max-bytes must be a whole number from 65536/);
  });
});

describe('attempt output: a follower that disconnects', function () {
  this.timeout(60_000);
  it('leaves no watcher or timer behind', async () => {
    const ws = new TempWorkspace('engine-output-follow-');
    const go = path.join(ws.root, 'go');
    ws.enqueue('a.json', nodeItem('wait', `console.log('started'); const t = setInterval(() => { if (require('fs').existsSync(${JSON.stringify(go)})) clearInterval(t); }, 20);`));
    const engine = await Engine.create(ws.options());
    await engine.start();
    const server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
    try {
      await waitFor('output', () => existsSync(path.join(ws.storage, 'output', '1.out')) && readFileSync(path.join(ws.storage, 'output', '1.out'), 'utf8') === 'started\n');
      const u = new URL(`${server.url}/items/wait/attempts/1/output?follow=true`);
      let got = '';
      const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname + u.search, agent: false }, (res) => res.on('data', (d: Buffer) => (got += d.toString())));
      req.on('error', () => undefined);
      req.end();
      await waitFor('the follower to be served', () => got === 'started\n');
      assert.equal(openFollowers(), 1);
      assert.equal(engine.outputFollowers, 1);
      req.destroy();
      await waitFor('the follower to be gone', () => openFollowers() === 0 && engine.outputFollowers === 0);
      writeFileSync(go, '');
    } finally {
      await server.close();
      await engine.shutdown(2000);
      ws.dispose();
    }
  });
});

describe('attempt output: an engine without storage, launching in its own process', function () {
  this.timeout(60_000);
  it('captures into a temporary folder it removes at shutdown', async () => {
    const ws = new TempWorkspace('engine-output-memory-');
    ws.enqueue('a.json', nodeItem('mem', 'console.log("in memory"); setTimeout(() => console.error("and stderr"), 60)'));
    const engine = await Engine.create(ws.options({ storageDir: null, launchHelper: null }));
    await engine.start();
    const server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
    const dir = (engine as unknown as { output: { dir: string } }).output.dir;
    try {
      await waitFor('the item to finish', () => engine.stats().launched === 1);
      assert.equal((await request(server.url, '/items/mem/attempts/1/output')).text, 'in memory\nand stderr\n');
      assert.equal((await request(server.url, '/items/mem/attempts/1/output?stream=stderr')).text, 'and stderr\n');
      // Captured into the temporary folder. Not which layout: one file if the attempt ended within
      // the 100 ms the capture keeps output in memory, else head and index files, and on a loaded
      // machine the process's 60 ms pause plus its exit can outlast that (a run beside a second
      // load found 1.o missing). outputCapture.test.ts checks each layout without a clock.
      assert.ok(readdirSync(dir).some((f) => /^1\.(o|out)$/.test(f)), `attempt 1's output in ${dir}: ${readdirSync(dir).join(', ')}`);
    } finally {
      await server.close();
      await engine.shutdown(1000);
      ws.dispose();
    }
    assert.equal(existsSync(dir), false, `${dir} removed at shutdown`);
  });
});
