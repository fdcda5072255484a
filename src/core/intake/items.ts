// Queue items: validation against the shipped JSON Schema (the same file the editor uses through
// jsonValidation, so the editor and the engine never disagree), id derivation and normalisation.
import type { ErrorObject } from 'ajv';
import { Cron } from 'croner';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { validateItem } from './itemValidator';
import { problemMatcherProblem, type ProblemMatcherInput } from '../features/problems/problemMatchers';
import { watchGlobProblem } from '../features/triggers/globs';
import { isInside } from './workingFolder';
import { deriveItemId } from '../../shared/itemIds';

// Kept here too for the callers that judge queue files (src/core/intake/queueSource.ts).
export { isInside, deriveItemId };

/** An item exactly as a queue file may write it. */
export interface ItemInput {
  id?: string;
  name?: string;
  command: string;
  args?: string[];
  shell?: boolean;
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  maxAttempts?: number;
  runAt?: string;
  schedule?: string | { cron: string; timezone?: string };
  overlap?: 'skip' | 'allow';
  dependsOn?: string[];
  priority?: number;
  problemMatcher?: ProblemMatcherInput;
  service?: boolean;
  ready?: ServiceReady;
  readyTimeoutMs?: number;
  restart?: ServiceRestart;
  watch?: { paths: string[]; debounceMs?: number; onChange?: ItemWatch['onChange'] };
}

/** A watched template's trigger with its defaults resolved (src/core/features/triggers). */
export interface ItemWatch {
  /** Globs relative to the item's cwd, as written. */
  paths: string[];
  debounceMs: number;
  /** What a settled burst does while the previous occurrence is still pending. */
  onChange: 'restart' | 'queue' | 'skip';
}

/** How the engine knows a service is ready: exactly one probe. */
export type ServiceReady = { port: number; host?: string } | { http: string } | { logPattern: string } | { command: string };
/** Whether a service that exits is started again. */
export type ServiceRestart = 'on-failure' | 'always' | 'never';
/** A service's settings with their defaults resolved (features/services). */
export interface ServiceSpec {
  /** Absent: ready once it has run 1 s without exiting. */
  ready?: ServiceReady;
  readyTimeoutMs: number;
  restart: ServiceRestart;
}
export const DEFAULT_READY_TIMEOUT_MS = 60_000;

/** A template's schedule with its zone resolved. */
export interface ItemSchedule {
  cron: string;
  /** IANA zone; the engine's local zone when the queue file named none. */
  timezone: string;
}

/** An item with every default resolved: what the engine stores and launches. */
export interface ItemDefinition {
  id: string;
  name: string;
  command: string;
  args: string[];
  shell: boolean;
  /** Absolute working directory, inside the workspace folder. */
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxAttempts: number;
  /** Epoch milliseconds, or null to launch as soon as possible. */
  runAt: number | null;
  // Scheduling, dependencies and priority. Absent when the queue file left them out, so definitions (and their hashes)
  // written before they existed read the same.
  /** Makes the item a template whose occurrences become items (src/core/features/schedules/schedules.ts). */
  schedule?: ItemSchedule;
  /** For templates: `skip` (default) skips an occurrence due while the previous one is pending. */
  overlap?: 'skip' | 'allow';
  /** Ids that must have launched before this item starts. */
  dependsOn?: string[];
  /** −100…100, default 0: among due items, higher first. */
  priority?: number;
  /** The problem matcher as the queue file wrote it (checked); applied to each finished attempt's output. */
  problemMatcher?: ProblemMatcherInput;
  /** Makes the item a template fired by changes to files (src/core/features/triggers). */
  watch?: ItemWatch;
  /**
   * Present for a service (`service: true`): it is expected to keep running; it is `starting`
   * until its probe succeeds, then `ready`, and is started again per `restart`. A service's
   * `timeoutMs` is 0 (no limit) unless the queue file set one.
   */
  service?: ServiceSpec;
}

export const MAX_DEPENDENCIES = 100;

export interface ItemDefaults {
  timeoutMs: number;
  maxAttempts: number;
}

/**
 * A rejection names the entry's top-level field at fault when there is one (`field`), so an editor
 * can point at that field rather than the whole entry.
 */
export type ItemResult = { ok: true; item: ItemDefinition } | { ok: false; reason: string; field?: string };

/**
 * Validates one entry and resolves its defaults. `relPath` is the queue file's path relative to
 * the workspace folder (with `/` separators), `index` the entry's position in the file: together
 * they make the derived id, so the same file always yields the same ids.
 */
export function parseItem(
  entry: unknown,
  ctx: { workspaceFolder: string; relPath: string; index: number; defaults: ItemDefaults },
): ItemResult {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    // The schema would answer with every branch it tried (args, shell…), none of them the point.
    const got = entry === null ? 'null' : Array.isArray(entry) ? 'an array' : `a ${typeof entry}`;
    return { ok: false, reason: `an item must be a JSON object with at least "command"; got ${got}` };
  }
  if (!validateItem(entry)) {
    const errors = validateItem.errors ?? [];
    // A service's field on an item that is not one: the field to remove (or to add "service" beside).
    const serviceField = errors.some((e) => e.schemaPath.startsWith('#/allOf/2')) ? ['ready', 'readyTimeoutMs', 'restart'].find((f) => f in entry) : undefined;
    return withField({ ok: false, reason: describeSchemaErrors(errors, entry) }, serviceField ?? schemaErrorField(errors));
  }
  const input = entry as ItemInput;
  if (input.problemMatcher !== undefined) {
    // What the schema cannot say: the regexp compiles, and its group numbers exist.
    const problem = problemMatcherProblem(input.problemMatcher);
    if (problem) return { ok: false, reason: problem, field: 'problemMatcher' };
  }
  const id = input.id ?? deriveItemId(ctx.relPath, ctx.index);
  const cwd = path.resolve(ctx.workspaceFolder, input.cwd ?? '.');
  if (!isInside(ctx.workspaceFolder, cwd)) {
    return { ok: false, reason: `cwd "${input.cwd}" resolves outside the workspace folder; use a path inside it`, field: 'cwd' };
  }
  let runAt: number | null = null;
  if (input.runAt !== undefined) {
    runAt = Date.parse(input.runAt);
    if (Number.isNaN(runAt)) return { ok: false, reason: `runAt "${input.runAt}" is not a valid ISO 8601 date-time`, field: 'runAt' };
  }
  const extras: Pick<ItemDefinition, 'schedule' | 'overlap' | 'dependsOn' | 'priority' | 'problemMatcher' | 'watch'> = {};
  if (input.watch !== undefined) {
    if (input.schedule !== undefined || input.runAt !== undefined) {
      return { ok: false, reason: `"watch" is not allowed with "${input.schedule !== undefined ? 'schedule' : 'runAt'}": a watched item runs when its files change; remove one of them`, field: 'watch' };
    }
    for (const glob of input.watch.paths) {
      const problem = watchGlobProblem(glob, cwd, ctx.workspaceFolder);
      if (problem) return { ok: false, reason: problem, field: 'watch' };
    }
    // Occurrences add "@" and a 24-character time to the id, which may have 128 characters in all.
    if (id.length > 103) return { ok: false, reason: `"id" of a watched item is at most 103 characters (its occurrences add "@<time>"); "${id.slice(0, 20)}…" has ${id.length}`, field: 'id' };
    extras.watch = { paths: input.watch.paths, debounceMs: input.watch.debounceMs ?? 300, onChange: input.watch.onChange ?? 'restart' };
  }
  if (input.schedule !== undefined) {
    if (input.runAt !== undefined) return { ok: false, reason: '"schedule" is not allowed with "runAt": a scheduled item runs at each occurrence; remove one of them', field: 'schedule' };
    const cron = typeof input.schedule === 'string' ? input.schedule : input.schedule.cron;
    const timezone = (typeof input.schedule === 'string' ? undefined : input.schedule.timezone) ?? localTimeZone();
    const problem = scheduleProblem(cron, timezone);
    if (problem) return { ok: false, reason: problem, field: 'schedule' };
    extras.schedule = { cron: cron.trim().split(/\s+/).join(' '), timezone };
    if (id.length > 110) return { ok: false, reason: `"id" of a scheduled item is at most 110 characters (its occurrences add "@<time>Z"); "${id.slice(0, 20)}…" has ${id.length}`, field: 'id' };
  } else if (input.overlap !== undefined) {
    return { ok: false, reason: '"overlap" applies to scheduled items only; add "schedule" or remove "overlap"', field: 'overlap' };
  }
  if (input.overlap !== undefined) extras.overlap = input.overlap;
  if (input.dependsOn !== undefined && input.dependsOn.length > 0) {
    if (input.dependsOn.includes(id)) return { ok: false, reason: `"dependsOn" names the item itself ("${id}"); an item cannot wait for its own launch`, field: 'dependsOn' };
    extras.dependsOn = input.dependsOn;
  }
  if (input.priority !== undefined && input.priority !== 0) extras.priority = input.priority;
  if (input.problemMatcher !== undefined) extras.problemMatcher = input.problemMatcher;
  const service = serviceSpec(input);
  if (typeof service === 'object' && 'reason' in service) return { ok: false, ...service };
  return {
    ok: true,
    item: {
      id,
      name: input.name ?? id,
      command: input.command,
      args: input.args ?? [],
      shell: input.shell ?? false,
      cwd,
      env: input.env ?? {},
      timeoutMs: input.timeoutMs ?? (service ? 0 : ctx.defaults.timeoutMs),
      maxAttempts: input.maxAttempts ?? ctx.defaults.maxAttempts,
      runAt,
      ...extras,
      ...(service ? { service } : {}),
    },
  };
}

/**
 * A service's settings, or undefined for an item that is not one; a reason (and the field) when
 * what the schema cannot say is wrong: the probe's regexp or URL.
 */
function serviceSpec(input: ItemInput): ServiceSpec | { reason: string; field: string } | undefined {
  if (input.service !== true) return undefined;
  const ready = input.ready;
  if (ready && 'logPattern' in ready) {
    try {
      new RegExp(ready.logPattern);
    } catch (err) {
      return { reason: `"ready.logPattern" is not a valid regular expression: ${(err as Error).message}`, field: 'ready' };
    }
  }
  if (ready && 'http' in ready) {
    let url: URL | undefined;
    try {
      url = new URL(ready.http);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      return { reason: `"ready.http" must be an http:// or https:// URL, like "http://127.0.0.1:3000/health"; got "${ready.http}"`, field: 'ready' };
    }
  }
  return {
    ...(ready ? { ready } : {}),
    readyTimeoutMs: input.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
    restart: input.restart ?? 'on-failure',
  };
}

/** The zone the engine runs in: a schedule that names none is in it. */
export function localTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** Why `cron` in `timezone` is not a schedule the engine can run, or undefined. */
export function scheduleProblem(cron: string, timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    return `"schedule.timezone" "${timezone}" is not a known IANA time zone (for example "Europe/Berlin", "America/New_York", "UTC")`;
  }
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5) {
    return `"schedule" "${cron}" has ${fields.length} field(s); a cron expression here has exactly 5: minute hour day-of-month month day-of-week (for example "0 2 * * *")`;
  }
  try {
    // Parsing is croner's (the same library computes the occurrences); paused: nothing runs.
    new Cron(cron, { timezone, paused: true });
  } catch (e) {
    return `"schedule" "${cron}" is not a valid cron expression: ${(e as Error).message.replace(/^CronPattern: /, '')}`;
  }
  if (neverFires(fields)) {
    return `"schedule" "${cron}" can never fire: no month it names has a day of the month it names (February has at most 29 days; April, June, September and November 30); fix the day or the month`;
  }
  return undefined;
}

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
/** The most days each month can have (February in a leap year). */
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * True when the day-of-month and month fields together name no date that exists ("0 0 31 2 *"),
 * and the day of the week does not widen them. Such a template is a mistake, and croner searches
 * years ahead for its next occurrence on every check (~10 ms each), which stalled the engine with
 * a thousand of them. Only plain numbers, ranges, steps and month names are judged; anything else
 * (L, W, #) is taken to be able to fire.
 */
function neverFires([, , dayField, monthField, weekdayField]: string[]): boolean {
  if (weekdayField !== '*' && weekdayField !== '?') return false;
  const days = fieldValues(dayField, 1, 31, []);
  const months = fieldValues(monthField, 1, 12, MONTH_NAMES);
  if (!days || !months) return false;
  return !months.some((m) => days.some((d) => d <= MONTH_DAYS[m - 1]));
}

/** The values a cron field names, or undefined when it uses syntax this check does not judge. */
function fieldValues(field: string, min: number, max: number, names: string[]): number[] | undefined {
  const value = (text: string): number | undefined => {
    const byName = names.indexOf(text.toLowerCase());
    if (byName >= 0) return byName + 1;
    return /^\d+$/.test(text) ? Number(text) : undefined;
  };
  const out: number[] = [];
  for (const part of field.split(',')) {
    const m = /^([^/-]+)(?:-([^/]+))?(?:\/(\d+))?$/.exec(part);
    if (!m) return undefined;
    const all = m[1] === '*' || m[1] === '?';
    const from = all ? min : value(m[1]);
    const to = all ? max : m[2] !== undefined ? value(m[2]) : m[3] !== undefined ? max : from;
    const step = m[3] !== undefined ? Number(m[3]) : 1;
    if (from === undefined || to === undefined || step < 1) return undefined;
    for (let v = from; v <= to; v += step) out.push(v);
  }
  return out;
}

/** A stable fingerprint of what the item would do, to tell a re-read from a conflicting redefinition. */
export function definitionHash(item: ItemDefinition): string {
  const canonical = JSON.stringify([
    item.name,
    item.command,
    item.args,
    item.shell,
    item.cwd,
    Object.entries(item.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    item.timeoutMs,
    item.maxAttempts,
    item.runAt,
    // The scheduling fields join only when set, so an item written before them keeps its hash.
    ...(item.schedule || item.overlap || item.dependsOn || item.priority
      ? [item.schedule ?? null, item.overlap ?? null, item.dependsOn ?? [], item.priority ?? 0]
      : []),
    // The problem matcher likewise (after a marker, so it cannot read as the scheduling fields).
    ...(item.problemMatcher !== undefined ? ['problemMatcher', item.problemMatcher] : []),
    ...(item.watch !== undefined ? ['watch', item.watch] : []),
    // A service's settings likewise.
    ...(item.service !== undefined ? ['service', item.service] : []),
  ]);
  // 64 bits tell a re-read from a redefinition of the same id; the hex prefix of what older
  // versions stored (32 or 64 digits), so sameDefinitionHash matches their rows and journals too.
  return createHash('sha256').update(canonical).digest('hex').slice(0, DEFINITION_HASH_DIGITS);
}

/** Digits of definitionHash; schema 5 cut the rows written before it to these (schema.ts). */
export const DEFINITION_HASH_DIGITS = 16;

/** Whether a stored def_hash (this version's, or a longer one written before schema 5) is `hash`. */
export function sameDefinitionHash(stored: string, hash: string): boolean {
  return stored.length >= hash.length && stored.startsWith(hash);
}

/**
 * The JSON an `items` row keeps of a definition: without the fields its columns hold (id, name,
 * max_attempts, run_at), ~60 bytes an item of a database that lives in the engine's memory
 * (docs/PERFORMANCE.md, memory round four). itemFromRow puts them back.
 */
export function storedDefinition(item: ItemDefinition): string {
  const { id: _id, name: _name, maxAttempts: _maxAttempts, runAt: _runAt, ...rest } = item;
  return JSON.stringify(rest);
}

/** The columns of an `items` row that storedDefinition leaves out of its JSON. */
export interface DefinitionColumns {
  id: string;
  name: string;
  max_attempts: number;
  run_at: number | null;
}

/** The whole definition of an `items` row, whichever shape its JSON has. */
export function itemFromRow(definition: string, row: DefinitionColumns): ItemDefinition {
  const stored = JSON.parse(definition) as Partial<ItemDefinition>;
  // Rows and journal records written before schema 5 hold the whole definition.
  if (stored.id !== undefined) return stored as ItemDefinition;
  // The fields in the order a definition has them, then the optional ones (their order kept).
  const { command, args, shell, cwd, env, timeoutMs } = stored as ItemDefinition;
  return { id: row.id, name: row.name, command, args, shell, cwd, env, timeoutMs, maxAttempts: row.max_attempts, runAt: row.run_at, ...stored };
}

const PROBLEM_MATCHER_SHAPE =
  '"problemMatcher" must be a built-in matcher ($tsc, $eslint-stylish, $eslint-compact, $gcc, $go, $python), { "pattern": { "regexp": "…", "file": 1, "line": 2, "message": 3 }, "fileLocation": "relative" }, or an array of them';

const WATCH_SHAPE =
  '"watch" must be { "paths": ["src/**/*.ts", …] (1 to 50 globs relative to the cwd), "debounceMs"?: 0…60000 (default 300), "onChange"?: "restart" | "queue" | "skip" }';
const READY_SHAPE =
  '"ready" must be exactly one of { "port": 1…65535, "host": "127.0.0.1" }, { "http": "http://127.0.0.1:3000/health" }, { "logPattern": "listening on" } or { "command": "pg_isready" }';

const SCHEDULE_SHAPE =
  '"schedule" must be a 5-field cron expression ("minute hour day-of-month month day-of-week", for example "0 2 * * *") or { "cron": "…", "timezone": "Europe/Berlin" }';

/**
 * The top-level field the schema errors are about: the unknown field itself, or the first segment
 * of the path of the first error that has one. None for an error about the entry as a whole (a
 * missing required field).
 */
function schemaErrorField(errors: ErrorObject[]): string | undefined {
  for (const e of errors) {
    if (e.keyword === 'additionalProperties' && !e.instancePath) return (e.params as { additionalProperty: string }).additionalProperty;
    if (e.instancePath) return e.instancePath.slice(1).split('/')[0].replace(/~1/g, '/').replace(/~0/g, '~');
  }
  return undefined;
}

function withField(result: { ok: false; reason: string }, field: string | undefined): ItemResult {
  return field === undefined ? result : { ...result, field };
}

function describeSchemaErrors(errors: ErrorObject[], entry: Partial<ItemInput>): string {
  // Ajv reports every branch of if/then and oneOf; keep the messages a person can act on.
  const messages = new Set<string>();
  for (const e of errors) {
    if (e.instancePath.startsWith('/problemMatcher')) {
      messages.add(problemMatcherProblem(entry.problemMatcher) ?? PROBLEM_MATCHER_SHAPE);
      continue;
    }
    if (e.instancePath === '/priority') {
      messages.add('"priority" must be an integer from -100 to 100 (higher launches first among due items)');
      continue;
    }
    if (e.instancePath === '/dependsOn' && e.keyword === 'maxItems') {
      messages.add(`"dependsOn" lists more than ${MAX_DEPENDENCIES} ids; at most ${MAX_DEPENDENCIES} are allowed (chain through an intermediate item instead)`);
      continue;
    }
    if (e.instancePath.startsWith('/watch')) {
      messages.add(WATCH_SHAPE);
      continue;
    }
    if (e.schemaPath.startsWith('#/allOf/2')) {
      if (e.keyword !== 'if') messages.add('"ready", "readyTimeoutMs" and "restart" apply to services only; add "service": true or remove them');
      continue;
    }
    if (e.instancePath.startsWith('/ready') && e.instancePath !== '/readyTimeoutMs') {
      messages.add(READY_SHAPE);
      continue;
    }
    if (e.instancePath.startsWith('/schedule') && e.keyword !== 'additionalProperties') {
      messages.add(SCHEDULE_SHAPE);
      continue;
    }
    const where = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : 'item';
    switch (e.keyword) {
      case 'if':
        continue;
      case 'not':
        if (e.schemaPath.startsWith('#/allOf/3')) {
          messages.add('"watch" is not allowed with "schedule" or "runAt": a watched item runs when its files change; remove one of them');
          break;
        }
        messages.add(
          e.schemaPath.startsWith('#/allOf/1')
            ? '"schedule" is not allowed with "runAt": a scheduled item runs at each occurrence; remove one of them'
            : '"args" is not allowed with "shell": true; put the arguments in the command line',
        );
        break;
      case 'additionalProperties':
        if (e.instancePath.startsWith('/schedule')) {
          messages.add(SCHEDULE_SHAPE);
          break;
        }
        messages.add(
          `unknown field "${(e.params as { additionalProperty: string }).additionalProperty}" (allowed: id, name, command, args, shell, cwd, env, timeoutMs, maxAttempts, runAt, schedule, overlap, watch, dependsOn, priority, problemMatcher, service, ready, readyTimeoutMs, restart)`,
        );
        break;
      case 'required':
        messages.add(`missing required field "${(e.params as { missingProperty: string }).missingProperty}"`);
        break;
      case 'type':
        messages.add(e.instancePath ? `${where} must be ${(e.params as { type: string }).type}` : 'an item must be a JSON object');
        break;
      default:
        messages.add(`${where} ${e.message ?? 'is invalid'}`);
    }
  }
  return [...messages].join('; ');
}
