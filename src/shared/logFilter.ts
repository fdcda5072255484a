// The /logs filter, one model for every side: the API server reads it from a query string, the
// engine runs it against the store, and the Logs view and the dashboard write its query strings
// and match live `log` events with it, so a row pushed live is a row a reload would show.
import { LOG_ACTIONS, LOG_LEVELS, type IsoTime, type LogAction, type LogEntry, type LogLevel } from './api';
import {
  DEFAULT_LIMIT,
  InvalidParameterError,
  codePoints,
  MAX_LIMIT,
  dateTimeParam,
  integerParam,
  manyOf,
  oneOf,
  parseParams,
  single,
  type RawParams,
} from './queryParams';

export const LOGS_PARAMS = ['action', 'level', 'item', 'since', 'until', 'q', 'order', 'limit', 'cursor'] as const;
/** Bounds for free-text parameters, so a huge query string cannot make the engine do huge work. */
export const MAX_Q_LENGTH = 500;
export const MAX_ITEM_LENGTH = 256;
/**
 * Words a search may have. Each distinct word costs the full-text index a pass over every entry
 * it prefixes, so the length alone does not bound the work (`q=d d d …`, or `q=a b c …`).
 */
export const MAX_Q_WORDS = 32;
/** The same bound as a JSON Schema pattern: at most MAX_Q_WORDS runs of letters and digits. */
export const Q_PATTERN = `^[^\\p{L}\\p{N}]*(?:[\\p{L}\\p{N}]+(?:[^\\p{L}\\p{N}]+|$)){0,${MAX_Q_WORDS}}$`;

export type LogOrder = 'asc' | 'desc';

/** Which log entries to show. Every field given narrows the choice; `{}` is every entry. */
export interface LogFilter {
  /** Entries with any of these actions; absent or empty: every action. */
  actions?: LogAction[];
  /** Minimum level: entries at this level or above. */
  level?: LogLevel;
  /** One item's entries. */
  itemId?: string;
  /** Inclusive lower bound on the timestamp, as toISOString() writes it. */
  since?: IsoTime;
  /** Exclusive upper bound on the timestamp. */
  until?: IsoTime;
  /** Free text: every one of its searchWords must start a word of the message. Blank: none. */
  q?: string;
}

/** One /logs read: the filter, the order, the page size and where the previous page ended. */
export interface LogsRequest {
  filter: LogFilter;
  order: LogOrder;
  limit: number;
  /** The opaque cursor of the previous page's `Link` header, handed back unchanged. */
  cursor?: string;
}

/**
 * The words of a text, split the way the store's full-text index (SQLite's unicode61 tokenizer)
 * splits messages: runs of letters and digits, lower-cased. So "exit code" and "exit-code" both
 * mean a word starting "exit" and a word starting "code".
 */
export function searchWords(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0);
}

/** True when `q` filters anything, i.e. it has a character other than white space. */
/**
 * The `q` parameter of /logs and /items, checked against the bounds both document, with its word
 * count; undefined when the request has none.
 */
export function searchParam(params: RawParams): { q: string; words: number } | undefined {
  const q = single(params, 'q');
  if (q === undefined) return undefined;
  if (codePoints(q) > MAX_Q_LENGTH) throw new InvalidParameterError(`Parameter q must be at most ${MAX_Q_LENGTH} characters; got ${codePoints(q)}.`);
  // Counted on the text as given (runs of letters and digits), as the document's pattern counts.
  const words = q.split(/[^\p{L}\p{N}]+/u).filter((w) => w !== '').length;
  if (words > MAX_Q_WORDS) {
    throw new InvalidParameterError(`Parameter q has ${words} words; a search takes at most ${MAX_Q_WORDS}. Keep the words that narrow it most.`);
  }
  return { q, words };
}

function hasText(q: string | undefined): q is string {
  return q !== undefined && q.trim() !== '';
}

export function isLogFilterActive(filter: LogFilter): boolean {
  return !!(filter.actions?.length || filter.level || filter.itemId || filter.since || filter.until || hasText(filter.q));
}

/**
 * Whether an entry belongs to the filter, as the engine decides it for /logs. One known gap: the
 * index also folds diacritics ("cafe" finds "café"); this match does not.
 */
export function matchesLogFilter(filter: LogFilter, entry: LogEntry): boolean {
  if (filter.actions?.length && !filter.actions.includes(entry.action)) return false;
  if (filter.level && LOG_LEVELS.indexOf(entry.level) < LOG_LEVELS.indexOf(filter.level)) return false;
  if (filter.itemId !== undefined && entry.itemId !== filter.itemId) return false;
  // toISOString() strings compare in time order.
  if (filter.since !== undefined && entry.timestamp < filter.since) return false;
  if (filter.until !== undefined && entry.timestamp >= filter.until) return false;
  if (hasText(filter.q)) {
    const wanted = searchWords(filter.q);
    if (wanted.length > 0) {
      const have = searchWords(entry.message);
      if (!wanted.every((w) => have.some((m) => m.startsWith(w)))) return false;
    }
  }
  return true;
}

/** The filter as /logs reads it back from logsQueryString: no empty action list, no blank text, no repeated action. */
export function normalizeLogFilter(filter: LogFilter): LogFilter {
  const out: LogFilter = {};
  if (filter.actions?.length) out.actions = [...new Set(filter.actions)];
  if (filter.level) out.level = filter.level;
  if (filter.itemId !== undefined) out.itemId = filter.itemId;
  if (filter.since !== undefined) out.since = filter.since;
  if (filter.until !== undefined) out.until = filter.until;
  if (hasText(filter.q)) out.q = filter.q;
  return out;
}

/** The /logs query string of a filter and, optionally, its order, page size and cursor. */
export function logsQueryString(filter: LogFilter, page: Partial<Omit<LogsRequest, 'filter'>> = {}): string {
  const out = new URLSearchParams();
  if (filter.actions?.length) out.set('action', filter.actions.join(','));
  if (filter.level) out.set('level', filter.level);
  if (filter.itemId !== undefined) out.set('item', filter.itemId);
  if (filter.since !== undefined) out.set('since', filter.since);
  if (filter.until !== undefined) out.set('until', filter.until);
  if (hasText(filter.q)) out.set('q', filter.q);
  if (page.order) out.set('order', page.order);
  if (page.limit !== undefined) out.set('limit', String(page.limit));
  if (page.cursor !== undefined) out.set('cursor', page.cursor);
  return out.toString();
}

/** The path and query of a /logs read, for a client's GET. */
export function logsPath(filter: LogFilter, page: Partial<Omit<LogsRequest, 'filter'>> = {}): string {
  return `/logs?${logsQueryString(filter, page)}`;
}

/**
 * Reads a /logs query string strictly. Throws InvalidParameterError, naming the first parameter
 * that is wrong, in the order of LOGS_PARAMS. The cursor is returned as given: only the server
 * can read it.
 */
export function parseLogsQueryString(queryString: string): LogsRequest {
  const params = parseParams(queryString, LOGS_PARAMS);
  const filter: LogFilter = {};

  const actions = manyOf(params, 'action', LOG_ACTIONS, 'action');
  if (actions) filter.actions = actions;

  const level = oneOf(params, 'level', LOG_LEVELS);
  if (level) filter.level = level;

  const itemId = single(params, 'item');
  if (itemId !== undefined) {
    if (itemId.length === 0 || codePoints(itemId) > MAX_ITEM_LENGTH) {
      throw new InvalidParameterError(`Parameter item must be an item id of 1 to ${MAX_ITEM_LENGTH} characters.`);
    }
    filter.itemId = itemId;
  }

  const since = dateTimeParam(params, 'since');
  if (since !== undefined) filter.since = since;
  const until = dateTimeParam(params, 'until');
  if (until !== undefined) filter.until = until;

  const search = searchParam(params);
  if (search) filter.q = search.q;

  const order = oneOf(params, 'order', ['asc', 'desc'] as const) ?? 'desc';
  const limit = integerParam(params, 'limit', 1, MAX_LIMIT, DEFAULT_LIMIT);
  const cursor = single(params, 'cursor');
  return cursor === undefined ? { filter, order, limit } : { filter, order, limit, cursor };
}
