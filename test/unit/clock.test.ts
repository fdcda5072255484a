// The wall clock jumping under a running engine (set by hand, a VM resumed, NTP stepping it): a
// retry waiting out its backoff keeps the delay it had left, and a jump forward is not a stall.
// The engine runs as the real CLI with libfaketime preloaded, so its wall clock really jumps while
// the monotonic clock goes on (Debian package faketime, installed by .ci/run).
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CLI, assertBuilt, getJson } from './support/cli';
import { nodeItem, TempWorkspace, waitFor } from './support/workspace';
import type { HealthResponse, ItemSummary } from '../../src/shared/api';

/** libfaketime from Debian's faketime package, wherever the architecture puts it. */
function libfaketime(): string {
  for (const dir of readdirSync('/usr/lib')) {
    const candidate = path.join('/usr/lib', dir, 'faketime', 'libfaketime.so.1');
    if (existsSync(candidate)) return candidate;
  }
  throw new Error('libfaketime is missing: install the Debian package "faketime" (.ci/run does)');
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('clock jumps under a running engine', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let child: ChildProcess | undefined;
  beforeEach(() => (ws = new TempWorkspace('engine-clock-')));
  afterEach(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
    ws.dispose();
  });

  it('a retry in backoff keeps its delay when the clock goes back 2 h; a jump forward is no stall', async () => {
    assertBuilt();
    const clockFile = path.join(ws.root, 'faketime');
    writeFileSync(clockFile, '+0');
    // Attempt 1 fails, attempt 2 succeeds: the item waits out one backoff (about 1 s) in between.
    ws.enqueue('a.json', nodeItem('once', 'process.exit(Number(process.env.ENGINE_ATTEMPT) === 1 ? 1 : 0)', { maxAttempts: 2 }));
    child = spawn(process.execPath, [CLI, 'serve', '--workspace', ws.folder, '--storage', ws.storage, '--port', '0', '--quiet', '--poll-interval', '2000'], {
      env: {
        ...process.env,
        LD_PRELOAD: libfaketime(),
        FAKETIME_TIMESTAMP_FILE: clockFile,
        FAKETIME_NO_CACHE: '1',
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const url = await waitFor('the engine to listen', () => /listening on (\S+)/.exec(out)?.[1], 20_000);
    const item = async () => (await getJson<{ items: ItemSummary[] }>(`${url}/items`)).items[0];

    await until('attempt 1 to fail and the retry to wait', async () => (await item())?.phase === 'backoff', 15_000);
    writeFileSync(clockFile, '-2h');
    assert.equal((await item()).phase, 'backoff', 'the clock went back while the retry waited');
    await until('the retry to run and succeed', async () => (await item()).outcome === 'launched', 15_000);

    // Four hours forward: the last poll was not four hours ago.
    writeFileSync(clockFile, '+2h');
    for (let i = 0; i < 10; i++) {
      const health = await getJson<HealthResponse>(`${url}/health`);
      assert.equal(health.checks.engine, 'running', `health right after the jump (${i}): ${JSON.stringify(health)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});
