// Query-string parsing for the API. The strict rules (unknown, repeated and malformed parameters)
// and the /logs filter are shared with the clients (src/shared); this file adds what only the
// server knows: the cursor's encoding, the engine's LogQuery, /items and /events, and the 400s.
//
// Express's own query parser (qs) is disabled (see server.ts): it turns `a[b]=1` into objects
// and merges repeats in ways we would have to undo. URLSearchParams gives us the raw list.
import { itemsQueryString, parseItemsQueryString, type ItemsRequest } from '../shared/itemFilter';
import { logsQueryString, parseLogsQueryString, type LogsRequest } from '../shared/logFilter';
import {
  InvalidParameterError,
  parseParams as parseSharedParams,
  single,
  type RawParams,
} from '../shared/queryParams';
import { logQueryOf } from '../core/reads/logQuery';
import type { LogQuery } from '../core/kernel/monitoredEngine';
import { badRequest } from './respond';

export { DEFAULT_LIMIT, MAX_LIMIT, parseIsoDateTime } from '../shared/queryParams';
export { MAX_ITEM_LENGTH, MAX_Q_LENGTH } from '../shared/logFilter';

/** The query string of a raw request URL (`/logs?x=1` → `x=1`), '' when there is none. */
export function queryStringOf(url: string | undefined): string {
  // A server request always has a url; IncomingMessage types it as optional for client responses.
  if (url === undefined) return '';
  const i = url.indexOf('?');
  return i < 0 ? '' : url.slice(i + 1);
}

/** Runs a shared reader; what it rejects is the client's mistake, answered with a 400. */
function strictly<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw err instanceof InvalidParameterError ? badRequest(err.message) : err;
  }
}

/** Parses a query string and rejects (400) any parameter not in `allowed`. */
export function parseParams(query: string, allowed: readonly string[]): RawParams {
  return strictly(() => parseSharedParams(query, allowed));
}

// ---------------------------------------------------------------------------------------------
// Cursor: base64url of {"after":<last id>,"order":"asc"|"desc"}. Opaque to clients; the order is
// inside so a cursor cannot silently be replayed in the other direction.

interface CursorPayload {
  after: number;
  order: 'asc' | 'desc';
}

export function encodeCursor(payload: CursorPayload): string {
  return Buffer.from(JSON.stringify({ after: payload.after, order: payload.order }), 'utf8').toString('base64url');
}

export function decodeCursor(text: string): CursorPayload | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  // Non-canonical encodings (stray bits, extra characters) are not cursors we issued.
  if (bytes.toString('base64url') !== text) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  if (keys.length !== 2 || !keys.includes('after') || !keys.includes('order')) return undefined;
  const { after, order } = value as Record<string, unknown>;
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 0) return undefined;
  if (order !== 'asc' && order !== 'desc') return undefined;
  return { after, order };
}

// ---------------------------------------------------------------------------------------------
// /logs

export { LOGS_PARAMS } from '../shared/logFilter';

/** The LogQuery for the engine plus the request it came from, to build the next page's URL. */
export interface ParsedLogsQuery {
  query: LogQuery;
  request: LogsRequest;
}

export function parseLogsQuery(queryString: string): ParsedLogsQuery {
  const request = strictly(() => parseLogsQueryString(queryString));
  const { filter, order, limit } = request;
  let afterId: number | undefined;
  if (request.cursor !== undefined) {
    const cursor = decodeCursor(request.cursor);
    if (!cursor) {
      throw badRequest('Parameter cursor is not a valid cursor; use the cursor from the previous page\'s Link header unchanged.');
    }
    if (cursor.order !== order) {
      throw badRequest(`Parameter cursor belongs to order=${cursor.order} but this request has order=${order}; keep the same order when paging.`);
    }
    afterId = cursor.after;
  }
  return { query: logQueryOf(filter, { order, limit, afterId }), request };
}

/** The query string of the next page: the same (normalised) filters plus a cursor. */
export function nextLogsQueryString(parsed: ParsedLogsQuery, lastId: number): string {
  const { filter, order, limit } = parsed.request;
  return logsQueryString(filter, { order, limit, cursor: encodeCursor({ after: lastId, order }) });
}

// ---------------------------------------------------------------------------------------------
// /items

export { ITEMS_PARAMS, MAX_OFFSET, MAX_SOURCE_LENGTH } from '../shared/itemFilter';

export type ItemsQuery = ItemsRequest;

export function parseItemsQuery(queryString: string): ItemsQuery {
  return strictly(() => parseItemsQueryString(queryString));
}

export function nextItemsQueryString(query: ItemsQuery, nextOffset: number): string {
  return itemsQueryString(query.filter, { limit: query.limit, offset: nextOffset, order: query.order });
}

// ---------------------------------------------------------------------------------------------
// Control (POST)

/** A POST needs no body; one is read (and ignored) up to this size, so a client that sends `{}` is fine. */
export const MAX_CONTROL_BODY_BYTES = 1024;

// ---------------------------------------------------------------------------------------------
// /events

export const EVENTS_PARAMS = ['lastEventId'] as const;

/**
 * The log id to resume after: the Last-Event-ID header (what EventSource sends on reconnect) or
 * the lastEventId parameter (for clients that cannot set headers). Undefined: start live.
 */
export function parseLastEventId(queryString: string, header: string | string[] | undefined): number | undefined {
  const fromQuery = strictly(() => single(parseSharedParams(queryString, EVENTS_PARAMS), 'lastEventId'));
  if (Array.isArray(header)) throw badRequest('Last-Event-ID was given more than once.');
  if (header !== undefined && fromQuery !== undefined && header.trim() !== fromQuery) {
    throw badRequest('Last-Event-ID header and lastEventId parameter disagree; give one of them.');
  }
  const text = header !== undefined ? header.trim() : fromQuery;
  // EventSource sends an empty Last-Event-ID when no event had an id yet: start live.
  if (text === undefined || text === '') return undefined;
  if (!/^(0|[1-9][0-9]*)$/.test(text)) {
    throw badRequest(`Last-Event-ID / lastEventId must be a log entry id (a non-negative integer); got ${JSON.stringify(text)}.`);
  }
  // Any id is accepted, as the document says: one past every entry there can be resumes live.
  return Math.min(Number(text), Number.MAX_SAFE_INTEGER);
}
