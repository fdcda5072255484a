// /items?q= and /logs?q= on the fleet's PostgreSQL store. Other engines add items this one never
// wrote, so no index kept in this process could know when to grow: SQL narrows, and the rule of
// the search is checked here on what it returns.
import { itemSearchText, wordsStartWords } from '../../shared/itemFilter';
import type { ItemDefinition } from '../intake/items';
import type { ItemMatches, LogSearch, StoreBackend, StoreValue } from './backend';
import { prefixQuery } from './pgSchema';
import { matchesOf, selectLogIds, whereClause } from './reads';

/**
 * SQL narrows by the longest word as a substring (ILIKE; a word with other letters is left to the
 * match below), then the rule itself (each word starts a word of the id, name, command or args)
 * is checked here, with the other filters applied in SQL, so the count is exact.
 */
export function searchItemsInPostgres(store: StoreBackend, wanted: readonly string[], where: string[], params: StoreValue[]): ItemMatches {
  const ascii = wanted.filter((w) => /^[\x00-\x7f]*$/.test(w)).sort((x, y) => y.length - x.length)[0];
  const cond = [...where];
  const args = [...params];
  if (ascii !== undefined) {
    cond.push("(id || ' ' || name || ' ' || definition) LIKE ?");
    args.push(`%${ascii}%`);
  }
  const matching: number[] = [];
  for (const [seq, id, name, definition] of store.rows(`SELECT seq, id, name, definition FROM items${whereClause(cond)} ORDER BY seq`, args)) {
    const def = JSON.parse(definition as string) as ItemDefinition;
    if (wordsStartWords(wanted, itemSearchText({ id: id as string, name: name as string, command: def.command, args: def.args }))) matching.push(seq as number);
  }
  return matchesOf(matching);
}

/**
 * The same meaning as sql.js's index with the `simple` text search configuration (no stemming, no
 * stop words), from its GIN index on the messages.
 */
export function searchLogsInPostgres(store: StoreBackend, s: LogSearch): number[] {
  return selectLogIds(store, s, { condition: "to_tsvector('simple', message) @@ to_tsquery('simple', ?)", param: prefixQuery(s.words) });
}
