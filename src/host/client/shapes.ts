// What the client reads of each answer, checked before it reads it. The client prints from any
// engine it is pointed at, an older or newer one or something that is not an engine at all; an
// answer that is JSON of another shape (null where an object belongs, a field missing) is said to
// be the server's answer at fault, by the field, instead of failing somewhere in the printing.
// Only the fields the client uses are checked: an engine may add others.

export type Shape =
  | { readonly kind: 'string' | 'number' | 'boolean' }
  | { readonly kind: 'nullable' | 'optional'; readonly of: Shape }
  | { readonly kind: 'array'; readonly of: Shape }
  | { readonly kind: 'object'; readonly fields: Readonly<Record<string, Shape>> };

const str: Shape = { kind: 'string' };
const num: Shape = { kind: 'number' };
const nullable = (of: Shape): Shape => ({ kind: 'nullable', of });
const optional = (of: Shape): Shape => ({ kind: 'optional', of });
const arrayOf = (of: Shape): Shape => ({ kind: 'array', of });
const object = (fields: Record<string, Shape>): Shape => ({ kind: 'object', fields });

/**
 * Where `value` first differs from `shape`, as "path: what was expected, what came", or undefined
 * when it fits.
 */
export function shapeMismatch(value: unknown, shape: Shape, path = 'the answer'): string | undefined {
  switch (shape.kind) {
    case 'nullable':
      return value === null ? undefined : shapeMismatch(value, shape.of, path);
    case 'optional':
      return value === undefined ? undefined : shapeMismatch(value, shape.of, path);
    case 'array': {
      if (!Array.isArray(value)) return `${path}: expected an array, got ${describe(value)}`;
      for (let i = 0; i < value.length; i++) {
        const inner = shapeMismatch(value[i], shape.of, `${path}[${i}]`);
        if (inner) return inner;
      }
      return undefined;
    }
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return `${path}: expected an object, got ${describe(value)}`;
      const record = value as Record<string, unknown>;
      for (const [field, inner] of Object.entries(shape.fields)) {
        const found = shapeMismatch(record[field], inner, path === 'the answer' ? field : `${path}.${field}`);
        if (found) return found;
      }
      return undefined;
    }
    default:
      // A number that JSON cannot carry (NaN) never arrives; finite is all that needs saying.
      return typeof value === shape.kind ? undefined : `${path}: expected a ${shape.kind}, got ${describe(value)}`;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

export const STATS_OVERVIEW = object({
  total: num,
  launched: num,
  pending: num,
  running: num,
  held: num,
  failed: num,
  totalLaunches: num,
  totalFailed: num,
  lastPollAt: nullable(str),
});

export const STATS = object({ overview: STATS_OVERVIEW });

export const HEALTH = object({ status: str, engine: str, version: str, checks: object({ database: str, engine: str }) });

export const STATUS = object({
  engine: object({ name: str, version: str, state: str, startedAt: str, uptimeMs: num, polls: num, pollIntervalMs: num, running: num, concurrency: num }),
  server: object({ url: str }),
  stats: STATS_OVERVIEW,
  lastLaunch: nullable(
    object({ itemId: str, name: str, attempt: num, outcome: str, exitCode: nullable(num), signal: nullable(str), error: nullable(str), durationMs: nullable(num) }),
  ),
  database: object({ path: str, sizeBytes: num, lastPersistAt: nullable(str), lastError: nullable(str) }),
  scanner: object({
    scans: num,
    lastScanAt: nullable(str),
    itemsDiscovered: num,
    itemsRejected: num,
    sources: arrayOf(object({ kind: str, location: str, itemsKnown: num, lastScanAt: nullable(str), lastError: nullable(str) })),
  }),
  timestamp: str,
});

export const LOG_ENTRY = object({ id: num, timestamp: str, level: str, action: str, itemId: nullable(str), message: str });

export const LOG_ENTRIES = arrayOf(LOG_ENTRY);

export const ITEMS = object({
  items: arrayOf(object({ id: str, name: str, state: str, attempts: num, maxAttempts: num, updatedAt: str, lastError: nullable(str) })),
  total: num,
});

export const ITEM_DETAIL = object({
  item: object({ id: str, name: str }),
  state: str,
  outcome: str,
  error: nullable(str),
  attempts: arrayOf(object({ attempt: num, outcome: str, exitCode: nullable(num), signal: nullable(str), error: nullable(str), durationMs: nullable(num) })),
});

/** POST /items: the items it took, and the schedules (an item with a cron is a schedule). */
export const ADDED = object({ items: arrayOf(ITEM_DETAIL), schedules: optional(arrayOf(object({ id: str }))) });
