// /logs?q= on the sql.js store: its FTS4 index (brought up to date before it is read:
// Store.indexLogs), and for words of ASCII letters and digits a walk over the entries in page order
// that matches their messages here until reading the index would cost less (searchIds).
import type { LogSearch, StoreBackend } from './backend';
import { selectLogIds } from './reads';

/** The ids of the entries the search selects, as StoreBackend.searchLogs answers for sql.js. */
export function searchLogsInSqlJs(store: StoreBackend, s: LogSearch): number[] {
  if (s.words.every(isAsciiWord)) return searchIds(store, s);
  // A word with other letters: the index folds it (diacritics, case) as it folds messages, so the
  // index alone decides; it first takes the entries written since it last did.
  store.indexLogs();
  return selectLogIds(store, s, { condition: 'id IN (SELECT docid FROM logs_fts WHERE logs_fts MATCH ?)', param: ftsQuery(s.words) });
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
function searchIds(store: StoreBackend, s: LogSearch): number[] {
  const { words: tokens, desc, want } = s;
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
function indexSearch(store: StoreBackend, s: LogSearch, frontier: number, found: number[], indexed: string[], others: string[]): number[] {
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
function wordStarts(store: StoreBackend, message: string): (word: string) => boolean {
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

const tokenizers = new WeakSet<StoreBackend>();

/** The index's words of a message. The tokenizer table lives in the temp schema: never in a snapshot. */
function messageTokens(store: StoreBackend, message: string): string[] {
  if (!tokenizers.has(store)) {
    store.rows("CREATE VIRTUAL TABLE IF NOT EXISTS temp.log_words USING fts3tokenize('unicode61')");
    tokenizers.add(store);
  }
  return store.rows('SELECT token FROM temp.log_words WHERE input = ?', [message]).map((row) => row[0] as string);
}
