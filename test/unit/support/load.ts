// The load scenario: clients hammering /logs and holding /events open while the engine
// launches a queue of items, against the real CLI in its own process.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { LogEntry, StatsResponse } from '../../../src/shared/api';
import { SseClient } from './http';
import { getJson, serve } from './cli';
import type { TempWorkspace } from './workspace';

export interface LoadResult {
  items: number;
  logRequests: number;
  errors: number;
  errorSamples: string[];
  sseClients: number;
  sseDropped: number;
  logEventsPerClient: { min: number; max: number };
  rssKiB: { start: number; peak: number; end: number };
  durationMs: number;
}

function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
}

/**
 * Starts the CLI, opens the /events streams, then drops a queue of `items` quick commands (one in
 * ten fails) and keeps `logClients` clients requesting /logs, /stats and /status until every item
 * has its outcome (and at least `minDurationMs` passed), sampling the engine host's RSS.
 */
export async function loadWhileLaunching(
  ws: TempWorkspace,
  opts: { items: number; logClients: number; sseClients: number; minDurationMs?: number },
): Promise<LoadResult> {
  const lines = Array.from({ length: opts.items }, (_, i) => JSON.stringify({ id: `load-${i}`, command: i % 10 === 0 ? 'false' : 'true', maxAttempts: 1 }));
  const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '200', '--concurrency', '4']);
  const pid = run.child.pid!;
  const started = Date.now();
  const rss = { start: rssKiB(pid), peak: 0, end: 0 };
  const sse = await Promise.all(Array.from({ length: opts.sseClients }, () => SseClient.open(run.url)));
  for (const c of sse) assert.equal(c.status, 200);
  // Files of 1,000 items stay well under the 1 MiB limit for a queue file.
  for (let f = 0; f * 1000 < lines.length; f++) {
    ws.enqueue(`load-${String(f).padStart(3, '0')}.jsonl`, lines.slice(f * 1000, (f + 1) * 1000).join('\n') + '\n');
  }

  let done = false;
  let logRequests = 0;
  let errors = 0;
  /** What the first failed requests got, so a failure says what went wrong. */
  const errorSamples: string[] = [];
  const queries = [
    '/logs?limit=100',
    '/logs?action=launch_failed&limit=50',
    '/logs?level=warn&order=asc&limit=20',
    '/logs?q=launching&limit=100',
    '/logs?item=load-7',
    '/stats',
    '/status',
  ];
  const clients = Array.from({ length: opts.logClients }, async (_, c) => {
    for (let i = c; !done; i++) {
      const query = queries[i % queries.length];
      const res = await fetch(`${run.url}${query}`).catch((err: Error & { cause?: { code?: string; message?: string } }) => {
        if (errorSamples.length < 5) errorSamples.push(`${query}: ${err.message} (${err.cause?.code ?? err.cause?.message ?? 'no cause'})`);
        return undefined;
      });
      logRequests++;
      if (res && res.status === 200) await res.arrayBuffer();
      else if (res) {
        errors++;
        const body = await res.text().catch(() => '');
        if (errorSamples.length < 5) errorSamples.push(`${query}: ${res.status} ${body.slice(0, 200)}`);
      } else errors++;
    }
  });
  const sampler = setInterval(() => (rss.peak = Math.max(rss.peak, rssKiB(pid))), 250);
  let stats: StatsResponse['overview'];
  const deadline = Date.now() + 30 * 60_000;
  for (;;) {
    stats = (await getJson<StatsResponse>(`${run.url}/stats`)).overview;
    if (Date.now() > deadline) throw new Error(`the queue did not drain in 30 minutes: ${JSON.stringify(stats)}`);
    const settled = stats.total === opts.items && stats.pending === 0;
    if (settled && Date.now() - started >= (opts.minDurationMs ?? 0)) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  done = true;
  await Promise.all(clients);
  clearInterval(sampler);
  // Every stream saw every launch outcome that happened while it was connected (all of them).
  const outcomes = stats.totalLaunches;
  await Promise.all(
    sse.map((c) =>
      c.waitFor((events) => events.filter((e) => e.event === 'log' && /"action":"launch_(succeeded|failed)"/.test(e.data)).length >= outcomes, 10_000, 'all outcomes'),
    ),
  );
  const perClient = sse.map((c) => c.named('log').length);
  const dropped = sse.filter((c) => c.closed).length;
  rss.end = rssKiB(pid);
  for (const c of sse) c.close();
  const last = JSON.parse(sse[0].named('log').at(-1)!.data) as LogEntry;
  assert.ok(last.id > 0);
  run.child.kill('SIGTERM');
  assert.equal((await run.exited).code, 0);
  return {
    items: opts.items,
    logRequests,
    errors,
    errorSamples,
    sseClients: sse.length,
    sseDropped: dropped,
    logEventsPerClient: { min: Math.min(...perClient), max: Math.max(...perClient) },
    rssKiB: rss,
    durationMs: Date.now() - started,
  };
}
