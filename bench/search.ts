// Scenario 1b of `npm run bench` (`search`): word searches (/logs?q=, /items?q=) at
// BENCH_API_ITEMS items and BENCH_API_LOGS entries, each p99 against /health's in the same run.
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { CFG, TMP } from './config';
import { load, seeded, ServerChild } from './children';
import { add, log, raw } from './results';
import { median } from './lib';

/**
 * Word searches as users type them, at 1,000,000 entries: a rare word (every 50,000th entry), a
 * word in every entry, the two together, and two or three words common to (nearly) every entry;
 * /items?q= over 100,000 items. Each at 10 connections, p99 against /health's p99 in the same run.
 */
/** Asks `search` once while asking /health back to back on another connection until it is answered. */
async function firstSearchStall(url: string, search: string): Promise<{ searchMs: number; healthMaxMs: number; healthChecks: number }> {
  let done = false;
  const t0 = performance.now();
  const searching = fetch(url + search)
    .then(async (res) => {
      const body = await res.text();
      if (res.status !== 200) throw new Error(`${search} answered ${res.status}: ${body}`);
      return Math.round(performance.now() - t0);
    })
    .finally(() => (done = true));
  let healthMaxMs = 0;
  let healthChecks = 0;
  while (!done) {
    const t = performance.now();
    await (await fetch(url + '/health')).text();
    healthMaxMs = Math.max(healthMaxMs, Math.round(performance.now() - t));
    healthChecks++;
  }
  return { searchMs: await searching, healthMaxMs, healthChecks };
}

export async function scenarioSearch(): Promise<void> {
  log('\n== scenario 1b: word search');
  const { dir, seed, cached } = await seeded('api', CFG.apiItems, CFG.apiLogs, 0);
  raw.searchSeed = { ...seed, cached };
  const storageDir = path.join(TMP, 'search', 'storage');
  const workspace = path.join(TMP, 'search', 'ws');
  rmSync(path.join(TMP, 'search'), { recursive: true, force: true });
  mkdirSync(workspace, { recursive: true });
  cpSync(dir, storageDir, { recursive: true });
  const engine = await ServerChild.start(
    { mode: 'engine', storageDir, workspace, logMaxEntries: Math.max(100_000, CFG.apiLogs * 2), snapshotIntervalMs: CFG.apiSnapshotMs },
    'search-engine',
  );
  const rare = seed.rareWord;
  // Every seeded message names its item "nightly-report-<n>"; "attempt" is in all but the
  // discovery entries (nine in ten).
  const searches: { key: string; path: string; target: number; expect?: number }[] = [
    { key: 'rare word', path: `/logs?q=${rare}&limit=100`, target: 50, expect: Math.min(100, seed.rareMatches) },
    { key: 'word in every entry', path: '/logs?q=nightly&limit=100', target: 50, expect: 100 },
    { key: 'rare word + word in every entry', path: `/logs?q=${rare}+nightly&limit=100`, target: 50, expect: Math.min(100, seed.rareMatches) },
    { key: 'two words in every entry', path: '/logs?q=nightly+report&limit=100', target: 50, expect: 100 },
    { key: 'three common words', path: '/logs?q=nightly+report+attempt&limit=100', target: 50, expect: 100 },
    { key: 'uncommon word (1 in 200)', path: '/logs?q=failed&limit=100', target: 50, expect: 100 },
    { key: '/items?q= word in every item', path: '/items?q=nightly&limit=100', target: 20 },
    { key: '/items?q= one item', path: `/items?q=${seed.sampleItemId}`, target: 20 },
  ];
  // The first /items?q= builds the items' word index (src/core/itemSearch.ts): the longest /health
  // answer meanwhile, asked back to back on another connection, is how long it held the engine.
  const first = await firstSearchStall(engine.url, '/items?q=nightly&limit=100');
  raw.firstItemSearch = first;
  log(`  first /items?q=: ${first.searchMs} ms; longest /health meanwhile ${first.healthMaxMs} ms (${first.healthChecks} checks)`);
  add({
    scenario: 'search',
    measure: `first /items?q= after start (builds the word index), ${CFG.apiItems.toLocaleString('en-US')} items: longest /health answer meanwhile`,
    value: first.healthMaxMs,
    unit: 'ms',
    note: `the search itself took ${first.searchMs} ms; ${first.healthChecks} /health checks, one at a time`,
  });
  for (const e of searches) {
    const res = await fetch(engine.url + e.path);
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${e.path} answered ${res.status}: ${body}`);
    const n = e.path.startsWith('/items') ? (JSON.parse(body) as { items: unknown[] }).items.length : (JSON.parse(body) as unknown[]).length;
    if (e.expect !== undefined && n !== e.expect) throw new Error(`${e.path} found ${n} entries, expected ${e.expect}`);
  }
  await engine.request('snapshot');
  const health: number[] = [];
  const p99: Record<string, number[]> = {};
  const p50: Record<string, number[]> = {};
  for (let r = 0; r < CFG.runs; r++) {
    health.push((await load(engine.url + '/health', CFG.latencyConnections, CFG.duration)).latency.p99);
    for (const e of searches) {
      await engine.phase(`${e.key} latency, ${CFG.latencyConnections} conn`);
      const s = await load(engine.url + e.path, CFG.latencyConnections, CFG.duration);
      if (s.errors || s.non2xx) log(`  warning: ${e.key} had ${s.non2xx} non-2xx and ${s.errors} errors`);
      (p99[e.key] ??= []).push(s.latency.p99);
      (p50[e.key] ??= []).push(s.latency.p50);
    }
    log(`  run ${r + 1}: /health p99 ${health[r]} ms; ${searches.map((e) => `${e.key} ${p99[e.key][r]}`).join(', ')} ms`);
  }
  raw.searchLatency = { health, p99, p50 };
  const base = median(health);
  for (const e of searches) {
    const v = median(p99[e.key]);
    const scale = e.path.startsWith('/items') ? `${CFG.apiItems.toLocaleString('en-US')} items` : `${CFG.apiLogs.toLocaleString('en-US')} entries`;
    add({
      scenario: 'search',
      measure: `${e.key.startsWith('/items') ? e.key : `/logs?q= ${e.key}`} p99, ${CFG.latencyConnections} conn, ${scale}`,
      value: v,
      unit: 'ms',
      baseline: base,
      ...(base > 0 ? { ratio: v / base } : {}),
      target: `≤ ${e.target} ms`,
      met: v <= e.target,
      note: `p50 ${median(p50[e.key])} ms; baseline: /health p99 in the same run`,
    });
  }
  await engine.stop();
}
