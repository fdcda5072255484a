// /logs queries against the store. Every filter is served by an index (action, item, level, time)
// or by the store's own full-text search for text (StoreBackend.searchLogs), and
// paging is keyset on the id, so a page costs the same at entry 10 as at entry 1,000,000.
import type { LogEntry, LogLevel } from '../../shared/api';
import { LOG_LEVELS } from '../../shared/api';
import { searchWords, type LogFilter, type LogOrder } from '../../shared/logFilter';
import type { LogPage, LogQuery } from '../kernel/monitoredEngine';
import type { StoreBackend, StoreValue } from '../store/backend';
import { selectLogIds } from '../store/reads';
import { jsonArrayParts } from '../../shared/jsonParts';

export const LEVEL_RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** id, ts, action, level, message, item_id, details */
type LogRow = [number, number, string, number, string, string | null, string | null, (string | null)?];

/** The engine's query for one page of a filter: the filter's text becomes its search words. */
export function logQueryOf(filter: LogFilter, page: { order: LogOrder; limit: number; afterId?: number }): LogQuery {
  const query: LogQuery = { order: page.order, limit: page.limit };
  if (filter.actions?.length) query.actions = filter.actions;
  if (filter.level) query.minLevel = filter.level;
  if (filter.itemId !== undefined) query.itemId = filter.itemId;
  if (filter.since !== undefined) query.since = filter.since;
  if (filter.until !== undefined) query.until = filter.until;
  const words = filter.q === undefined ? [] : searchWords(filter.q);
  if (words.length > 0) query.words = words;
  if (page.afterId !== undefined) query.afterId = page.afterId;
  return query;
}

export function queryLogs(store: StoreBackend, q: LogQuery): LogPage {
  const where: string[] = [];
  const params: StoreValue[] = [];
  if (q.actions && q.actions.length > 0) {
    where.push(`action IN (${q.actions.map(() => '?').join(', ')})`);
    params.push(...q.actions);
  }
  if (q.minLevel && q.minLevel !== 'debug') {
    where.push('level >= ?');
    params.push(LEVEL_RANK[q.minLevel]);
  }
  if (q.itemId !== undefined) {
    where.push('item_id = ?');
    params.push(q.itemId);
  }
  if (q.since !== undefined) {
    where.push('ts >= ?');
    params.push(Date.parse(q.since));
  }
  if (q.until !== undefined) {
    where.push('ts < ?');
    params.push(Date.parse(q.until));
  }
  // Callers may pass words as typed (any case, with punctuation): the index's own split applies.
  const tokens = essentialWords((q.words ?? []).flatMap(searchWords));
  const desc = q.order !== 'asc';
  // A word search is the store's own (each has its full-text index); the other filters are the same SQL.
  const search = { where, params, desc, afterId: q.afterId, want: q.limit + 1 };
  const ids = tokens.length > 0 ? store.searchLogs({ ...search, words: tokens }) : selectLogIds(store, search);
  const hasMore = ids.length > q.limit;
  if (hasMore) ids.pop();
  const texts = entryTexts(store, ids);
  let json: string | undefined;
  let entries: LogEntry[] | undefined;
  return {
    // Only event replay and the CLI ask for objects; /logs writes json() as it is.
    get entries() {
      return (entries ??= JSON.parse((json ??= `[${texts.join(',')}]`)) as LogEntry[]);
    },
    hasMore,
    lastId: ids.length > 0 ? ids[ids.length - 1] : undefined,
    json: () => (json ??= `[${texts.join(',')}]`),
    jsonParts: () => (json !== undefined ? [json] : jsonArrayParts(texts)),
  };
}

/**
 * The words that decide a search: each only once, and none that starts another of them (a word
 * starting with "exited" also starts with "exit"). Every word left costs the index a pass over the
 * entries it prefixes, so `q=d d d …` costs what `q=d` does.
 */
export function essentialWords(words: string[]): string[] {
  const unique = [...new Set(words)];
  return unique.filter((w) => !unique.some((other) => other !== w && other.startsWith(w)));
}

/**
 * How many entries' JSON each store keeps. Log entries never change once written, so an entry's
 * text is valid for as long as its id exists, and pruning only ever removes ids. The cache serves
 * what clients re-read: the newest pages, polled by dashboards and scripts. 5,000 entries are
 * about 1.5 MB; /logs pages are at most 1,000.
 */
export const ENTRY_CACHE_SIZE = 5_000;

const entryCaches = new WeakMap<StoreBackend, Map<number, string>>();

/** Each id's entry as JSON, in the order of `ids`. */
function entryTexts(store: StoreBackend, ids: number[]): string[] {
  let cache = entryCaches.get(store);
  if (!cache) entryCaches.set(store, (cache = new Map<number, string>()));
  const texts = new Array<string>(ids.length);
  let missing: number[] | undefined;
  for (let i = 0; i < ids.length; i++) {
    const text = cache.get(ids[i]);
    if (text === undefined) (missing ??= []).push(ids[i]);
    else texts[i] = text;
  }
  if (!missing) return texts;
  const found = new Map<number, string>();
  // One statement for any number of ids: the id list travels as a JSON array parameter.
  const rows = store.rows(
    `SELECT id, ts, action, level, message, item_id, details${store.recordsWriter ? ', engine_id' : ''} FROM logs WHERE id IN (SELECT value FROM json_each(?))`,
    [JSON.stringify(missing)],
  ) as LogRow[];
  for (const row of rows) found.set(row[0], entryJson(row));
  for (let i = 0; i < ids.length; i++) {
    if (texts[i] !== undefined) continue;
    const text = found.get(ids[i]);
    // The ids were selected in this same turn of the event loop, so every one is still there.
    if (text === undefined) throw new Error(`log entry ${ids[i]} vanished between two reads`);
    texts[i] = text;
    // First in, first out: the newest entries, the ones pages ask for again, stay longest.
    if (cache.size >= ENTRY_CACHE_SIZE) cache.delete(cache.keys().next().value as number);
    cache.set(ids[i], text);
  }
  return texts;
}

/**
 * One entry as JSON, field for field what JSON.stringify of the LogEntry object writes (same keys,
 * same order). `details` is stored as JSON.stringify output (Engine.log), so splicing it in is the
 * same text re-serialising gives, without a JSON.parse + JSON.stringify per entry.
 */
function entryJson([id, ts, action, level, message, itemId, details, engineId]: LogRow): string {
  return (
    `{"id":${id},"timestamp":"${new Date(ts).toISOString()}","action":${JSON.stringify(action)},` +
    `"level":"${LOG_LEVELS[level] ?? 'info'}","message":${JSON.stringify(message)},` +
    `"itemId":${itemId === null ? 'null' : JSON.stringify(itemId)},"details":${details ?? 'null'}` +
    (engineId === undefined ? '}' : `,"engineId":${engineId === null ? 'null' : JSON.stringify(engineId)}}`)
  );
}
