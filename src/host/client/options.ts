// The command-line client's arguments: `engine-monitor <command> [options]`
// asks a running engine over its HTTP API. Parsed strictly with node:util.parseArgs; whatever is
// wrong is a ClientUsageError naming the problem (exit 2). Kept apart from `serve`'s flags
// (../args.ts) so the two grow independently.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ITEM_STATES, LOG_ACTIONS, LOG_LEVELS, type ItemState, type LogAction, type LogLevel } from '../../shared/api';
import type { LogFilter, LogOrder } from '../../shared/logFilter';

/** Exit codes of the client, a public interface (README, --help). */
export const EXIT_OK = 0;
/** The engine answered with an error (404, 409, 401, 403…), `health` is unhealthy, or a followed attempt failed. */
export const EXIT_ENGINE_ERROR = 1;
export const EXIT_CLIENT_USAGE = 2;
/** The engine could not be reached: connection refused, unknown host, timeout. */
export const EXIT_UNREACHABLE = 3;

export const CLIENT_USAGE = `Usage: engine-monitor serve --workspace <dir> [options]   run the engine (see engine-monitor serve --help)
       engine-monitor <command> [options]                      ask a running engine

Commands:
  status                         the engine, its scanner, counters and last launch
  stats                          the counters of /stats
  health                         healthy, degraded or unhealthy, and its checks
  logs [filters] [--follow]      log entries, newest first; --follow prints the last --limit
                                 (default 10) oldest first, then new ones until Ctrl+C
  items [--state s] [--q text]   the items, with their state and attempts
  output <id> [--attempt n] [--stream stdout|stderr] [--follow]
                                 an attempt's output (default: the latest attempt), bytes as
                                 the program wrote them; --follow waits for a pending item's
                                 first attempt and streams until the attempt ends, exit 0 if it
                                 succeeded, 1 if it failed
  cancel|retry|hold|release <id> control an item (the engine needs a token for this; VS Code's
                                 integrated terminals have one for their window's engine)
  run-again <id>                 a launched item: pending again, its attempts reset
  remove <id>                    forget an item (a running one is cancelled first); the log
                                 keeps its history
  add [item options] -- COMMAND [ARGS…]
  add [item options] --shell "LINE"
                                 submit an item (POST /items; needs the token) and print its
                                 id; --follow streams each attempt's output until the item is
                                 launched (exit 0) or failed (exit 1), the id then on stderr

Options for every command:
  --url <url>           the engine, e.g. http://127.0.0.1:7411; else $ENGINE_MONITOR_URL; else the
                        url in the nearest .engine/state/endpoint.json from this folder upwards
  --token <t>           the engine's token; else $ENGINE_MONITOR_TOKEN (others see --token in ps)
  --json                the API's JSON as it is (logs --follow: one entry per line; output: one
                        object with the attempt and its output)
  -h, --help            this text

Log filters (logs):
  --action <a,b>        these actions only (comma-separated or repeated)
  --level <level>       this level and above: ${LOG_LEVELS.join(', ')}
  --item <id>           one item's entries
  --since <time>        from this time on (ISO 8601, e.g. 2026-11-23T18:00:00Z)
  --until <time>        before this time (not with --follow)
  --q <words>           every word must start a word of the message
  --limit <n>           at most n entries (1-1000; default 100, with --follow 10)
  --order asc|desc      oldest or newest first (default desc; not with --follow)

Item filters (items):
  --state <s,t>         ${ITEM_STATES.join(', ')}
  --q <words>           every word must start a word of the item's id, name, command or args
  --limit <n>           at most n items (1-1000, default 100)

Item options (add):
  --id <id>             the item's id; default cli-<time>-<random>
  --name <name>         its display name; default the id
  --cwd <dir>           where it runs (relative to this folder; inside the engine's workspace);
                        default the workspace folder
  --env <K=V>           an environment variable (repeated for more)
  --timeout <ms>        stop an attempt after this long
  --max-attempts <n>    attempts before it fails for good
  --run-at <time>       not before this time (ISO 8601)
  --schedule <cron>     a template: an occurrence at each time of the 5-field cron expression
  --timezone <zone>     the schedule's IANA time zone; default the engine's
  --depends-on <id>     launch only once this item has launched (repeated for more)
  --priority <n>        -100 to 100 (default 0): among due items, higher first (--priority=-5)
  --service             a service (it stays up); with --ready-port <port>, --ready-http <url>
                        or --ready-log <regexp> saying when it is ready
  --shell <line>        run LINE with the shell instead of COMMAND [ARGS…]
  --follow              stream the output of each attempt (not with --schedule)

Tables fit the terminal's width; colours only on a terminal and never with NO_COLOR set.
Engine strings (names, messages, errors) are printed with control characters escaped.

Exit codes:
  0  ok
  1  the engine answered with an error (unknown item, conflict, missing token, an item it
     refused…), health is unhealthy, or the attempt followed by output --follow (the item
     followed by add --follow) failed
  2  usage: unknown command or option, missing id, bad value
  3  the engine cannot be reached (connection refused, unknown host, timeout)
`;

/** What a usage error prints under its message: the forms, and where the rest is. */
export const SHORT_USAGE = `Usage: engine-monitor serve --workspace <dir> [options]
       engine-monitor status|stats|health|logs|items|output|cancel|retry|hold|release|run-again|remove [<id>] [options]
       engine-monitor add [item options] -- COMMAND [ARGS…]
Run engine-monitor --help for the options and exit codes.
`;

export const CLIENT_COMMANDS = ['status', 'stats', 'health', 'logs', 'items', 'output', 'cancel', 'retry', 'hold', 'release', 'run-again', 'remove', 'add'] as const;
export type ClientCommand = (typeof CLIENT_COMMANDS)[number];
export type ControlAction = 'cancel' | 'retry' | 'hold' | 'release' | 'run-again' | 'remove';
const CONTROL_ACTIONS: readonly string[] = ['cancel', 'retry', 'hold', 'release', 'run-again', 'remove'];

export class ClientUsageError extends Error {}

interface Common {
  url?: string;
  token?: string;
  json: boolean;
}

export type ClientRequest = Common &
  (
    | { command: 'status' | 'stats' | 'health' }
    | { command: 'logs'; filter: LogFilter; order?: LogOrder; limit?: number; follow: boolean }
    | { command: 'items'; states: ItemState[]; q?: string; limit?: number }
    | { command: 'output'; itemId: string; attempt?: number; stream?: 'stdout' | 'stderr'; follow: boolean }
    | { command: ControlAction; itemId: string }
    | { command: 'add'; item: AddedItem; follow: boolean }
  );

/** An item as `add` submits it: the fields of a queue file's entry its options set. */
export interface AddedItem {
  id: string;
  name?: string;
  command: string;
  args?: string[];
  shell?: true;
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  maxAttempts?: number;
  runAt?: string;
  schedule?: string | { cron: string; timezone: string };
  dependsOn?: string[];
  priority?: number;
  service?: true;
  ready?: { port: number } | { http: string } | { logPattern: string };
}

export type ParsedClientArgs = { help: true } | ({ help: false } & ClientRequest);

const COMMON = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

const LOG_OPTIONS = {
  ...COMMON,
  follow: { type: 'boolean', short: 'f', default: false },
  action: { type: 'string', multiple: true },
  level: { type: 'string' },
  item: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  q: { type: 'string' },
  limit: { type: 'string' },
  order: { type: 'string' },
} as const;

const ITEM_OPTIONS = { ...COMMON, state: { type: 'string', multiple: true }, q: { type: 'string' }, limit: { type: 'string' } } as const;
const ADD_OPTIONS = {
  ...COMMON,
  id: { type: 'string' },
  name: { type: 'string' },
  cwd: { type: 'string' },
  env: { type: 'string', multiple: true },
  timeout: { type: 'string' },
  'max-attempts': { type: 'string' },
  'run-at': { type: 'string' },
  schedule: { type: 'string' },
  timezone: { type: 'string' },
  'depends-on': { type: 'string', multiple: true },
  priority: { type: 'string' },
  service: { type: 'boolean', default: false },
  'ready-port': { type: 'string' },
  'ready-http': { type: 'string' },
  'ready-log': { type: 'string' },
  shell: { type: 'string' },
  follow: { type: 'boolean', short: 'f', default: false },
} as const;
const OUTPUT_OPTIONS = { ...COMMON, attempt: { type: 'string' }, follow: { type: 'boolean', short: 'f', default: false }, stream: { type: 'string' } } as const;

export function isClientCommand(word: string | undefined): word is ClientCommand {
  return (CLIENT_COMMANDS as readonly string[]).includes(word ?? '');
}

/** Parses `<command> [options]`. Throws ClientUsageError naming what is wrong. */
export function parseClientArgs(argv: string[]): ParsedClientArgs {
  const [command, ...rest] = argv;
  if (command === undefined) throw new ClientUsageError(`missing command: use serve or one of ${CLIENT_COMMANDS.join(', ')}`);
  if (command === '-h' || command === '--help' || command === 'help') return { help: true };
  if (!isClientCommand(command)) {
    throw new ClientUsageError(`unknown command "${command}": use serve or one of ${CLIENT_COMMANDS.join(', ')}`);
  }
  switch (command) {
    case 'status':
    case 'stats':
    case 'health': {
      const { values, positionals } = strictParse(command, () => parseArgs({ args: rest, options: COMMON, strict: true, allowPositionals: true }));
      if (values.help) return { help: true };
      checkIds(command, positionals, 0);
      return { help: false, command, ...common(values) };
    }
    case 'logs': {
      const { values, positionals } = strictParse(command, () => parseArgs({ args: rest, options: LOG_OPTIONS, strict: true, allowPositionals: true }));
      if (values.help) return { help: true };
      checkIds(command, positionals, 0);
      const filter: LogFilter = {};
      const actions = splitList(values.action);
      for (const a of actions) {
        if (!(LOG_ACTIONS as readonly string[]).includes(a)) throw new ClientUsageError(`--action: unknown action "${a}"; actions: ${LOG_ACTIONS.join(', ')}`);
      }
      if (actions.length) filter.actions = actions as LogAction[];
      if (values.level !== undefined) filter.level = oneOf('--level', values.level, LOG_LEVELS) as LogLevel;
      if (values.item !== undefined) filter.itemId = values.item;
      if (values.since !== undefined) filter.since = isoTime('--since', values.since);
      if (values.until !== undefined) filter.until = isoTime('--until', values.until);
      if (values.q !== undefined) filter.q = values.q;
      const order = values.order === undefined ? undefined : (oneOf('--order', values.order, ['asc', 'desc']) as LogOrder);
      if (values.follow && order) throw new ClientUsageError('--order cannot be combined with --follow: following prints oldest first');
      if (values.follow && filter.until) throw new ClientUsageError('--until cannot be combined with --follow: new entries are never before it');
      return {
        help: false,
        command,
        ...common(values),
        filter,
        order,
        limit: values.limit === undefined ? undefined : wholeNumber('--limit', values.limit, 1, 1000),
        follow: values.follow,
      };
    }
    case 'items': {
      const { values, positionals } = strictParse(command, () => parseArgs({ args: rest, options: ITEM_OPTIONS, strict: true, allowPositionals: true }));
      if (values.help) return { help: true };
      checkIds(command, positionals, 0);
      const states = splitList(values.state);
      for (const s of states) oneOf('--state', s, ITEM_STATES);
      return {
        help: false,
        command,
        ...common(values),
        states: states as ItemState[],
        q: values.q,
        limit: values.limit === undefined ? undefined : wholeNumber('--limit', values.limit, 1, 1000),
      };
    }
    case 'output': {
      const { values, positionals } = strictParse(command, () => parseArgs({ args: rest, options: OUTPUT_OPTIONS, strict: true, allowPositionals: true }));
      if (values.help) return { help: true };
      checkIds(command, positionals, 1);
      return {
        help: false,
        command,
        ...common(values),
        itemId: positionals[0],
        attempt: values.attempt === undefined ? undefined : wholeNumber('--attempt', values.attempt, 1, Number.MAX_SAFE_INTEGER),
        stream: values.stream === undefined ? undefined : (oneOf('--stream', values.stream, ['stdout', 'stderr']) as 'stdout' | 'stderr'),
        follow: values.follow,
      };
    }
    case 'add': {
      const { values, positionals, tokens } = strictParse(command, () => parseAddOptions(rest));
      if (values.help) return { help: true };
      return { help: false, command, ...common(values), item: addedItem(values, positionals, tokens), follow: values.follow };
    }
    default: {
      if (!CONTROL_ACTIONS.includes(command)) throw new Error(`unhandled command ${command}`);
      const { values, positionals } = strictParse(command, () => parseArgs({ args: rest, options: COMMON, strict: true, allowPositionals: true }));
      if (values.help) return { help: true };
      checkIds(command, positionals, 1);
      return { help: false, command, ...common(values), itemId: positionals[0] };
    }
  }
}

type AddValues = ReturnType<typeof parseAddOptions>['values'];
const parseAddOptions = (args: string[]) => parseArgs({ args, options: ADD_OPTIONS, strict: true, allowPositionals: true, tokens: true });

/** The item `add`'s options describe; what the engine judges (a cron expression, a zone…) is left to it. */
function addedItem(values: AddValues, positionals: string[], tokens: ReturnType<typeof parseAddOptions>['tokens']): AddedItem {
  const terminator = tokens.findIndex((t) => t.kind === 'option-terminator');
  const before = tokens.filter((t, i) => t.kind === 'positional' && (terminator < 0 || i < terminator));
  if (before.length > 0) throw new ClientUsageError(`add: put the command after "--" (engine-monitor add [options] -- ${before.map((t) => (t.kind === 'positional' ? t.value : '')).join(' ')}), so that its own options are not read as add's`);
  const argv = terminator < 0 ? [] : positionals;
  if (values.shell !== undefined && argv.length > 0) throw new ClientUsageError('add: give either --shell "LINE" or -- COMMAND [ARGS…], not both');
  if (values.shell === undefined && argv.length === 0) throw new ClientUsageError('add needs a command: engine-monitor add [options] -- COMMAND [ARGS…], or --shell "LINE"');
  if (values.shell === '' || argv[0] === '') throw new ClientUsageError('add: the command is empty');
  const item: AddedItem = values.shell !== undefined ? { id: '', command: values.shell, shell: true } : { id: '', command: argv[0], args: argv.slice(1) };
  item.id = values.id ?? `cli-${Date.now()}-${randomBytes(4).toString('hex')}`;
  if (values.name !== undefined) item.name = values.name;
  if (values.cwd !== undefined) item.cwd = path.resolve(values.cwd);
  if (values.env) {
    item.env = {};
    for (const pair of values.env) {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new ClientUsageError(`--env needs NAME=VALUE, got "${pair}"`);
      item.env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  if (values.timeout !== undefined) item.timeoutMs = wholeNumber('--timeout', values.timeout, 1, 86_400_000);
  if (values['max-attempts'] !== undefined) item.maxAttempts = wholeNumber('--max-attempts', values['max-attempts'], 1, 100);
  if (values['run-at'] !== undefined && values.schedule !== undefined) throw new ClientUsageError('add: give --run-at or --schedule, not both: a scheduled item runs at each occurrence');
  if (values['run-at'] !== undefined) item.runAt = isoTime('--run-at', values['run-at']);
  if (values.timezone !== undefined && values.schedule === undefined) throw new ClientUsageError('--timezone is the zone of a --schedule; give --schedule too');
  if (values.schedule !== undefined) item.schedule = values.timezone === undefined ? values.schedule : { cron: values.schedule, timezone: values.timezone };
  if (values.follow && values.schedule !== undefined) throw new ClientUsageError('--follow cannot follow a --schedule: the template launches nothing itself; follow an occurrence with output --follow');
  if (values['depends-on']) item.dependsOn = values['depends-on'];
  if (values.priority !== undefined) {
    const n = Number(values.priority);
    if (!/^-?\d+$/.test(values.priority) || n < -100 || n > 100) throw new ClientUsageError(`--priority must be a whole number from -100 to 100, got "${values.priority}"`);
    item.priority = n;
  }
  const ready = (['ready-port', 'ready-http', 'ready-log'] as const).filter((k) => values[k] !== undefined);
  if (ready.length > 1) throw new ClientUsageError(`add: give one of --ready-port, --ready-http, --ready-log, not ${ready.map((k) => `--${k}`).join(' and ')}`);
  if (ready.length > 0 && !values.service) throw new ClientUsageError(`--${ready[0]} says when a service is ready; give --service too`);
  if (values.service) item.service = true;
  if (values['ready-port'] !== undefined) item.ready = { port: wholeNumber('--ready-port', values['ready-port'], 1, 65535) };
  if (values['ready-http'] !== undefined) item.ready = { http: values['ready-http'] };
  if (values['ready-log'] !== undefined) item.ready = { logPattern: values['ready-log'] };
  return item;
}

/** parseArgs, strict, its errors as usage errors naming the command. */
function strictParse<T>(command: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new ClientUsageError(`${command}: ${(err as Error).message}`);
  }
}

/** The positionals a command takes: none, or exactly one item id. */
function checkIds(command: string, positionals: string[], ids: 0 | 1): void {
  if (ids === 0 && positionals.length > 0) throw new ClientUsageError(`${command} takes no arguments, got "${positionals[0]}"`);
  if (ids === 1 && positionals.length === 0) throw new ClientUsageError(`${command} needs an item id: engine-monitor ${command} <id>`);
  if (ids === 1 && positionals.length > 1) throw new ClientUsageError(`${command} takes one item id, got ${positionals.length}: ${positionals.join(' ')}`);
  if (ids === 1 && positionals[0] === '') throw new ClientUsageError(`${command} needs an item id, got an empty one`);
}

function common(values: { url?: string; token?: string; json?: boolean }): Common {
  return { url: values.url, token: values.token, json: values.json === true };
}

function splitList(values: string[] | undefined): string[] {
  return (values ?? []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
}

function oneOf(flag: string, value: string, allowed: readonly string[]): string {
  if (!allowed.includes(value)) throw new ClientUsageError(`${flag}: "${value}" is not one of ${allowed.join(', ')}`);
  return value;
}

function wholeNumber(flag: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new ClientUsageError(`${flag} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return n;
}

/** A date-time as the API compares them (toISOString), from any ISO 8601 form Date reads. */
function isoTime(flag: string, raw: string): string {
  // A date alone or with a zone: Date reads both; a local time without a zone is read as local.
  const t = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/i.test(raw.trim()) ? new Date(raw.trim()) : new Date(NaN);
  if (Number.isNaN(t.getTime())) throw new ClientUsageError(`${flag} needs an ISO 8601 date-time such as 2026-11-23T18:00:00Z, got "${raw}"`);
  return t.toISOString();
}
