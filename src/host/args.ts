// Command-line arguments of `engine-monitor serve`. Kept apart from cli.ts so tests can check the
// parsing without starting an engine. Flags that are also extension settings take their defaults
// and bounds from the settings table, so the CLI and the extension accept the same values.
import { closeSync, constants, existsSync, fstatSync, openSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { version } from '../../package.json';
import { isLoopbackHost } from '../server/protection';
import { SETTINGS, type FlagSettingKey, type IntegerSettingKey } from '../shared/settings';
import { DEFAULT_LAUNCH_HELPERS, MAX_LAUNCH_HELPERS } from '../core/launching';
import type { HostOptions } from './engineHost';

/** A setting's default, as the text a flag would carry. */
const d = (key: FlagSettingKey): string => String(SETTINGS[key].default);
const timeout = SETTINGS['engine.timeoutMs'];
const maxAttempts = SETTINGS['engine.maxAttempts'];

export const USAGE = `Usage: engine-monitor serve --workspace <dir> [options]

Runs the launch engine on a workspace and serves its HTTP API (/stats, /health, /status, /logs).

Without --token-file or --token, the token is read from ENGINE_MONITOR_TOKEN when that is set.

Options:
  --workspace <dir>        workspace folder (repeat for several folders)          required
  --storage <dir>          where engine.sqlite and its journal live     default <workspace>/.engine/state
  --store <url>            a PostgreSQL database shared by a fleet of engines, e.g.
                           postgres://user@db.example:5432/engines (docs/FLEET.md); the password
                           from PGPASSWORD or ~/.pgpass rather than the URL    default: sql.js in --storage
  --lease-ms <ms>          with --store: how long this engine's attempts stay its own without a
                           heartbeat; after it, another engine records them interrupted   default 30000
  --host <address>         address to bind                               default ${d('server.host')}
  --port <n>               port, 0 = any free port                       default ${d('server.port')}
  --token-file <path>      require "Authorization: Bearer <token>" on every request, the token
                           being the file's first line; the file must be private (chmod 600)
  --token <t>              the same with the token itself; other users see it in ps: prefer
                           --token-file or the ENGINE_MONITOR_TOKEN environment variable
  --allowed-host <name>    another Host name clients may use (repeatable; needs --token)
  --poll-interval <ms>     how often sources are scanned                 default ${d('engine.pollIntervalMs')}
  --concurrency <n>        attempts running at once                      default ${d('engine.concurrency')}
  --max-attempts <n>       default attempts per item (${maxAttempts.minimum}-${maxAttempts.maximum})             default ${d('engine.maxAttempts')}
  --timeout <ms>           default attempt timeout (${timeout.minimum}-${timeout.maximum})          default ${d('engine.timeoutMs')}
  --queue-dir <path>       queue folder, relative to each workspace      default ${d('queue.directory')}
  --log-max-entries <n>    log retention by count                        default ${d('logs.maxEntries')}
  --log-max-age-days <n>   log retention by age                          default ${d('logs.maxAgeDays')}
  --output-max-bytes <n>   output kept per attempt (${SETTINGS['output.maxBytesPerAttempt'].minimum}-${SETTINGS['output.maxBytesPerAttempt'].maximum})   default ${d('output.maxBytesPerAttempt')}
  --output-max-total-mb <n>  output kept in all, MiB; the oldest goes first   default ${d('output.maxTotalMB')}
  --grace <ms>             on SIGINT/SIGTERM, how long running attempts may finish   default 10000
  --snapshot-interval <ms> how often, at most, the journal is folded into a new snapshot  default 30000
  --snapshot-min-journal <bytes>  the journal a new snapshot waits for (and 1/32 of the
                           snapshot's size); 0 = every interval with a change    default 1048576
  --launch-helpers <n>     launch helper processes the spawns are spread over (1-${MAX_LAUNCH_HELPERS})
                                                                         default ${DEFAULT_LAUNCH_HELPERS}
  --on-item-failed <cmd>   run this command line (/bin/sh -c, in the first workspace folder) when an
                           item fails for good, the event as JSON on its stdin (see README "Hooks")
  --on-health-change <cmd> the same when /health changes status or a check
  --notify-url <url>       POST every hook event as JSON to this http(s) URL (repeatable)
  --hook-timeout <ms>      a hook command's time before SIGTERM, then SIGKILL   default ${d('hooks.timeoutMs')}
  --keep-alive <s>         stop by itself once no VS Code window has been attached for this many
                           seconds and no attempt is running (the extension passes it)  default: never
  --stopped                serve, but do not launch until started
  --restricted             untrusted workspace: launch nothing until trust is granted
  --quiet                  do not print engine log entries
  -h, --help               show this help
`;

export class UsageError extends Error {}

export interface CliOptions extends HostOptions {
  graceMs: number;
  /** --keep-alive in seconds; undefined: never stop by itself (a headless engine). */
  keepAliveSeconds?: number;
  quiet: boolean;
  /** Said on stderr at start (a token given on the command line). */
  warnings: string[];
  /** The token came from ENGINE_MONITOR_TOKEN (which the launched items must then not inherit). */
  tokenFromEnv: boolean;
}

/** The environment variable the token is read from when no flag gives it. */
export const TOKEN_ENV = 'ENGINE_MONITOR_TOKEN';

/** `serve`'s flags for node:util.parseArgs; numbers are checked against their bounds after parsing. */
const SERVE_OPTIONS = {
  workspace: { type: 'string', multiple: true },
  storage: { type: 'string' },
  host: { type: 'string', default: d('server.host') },
  port: { type: 'string', default: d('server.port') },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  'allowed-host': { type: 'string', multiple: true },
  'poll-interval': { type: 'string', default: d('engine.pollIntervalMs') },
  concurrency: { type: 'string', default: d('engine.concurrency') },
  store: { type: 'string' },
  'lease-ms': { type: 'string', default: '30000' },
  'max-attempts': { type: 'string', default: d('engine.maxAttempts') },
  timeout: { type: 'string', default: d('engine.timeoutMs') },
  'queue-dir': { type: 'string', default: d('queue.directory') },
  'log-max-entries': { type: 'string', default: d('logs.maxEntries') },
  'log-max-age-days': { type: 'string', default: d('logs.maxAgeDays') },
  'output-max-bytes': { type: 'string', default: d('output.maxBytesPerAttempt') },
  'output-max-total-mb': { type: 'string', default: d('output.maxTotalMB') },
  grace: { type: 'string', default: '10000' },
  'snapshot-interval': { type: 'string', default: '30000' },
  'snapshot-min-journal': { type: 'string', default: '1048576' },
  'launch-helpers': { type: 'string' },
  'on-item-failed': { type: 'string' },
  'on-health-change': { type: 'string' },
  'notify-url': { type: 'string', multiple: true },
  'hook-timeout': { type: 'string', default: d('hooks.timeoutMs') },
  'keep-alive': { type: 'string' },
  stopped: { type: 'boolean', default: false },
  restricted: { type: 'boolean', default: false },
  quiet: { type: 'boolean', default: false },
} as const satisfies ParseArgsConfig['options'];

export function parseServeArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): CliOptions {
  const [command, ...rest] = argv;
  if (command !== 'serve') {
    throw new UsageError(command === undefined ? 'missing command: use "serve"' : `unknown command "${command}": use "serve"`);
  }
  let values;
  try {
    ({ values } = parseArgs({
      args: joinNegativeNumbers(rest),
      strict: true,
      allowPositionals: false,
      options: SERVE_OPTIONS,
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const workspaces = (values.workspace ?? []).map((w) => path.resolve(w));
  if (workspaces.length === 0) throw new UsageError('--workspace <dir> is required');
  for (const w of workspaces) {
    if (!existsSync(w) || !statSync(w).isDirectory()) throw new UsageError(`--workspace ${w} is not a folder`);
  }
  const int = (name: string, raw: string, min: number, max: number): number => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return n;
  };
  const setting = (key: IntegerSettingKey): number => {
    const { flag, minimum, maximum } = SETTINGS[key];
    return int(flag, values[flag], minimum, maximum);
  };
  const queueDir = values['queue-dir'];
  if (path.isAbsolute(queueDir)) throw new UsageError(`--queue-dir must be relative to the workspace folder, got "${queueDir}"`);
  const { token, tokenFromEnv, warnings } = readToken(values.token, values['token-file'], env);
  if (!isLoopbackHost(values.host) && token === undefined) {
    throw new UsageError(
      `--host ${values.host} is not a loopback address: anyone who can reach it could read the engine. Add --token-file <path> (or ${TOKEN_ENV}), or bind 127.0.0.1`,
    );
  }
  if ((values['allowed-host'] ?? []).length > 0 && token === undefined) {
    throw new UsageError(`--allowed-host lets other machines in: it needs --token-file <path> (or ${TOKEN_ENV}) as well`);
  }
  if (values.stopped && values.restricted) throw new UsageError('--stopped and --restricted cannot be combined');
  const hookCommand = (flag: 'on-item-failed' | 'on-health-change'): string | undefined => {
    const command = values[flag];
    if (command !== undefined && command.trim() === '') throw new UsageError(`--${flag} must be a command line, got an empty one; leave the flag out for no hook`);
    return command;
  };
  const storeUrl = values.store === undefined ? undefined : checkStoreUrl(values.store);
  return {
    storeUrl,
    leaseMs: int('lease-ms', values['lease-ms'], 100, 86_400_000),
    workspaceFolders: workspaces,
    storageDir: path.resolve(values.storage ?? path.join(workspaces[0], '.engine', 'state')),
    host: values.host,
    port: setting('server.port'),
    token,
    tokenFromEnv: tokenFromEnv === true && token !== undefined,
    allowedHosts: values['allowed-host'],
    pollIntervalMs: setting('engine.pollIntervalMs'),
    concurrency: setting('engine.concurrency'),
    maxAttempts: setting('engine.maxAttempts'),
    timeoutMs: setting('engine.timeoutMs'),
    queueDirectory: queueDir,
    logMaxEntries: setting('logs.maxEntries'),
    logMaxAgeDays: setting('logs.maxAgeDays'),
    outputMaxBytes: setting('output.maxBytesPerAttempt'),
    outputMaxTotalMB: setting('output.maxTotalMB'),
    graceMs: int('grace', values.grace, 0, 86_400_000),
    keepAliveSeconds: values['keep-alive'] === undefined ? undefined : int('keep-alive', values['keep-alive'], 0, 86_400),
    snapshotIntervalMs: int('snapshot-interval', values['snapshot-interval'], 100, 86_400_000),
    snapshotMinJournalBytes: int('snapshot-min-journal', values['snapshot-min-journal'], 0, 2 ** 40),
    launchHelpers: values['launch-helpers'] === undefined ? undefined : int('launch-helpers', values['launch-helpers'], 1, MAX_LAUNCH_HELPERS),
    hooks: {
      onItemFailed: hookCommand('on-item-failed'),
      onHealthChange: hookCommand('on-health-change'),
      notifyUrls: (values['notify-url'] ?? []).map(checkNotifyUrl),
      timeoutMs: setting('hooks.timeoutMs'),
    },
    initialMode: values.restricted ? 'restricted' : values.stopped ? 'stopped' : 'running',
    quiet: values.quiet,
    warnings,
    version,
  };
}

/** A --store: a postgres:// or postgresql:// URL, or a usage error that says so (without the password). */
function checkStoreUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError('--store must be a PostgreSQL URL such as postgres://user@host:5432/db');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new UsageError(`--store must be a postgres:// URL, got scheme ${url.protocol} (the sql.js store needs no --store: it lives in --storage)`);
  }
  return raw;
}

/** A --notify-url: an absolute http(s) URL, or a usage error saying what is wrong. */
function checkNotifyUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--notify-url must be an absolute http:// or https:// URL, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`--notify-url must be an http:// or https:// URL, got ${JSON.stringify(raw)} (scheme ${url.protocol})`);
  }
  if (url.username || url.password) {
    // Not repeated: the URL holds a secret. fetch() refuses such URLs, so every POST would fail
    // and each failure would be logged.
    throw new UsageError(`--notify-url must not hold a user name or password (the one for ${url.origin}); fetch() refuses such URLs. Put the secret in the URL's path or query instead, as chat webhooks do.`);
  }
  return raw;
}

/**
 * The API token, from --token-file, --token or the environment, in that order of preference. A
 * command line is readable by every user of the machine (ps, /proc/<pid>/cmdline) and so is a
 * token file others may read: the first gets a warning, the second is refused.
 */
function readToken(flag: string | undefined, file: string | undefined, env: NodeJS.ProcessEnv): { token?: string; tokenFromEnv?: boolean; warnings: string[] } {
  if (flag !== undefined && file !== undefined) throw new UsageError('give the token once: --token-file <path> or --token <t>, not both');
  if (file !== undefined) return { token: readTokenFile(path.resolve(file)), warnings: [] };
  if (flag !== undefined) {
    if (flag.length === 0) throw new UsageError('--token must not be empty');
    return {
      token: flag,
      warnings: [`--token is visible to every user of this machine (ps, /proc/<pid>/cmdline); use --token-file <path> or ${TOKEN_ENV} instead`],
    };
  }
  const fromEnv = env[TOKEN_ENV];
  return { token: fromEnv === undefined || fromEnv === '' ? undefined : fromEnv, tokenFromEnv: true, warnings: [] };
}

function readTokenFile(file: string): string {
  let text: string;
  let mode: number;
  try {
    const fd = openSync(file, 'r');
    try {
      mode = fstatSync(fd).mode;
      // A regular file, or a pipe (`--token-file <(pass show engine)`).
      const type = mode & constants.S_IFMT;
      if (type !== constants.S_IFREG && type !== constants.S_IFIFO) throw new UsageError(`--token-file ${file} is not a file`);
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`--token-file ${file} cannot be read: ${(err as Error).message}`);
  }
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
    throw new UsageError(
      `--token-file ${file} is open to other users (mode ${(mode & 0o777).toString(8).padStart(3, '0')}): make it private with "chmod 600 ${file}"`,
    );
  }
  const token = text.split(/\r?\n/, 1)[0];
  if (token.length === 0) throw new UsageError(`--token-file ${file} is empty: put the token on its first line`);
  return token;
}

/**
 * `--port -1` reads to parseArgs as an option followed by another option ("argument is
 * ambiguous"); joined as `--port=-1` it reaches the range check, which says what is allowed.
 */
function joinNegativeNumbers(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const next = args[i + 1];
    if (/^--[a-z-]+$/.test(args[i]) && next !== undefined && /^-\d/.test(next)) {
      out.push(`${args[i]}=${next}`);
      i++;
    } else out.push(args[i]);
  }
  return out;
}
