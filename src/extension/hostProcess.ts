// HostProcess: the window's side of the engine host process (dist/cli.js serve, whose main is
// src/host/cli.ts). The host runs apart from the extension host so the editor's thread never does
// engine work, and it is not the window's child in lifetime: it is started detached (hostLaunch.ts),
// and a window that reloads or closes only detaches, so running attempts go on. Any window on the
// same storage folder attaches to it over its control connection (hostConnection.ts), controls it
// the same way, and learns of its end when that connection closes. Policy (when to start, restart
// on settings, crash backoff) lives in EngineController.
import { type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync, statSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { CONTROL_FILE, EXIT_LOCKED, EXIT_USAGE, type ControlCommand, type EngineLock, type HostInfo } from '../shared/hostProtocol';
import { Disposable } from './dispose';
import { attachToHost, readControlFile, waitForExit, type HostConnection } from './hostConnection';
import { isAlive } from '../shared/processAlive';
import { HOST_LOG_FILE, launchDetachedHost, type DetachedLaunch, type HostLaunchSpec } from './hostLaunch';

export type { HostLaunchSpec } from './hostLaunch';

export type HostStartResult =
  | { kind: 'ready'; url: string; pid: number; info: HostInfo; requestedPort?: number }
  | { kind: 'locked'; lock: EngineLock }
  | { kind: 'failed'; message: string };

export interface HostExit {
  /** True when this window asked it to exit (stop, restart). */
  expected: boolean;
  /** How long it had run, in ms. */
  uptimeMs: number;
  /** Another window asked for a fresh host: attach to that one rather than count a crash. */
  restartFollows: boolean;
  /** What the host said as it ended, if it said anything (a crash says nothing). */
  reason?: string;
}

const READY_TIMEOUT_MS = 30_000;
/** After asking the host to stop, how long it gets (grace + ending attempts + persisting) before SIGKILL. */
const SHUTDOWN_GRACE_MS = 4_500;
/** A closed connection whose process still lives after this is treated as ended (and killed if asked). */
const EXIT_WAIT_MS = 15_000;
const LOG_TAIL_MS = 1_000;
const LOCK_FILE = 'engine.lock';

export class HostProcess extends Disposable {
  private connection: HostConnection | undefined;
  private expectingExit = false;
  private logTail: NodeJS.Timeout | undefined;

  private readonly _onDidExit = this._register(new vscode.EventEmitter<HostExit>());
  /** The engine host this window was attached to ended (or its connection broke). */
  readonly onDidExit = this._onDidExit.event;

  constructor(private readonly output: vscode.LogOutputChannel) {
    super();
  }

  get pid(): number | undefined {
    return this.connection?.isOpen ? this.connection.info.pid : undefined;
  }

  get isRunning(): boolean {
    return this.connection?.isOpen === true;
  }

  /** What the host was started with (its launch key, restricted), as it told this window. */
  get info(): HostInfo | undefined {
    return this.connection?.isOpen ? this.connection.info : undefined;
  }

  /** Whether an engine host seems to run on this storage folder (its control.json names a live pid). */
  mayAttach(storageDir: string): boolean {
    const file = readControlFile(storageDir);
    return file !== undefined && isAlive(file.pid);
  }

  /**
   * Attaches to the engine already running on this storage folder, if any: no second start when a
   * window reloads or a second window opens. Undefined when there is none to attach to.
   */
  async attach(storageDir: string): Promise<Extract<HostStartResult, { kind: 'ready' }> | undefined> {
    if (this.isRunning) return undefined;
    const asked = Date.now();
    const result = await attachToHost(storageDir, `VS Code window (extension host pid ${process.pid})`);
    if (result.kind !== 'attached') {
      if (readControlFile(storageDir)) this.output.info(`Not attaching to the engine: ${result.why}.`);
      return undefined;
    }
    const { info } = result.connection;
    this.output.info(`Attached to the engine host (pid ${info.pid}) at ${info.url} in ${Date.now() - asked} ms; ${info.attached} window(s) attached.`);
    this.adopt(result.connection, storageDir, fileSize(path.join(storageDir, HOST_LOG_FILE)));
    return { kind: 'ready', url: info.url, pid: info.pid, info };
  }

  /** Starts a host detached and waits until it is ready (and attached to) or has failed. */
  async start(spec: HostLaunchSpec): Promise<HostStartResult> {
    if (this.isRunning) return { kind: 'failed', message: 'The engine host is already running.' };
    let launch;
    try {
      launch = launchDetachedHost(spec);
    } catch (err) {
      return { kind: 'failed', message: `Could not start the engine host: ${String(err)}` };
    }
    const { child, logFile } = launch;
    this.output.info(`Starting the engine host (pid ${child.pid ?? '?'}), its output in ${logFile}.`);
    const exited = exitOf(child);
    const deadline = Date.now() + READY_TIMEOUT_MS;
    // The host's control.json appearing is what this waits for: a watch on the folder sees it at
    // once (a window that starts the engine waits for this), the 50 ms look is for file systems
    // without change events.
    let wake: (() => void) | undefined;
    let watcher: FSWatcher | undefined;
    try {
      watcher = watch(spec.storageDir, (_event, name) => name === CONTROL_FILE && wake?.());
      watcher.on('error', () => undefined);
    } catch {
      // no change events here: the timer alone
    }
    try {
      return await this.waitUntilReady(spec, launch, exited, deadline, (r) => (wake = r));
    } finally {
      watcher?.close();
    }
  }

  private async waitUntilReady(
    spec: HostLaunchSpec,
    { child, logFile, logOffset }: DetachedLaunch,
    exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>,
    deadline: number,
    onWake: (wake: () => void) => void,
  ): Promise<HostStartResult> {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const exit = await Promise.race([
        exited,
        new Promise<undefined>((r) => {
          timer = setTimeout(() => r(undefined), 50);
          onWake(() => r(undefined));
        }),
      ]).finally(() => clearTimeout(timer));
      if (exit) return this.startFailed(exit, spec.storageDir, logFile, logOffset);
      if (child.pid !== undefined && readControlFile(spec.storageDir)?.pid === child.pid) {
        const result = await attachToHost(spec.storageDir, `VS Code window (extension host pid ${process.pid})`);
        if (result.kind === 'attached') {
          const { info } = result.connection;
          this.output.info(`Engine host ready at ${info.url} (pid ${info.pid}).`);
          this.adopt(result.connection, spec.storageDir, logOffset);
          return { kind: 'ready', url: info.url, pid: info.pid, info, requestedPort: requestedPortOf(spec.args, info.url) };
        }
        this.output.warn(`The engine host is up but does not accept this window: ${result.why}.`);
      }
      if (Date.now() >= deadline) {
        if (child.pid !== undefined) kill(child.pid, 'SIGKILL');
        return { kind: 'failed', message: `The engine host did not get ready within ${READY_TIMEOUT_MS / 1000} s.` };
      }
    }
  }

  private startFailed(exit: { code: number | null; signal: NodeJS.Signals | null }, storageDir: string, logFile: string, logOffset: number): HostStartResult {
    const lines = readFrom(logFile, logOffset).split(/\r?\n/).filter(Boolean);
    for (const line of lines) this.output.info(`[host] ${line}`);
    if (exit.code === EXIT_LOCKED) {
      const lock = readLock(storageDir);
      this.output.info(`Another engine (pid ${lock?.pid ?? '?'}) owns this workspace's storage; attaching to it.`);
      return { kind: 'locked', lock: lock ?? { pid: 0, url: '', startedAt: '' } };
    }
    // The host's own words: its first "engine-monitor: …" line that is not the closing summary.
    const said = lines.map((l) => /^engine-monitor: (.*)$/.exec(l)?.[1]).find((m) => m && !m.startsWith('warning:') && !m.startsWith('the engine did not start'));
    const message = exit.code === EXIT_USAGE
      ? `the engine host rejected its arguments${said ? `: ${said.split('\n')[0]}` : ''} (see the Engine Monitor output)`
      : said ?? `the engine host exited (${exit.signal ?? `code ${exit.code}`}) before it was ready`;
    this.output.error(`Engine host: ${message}`);
    return { kind: 'failed', message };
  }

  private adopt(connection: HostConnection, storageDir: string, logOffset: number): void {
    this.connection = connection;
    this.expectingExit = false;
    this.tailLog(path.join(storageDir, HOST_LOG_FILE), logOffset);
    const startedAt = Date.parse(connection.info.startedAt);
    connection.onDidClose((d) => void this.onClosed(connection, startedAt, d.stopping));
  }

  private async onClosed(connection: HostConnection, startedAt: number, stopping: { reason: string; restart: boolean } | undefined): Promise<void> {
    if (this.connection !== connection) return;
    const pid = connection.info.pid;
    this.output.info(stopping ? `The engine host (pid ${pid}) is stopping: ${stopping.reason}.` : `Lost the engine host's connection (pid ${pid}).`);
    // The connection closes as the host begins to stop: it is gone only when its process is.
    if (!(await waitForExit(pid, EXIT_WAIT_MS))) this.output.warn(`The engine host (pid ${pid}) closed its connection but did not exit.`);
    if (this.connection !== connection) return;
    this.connection = undefined;
    this.stopTail(true);
    this.output.info(`Engine host (pid ${pid}) exited.`);
    this._onDidExit.fire({ expected: this.expectingExit, uptimeMs: Date.now() - startedAt, restartFollows: stopping?.restart ?? false, reason: stopping?.reason });
  }

  /** Sends a control command over the control connection and waits for its answer. */
  control(command: ControlCommand): Promise<unknown> {
    const connection = this.connection;
    if (!connection?.isOpen) return Promise.reject(new Error('The engine host is not running.'));
    return connection.control(command);
  }

  /**
   * Stops the host, from whichever window: it stops launching, lets running attempts finish for
   * its grace, ends the rest and persists; SIGKILL after `graceMs` so nothing is left behind.
   * `restart`: the other attached windows are told a fresh host follows.
   */
  async shutdown(graceMs = SHUTDOWN_GRACE_MS, restart = false): Promise<void> {
    const connection = this.connection;
    if (!connection?.isOpen) return;
    const pid = connection.info.pid;
    this.expectingExit = true;
    try {
      await connection.shutdown(restart);
    } catch {
      kill(pid, 'SIGTERM');
    }
    if (!(await waitForExit(pid, graceMs))) {
      this.output.warn(`Engine host did not exit within ${graceMs} ms; killing it.`);
      kill(pid, 'SIGKILL');
      await waitForExit(pid, 2000);
    }
    // onClosed has seen it go (or sees it now), and fires onDidExit with expected: true.
    if (this.connection === connection) {
      this.connection = undefined;
      this.stopTail(true);
      this._onDidExit.fire({ expected: true, uptimeMs: Date.now() - Date.parse(connection.info.startedAt), restartFollows: restart });
    }
  }

  /** The window goes away (reload, close): the engine runs on; only this window's attachment ends. */
  detach(): void {
    const connection = this.connection;
    this.connection = undefined;
    this.stopTail(true);
    connection?.close();
  }

  override dispose(): void {
    this.detach();
    super.dispose();
  }

  /** Mirrors the host's log file into the output channel while this window is attached. */
  private tailLog(file: string, from: number): void {
    this.stopTail(false);
    let offset = from;
    let partial = '';
    const read = () => {
      const text = readFrom(file, offset);
      if (!text) return;
      offset += Buffer.byteLength(text);
      const lines = (partial + text).split(/\r?\n/);
      partial = lines.pop() ?? '';
      for (const line of lines) if (line) this.output.info(`[host] ${line}`);
    };
    read();
    this.logTail = setInterval(read, LOG_TAIL_MS);
    this.logTail.unref?.();
    this.flushTail = read;
  }

  private flushTail: (() => void) | undefined;

  private stopTail(flush: boolean): void {
    if (flush) this.flushTail?.();
    this.flushTail = undefined;
    clearInterval(this.logTail);
    this.logTail = undefined;
  }
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
}

/** The port asked for, when the host had to take another one (it was in use). */
function requestedPortOf(args: string[], url: string): number | undefined {
  const i = args.indexOf('--port');
  const asked = i >= 0 ? Number(args[i + 1]) : NaN;
  if (!Number.isInteger(asked) || asked === 0) return undefined;
  return Number(new URL(url).port) === asked ? undefined : asked;
}

function readLock(storageDir: string): EngineLock | undefined {
  try {
    const lock = JSON.parse(readFileSync(path.join(storageDir, LOCK_FILE), 'utf8')) as EngineLock;
    return Number.isInteger(lock?.pid) ? { pid: lock.pid, url: lock.url, startedAt: lock.startedAt } : undefined;
  } catch {
    return undefined;
  }
}

function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** What the file holds from `offset` on (at most 1 MiB at a time); '' when nothing or no file. */
function readFrom(file: string, offset: number): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return '';
  }
  try {
    const size = statSync(file).size;
    if (size <= offset) return '';
    const buf = Buffer.alloc(Math.min(size - offset, 1024 * 1024));
    const n = readSync(fd, buf, 0, buf.length, offset);
    // Never a torn UTF-8 character: stop at the last complete line.
    const text = buf.subarray(0, n).toString('utf8');
    const end = text.lastIndexOf('\n');
    return end < 0 ? '' : text.slice(0, end + 1);
  } finally {
    closeSync(fd);
  }
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    if (isAlive(pid)) process.kill(pid, signal);
  } catch {
    // gone meanwhile
  }
}
