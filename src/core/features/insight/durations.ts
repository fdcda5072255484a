// How long an item's attempts take, and when one took too long. Pure arithmetic over durations in
// milliseconds, shared by the read of an item (GET /items/{id}) and the judgement at an attempt's
// end (attemptInsight.ts).
import type { DurationSummary } from '../../../shared/api';

/** GET /items/{id}'s durations cover this many of the item's newest finished attempts. */
export const DURATIONS_WINDOW = 100;
/** An attempt is judged against the median of at most this many attempts of its item before it. */
export const SLOW_WINDOW = 10;
/**
 * …and of at least this many: the median of one or two earlier runs says little about what is
 * usual, so an item's first attempts are never called slow.
 */
export const SLOW_MIN_BEFORE = 3;
/** More than this many times the median is slow. */
export const SLOW_FACTOR = 2;

/** The median of `values` (the mean of the two middle ones when their count is even); null when empty. */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The nearest-rank percentile `p` (0–100] of `values`: a duration that was measured, never one in between. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

export function summarizeDurations(durationsMs: readonly number[]): DurationSummary {
  const m = median(durationsMs);
  return { count: durationsMs.length, medianMs: m === null ? null : Math.round(m), p90Ms: percentile(durationsMs, 90) };
}

/**
 * Whether an attempt of `durationMs` was slow against the durations of the attempts before it
 * (newest first; only the first SLOW_WINDOW count). The median it was judged by when it was, else null.
 */
export function slowAgainst(durationMs: number, before: readonly number[]): number | null {
  const window = before.slice(0, SLOW_WINDOW);
  if (window.length < SLOW_MIN_BEFORE) return null;
  const m = median(window)!;
  return durationMs > SLOW_FACTOR * m ? m : null;
}
