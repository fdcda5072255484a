// Strict query-string reading. Every endpoint declares the parameters it accepts; anything else is
// an error whose message says what was wrong and what is allowed, so a typo such as `?levl=warn`
// fails loudly instead of silently returning unfiltered data. The API server answers these errors
// with a 400; the rules live here so that what a client builds is checked by the same code.
//
// URLSearchParams gives the raw list of pairs: no `a[b]=1` objects, no merged repeats to undo.

/** Page sizes every list endpoint accepts. */
export const MAX_LIMIT = 1000;
export const DEFAULT_LIMIT = 100;

/** A parameter that is unknown, repeated or malformed; the message is written for the caller. */
export class InvalidParameterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidParameterError';
  }
}

export type RawParams = Map<string, string[]>;

/**
 * Parses a query string and rejects any parameter not in `allowed`. Returns the values of each
 * parameter in order of appearance.
 */
export function parseParams(query: string, allowed: readonly string[]): RawParams {
  const params: RawParams = new Map();
  if (query === '') return params;
  for (const [name, value] of new URLSearchParams(query)) {
    if (!allowed.includes(name)) {
      throw new InvalidParameterError(
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

/** The single value of a parameter that may appear at most once. */
export function single(params: RawParams, name: string): string | undefined {
  const values = params.get(name);
  if (!values) return undefined;
  if (values.length > 1) throw new InvalidParameterError(`Parameter ${name} was given ${values.length} times; give it at most once.`);
  return values[0];
}

/** A decimal integer in [min, max], written without sign, spaces or leading zeros. */
export function integerParam(params: RawParams, name: string, min: number, max: number, fallback: number): number {
  const text = single(params, name);
  if (text === undefined) return fallback;
  const value = /^(0|[1-9][0-9]{0,15})$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new InvalidParameterError(`Parameter ${name} must be an integer from ${min} to ${max}; got ${JSON.stringify(text)}.`);
  }
  return value;
}

export function oneOf<T extends string>(params: RawParams, name: string, allowed: readonly T[]): T | undefined {
  const text = single(params, name);
  if (text === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(text)) {
    throw new InvalidParameterError(`Parameter ${name} must be one of: ${allowed.join(', ')}; got ${JSON.stringify(text)}.`);
  }
  return text as T;
}

/**
 * A parameter that takes several of `allowed`, comma-separated or repeated (`action` on /logs,
 * `state` on /items); each value once, in order of first appearance. `noun` names one value in
 * the error. Undefined when the parameter is absent.
 */
export function manyOf<T extends string>(params: RawParams, name: string, allowed: readonly T[], noun: string): T[] | undefined {
  const values = params.get(name);
  if (!values) return undefined;
  const chosen = new Set<T>();
  for (const value of values) {
    for (const piece of value.split(',')) {
      if (!(allowed as readonly string[]).includes(piece)) {
        throw new InvalidParameterError(
          `Parameter ${name} has an unknown ${noun} ${JSON.stringify(piece)}; allowed (comma-separated or repeated): ${allowed.join(', ')}.`,
        );
      }
      chosen.add(piece as T);
    }
  }
  return [...chosen];
}

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

/** A date-time parameter, normalised to toISOString() form. */
export function dateTimeParam(params: RawParams, name: string): string | undefined {
  const text = single(params, name);
  if (text === undefined) return undefined;
  const iso = parseIsoDateTime(text);
  if (iso === undefined) {
    // A '+' in a query string means a space, so an unencoded "+02:00" offset arrives as " 02:00".
    const hint = / \d{2}:?\d{2}$/.test(text) ? " (a '+' in a URL query means a space: write the offset's '+' as %2B)" : '';
    throw new InvalidParameterError(
      `Parameter ${name} must be an ISO 8601 date-time with a time zone, e.g. 2024-05-01T12:00:00.000Z or 2024-05-01T14:00:00+02:00; got ${JSON.stringify(text)}${hint}.`,
    );
  }
  return iso;
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
