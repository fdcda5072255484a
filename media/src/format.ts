// Numbers, times and durations as the dashboard shows them.
import { formatClock, formatDateTime, formatDuration } from '../../src/shared/format';

export { formatClock, formatDateTime, formatDuration };

const numberFormat = new Intl.NumberFormat();
export function formatCount(n: number): string {
  return numberFormat.format(n);
}


/** "12 s ago", "3 min ago", or "in 5 s" for the future. */
export function formatRelative(iso: string, now = Date.now()): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const d = now - t;
  if (Math.abs(d) < 1000) return 'just now';
  return d > 0 ? `${formatDuration(d).replace(/ \d+ (s|min|h)$/, '')} ago` : `in ${formatDuration(-d)}`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
