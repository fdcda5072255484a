// Attempt insight at an attempt's end: whether it took more than twice as long as its item's
// attempts usually do. The figures themselves (CPU, memory, first output) come with the attempt's
// result from where its process ran (src/core/launching/resourceSampler.ts) and are recorded with
// its end; this feature only judges, through the kernel's attemptEnded hook.
import type { EngineHooks } from '../../kernel/hooks';
import type { Transitions } from '../../kernel/transitions';
import type { StoreBackend } from '../../store/backend';
import { SLOW_FACTOR, SLOW_WINDOW, slowAgainst } from './durations';

export interface AttemptInsightParts {
  store: StoreBackend;
  hooks: EngineHooks;
  transitions: Pick<Transitions, 'attemptSlow'>;
  isClosed(): boolean;
}

/** Joins the kernel when the engine is built; nothing to call afterwards. */
export function joinAttemptInsight(parts: AttemptInsightParts): void {
  parts.hooks.on('attemptEnded', (attemptId, result, itemId) => {
    if (parts.isClosed() || result.pid === null) return; // never ran: nothing to compare
    judge(parts, attemptId, itemId);
  });
}

function judge({ store, transitions }: AttemptInsightParts, attemptId: number, itemId: string): void {
  // This attempt and the ones before it, newest first, by the (item_id, id) index.
  const rows = store.all<{ id: number; d: number }>(
    'SELECT id, finished_at - started_at AS d FROM attempts WHERE item_id = ? AND id <= ? AND finished_at IS NOT NULL ORDER BY id DESC LIMIT ?',
    [itemId, attemptId, SLOW_WINDOW + 1],
  );
  if (rows.length === 0 || Number(rows[0].id) !== attemptId) return;
  const durationMs = Number(rows[0].d);
  const medianMs = slowAgainst(durationMs, rows.slice(1).map((r) => Number(r.d)));
  if (medianMs === null) return;
  const times = Math.round((durationMs / medianMs) * 10) / 10;
  store.batch(() =>
    transitions.attemptSlow(
      attemptId,
      itemId,
      `attempt took ${durationMs} ms, ${times}× the median of ${rows.length - 1} before it (${Math.round(medianMs)} ms; slow beyond ${SLOW_FACTOR}×)`,
      { durationMs, medianMs: Math.round(medianMs), before: rows.length - 1 },
    ),
  );
}
