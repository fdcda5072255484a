// A service's line, as the Items view and the queue file's CodeLens show it: `ready · 12 min ·
// 1 restart`, `starting · 4 s`, `stopped · failed: exited with code 1`. Plain text, no `vscode`
// import, so the unit tests run it in Node.
import type { ItemSummary } from '../shared/api';
import { formatRelativeTime } from '../shared/format';

/** Whole minutes, as a ready service's uptime is read (lenses redraw once a minute): "0 min", "12 min", "3 h 5 min". */
export function formatMinutes(ms: number): string {
  const m = Math.max(0, Math.floor(ms / 60_000));
  return m < 60 ? `${m} min` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/**
 * `seconds`: how long a starting service has been starting, in seconds (the Items view ticks once
 * a second while one starts; a lens, redrawn once a minute at most, leaves it out).
 */
export function serviceText(item: ItemSummary, now: number, seconds: boolean): string {
  const state = item.state;
  const restarts = item.service?.restarts ?? 0;
  const restartText = restarts > 0 ? ` · ${restarts} restart${restarts === 1 ? '' : 's'}` : '';
  if (state === 'ready') return `ready · ${formatMinutes(now - Date.parse(item.service?.readyAt ?? item.updatedAt))}${restartText}`;
  if (state === 'starting') {
    // The engine sets updatedAt when it starts the attempt, and not again until it is ready.
    const since = seconds ? ` · ${Math.max(0, Math.floor((now - Date.parse(item.updatedAt)) / 1000))} s` : '';
    return `starting${since}${restartText}`;
  }
  if (state === 'backoff' && item.nextAttemptAt) return `stopped · restarts ${formatRelativeTime(item.nextAttemptAt, now)}${restartText}`;
  const why = state === 'failed' && item.lastError ? `: ${item.lastError.replace(/\s+/g, ' ')}` : '';
  return `stopped · ${state}${why}`;
}
