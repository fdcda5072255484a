// `engine-monitor serve …`: the engine and its HTTP API without VS Code. Its flags, its output and
// its exit codes are a public interface that scripts rely on. The VS Code extension starts this
// same file (detached, with --keep-alive), so headless and embedded engines are one program.
import type { LogEntry } from '../shared/api';
import { escapeControls } from '../shared/format';
import { EXIT_LOCKED, EXIT_USAGE, LAUNCH_KEY_ENV, type EngineLock, type FromHostMessage } from '../shared/hostProtocol';
import { parseServeArgs, TOKEN_ENV, USAGE, UsageError, type CliOptions } from './args';
import { serveControlChannel } from './controlChannel';
import { startControlServer, type ControlServer } from './controlServer';
import { startEngineHost, type RunningHost } from './engineHost';
import { runClient } from './client/main';
import { redactStoreUrl } from '../core/store/pgStore';

const processStartedAt = Date.now() - Math.round(process.uptime() * 1000);
/** How long after its ready line the engine host forks its launch helpers, with nothing due. */
const HELPERS_AFTER_READY_MS = 2000;

async function main(argv: string[]): Promise<number> {
  // Every other command (status, logs, output…, or none) is the client asking a running engine.
  if (argv[0] !== 'serve') return runClient(argv);
  if (argv.includes('-h') || argv.includes('--help')) {
    process.stdout.write(USAGE);
    return 0;
  }
  let options: CliOptions;
  try {
    options = parseServeArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`engine-monitor: ${err.message}\n\n${USAGE}`);
    return EXIT_USAGE;
  }
  for (const warning of options.warnings) process.stderr.write(`engine-monitor: warning: ${warning}\n`);
  // The launch helper and every item it launches inherit this environment: the API's secret is
  // not theirs to read.
  if (options.tokenFromEnv) delete process.env[TOKEN_ENV];
  const launchKey = process.env[LAUNCH_KEY_ENV] ?? '';
  delete process.env[LAUNCH_KEY_ENV];
  // A password in --store would show in ps for as long as the engine runs: the process title
  // (which on Linux and macOS replaces the command line ps reads) shows it redacted.
  if (options.storeUrl && redactStoreUrl(options.storeUrl) !== options.storeUrl) {
    process.title = ['engine-monitor', ...argv.map((a) => (a === options.storeUrl ? redactStoreUrl(a) : a.startsWith('--store=') ? `--store=${redactStoreUrl(a.slice(8))}` : a))].join(' ');
  }

  // Forked with an IPC channel (tests, tools): report over it as well as on stdout.
  // With a callback, a message to an extension host that has just gone (EPIPE) is dropped instead
  // of thrown as an 'error' event that would end the engine.
  const send = (m: FromHostMessage) => process.send?.(m, undefined, undefined, () => undefined);

  let started;
  try {
    started = await startEngineHost(options);
  } catch (err) {
    // startEngineHost has ended whatever it had started; say so, so nobody looks for a
    // half-started engine.
    const message = (err as Error).message;
    process.stderr.write(`engine-monitor: ${message}\nengine-monitor: the engine did not start and nothing is left running; fix the cause above and start it again\n`);
    send({ type: 'fatal', message });
    // Should anything still hold the event loop open, the process ends regardless: a start-up
    // failure never leaves a process behind. (Unreferenced: a clean exit does not wait for it.)
    setTimeout(() => process.exit(1), 2000).unref();
    return 1;
  }
  if (started.kind === 'locked') {
    reportLocked(options, started.holder, send);
    return EXIT_LOCKED;
  }
  const host = started.host;
  // Before the ready line: a SIGTERM sent as soon as it is read must find the graceful stop, not
  // Node's default, which ends the process at once and leaves engine.lock and endpoint.json behind.
  let control: ControlServer | undefined;
  const stop = stopOnSignals(host, options.graceMs, () => control);
  try {
    // Windows attach here (control.json appears last: a window waiting for it finds a ready engine).
    control = await startControlServer(host, {
      storageDir: options.storageDir,
      launchKey,
      keepAliveMs: options.keepAliveSeconds === undefined ? undefined : options.keepAliveSeconds * 1000,
      stop: (why) => void stop(why),
    });
  } catch (err) {
    const message = (err as Error).message;
    process.stderr.write(`engine-monitor: ${message}\nengine-monitor: the engine did not start and nothing is left running; fix the cause above and start it again\n`);
    send({ type: 'fatal', message });
    await host.shutdown(0);
    setTimeout(() => process.exit(1), 2000).unref();
    return 1;
  }
  announce(host, options);
  send({ type: 'ready', url: host.url, pid: process.pid, ...(host.requestedPortInUse ? { requestedPort: options.port } : {}) });
  // Not before the lines above: a window that starts the engine waits for them. And not at once
  // after them either: the window's first reads (the event stream, every view's data) come now,
  // and two Node processes booting beside them took the same cores (ready line → seven reads
  // answered: 185 ms against 104, docs/PERFORMANCE.md). Work due sooner forks the helpers itself.
  setTimeout(() => host.engine.prepareLaunching(), HELPERS_AFTER_READY_MS).unref();
  if (process.send) {
    serveControlChannel(host, send);
    // A parent that forked us with a channel and went away takes us along. (VS Code windows do not
    // fork the host: they start it detached and attach over the control connection.)
    process.on('disconnect', () => void stop('parent process disconnected'));
  }

  return -1; // keep running
}

function reportLocked(options: CliOptions, holder: EngineLock, send: (m: FromHostMessage) => void): void {
  process.stderr.write(
    holder.pid === 0
      ? `engine-monitor: another engine is starting on ${options.storageDir} (its engine.lock is not written yet); ` +
          'wait a few seconds and use that one, or give this one another --storage folder\n'
      : `engine-monitor: another engine (pid ${holder.pid}) already runs on ${options.storageDir}` +
          (holder.url ? ` at ${holder.url}` : '') +
          '; use that one, or give this one another --storage folder\n',
  );
  send({ type: 'locked', lock: holder });
}

/** SIGINT and SIGTERM stop the engine gracefully; the returned function does the same. */
function stopOnSignals(host: RunningHost, graceMs: number, control: () => ControlServer | undefined): (why: string) => Promise<void> {
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`engine-monitor: ${why}; stopping (grace ${graceMs} ms)\n`);
    // Windows hear why first, so none takes this for a crash.
    await control()?.close(why, false);
    await host.shutdown(graceMs);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  return stop;
}

/** The ready line and the endpoints, then (unless --quiet) the log as it is written. */
function announce(host: RunningHost, options: CliOptions): void {
  if (host.lockTakeover) process.stderr.write(`engine-monitor: ${host.lockTakeover}\n`);
  if (host.requestedPortInUse) {
    process.stderr.write(`engine-monitor: port ${options.port} is in use; listening on a free port instead\n`);
  }
  process.stdout.write(`listening on ${host.url}\n`);
  process.stdout.write(['/stats', '/health', '/status', '/logs'].map((p) => `  GET ${host.url}${p}\n`).join(''));
  if (!options.quiet) {
    // What this run logged while starting (engine_started, recovery notes, the first poll) comes
    // first; subscribing in the same turn leaves no gap before the live entries.
    const startup = host.engine.queryLogs({ order: 'asc', since: new Date(processStartedAt).toISOString(), limit: 200 });
    for (const entry of startup.entries) printLog(entry);
    host.engine.subscribe((e) => e.type === 'log' && printLog(e.entry));
  }
}

function printLog(entry: LogEntry): void {
  if (entry.level === 'debug') return;
  // One entry is one line, whatever an item's name or output holds.
  process.stdout.write(`${entry.timestamp} ${entry.level.padEnd(5)} ${entry.action.padEnd(18)} ${escapeControls(entry.message)}\n`);
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`engine-monitor: unexpected error: ${(err as Error).stack ?? err}\n`);
    process.exitCode = 1;
  },
);
