// How the extension starts the engine host: its command line, its environment, and the detached
// launch itself. Apart from the VS Code API so plain Node tests can check (and run) it. The API
// token travels in the environment, never on the command line, which every user of the machine can
// read (ps, /proc/<pid>/cmdline); a process's environment is readable by its own user only.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, openSync, renameSync, statSync } from 'node:fs';
import path from 'node:path';
import { ENGINE_HOST_NODE_OPTIONS, LAUNCH_KEY_ENV } from '../shared/hostProtocol';
import { SETTINGS, type FlagSettingKey } from '../shared/settings';
import { parseStoreUrl } from '../shared/storeUrl';
import type { EngineMonitorConfig } from './config';

/** The variable the engine host reads its token from (`engine-monitor serve` without --token-file). */
export const TOKEN_ENV = 'ENGINE_MONITOR_TOKEN';

/**
 * Running attempts get this long to finish when the host is asked to exit (its --grace); then it
 * ends them. Kept short so the whole shutdown fits in the few seconds VS Code gives deactivate().
 */
export const HOST_GRACE_MS = 2_000;

export interface HostLaunchSpec {
  cliPath: string;
  storageDir: string;
  workspaces: string[];
  /** Flags from settings (hostArgsFor). */
  args: string[];
  /** The API token (hostTokenFor); empty or undefined: none. */
  token?: string;
  /** The PostgreSQL store's password from SecretStorage: the host's PGPASSWORD, never a flag (ps shows flags). */
  storePassword?: string;
  restricted: boolean;
  stopped: boolean;
  /** engineMonitor.engine.keepAliveSeconds: the host stops this long after the last window left, when idle. */
  keepAliveSeconds?: number;
  /** A digest of the settings it is started with, which it tells every window that attaches. */
  launchKey?: string;
}

/** The host's stdout and stderr, in the storage folder: the window that started it is not its parent for long. */
export const HOST_LOG_FILE = 'engine.log';
/** Past this size, a new start moves the log to engine.log.1 (one old log is kept). */
const HOST_LOG_MAX_BYTES = 1024 * 1024;

export interface DetachedLaunch {
  child: ChildProcess;
  logFile: string;
  /** Where this start's lines begin in the log. */
  logOffset: number;
}

/**
 * Starts the engine host in a session (process group) of its own, its output in the storage
 * folder's engine.log, unreferenced: nothing ties it to the launching process, which may reload,
 * close or be killed while the engine's attempts run on. On Windows `windowsHide` keeps a console
 * window from opening. Windows attach to it over its control connection (controlServer.ts).
 */
export function launchDetachedHost(spec: HostLaunchSpec): DetachedLaunch {
  const logFile = path.join(spec.storageDir, HOST_LOG_FILE);
  let size = 0;
  try {
    size = statSync(logFile).size;
    if (size > HOST_LOG_MAX_BYTES) {
      renameSync(logFile, `${logFile}.1`);
      size = 0;
    }
  } catch {
    // no log yet
  }
  const fd = openSync(logFile, 'a', 0o600);
  try {
    const child = spawn(process.execPath, [...ENGINE_HOST_NODE_OPTIONS, spec.cliPath, ...hostCommandLine(spec)], {
      cwd: spec.storageDir,
      env: hostEnvironment(spec),
      stdio: ['ignore', fd, fd],
      detached: true,
      windowsHide: true,
    });
    child.unref();
    return { child, logFile, logOffset: size };
  } finally {
    // The child has its own copy of the descriptor.
    closeSync(fd);
  }
}

/**
 * The host's command-line flags for a configuration (everything but workspaces, storage, mode and
 * the token). The hooks run commands and send data out: a workspace that is not trusted could set
 * them in its .vscode/settings.json, so they are passed only when `trusted` (package.json also
 * lists them in restrictedConfigurations). Trust granted later changes these flags, which restarts
 * the host with them (EngineController.onTrustGranted).
 */
export function hostArgsFor(config: EngineMonitorConfig, trusted: boolean): string[] {
  const flag = (key: FlagSettingKey, value: string | number) => [`--${SETTINGS[key].flag}`, String(value)];
  // An empty hook setting means no hook; the CLI refuses an empty command or URL.
  const hook = (key: 'hooks.onItemFailed' | 'hooks.onHealthChange' | 'hooks.notifyUrl', value: string) => (trusted && value !== '' ? flag(key, value) : []);
  // A settings file edited by hand must not keep the engine from starting: a URL the CLI would
  // refuse is left out (the controller says so in the output channel).
  const notifyUrl = isNotifyUrl(config.hooks.notifyUrl) ? config.hooks.notifyUrl : '';
  // A shared database decides which commands run (every engine of a fleet runs its items): a
  // workspace that is not trusted keeps the engine's own embedded database. A URL the CLI would
  // refuse (or one holding a password) is left out; the controller says why.
  const store = trusted ? (parseStoreUrl(config.store.url).url ?? '') : '';
  return [
    ...flag('server.host', config.server.host),
    ...flag('server.port', config.server.port),
    ...flag('engine.pollIntervalMs', config.engine.pollIntervalMs),
    ...flag('engine.concurrency', config.engine.concurrency),
    ...flag('engine.maxAttempts', config.engine.maxAttempts),
    ...flag('engine.timeoutMs', config.engine.timeoutMs),
    ...flag('queue.directory', config.queue.directory),
    ...flag('logs.maxEntries', config.logs.maxEntries),
    ...flag('logs.maxAgeDays', config.logs.maxAgeDays),
    ...flag('output.maxBytesPerAttempt', config.output.maxBytesPerAttempt),
    ...flag('output.maxTotalMB', config.output.maxTotalMB),
    ...hook('hooks.onItemFailed', config.hooks.onItemFailed),
    ...hook('hooks.onHealthChange', config.hooks.onHealthChange),
    ...hook('hooks.notifyUrl', notifyUrl),
    ...flag('hooks.timeoutMs', config.hooks.timeoutMs),
    ...(store ? flag('store.url', store) : []),
  ];
}

/** An http(s) URL `engine-monitor serve --notify-url` accepts. */
export function isNotifyUrl(value: string): boolean {
  try {
    const { protocol, username, password } = new URL(value);
    // The CLI refuses credentials in the URL (fetch() cannot send them): leave such a URL out.
    return (protocol === 'http:' || protocol === 'https:') && !username && !password;
  } catch {
    return false;
  }
}

/** The full command line after the CLI's path. */
export function hostCommandLine(spec: HostLaunchSpec): string[] {
  const args = ['serve'];
  for (const w of spec.workspaces) args.push('--workspace', w);
  // --quiet: the host would print every log entry on stdout, which the output channel already
  // mirrors from /events (with levels).
  args.push('--storage', spec.storageDir, '--grace', String(HOST_GRACE_MS), '--quiet', ...spec.args);
  if (spec.keepAliveSeconds !== undefined) args.push('--keep-alive', String(spec.keepAliveSeconds));
  if (spec.restricted) args.push('--restricted');
  if (spec.stopped) args.push('--stopped');
  return args;
}

/**
 * The host's environment: this process's, as a plain Node (not Electron), with the token set from
 * the settings, or removed when none is set, so one inherited from the shell VS Code was started
 * from cannot switch on a token nobody configured.
 */
export function hostEnvironment(spec: HostLaunchSpec, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  // In Electron builds of VS Code, process.execPath is Electron; ELECTRON_RUN_AS_NODE makes it a plain Node.
  const env: NodeJS.ProcessEnv = { ...base, ELECTRON_RUN_AS_NODE: '1' };
  delete env[TOKEN_ENV];
  if (spec.token) env[TOKEN_ENV] = spec.token;
  // node-postgres reads PGPASSWORD when the URL has none: the password stays off the command
  // line. Without a stored one, a PGPASSWORD or ~/.pgpass the user set up applies as for psql.
  if (spec.storePassword) env.PGPASSWORD = spec.storePassword;
  delete env[LAUNCH_KEY_ENV];
  if (spec.launchKey) env[LAUNCH_KEY_ENV] = spec.launchKey;
  return env;
}

/**
 * A digest of what a host is started with: its flags, token, folders and store password. The host
 * keeps it and tells every window that attaches, which restarts it when its own settings differ;
 * a digest, so neither the token nor the password is ever handed around.
 */
export function launchKeyFor(args: string[], token: string, folders: string[], storePassword: string | undefined): string {
  const passwordDigest = storePassword === undefined ? null : createHash('sha256').update(storePassword).digest('hex');
  return createHash('sha256').update(JSON.stringify([args, token, folders, passwordDigest])).digest('hex');
}
