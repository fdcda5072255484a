// The engine's bound on output readers, end to end: the headless CLI (dist/cli.js) under a
// descriptor limit, a real process printing fast, and real slow HTTP followers on loopback.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { MAX_OUTPUT_READERS } from '../../src/server/outputRoute';
import { serve, type ServeProcess } from './support/cli';
import { nodeItem, TempWorkspace, waitFor } from './support/workspace';

describe('attempt output: a bounded number of readers', function () {
  this.timeout(180_000);
  let ws: TempWorkspace;
  let run: ServeProcess | undefined;
  beforeEach(() => (ws = new TempWorkspace('engine-output-readers-')));
  afterEach(async () => {
    if (run) {
      run.child.kill('SIGTERM');
      await run.exited;
    }
    run = undefined;
    ws.dispose();
  });

  // The default poll interval: /health says `stalled` (503) when no poll started for three of them,
  // and at 100 ms that was 300 ms, which the printer, 32 followers and a second load on two cores
  // exceeded once (a run beside a busy core). Six seconds (3 × 2 s) without a poll would be a real stall.
  const start = async (...flags: string[]) => (run = await serve(['--workspace', ws.folder, '--storage', ws.storage, ...flags]));

  it(`serves at most ${MAX_OUTPUT_READERS} output readers at once: under 1,024 descriptors, 90 slow followers of a fast printer get 200 or a 503 to retry, never EMFILE, and the engine keeps answering`, async function () {
    const go = path.join(ws.root, 'go');
    // Prints fast until `go` exists: at the smallest cap the output rotates through tail segments.
    const code = `const fs = require('fs'); const chunk = 'x'.repeat(4095) + '\\n';
      const t = setInterval(() => { for (let i = 0; i < 16; i++) process.stdout.write(chunk); if (fs.existsSync(${JSON.stringify(go)})) clearInterval(t); }, 5);`;
    ws.enqueue('a.json', nodeItem('flood', code));
    const { url, child } = await start('--output-max-bytes', '65536');
    await waitFor('output past the cap', () => existsSync(path.join(ws.storage, 'output')) && readdirSync(path.join(ws.storage, 'output')).some((f) => /\.t\d+\.out$/.test(f)));
    // The limit the hostile tester ran under; Node raised its own to the hard limit at start.
    assert.equal(spawnSync('prlimit', ['--pid', String(child.pid), '--nofile=1024:1024']).status, 0);
    const u = new URL(`${url}/items/flood/attempts/1/output?follow=true&format=runs`);
    const held: { destroy(): void }[] = [];
    const follow = () =>
      new Promise<{ status: number; retryAfter?: string; body: string }>((resolve, reject) => {
        const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname + u.search, agent: false }, (res) => {
          if (res.statusCode === 200) {
            // A slow reader: it takes nothing more, so the engine's writes to it wait.
            res.pause();
            held.push(req);
            return resolve({ status: 200, body: '' });
          }
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], body }));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      const answers = await Promise.all(Array.from({ length: 90 }, follow));
      const served = answers.filter((a) => a.status === 200).length;
      const refused = answers.filter((a) => a.status === 503);
      assert.equal(served, MAX_OUTPUT_READERS, JSON.stringify(answers.filter((a) => a.status !== 200 && a.status !== 503)));
      assert.equal(refused.length, 90 - MAX_OUTPUT_READERS);
      for (const r of refused) {
        assert.equal(r.retryAfter, '1');
        assert.equal(JSON.parse(r.body).error.code, 'too_many_readers');
      }
      // The engine answers while the slow followers hold on.
      const health = await fetch(`${url}/health`);
      assert.equal(health.status, 200, await health.clone().text());
      // A reader that leaves makes room for the next.
      held.pop()!.destroy();
      await waitFor('a follower to get in once one left', async () => (await follow()).status === 200);
      assert.doesNotMatch(run!.stderr(), /EMFILE|too many open files/i);
    } finally {
      writeFileSync(go, '');
      for (const req of held) req.destroy();
    }
  });
});
