// HostProcess: the extension's side of the engine host process (dist/cli.js serve, whose main is
// src/host/cli.ts), forked like a language server so the extension host's own thread never does
// engine work: launching, the database and the HTTP API stay out of the editor. It owns the
// process's life: spawn, the IPC handshake (ready / locked / fatal), control requests, crash
// detection and a clean shutdown. Policy (when to start, restart on settings, attach) lives in
// EngineController.
import { fork, type ChildProcess } from 'node:child_process';
import * as vscode from 'vscode';
import { ENGINE_HOST_NODE_OPTIONS, EXIT_LOCKED, EXIT_USAGE, type ControlCommand, type EngineLock, type FromHostMessage, type ToHostMessage } from '../shared/hostProtocol';
import { Disposable, toDisposable } from './dispose';
import { hostCommandLine, hostEnvironment, type HostLaunchSpec } from './hostLaunch';

export type { HostLaunchSpec } from './hostLaunch';

export type HostStartResult =
  | { kind: 'ready'; url: string; pid: number; requestedPort?: number }
  | { kind: 'locked'; lock: EngineLock }
  | { kind: 'failed'; message: string };

export interface HostExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when we asked it to exit (stop, restart, dispose). */
  expected: boolean;
  /** How long it ran after `ready`, in ms (0 if it never got ready). */
  uptimeMs: number;
  /** The last `fatal` message it sent, if any. */
  fatal?: string;
}

const READY_TIMEOUT_MS = 30_000;
const CONTROL_TIMEOUT_MS = 15_000;
/** After SIGTERM, how long the host gets (grace + ending attempts + persisting) before SIGKILL. */
const SHUTDOWN_GRACE_MS = 4_500;

export class HostProcess extends Disposable {
  private child: ChildProcess | undefined;
  private readyAt = 0;
  private expectingExit = false;
  private lastFatal: string | undefined;
  private nextRequestId = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  private exited: Promise<void> = Promise.resolve();

  private readonly _onDidExit = this._register(new vscode.EventEmitter<HostExit>());
  /** The process ended (after `ready` or not). */
  readonly onDidExit = this._onDidExit.event;

  constructor(private readonly output: vscode.LogOutputChannel) {
    super();
    // If the extension host dies without deactivate(), do not leave the engine behind. (The host
    // also exits when its IPC channel closes; this is the belt to that pair of braces.)
    const onExit = () => this.child?.kill('SIGTERM');
    process.on('exit', onExit);
    this._register(toDisposable(() => process.off('exit', onExit)));
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get isRunning(): boolean {
    return this.child !== undefined;
  }

  /** Fork the host and wait for its first answer. Only one process at a time. */
  start(spec: HostLaunchSpec): Promise<HostStartResult> {
    if (this.child) return Promise.resolve({ kind: 'failed', message: 'The engine host is already running.' });
    const args = hostCommandLine(spec);
    this.output.info(`Starting the engine host: ${spec.cliPath} ${args.join(' ')}`);

    let child: ChildProcess;
    try {
      child = fork(spec.cliPath, args, {
        cwd: spec.storageDir,
        // Never the extension host's own flags (--inspect…): only the engine host's tuning.
        execArgv: [...ENGINE_HOST_NODE_OPTIONS],
        // The token is in here, never in args: see hostLaunch.ts.
        env: hostEnvironment(spec),
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      });
    } catch (err) {
      return Promise.resolve({ kind: 'failed', message: `Could not start the engine host: ${String(err)}` });
    }
    this.child = child;
    this.readyAt = 0;
    this.expectingExit = false;
    this.lastFatal = undefined;
    pipeLines(child.stdout, (line) => this.output.info(`[host] ${line}`));
    pipeLines(child.stderr, (line) => this.output.warn(`[host] ${line}`));

    let resolveExited!: () => void;
    this.exited = new Promise<void>((r) => (resolveExited = r));

    return new Promise<HostStartResult>((resolve) => {
      let settled = false;
      const settle = (r: HostStartResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      const timer = setTimeout(() => {
        settle({ kind: 'failed', message: `The engine host did not get ready within ${READY_TIMEOUT_MS / 1000} s.` });
        this.expectingExit = true;
        child.kill('SIGKILL');
      }, READY_TIMEOUT_MS);

      child.on('message', (raw) => this.onHostMessage(raw as FromHostMessage, settle));
      child.on('error', (err) => {
        this.output.error(`Engine host process error: ${err.message}`);
        settle({ kind: 'failed', message: `Could not start the engine host: ${err.message}` });
      });
      child.on('exit', (code, signal) => {
        const expected = this.expectingExit || code === EXIT_LOCKED;
        const uptimeMs = this.readyAt ? Date.now() - this.readyAt : 0;
        this.output.info(`Engine host exited (${signal ?? `code ${code}`}).`);
        if (this.child === child) this.child = undefined;
        this.rejectPendingControls();
        const why = this.lastFatal ?? (code === EXIT_USAGE ? 'the engine host rejected its arguments (see the Engine Monitor output)' : `the engine host exited (${signal ?? `code ${code}`}) before it was ready`);
        settle({ kind: 'failed', message: why });
        resolveExited();
        this._onDidExit.fire({ code, signal, expected, uptimeMs, fatal: this.lastFatal });
      });
    });
  }

  private onHostMessage(msg: FromHostMessage, settle: (r: HostStartResult) => void): void {
    switch (msg?.type) {
      case 'ready':
        this.readyAt = Date.now();
        this.output.info(`Engine host ready at ${msg.url} (pid ${msg.pid}).`);
        settle({ kind: 'ready', url: msg.url, pid: msg.pid, requestedPort: msg.requestedPort });
        break;
      case 'locked':
        // It exits with EXIT_LOCKED by itself; we attach to the owner instead.
        this.expectingExit = true;
        this.output.info(`Another engine (pid ${msg.lock.pid}) owns this workspace's storage; attaching to ${msg.lock.url}.`);
        settle({ kind: 'locked', lock: msg.lock });
        break;
      case 'fatal':
        this.lastFatal = msg.message;
        this.output.error(`Engine host: ${msg.message}`);
        settle({ kind: 'failed', message: msg.message });
        break;
      case 'controlResult':
        this.answerControl(msg);
        break;
      default:
        break;
    }
  }

  private answerControl(msg: Extract<FromHostMessage, { type: 'controlResult' }>): void {
    const p = this.pending.get(msg.requestId);
    if (!p) return;
    this.pending.delete(msg.requestId);
    clearTimeout(p.timer);
    if (msg.ok) p.resolve(msg.result);
    else p.reject(new Error(msg.error));
  }

  private rejectPendingControls(): void {
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new Error('The engine host exited before answering.'));
    }
    this.pending.clear();
  }

  /** Send a control command over IPC and wait for its controlResult. */
  control(command: ControlCommand): Promise<unknown> {
    const child = this.child;
    if (!child?.connected) return Promise.reject(new Error('The engine host is not running in this window.'));
    const requestId = this.nextRequestId++;
    const msg: ToHostMessage = { type: 'control', requestId, ...command };
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(requestId);
        reject(new Error(`The engine host did not answer "${command.command}" in time.`));
      }, CONTROL_TIMEOUT_MS);
      this.pending.set(requestId, { resolve, reject, timer });
      child.send(msg, (err) => {
        if (!err) return;
        clearTimeout(timer);
        this.pending.delete(requestId);
        reject(new Error(`Could not reach the engine host: ${err.message}`));
      });
    });
  }

  /**
   * Ask the host to exit (SIGTERM: stop launching, wait for running attempts, persist) and wait
   * for it; SIGKILL after the grace period so nothing is left behind.
   */
  async shutdown(graceMs = SHUTDOWN_GRACE_MS): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.expectingExit = true;
    const exited = this.exited;
    child.kill('SIGTERM');
    const timedOut = await Promise.race([
      exited.then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), graceMs)),
    ]);
    if (timedOut && child.exitCode === null && child.signalCode === null) {
      this.output.warn(`Engine host did not exit within ${graceMs} ms; killing it.`);
      child.kill('SIGKILL');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 1000))]);
    }
  }

  override dispose(): void {
    // Synchronous last resort (deactivate() normally awaited shutdown() already).
    if (this.child) {
      this.expectingExit = true;
      this.child.kill('SIGTERM');
    }
    super.dispose();
  }
}

function pipeLines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (!stream) return;
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).replace(/\r$/, '');
      buf = buf.slice(i + 1);
      if (line) onLine(line);
    }
  });
  stream.on('end', () => {
    if (buf) onLine(buf);
    buf = '';
  });
}
