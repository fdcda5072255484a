// /logs queries against the store. Every filter is served by an index (action, item, level, time)
// or by the FTS4 index for text (brought up to date before it is read: Store.indexLogs), and
// paging is keyset on the id, so a page costs the same at entry 10 as at entry 1,000,000.
import type { SqlValue } from 'sql.js';
import type { LogEntry, LogLevel } from '../shared/api';
import { LOG_LEVELS } from '../shared/api';
import { searchWords, type LogFilter, type LogOrder } from '../shared/logFilter';
import type { LogPage, LogQuery } from './monitoredEngine';
import type { Store } from './store';
import { isFleetStore } from './store/backend';
import { prefixQuery } from './store/pgSchema';
import { jsonArrayParts } from '../shared/jsonParts';

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

export function queryLogs(store: Store, q: LogQuery): LogPage {
  const where: string[] = [];
  const params: SqlValue[] = [];
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
  let ids: number[];
  const fleet = isFleetStore(store);
  if (tokens.length > 0 && !fleet && tokens.every(isAsciiWord)) {
    ids = searchIds(store, { where, params, tokens, desc, afterId: q.afterId, want: q.limit + 1 });
  } else {
    if (tokens.length > 0 && fleet) {
      // PostgreSQL (section 11): the same meaning with the `simple` configuration (no stemming,
      // no stop words), from its GIN index.
      where.push("to_tsvector('simple', message) @@ to_tsquery('simple', ?)");
      params.push(prefixQuery(tokens));
    } else if (tokens.length > 0) {
      // A word with other letters: the index folds it (diacritics, case) as it folds messages, so
      // the index alone decides; it first takes the entries written since it last did.
      store.indexLogs();
      where.push('id IN (SELECT docid FROM logs_fts WHERE logs_fts MATCH ?)');
      params.push(ftsQuery(tokens));
    }
    if (q.afterId !== undefined) {
      where.push(desc ? 'id < ?' : 'id > ?');
      params.push(q.afterId);
    }
    // Two steps. The filters select ids only, which every index above covers without reading the
    // entries; then each entry's JSON comes from the cache, or from one read of the rows not in it.
    const sql =
      'SELECT id FROM logs' +
      (where.length ? ` WHERE ${where.join(' AND ')}` : '') +
      ` ORDER BY id ${desc ? 'DESC' : 'ASC'} LIMIT ?`;
    params.push(q.limit + 1);
    ids = store.rows(sql, params).map((row) => row[0] as number);
  }
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

/** Quoted prefix terms: implicit AND, each must start a word of the message. */
function ftsQuery(tokens: string[]): string {
  return tokens.map((t) => `"${t}*"`).join(' ');
}

const ASCII_WORD = /^[a-z0-9]+$/;
const ASCII_TEXT = /^[\x00-\x7f]*$/;

/** A search word of letters a-z and digits only: on ASCII text it is matched here exactly as the index matches it. */
function isAsciiWord(word: string): boolean {
  return ASCII_WORD.test(word);
}

/**
 * The cost of reading one entry's message and matching it here, in postings read from the
 * full-text index (measured at 1,000,000 entries: about 2 µs against 0.2 µs; docs/PERFORMANCE.md).
 */
const SCAN_COST = 10;
/** Entries read by the first step of a search, newest first; each further step reads twice as many. */
const FIRST_SCAN = 128;
const MAX_SCAN = 4_096;

interface Search {
  /** The other filters' SQL conditions on `logs` and their parameters. */
  where: string[];
  params: SqlValue[];
  /** essentialWords, each an ASCII word (isAsciiWord). */
  tokens: string[];
  desc: boolean;
  afterId?: number;
  /** Ids wanted: the page size plus one, which says whether more entries match. */
  want: number;
}

/**
 * The ids of the entries matching a word search, in page order. Reading the full-text index
 * costs as many postings as its words have entries (a word in every entry: all 1,000,000), so
 * the search first walks the entries in page order and matches their messages here, which
 * stops at the page size when the words are common. Every step also counts how often each word
 * occurs in what it read: that is the estimate of each word's selectivity. When reading on would
 * cost more than the index's postings of the rarest word (and of words nearly as rare), the rest
 * comes from the index, each candidate checked for the other words. The answer is the same
 * either way: the first `want` matching ids after `afterId`.
 */
function searchIds(store: Store, s: Search): number[] {
  const { tokens, desc, want } = s;
  const found: number[] = [];
  const hits = new Array<number>(tokens.length).fill(0);
  const cond = s.where.map((w) => `${w} AND `).join('');
  const order = `ORDER BY id ${desc ? 'DESC' : 'ASC'} LIMIT ?`;
  const scanSql = `SELECT id, message FROM logs WHERE ${cond}id ${desc ? '<' : '>'} ? ${order}`;
  // The first step without a bound: a sentinel beyond every id would be bound as a double, which
  // SQLite compares more slowly on every row.
  const firstSql = `SELECT id, message FROM logs${s.where.length ? ` WHERE ${s.where.join(' AND ')}` : ''} ${order}`;
  let frontier = s.afterId;
  let scanned = 0;
  let step = FIRST_SCAN;
  for (;;) {
    const rows = frontier === undefined ? store.rows(firstSql, [...s.params, step]) : store.rows(scanSql, [...s.params, frontier, step]);
    for (const [id, message] of rows) {
      const startsWord = wordStarts(store, message as string);
      let all = true;
      for (let i = 0; i < tokens.length; i++) {
        if (startsWord(tokens[i])) hits[i]++;
        else all = false;
      }
      if (all) {
        found.push(id as number);
        if (found.length === want) return found;
      }
    }
    if (rows.length < step) return found;
    scanned += rows.length;
    frontier = rows[rows.length - 1][0] as number;

    // What is left to read, in ids (an overestimate when other filters narrow the entries).
    // (Not min(id): sql.js's SQLite answers that by a scan here, this by one b-tree descent.)
    const end = store.rows(`SELECT id FROM logs ORDER BY id ${desc ? 'ASC' : 'DESC'} LIMIT 1`)[0]?.[0] as number | undefined;
    const remaining = end === undefined ? 0 : Math.abs(frontier - end);
    const left = want - found.length;
    const rate = found.length / scanned;
    const scanCost = Math.min(remaining, rate > 0 ? left / rate : remaining) * SCAN_COST;
    // Each word's share of the entries read so far, never 0 (a word not seen yet is rare, not absent).
    const share = hits.map((h) => (h + 1) / (scanned + 1));
    const rarest = Math.min(...share);
    const indexed = tokens.filter((_, i) => share[i] <= 4 * rarest);
    const postings = indexed.reduce((sum, t) => sum + share[tokens.indexOf(t)] * remaining, 0);
    const candidates = rarest * remaining;
    const indexCost = postings + (indexed.length < tokens.length || s.where.length > 0 ? candidates * SCAN_COST : 0);
    if (indexCost < scanCost) {
      return indexSearch(store, s, frontier, found, indexed, tokens.filter((t) => !indexed.includes(t)));
    }
    step = Math.min(step * 2, MAX_SCAN);
  }
}

/** The rest of a search from the full-text index: entries beyond `frontier` with every `indexed` word, checked for `others` and the filters. */
function indexSearch(store: Store, s: Search, frontier: number, found: number[], indexed: string[], others: string[]): number[] {
  // The docids in one text: sql.js reads each result row through several calls, which cost more
  // than the index's own read of a posting. `+docid` keeps the bound out of the index's plan: the
  // FTS4 module given a docid range reads the postings more slowly than it filters them here.
  const complete = others.length === 0 && s.where.length === 0;
  // Entries are indexed in batches (Store.indexLogs): the ones written since the last batch first.
  store.indexLogs();
  const list = store.rows(
    `SELECT group_concat(docid) FROM (SELECT docid FROM logs_fts WHERE logs_fts MATCH ? AND +docid ${s.desc ? '<' : '>'} ? ORDER BY docid ${s.desc ? 'DESC' : 'ASC'}${complete ? ' LIMIT ?' : ''})`,
    complete ? [ftsQuery(indexed), frontier, s.want - found.length] : [ftsQuery(indexed), frontier],
  )[0]?.[0];
  const candidates = typeof list === 'string' && list !== '' ? list.split(',').map(Number) : [];
  if (complete) return found.concat(candidates);
  const cond = s.where.map((w) => ` AND ${w}`).join('');
  const checkSql = `SELECT id, message FROM logs WHERE id IN (SELECT value FROM json_each(?))${cond}`;
  const CHUNK = 256;
  for (let at = 0; at < candidates.length; at += CHUNK) {
    const chunk = candidates.slice(at, at + CHUNK);
    const messages = new Map<number, string>();
    for (const [id, message] of store.rows(checkSql, [JSON.stringify(chunk), ...s.params])) messages.set(id as number, message as string);
    for (const id of chunk) {
      const message = messages.get(id);
      if (message === undefined) continue;
      const startsWord = wordStarts(store, message);
      if (!others.every(startsWord)) continue;
      found.push(id);
      if (found.length === s.want) return found;
    }
  }
  return found;
}

const ALNUM = /[a-z0-9]/;

/**
 * Whether an ASCII word starts a word of `message`, as the index decides it. On an ASCII message,
 * the index's unicode61 tokenizer makes words of the runs of letters and digits, lower-cased: the
 * word must occur where no letter or digit precedes it. Any other message goes through the
 * tokenizer itself (folding case and diacritics as the index does), through SQLite's fts3tokenize.
 */
function wordStarts(store: Store, message: string): (word: string) => boolean {
  if (ASCII_TEXT.test(message)) {
    const text = message.toLowerCase();
    return (word) => {
      for (let at = text.indexOf(word); at >= 0; at = text.indexOf(word, at + 1)) {
        if (at === 0 || !ALNUM.test(text[at - 1])) return true;
      }
      return false;
    };
  }
  const words = messageTokens(store, message);
  return (word) => words.some((w) => w.startsWith(word));
}

const tokenizers = new WeakSet<Store>();

/** The index's words of a message. The tokenizer table lives in the temp schema: never in a snapshot. */
function messageTokens(store: Store, message: string): string[] {
  if (!tokenizers.has(store)) {
    store.rows("CREATE VIRTUAL TABLE IF NOT EXISTS temp.log_words USING fts3tokenize('unicode61')");
    tokenizers.add(store);
  }
  return store.rows('SELECT token FROM temp.log_words WHERE input = ?', [message]).map((row) => row[0] as string);
}

/**
 * How many entries' JSON each store keeps. Log entries never change once written, so an entry's
 * text is valid for as long as its id exists, and pruning only ever removes ids. The cache serves
 * what clients re-read: the newest pages, polled by dashboards and scripts. 5,000 entries are
 * about 1.5 MB; /logs pages are at most 1,000.
 */
export const ENTRY_CACHE_SIZE = 5_000;

const entryCaches = new WeakMap<Store, Map<number, string>>();

/** Each id's entry as JSON, in the order of `ids`. */
function entryTexts(store: Store, ids: number[]): string[] {
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
    `SELECT id, ts, action, level, message, item_id, details${isFleetStore(store) ? ', engine_id' : ''} FROM logs WHERE id IN (SELECT value FROM json_each(?))`,
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
