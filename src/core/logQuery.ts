// /logs queries against the store. Every filter is served by an index (action, item, level, time)
// or by the FTS4 index for text, and paging is keyset on the id, so a page costs the same at
// entry 10 as at entry 1,000,000.
import type { SqlValue } from 'sql.js';
import type { LogAction, LogEntry, LogLevel } from '../shared/api';
import { LOG_LEVELS } from '../shared/api';
import type { LogPage, LogQuery } from '../server/monitoredEngine';
import type { Store } from './store';

export const LEVEL_RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** id, ts, action, level, message, item_id, details */
type LogRow = [number, number, string, number, string, string | null, string | null];

/**
 * Splits text the way the FTS index's unicode61 tokenizer does (letters and digits), so that
 * "exit code" and "exit-code" both mean: a word starting "exit" and a word starting "code".
 */
export function searchTokens(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t.length > 0);
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
  const tokens = (q.words ?? []).flatMap(searchTokens);
  if (tokens.length > 0) {
    // Quoted prefix terms: implicit AND, each must start a word of the message.
    where.push('id IN (SELECT docid FROM logs_fts WHERE logs_fts MATCH ?)');
    params.push(tokens.map((t) => `"${t}*"`).join(' '));
  }
  const desc = q.order !== 'asc';
  if (q.afterId !== undefined) {
    where.push(desc ? 'id < ?' : 'id > ?');
    params.push(q.afterId);
  }
  const sql =
    'SELECT id, ts, action, level, message, item_id, details FROM logs' +
    (where.length ? ` WHERE ${where.join(' AND ')}` : '') +
    ` ORDER BY id ${desc ? 'DESC' : 'ASC'} LIMIT ?`;
  params.push(q.limit + 1);
  // Arrays, not objects: the column order is the SELECT list above (see Store.rows).
  const rows = store.rows(sql, params) as LogRow[];
  const hasMore = rows.length > q.limit;
  if (hasMore) rows.pop();
  // `entries` is built only when asked for (event replay, the extension): /logs takes json(),
  // which splices each entry's stored details text instead of JSON.parse + JSON.stringify of it;
  // those two were most of a 100-entry page's cost (docs/PERFORMANCE.md).
  let entries: LogEntry[] | undefined;
  return {
    get entries() {
      return (entries ??= rows.map(toEntry));
    },
    hasMore,
    lastId: rows.length > 0 ? rows[rows.length - 1][0] : undefined,
    json: () => `[${rows.map(entryJson).join(',')}]`,
  };
}

/**
 * One entry as JSON, field for field what JSON.stringify(toEntry(row)) writes. `details` is stored
 * as JSON.stringify output (Engine.log), so splicing it in is the same text re-serialising gives.
 */
function entryJson([id, ts, action, level, message, itemId, details]: LogRow): string {
  return (
    `{"id":${id},"timestamp":"${new Date(ts).toISOString()}","action":${JSON.stringify(action)},` +
    `"level":"${LOG_LEVELS[level] ?? 'info'}","message":${JSON.stringify(message)},` +
    `"itemId":${itemId === null ? 'null' : JSON.stringify(itemId)},"details":${details ?? 'null'}}`
  );
}

function toEntry([id, ts, action, level, message, itemId, details]: LogRow): LogEntry {
  return {
    id,
    timestamp: new Date(ts).toISOString(),
    action: action as LogAction,
    level: LOG_LEVELS[level] ?? 'info',
    message,
    itemId,
    details: details === null ? null : (JSON.parse(details) as Record<string, unknown>),
  };
}
