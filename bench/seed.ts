// Seeds an engine storage folder at benchmark scale through the store's own API (Store.open,
// store.batch, store.mutate), the same statements the engine journals, so the database is exactly
// what a long-running engine would hold: items with their definitions and outcomes, one attempt per
// item, and log entries (with their full-text index rows) that look like the engine's own.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { Store } from '../src/core/store';
import { definitionHash, storedDefinition, type ItemDefinition } from '../src/core/intake/items';
import { LEVEL_RANK } from '../src/core/reads/logQuery';
import type { LogAction, LogLevel } from '../src/shared/api';

export interface SeedOptions {
  storageDir: string;
  items: number;
  logs: number;
  /** Mutations left in the journal after the last snapshot (what startup has to replay). */
  journalRecords?: number;
  /** Every `rareEvery`-th message carries RARE_WORD, for the text-search scenario. */
  rareEvery?: number;
}

export interface SeedResult {
  items: number;
  logs: number;
  journalRecords: number;
  /** An item id that has log entries, for /logs?item=. */
  sampleItemId: string;
  rareWord: string;
  rareMatches: number;
  seconds: number;
}

export const RARE_WORD = 'quokka';
const DAY = 86_400_000;

/** Item i's id: readable and deterministic. */
export function seededItemId(i: number): string {
  return `bench-${String(i).padStart(6, '0')}`;
}

export async function seedStore(o: SeedOptions): Promise<SeedResult> {
  const t0 = performance.now();
  const { store } = await Store.open({ storageDir: o.storageDir });
  const now = Date.now();
  const rareEvery = o.rareEvery ?? 50_000;
  const cwd = path.resolve(o.storageDir, '..', 'ws');
  // Log entries spread over the last 13 days, inside the default 14-day retention.
  const span = 13 * DAY;
  const logsPerItem = Math.max(1, Math.ceil(o.logs / Math.max(1, o.items)));
  let totalLaunches = 0;
  let totalFailed = 0;

  const CHUNK = 5_000;
  for (let start = 0; start < o.items; start += CHUNK) {
    store.batch(() => {
      for (let i = start; i < Math.min(o.items, start + CHUNK); i++) {
        const id = seededItemId(i);
        const item: ItemDefinition = {
          id,
          name: `nightly-report-${i}`,
          command: '/usr/bin/env',
          args: ['node', 'scripts/report.js', '--part', String(i)],
          shell: false,
          cwd,
          env: { REPORT_PART: String(i) },
          timeoutMs: 600_000,
          maxAttempts: 3,
          runAt: null,
        };
        const created = now - span + Math.floor((i / o.items) * span);
        // 90 % launched, 5 % failed, 5 % pending: a long-lived queue.
        const kind = i % 20 === 0 ? 'failed' : i % 20 === 1 ? 'pending' : 'launched';
        store.mutate('item_insert', [id, item.name, 'queue/reports.jsonl', storedDefinition(item), definitionHash(item), 3, null, created, created, created]);
        if (kind === 'pending') continue;
        totalLaunches++;
        store.mutate('attempt_insert', [totalLaunches, id, 1, created + 10]);
        if (kind === 'launched') {
          store.mutate('attempt_finish', [created + 900, 'succeeded', 0, null, null, 'report written\n', '', totalLaunches]);
          store.mutate('item_state', ['launched', 1, null, 0, null, created + 900, id]);
        } else {
          totalFailed++;
          store.mutate('attempt_finish', [created + 900, 'failed', 3, null, null, '', 'error: input missing\n', totalLaunches]);
          store.mutate('item_state', ['failed', 3, null, 0, 'exited with code 3', created + 900, id]);
        }
      }
    });
  }
  store.setMeta('total_launches', String(totalLaunches));
  store.setMeta('total_failed', String(totalFailed));
  store.setMeta('last_poll_at', String(now));
  store.snapshot();

  let rareMatches = 0;
  const LOG_CHUNK = 20_000;
  const SNAPSHOT_EVERY = 250_000; // bounds the journal lines held in memory while seeding
  for (let start = 0; start < o.logs; start += LOG_CHUNK) {
    store.batch(() => {
      for (let id = start + 1; id <= Math.min(o.logs, start + LOG_CHUNK); id++) {
        const itemIndex = Math.min(o.items - 1, Math.floor((id - 1) / logsPerItem));
        const step = (id - 1) % logsPerItem;
        const entry = logEntry(itemIndex, step, itemIndex % 20 === 0);
        let message = entry.message;
        if (id % rareEvery === 0) {
          message += ` (${RARE_WORD} marker)`;
          rareMatches++;
        }
        const ts = now - span + Math.floor((id / o.logs) * span);
        store.mutate('log_insert', [id, ts, entry.action, LEVEL_RANK[entry.level], message, o.items > 0 ? seededItemId(itemIndex) : null, JSON.stringify(entry.details)]);
        store.mutate('log_fts_insert', [id, message]);
      }
    });
    if ((start + LOG_CHUNK) % SNAPSHOT_EVERY === 0) store.snapshot();
  }
  store.setMeta('last_log_id', String(o.logs));
  store.snapshot();

  // Journal records after the last snapshot: what a crash (or a kill) leaves for startup to replay.
  const journalRecords = o.journalRecords ?? 0;
  let written = 0;
  let logId = o.logs;
  while (written < journalRecords) {
    store.batch(() => {
      for (let k = 0; k < 1000 && written < journalRecords; k++) {
        const id = ++logId;
        const message = `"nightly-report-${k}" succeeded (attempt 1, exited with code 0 in 12 ms)`;
        store.mutate('log_insert', [id, now, 'launch_succeeded', 1, message, seededItemId(k % Math.max(1, o.items)), '{"attempt":1,"exitCode":0}']);
        store.mutate('log_fts_insert', [id, message]);
        written += 2;
      }
    });
    store.commit();
  }
  // Close without the final snapshot close() would take: leave the journal for replay.
  (store as unknown as { options: { storageDir: string | null } }).options.storageDir = null;
  store.close();

  return {
    items: o.items,
    logs: o.logs,
    journalRecords: written,
    sampleItemId: seededItemId(Math.min(o.items - 1, 12_345)),
    rareWord: RARE_WORD,
    rareMatches,
    seconds: (performance.now() - t0) / 1000,
  };
}

function logEntry(i: number, step: number, failing: boolean): { action: LogAction; level: LogLevel; message: string; details: Record<string, unknown> } {
  const name = `nightly-report-${i}`;
  const attempt = Math.min(3, 1 + Math.floor((step - 1) / 3));
  const cycle = step === 0 ? -1 : (step - 1) % 3;
  if (step === 0) {
    return { action: 'item_discovered', level: 'info', message: `discovered "${name}" in .engine/queue/reports.jsonl`, details: { file: '.engine/queue/reports.jsonl', entry: i } };
  }
  if (cycle === 0) {
    return { action: 'launch_started', level: 'info', message: `launching "${name}" (attempt ${attempt} of 3)`, details: { attempt, maxAttempts: 3, command: '/usr/bin/env' } };
  }
  if (cycle === 1) {
    if (!failing && attempt >= 2) {
      return { action: 'launch_succeeded', level: 'info', message: `"${name}" succeeded (attempt ${attempt}, exited with code 0 in 812 ms)`, details: { attempt, exitCode: 0, durationMs: 812 } };
    }
    return { action: 'launch_failed', level: 'warn', message: `"${name}" attempt ${attempt} of 3 exited with code 3`, details: { attempt, exitCode: 3, stderrTail: 'error: input missing\n' } };
  }
  if (failing && attempt >= 3) {
    return { action: 'item_failed', level: 'error', message: `"${name}" failed for good after 3 attempt(s): exited with code 3`, details: { attempt } };
  }
  return { action: 'retry_scheduled', level: 'info', message: `"${name}" will be retried in ${1000 * 2 ** (attempt - 1)} ms (attempt ${attempt + 1} of 3)`, details: { attempt: attempt + 1 } };
}

// Unused import guard for tree-shaking tools.
void createHash;
