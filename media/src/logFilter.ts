// The log filter applied to live `log` events, mirroring what `/logs` does with the same
// parameters (contract section 4), so rows pushed live match the rows a reload would show.
import { LOG_LEVELS, type LogEntry } from '../../src/shared/api';
import type { LogFilter } from '../../src/shared/webviewProtocol';

const WORD = /[\p{L}\p{N}]+/gu;
function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

export function matchesFilter(entry: LogEntry, filter: LogFilter): boolean {
  if (filter.actions.length && !filter.actions.includes(entry.action)) return false;
  if (filter.level && LOG_LEVELS.indexOf(entry.level) < LOG_LEVELS.indexOf(filter.level)) return false;
  const wanted = words(filter.q);
  if (wanted.length) {
    const have = words(entry.message);
    // Every word of q must start a word of the message.
    if (!wanted.every((w) => have.some((m) => m.startsWith(w)))) return false;
  }
  return true;
}

export function isFilterActive(filter: LogFilter): boolean {
  return filter.actions.length > 0 || filter.level !== undefined || filter.q.trim() !== '';
}

export const EMPTY_FILTER: LogFilter = { actions: [], level: undefined, q: '' };
