// Command-line arguments of `engine-monitor serve` (contract section 7). Kept apart from cli.ts
// so tests can check the parsing without starting an engine.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { version } from '../../package.json';
import { isLoopbackHost } from '../server/protection';
import type { HostOptions } from './engineHost';

export const USAGE = `Usage: engine-monitor serve --workspace <dir> [options]

Runs the launch engine on a workspace and serves its HTTP API (/stats, /health, /status, /logs).

Options:
  --workspace <dir>        workspace folder (repeat for several folders)          required
  --storage <dir>          where engine.sqlite and its journal live     default <workspace>/.engine/state
  --host <address>         address to bind                               default 127.0.0.1
  --port <n>               port, 0 = any free port                       default 7411
  --token <t>              require "Authorization: Bearer <t>" on every request
  --allowed-host <name>    another Host name clients may use (repeatable; needs --token)
  --poll-interval <ms>     how often sources are scanned                 default 2000
  --concurrency <n>        attempts running at once                      default 4
  --max-attempts <n>       default attempts per item (1-100)             default 3
  --timeout <ms>           default attempt timeout (1-86400000)          default 600000
  --queue-dir <path>       queue folder, relative to each workspace      default .engine/queue
  --log-max-entries <n>    log retention by count                        default 100000
  --log-max-age-days <n>   log retention by age                          default 14
  --grace <ms>             on SIGINT/SIGTERM, how long running attempts may finish   default 10000
  --snapshot-interval <ms> how often, at most, the journal is folded into a new snapshot  default 30000
  --snapshot-min-journal <bytes>  the journal a new snapshot waits for (and 1/32 of the
                           snapshot's size); 0 = every interval with a change    default 1048576
  --stopped                serve, but do not launch until started
  --restricted             untrusted workspace: launch nothing until trust is granted
  --quiet                  do not print engine log entries
  -h, --help               show this help
`;

export class UsageError extends Error {}

export interface CliOptions extends HostOptions {
  graceMs: number;
  quiet: boolean;
}

export function parseServeArgs(argv: string[]): CliOptions {
  const [command, ...rest] = argv;
  if (command !== 'serve') {
    throw new UsageError(command === undefined ? 'missing command: use "serve"' : `unknown command "${command}": use "serve"`);
  }
  let values;
  try {
    ({ values } = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options: {
        workspace: { type: 'string', multiple: true },
        storage: { type: 'string' },
        host: { type: 'string', default: '127.0.0.1' },
        port: { type: 'string', default: '7411' },
        token: { type: 'string' },
        'allowed-host': { type: 'string', multiple: true },
        'poll-interval': { type: 'string', default: '2000' },
        concurrency: { type: 'string', default: '4' },
        'max-attempts': { type: 'string', default: '3' },
        timeout: { type: 'string', default: '600000' },
        'queue-dir': { type: 'string', default: '.engine/queue' },
        'log-max-entries': { type: 'string', default: '100000' },
        'log-max-age-days': { type: 'string', default: '14' },
        grace: { type: 'string', default: '10000' },
        'snapshot-interval': { type: 'string', default: '30000' },
        'snapshot-min-journal': { type: 'string', default: '1048576' },
        stopped: { type: 'boolean', default: false },
        restricted: { type: 'boolean', default: false },
        quiet: { type: 'boolean', default: false },
      },
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
  const queueDir = values['queue-dir'];
  if (path.isAbsolute(queueDir)) throw new UsageError(`--queue-dir must be relative to the workspace folder, got "${queueDir}"`);
  if (values.token !== undefined && values.token.length === 0) throw new UsageError('--token must not be empty');
  if (!isLoopbackHost(values.host) && values.token === undefined) {
    throw new UsageError(
      `--host ${values.host} is not a loopback address: anyone who can reach it could read the engine. Add --token <secret>, or bind 127.0.0.1`,
    );
  }
  if ((values['allowed-host'] ?? []).length > 0 && values.token === undefined) {
    throw new UsageError('--allowed-host lets other machines in: it needs --token <secret> as well');
  }
  if (values.stopped && values.restricted) throw new UsageError('--stopped and --restricted cannot be combined');
  return {
    workspaceFolders: workspaces,
    storageDir: path.resolve(values.storage ?? path.join(workspaces[0], '.engine', 'state')),
    host: values.host,
    port: int('port', values.port, 0, 65535),
    token: values.token,
    allowedHosts: values['allowed-host'],
    pollIntervalMs: int('poll-interval', values['poll-interval'], 10, 86_400_000),
    concurrency: int('concurrency', values.concurrency, 1, 256),
    maxAttempts: int('max-attempts', values['max-attempts'], 1, 100),
    timeoutMs: int('timeout', values.timeout, 1, 86_400_000),
    queueDirectory: queueDir,
    logMaxEntries: int('log-max-entries', values['log-max-entries'], 1, 100_000_000),
    logMaxAgeDays: int('log-max-age-days', values['log-max-age-days'], 1, 36_500),
    graceMs: int('grace', values.grace, 0, 86_400_000),
    snapshotIntervalMs: int('snapshot-interval', values['snapshot-interval'], 100, 86_400_000),
    snapshotMinJournalBytes: int('snapshot-min-journal', values['snapshot-min-journal'], 0, 2 ** 40),
    initialMode: values.restricted ? 'restricted' : values.stopped ? 'stopped' : 'running',
    quiet: values.quiet,
    version,
  };
}
