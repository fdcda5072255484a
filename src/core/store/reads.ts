// SQL that both stores' own reads (searchItems, searchLogs) build the same way: only the condition
// that does the text matching differs between them.
import type { ItemMatches, LogSearch, StoreBackend, StoreValue } from './backend';

export function whereClause(conditions: string[]): string {
  return conditions.length === 0 ? '' : ` WHERE ${conditions.join(' AND ')}`;
}

/**
 * The ids of a page of log entries: the search's filters, the store's text condition (if any),
 * the keyset cursor, in page order, at most `want`. The filters select ids only, which every index
 * on `logs` covers without reading the entries.
 */
export function selectLogIds(store: StoreBackend, s: Omit<LogSearch, 'words'>, text?: { condition: string; param: StoreValue }): number[] {
  const where = [...s.where];
  const params = [...s.params];
  if (text) {
    where.push(text.condition);
    params.push(text.param);
  }
  if (s.afterId !== undefined) {
    where.push(s.desc ? 'id < ?' : 'id > ?');
    params.push(s.afterId);
  }
  params.push(s.want);
  return store.rows(`SELECT id FROM logs${whereClause(where)} ORDER BY id ${s.desc ? 'DESC' : 'ASC'} LIMIT ?`, params).map((row) => row[0] as number);
}

/** The matches found among every item, narrowed to those the SQL conditions select. */
export function narrowMatches(store: StoreBackend, found: ItemMatches, where: string[], params: StoreValue[]): ItemMatches {
  if (where.length === 0) return found;
  const selected = new Set(store.rows(`SELECT seq FROM items${whereClause(where)}`, params).map((r) => r[0] as number));
  return matchesOf(found.seqs(0, found.count).filter((seq) => selected.has(seq)));
}

/** Matches already in an array, in seq order. */
export function matchesOf(seqs: number[]): ItemMatches {
  return { count: seqs.length, seqs: (from, to) => seqs.slice(from, to) };
}
