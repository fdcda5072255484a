// The crash loop: a headless engine on a mixed queue, killed with SIGKILL at random
// moments and restarted on the same storage, then left to finish. Shared by the quick variant in
// the unit suite and the long one in test:soak.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadSqlJs } from '../../../src/core/store/sqlJs';
import type { StatsResponse } from '../../../src/shared/api';
import { allLogs, getJson, serve } from './cli';
import type { TempWorkspace } from './workspace';

export interface CrashLoopResult {
  kills: number;
  items: number;
  launches: number;
  interrupted: number;
  /** Kills that landed while a checkpoint was folding the journal (engine.journal.next on disk). */
  killedMidCheckpoint: number;
  duplicates: number;
  stats: StatsResponse['overview'];
}

/** Deterministic pseudo-random numbers, so a failing run can be repeated with its seed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function crashLoop(
  ws: TempWorkspace,
  opts: { items: number; kills: number; seed: number; log?: (line: string) => void },
): Promise<CrashLoopResult> {
  const rnd = random(opts.seed);
  const kinds: Record<string, 'quick' | 'fail' | 'sleep'> = {};
  const lines: string[] = [];
  for (let i = 0; i < opts.items; i++) {
    const r = rnd();
    const id = `item-${i}`;
    if (r < 0.5) {
      kinds[id] = 'quick';
      lines.push(JSON.stringify({ id, command: 'true', maxAttempts: 50 }));
    } else if (r < 0.8) {
      kinds[id] = 'fail';
      lines.push(JSON.stringify({ id, command: 'false', maxAttempts: 2 }));
    } else {
      kinds[id] = 'sleep';
      const seconds = (1 + rnd() * 2).toFixed(2);
      lines.push(JSON.stringify({ id, command: 'sleep', args: [seconds], maxAttempts: 50 }));
    }
  }
  // Several files, so ingestion itself can be interrupted half way.
  const perFile = 50;
  for (let f = 0; f * perFile < lines.length; f++) {
    ws.enqueue(`batch-${String(f).padStart(3, '0')}.jsonl`, lines.slice(f * perFile, (f + 1) * perFile).join('\n') + '\n');
  }
  // Snapshots every 300 ms: the kills also land while a checkpoint worker is folding the journal.
  const args = ['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '200', '--concurrency', '8', '--snapshot-interval', '300', '--snapshot-min-journal', '0'];
  let killedMidCheckpoint = 0;
  for (let k = 0; k < opts.kills; k++) {
    const run = await serve(args);
    const delay = 200 + Math.floor(rnd() * 1800);
    await new Promise((r) => setTimeout(r, delay));
    run.child.kill('SIGKILL');
    await run.exited;
    if (existsSync(path.join(ws.storage, 'engine.journal.next'))) killedMidCheckpoint++;
    opts.log?.(`kill ${k + 1}/${opts.kills} after ${delay} ms`);
  }
  const final = await serve(args);
  let stats: StatsResponse['overview'];
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    stats = (await getJson<StatsResponse>(`${final.url}/stats`)).overview;
    if (stats.total === opts.items && stats.pending === 0) break;
    if (Date.now() > deadline) throw new Error(`not settled: ${JSON.stringify(stats)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const logs = await allLogs(final.url);
  final.child.kill('SIGTERM');
  assert.equal((await final.exited).code, 0);

  // Every item reached its final outcome; none lost.
  const expectLaunched = Object.values(kinds).filter((k) => k !== 'fail').length;
  assert.equal(stats.total, opts.items, 'no item lost');
  assert.equal(stats.launched, expectLaunched);
  assert.equal(stats.failed, opts.items - expectLaunched);
  assert.equal(stats.totalLaunches, stats.launched + stats.totalFailed, 'counter invariant (nothing running, no hand retries)');

  // Per item: every start has exactly one ending, and every extra launch of a success is an interruption.
  const by = (action: string) => {
    const m = new Map<string, number>();
    for (const e of logs) if (e.action === action && e.itemId) m.set(e.itemId, (m.get(e.itemId) ?? 0) + 1);
    return m;
  };
  const started = by('launch_started');
  const succeeded = by('launch_succeeded');
  const failed = by('launch_failed');
  const interrupted = by('launch_interrupted');
  let duplicates = 0;
  for (const [id, kind] of Object.entries(kinds)) {
    const s = started.get(id) ?? 0;
    const ok = succeeded.get(id) ?? 0;
    const bad = failed.get(id) ?? 0;
    const cut = interrupted.get(id) ?? 0;
    assert.equal(s, ok + bad + cut, `${id}: every start has one ending`);
    if (kind === 'fail') {
      assert.equal(s, 2, `${id}: a failing item uses exactly its maxAttempts`);
    } else {
      assert.equal(ok, 1, `${id}: succeeded once`);
      assert.equal(bad, 0, `${id}: never failed`);
      assert.equal(s - 1, cut, `${id}: duplicate launches are interrupted ones`);
      duplicates += s - 1;
    }
  }
  const totalInterrupted = [...interrupted.values()].reduce((a, b) => a + b, 0);

  // The database on disk opens and is intact.
  const SQL = await loadSqlJs();
  const db = new SQL.Database(readFileSync(path.join(ws.storage, 'engine.sqlite')));
  assert.equal(db.exec('PRAGMA integrity_check')[0].values[0][0], 'ok');
  assert.equal(db.exec('SELECT COUNT(*) FROM items')[0].values[0][0], opts.items);
  db.close();

  return { kills: opts.kills, items: opts.items, launches: stats.totalLaunches, interrupted: totalInterrupted, killedMidCheckpoint, duplicates, stats };
}
