// Strict query-string parsing for the API. Every endpoint declares the parameters it accepts;
// anything else is a 400 whose message says what was wrong and what is allowed, so a typo such
// as `?levl=warn` fails loudly instead of silently returning unfiltered data.
//
// Express's own query parser (qs) is disabled (see server.ts): it turns `a[b]=1` into objects
// and merges repeats in ways we would have to undo. URLSearchParams gives us the raw list.
import type { LogAction, LogLevel, ItemOutcome } from '../shared/api';
import { LOG_ACTIONS, LOG_LEVELS } from '../shared/api';
import type { LogQuery } from '../core/monitoredEngine';
import { badRequest } from './respond';

export const MAX_LIMIT = 1000;
export const DEFAULT_LIMIT = 100;
/** Bounds for free-text parameters, so a huge query string cannot make the engine do huge work. */
export const MAX_Q_LENGTH = 500;
export const MAX_ITEM_LENGTH = 256;

export type RawParams = Map<string, string[]>;

/** The query string of a raw request URL (`/logs?x=1` → `x=1`), '' when there is none. */
export function queryStringOf(url: string | undefined): string {
  // A server request always has a url; IncomingMessage types it as optional for client responses.
  if (url === undefined) return '';
  const i = url.indexOf('?');
  return i < 0 ? '' : url.slice(i + 1);
}

/**
 * Parses a query string and rejects any parameter not in `allowed`. Returns the values of each
 * parameter in order of appearance.
 */
export function parseParams(query: string, allowed: readonly string[]): RawParams {
  const params: RawParams = new Map();
  if (query === '') return params;
  for (const [name, value] of new URLSearchParams(query)) {
    if (!allowed.includes(name)) {
      throw badRequest(
        allowed.length === 0
          ? `Unknown parameter ${JSON.stringify(name)}: this endpoint takes no parameters.`
          : `Unknown parameter ${JSON.stringify(name)}; allowed parameters: ${allowed.join(', ')}.`,
      );
    }
    const list = params.get(name);
    if (list) list.push(value);
    else params.set(name, [value]);
  }
  return params;
}

/**
 * Length in characters (Unicode code points), as JSON Schema's maxLength counts them: an emoji is
 * one character, not two UTF-16 units.
 */
export function codePoints(text: string): number {
  let surrogatePairs = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        surrogatePairs++;
        i++;
      }
    }
  }
  return text.length - surrogatePairs;
}

/** The single value of a parameter that may appear at most once. */
export function single(params: RawParams, name: string): string | undefined {
  const values = params.get(name);
  if (!values) return undefined;
  if (values.length > 1) throw badRequest(`Parameter ${name} was given ${values.length} times; give it at most once.`);
  return values[0];
}

/** A decimal integer in [min, max], written without sign, spaces or leading zeros. */
export function integerParam(params: RawParams, name: string, min: number, max: number, fallback: number): number {
  const text = single(params, name);
  if (text === undefined) return fallback;
  const value = /^(0|[1-9][0-9]{0,15})$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw badRequest(`Parameter ${name} must be an integer from ${min} to ${max}; got ${JSON.stringify(text)}.`);
  }
  return value;
}

function oneOf<T extends string>(params: RawParams, name: string, allowed: readonly T[]): T | undefined {
  const text = single(params, name);
  if (text === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(text)) {
    throw badRequest(`Parameter ${name} must be one of: ${allowed.join(', ')}; got ${JSON.stringify(text)}.`);
  }
  return text as T;
}

// ---------------------------------------------------------------------------------------------
// Date-times

const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;

/** The instants toISOString writes with a four-digit year: what an RFC 3339 year 0000–9999 can reach. */
const FIRST_INSTANT = new Date('0000-01-01T00:00:00.000Z').getTime();
const LAST_INSTANT = new Date('9999-12-31T23:59:59.999Z').getTime();

/**
 * Parses an RFC 3339 date-time (also `hh:mm` without seconds, a `,` fraction and `±hhmm`, as ISO
 * 8601 allows) and returns it as `toISOString()` writes it, or undefined when it is not one.
 * Validated by hand because Date.parse accepts impossible dates (2024-02-30 becomes 1 March).
 * Everything RFC 3339 allows is accepted, as the OpenAPI document promises: any number of fraction
 * digits (beyond milliseconds they are dropped), a leap second at 23:59:60 UTC (the last
 * millisecond of that minute: the order of instants is kept), and years 0000 and 9999 with an
 * offset that moves them past the four-digit range (the first or last instant that has one).
 */
export function parseIsoDateTime(text: string): string | undefined {
  const m = ISO_DATE_TIME.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) return undefined;
  let offsetMinutes = 0;
  if (m[8] === undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0–99 to 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined; // e.g. 30 February
  date.setUTCHours(hour, minute, Math.min(second, 59), second === 60 ? 999 : millis);
  const time = date.getTime() - offsetMinutes * 60_000;
  const utc = new Date(time);
  if (second === 60 && (utc.getUTCHours() !== 23 || utc.getUTCMinutes() !== 59)) return undefined; // leap seconds end a UTC day
  return new Date(Math.min(Math.max(time, FIRST_INSTANT), LAST_INSTANT)).toISOString();
}

function dateTimeParam(params: RawParams, name: string): string | undefined {
  const text = single(params, name);
  if (text === undefined) return undefined;
  const iso = parseIsoDateTime(text);
  if (iso === undefined) {
    // A '+' in a query string means a space, so an unencoded "+02:00" offset arrives as " 02:00".
    const hint = / \d{2}:?\d{2}$/.test(text) ? " (a '+' in a URL query means a space: write the offset's '+' as %2B)" : '';
    throw badRequest(
      `Parameter ${name} must be an ISO 8601 date-time with a time zone, e.g. 2024-05-01T12:00:00.000Z or 2024-05-01T14:00:00+02:00; got ${JSON.stringify(text)}${hint}.`,
    );
  }
  return iso;
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

export const LOGS_PARAMS = ['action', 'level', 'item', 'since', 'until', 'q', 'order', 'limit', 'cursor'] as const;

/** The LogQuery for the engine plus what is needed to build the next page's URL. */
export interface ParsedLogsQuery {
  query: LogQuery;
  /** Original free text of q (the engine gets the words). */
  q?: string;
}

export function parseLogsQuery(queryString: string): ParsedLogsQuery {
  const params = parseParams(queryString, LOGS_PARAMS);

  let actions: LogAction[] | undefined;
  const actionValues = params.get('action');
  if (actionValues) {
    const set = new Set<LogAction>();
    for (const value of actionValues) {
      for (const piece of value.split(',')) {
        if (!(LOG_ACTIONS as readonly string[]).includes(piece)) {
          throw badRequest(
            `Parameter action has an unknown action ${JSON.stringify(piece)}; allowed (comma-separated or repeated): ${LOG_ACTIONS.join(', ')}.`,
          );
        }
        set.add(piece as LogAction);
      }
    }
    actions = [...set];
  }

  const minLevel: LogLevel | undefined = oneOf(params, 'level', LOG_LEVELS);

  const itemId = single(params, 'item');
  if (itemId !== undefined && (itemId.length === 0 || codePoints(itemId) > MAX_ITEM_LENGTH)) {
    throw badRequest(`Parameter item must be an item id of 1 to ${MAX_ITEM_LENGTH} characters.`);
  }

  const since = dateTimeParam(params, 'since');
  const until = dateTimeParam(params, 'until');

  const q = single(params, 'q');
  if (q !== undefined && codePoints(q) > MAX_Q_LENGTH) {
    throw badRequest(`Parameter q must be at most ${MAX_Q_LENGTH} characters; got ${codePoints(q)}.`);
  }
  // Words are separated by white space; an empty or blank q filters nothing.
  const words = q === undefined ? [] : q.toLowerCase().split(/\s+/).filter((w) => w !== '');

  const order = oneOf(params, 'order', ['asc', 'desc'] as const) ?? 'desc';
  const limit = integerParam(params, 'limit', 1, MAX_LIMIT, DEFAULT_LIMIT);

  let afterId: number | undefined;
  const cursorText = single(params, 'cursor');
  if (cursorText !== undefined) {
    const cursor = decodeCursor(cursorText);
    if (!cursor) {
      throw badRequest('Parameter cursor is not a valid cursor; use the cursor from the previous page\'s Link header unchanged.');
    }
    if (cursor.order !== order) {
      throw badRequest(`Parameter cursor belongs to order=${cursor.order} but this request has order=${order}; keep the same order when paging.`);
    }
    afterId = cursor.after;
  }

  const query: LogQuery = { order, limit };
  if (actions) query.actions = actions;
  if (minLevel) query.minLevel = minLevel;
  if (itemId !== undefined) query.itemId = itemId;
  if (since !== undefined) query.since = since;
  if (until !== undefined) query.until = until;
  if (words.length > 0) query.words = words;
  if (afterId !== undefined) query.afterId = afterId;
  return { query, q };
}

/** The query string of the next page: the same (normalised) filters plus a cursor. */
export function nextLogsQueryString(parsed: ParsedLogsQuery, lastId: number): string {
  const { query } = parsed;
  const out = new URLSearchParams();
  if (query.actions) out.set('action', query.actions.join(','));
  if (query.minLevel) out.set('level', query.minLevel);
  if (query.itemId !== undefined) out.set('item', query.itemId);
  if (query.since !== undefined) out.set('since', query.since);
  if (query.until !== undefined) out.set('until', query.until);
  if (parsed.q !== undefined && query.words) out.set('q', parsed.q);
  out.set('order', query.order);
  out.set('limit', String(query.limit));
  out.set('cursor', encodeCursor({ after: lastId, order: query.order }));
  return out.toString();
}

// ---------------------------------------------------------------------------------------------
// /items

export const ITEMS_PARAMS = ['outcome', 'limit', 'offset'] as const;
export const MAX_OFFSET = 1_000_000_000;

export interface ItemsQuery {
  outcome?: ItemOutcome;
  limit: number;
  offset: number;
}

export function parseItemsQuery(queryString: string): ItemsQuery {
  const params = parseParams(queryString, ITEMS_PARAMS);
  const outcome = oneOf(params, 'outcome', ['launched', 'pending', 'failed'] as const);
  const limit = integerParam(params, 'limit', 1, MAX_LIMIT, DEFAULT_LIMIT);
  const offset = integerParam(params, 'offset', 0, MAX_OFFSET, 0);
  return outcome ? { outcome, limit, offset } : { limit, offset };
}

export function nextItemsQueryString(query: ItemsQuery, nextOffset: number): string {
  const out = new URLSearchParams();
  if (query.outcome) out.set('outcome', query.outcome);
  out.set('limit', String(query.limit));
  out.set('offset', String(nextOffset));
  return out.toString();
}

// ---------------------------------------------------------------------------------------------
// /events

export const EVENTS_PARAMS = ['lastEventId'] as const;

/**
 * The log id to resume after: the Last-Event-ID header (what EventSource sends on reconnect) or
 * the lastEventId parameter (for clients that cannot set headers). Undefined: start live.
 */
export function parseLastEventId(queryString: string, header: string | string[] | undefined): number | undefined {
  const params = parseParams(queryString, EVENTS_PARAMS);
  const fromQuery = single(params, 'lastEventId');
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
