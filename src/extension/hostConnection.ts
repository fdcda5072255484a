// A window's connection to the engine host's control port (src/host/controlServer.ts): the secret
// read from the storage folder's control.json, the attachment the open connection stands for, and
// control requests over it. Plain Node (no VS Code API), so tests drive it as the extension does.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { CONTROL_FILE, type ControlCommand, type ControlFile, type FromControlMessage, type HostInfo, type ToControlMessage } from '../shared/hostProtocol';
import { isAlive } from '../shared/processAlive';

const ATTACH_TIMEOUT_MS = 3_000;
const CONTROL_TIMEOUT_MS = 15_000;

export function readControlFile(storageDir: string): ControlFile | undefined {
  try {
    const value = JSON.parse(readFileSync(path.join(storageDir, CONTROL_FILE), 'utf8')) as ControlFile;
    if (Number.isInteger(value?.pid) && Number.isInteger(value.port) && typeof value.token === 'string') return value;
  } catch {
    // none, or being replaced
  }
  return undefined;
}

export type AttachResult = { kind: 'attached'; connection: HostConnection } | { kind: 'none'; why: string };

/**
 * Attaches to the engine whose control.json is in `storageDir`, if its process lives and it
 * answers: the window's fast path when an engine already runs (a reload, a second window).
 */
export async function attachToHost(storageDir: string, who = `pid ${process.pid}`, timeoutMs = ATTACH_TIMEOUT_MS): Promise<AttachResult> {
  const file = readControlFile(storageDir);
  if (!file) return { kind: 'none', why: `no ${CONTROL_FILE} in ${storageDir}` };
  if (!isAlive(file.pid)) return { kind: 'none', why: `the engine host that wrote ${CONTROL_FILE} (pid ${file.pid}) is gone` };
  try {
    return { kind: 'attached', connection: await HostConnection.open(file, who, timeoutMs) };
  } catch (err) {
    return { kind: 'none', why: (err as Error).message };
  }
}

export interface Detached {
  /** The host said it is ending (and why) before the connection closed. */
  stopping?: { reason: string; restart: boolean };
}

export class HostConnection {
  private nextRequestId = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  private stopping: Detached['stopping'];
  private closedByUs = false;
  private readonly closeListeners: ((d: Detached) => void)[] = [];
  readonly closed: Promise<Detached>;

  private constructor(
    private readonly socket: net.Socket,
    readonly info: HostInfo,
    private buf: string,
  ) {
    this.closed = new Promise((resolve) => {
      socket.on('close', () => {
        for (const [, p] of this.pending) {
          clearTimeout(p.timer);
          p.reject(new Error('The engine host closed the connection before answering.'));
        }
        this.pending.clear();
        const d: Detached = { stopping: this.stopping };
        resolve(d);
        if (!this.closedByUs) for (const l of this.closeListeners) l(d);
      });
    });
    socket.on('data', (chunk: string) => this.onData(chunk));
    this.onData('');
  }

  /** Connects and proves the secret; rejects with the host's refusal or a timeout. */
  static open(file: ControlFile, who: string, timeoutMs = ATTACH_TIMEOUT_MS): Promise<HostConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port: file.port });
      socket.setEncoding('utf8');
      socket.setNoDelay(true);
      let buf = '';
      const fail = (why: string) => {
        clearTimeout(timer);
        socket.destroy();
        reject(new Error(why));
      };
      const timer = setTimeout(() => fail(`the engine host (pid ${file.pid}) did not answer on its control port within ${timeoutMs} ms`), timeoutMs);
      socket.on('error', (err) => fail(`could not reach the engine host (pid ${file.pid}) on its control port: ${err.message}`));
      socket.on('close', () => fail(`the engine host (pid ${file.pid}) closed its control connection`));
      const onData = (chunk: string) => {
        buf += chunk;
        const i = buf.indexOf('\n');
        if (i < 0) return;
        let first: FromControlMessage;
        try {
          first = JSON.parse(buf.slice(0, i)) as FromControlMessage;
        } catch {
          // The port was taken over by something else since the host wrote control.json.
          return fail(`port ${file.port} named in ${CONTROL_FILE} is not the engine host's control port`);
        }
        buf = buf.slice(i + 1);
        if (first.type !== 'welcome') return fail(first.type === 'refused' ? `the engine host refused to attach: ${first.error}` : 'the engine host answered with something else');
        clearTimeout(timer);
        socket.off('data', onData);
        socket.removeAllListeners('error');
        socket.removeAllListeners('close');
        socket.on('error', () => undefined); // 'close' follows and says it
        resolve(new HostConnection(socket, first.info, buf));
      };
      socket.on('data', onData);
      socket.write(JSON.stringify({ type: 'attach', token: file.token, who } satisfies ToControlMessage) + '\n');
    });
  }

  /** Called once when the connection ends without close(): the host stopped, crashed or was killed. */
  onDidClose(listener: (d: Detached) => void): void {
    this.closeListeners.push(listener);
  }

  get isOpen(): boolean {
    return !this.socket.destroyed;
  }

  /** Sends a control command and waits for its answer; rejects with the engine's reason. */
  control(command: ControlCommand, timeoutMs = CONTROL_TIMEOUT_MS): Promise<unknown> {
    return this.request({ type: 'control', requestId: this.nextRequestId++, ...command }, `"${command.command}"`, timeoutMs);
  }

  /** Asks the host to stop (it lets running attempts finish for its grace, then ends them). */
  shutdown(restart: boolean): Promise<unknown> {
    return this.request({ type: 'shutdown', requestId: this.nextRequestId++, restart }, 'the request to stop', CONTROL_TIMEOUT_MS);
  }

  /** Detaches: the engine runs on (and stops by itself after its keep-alive once nothing runs). */
  close(): void {
    this.closedByUs = true;
    this.socket.end();
    this.socket.destroySoon();
  }

  private request(msg: ToControlMessage & { requestId: number }, what: string, timeoutMs: number): Promise<unknown> {
    if (this.socket.destroyed) return Promise.reject(new Error('The engine host is not connected.'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(msg.requestId);
        reject(new Error(`The engine host did not answer ${what} in time.`));
      }, timeoutMs);
      this.pending.set(msg.requestId, { resolve, reject, timer });
      this.socket.write(JSON.stringify(msg) + '\n');
    });
  }

  private onData(chunk: string): void {
    this.buf += chunk;
    let i: number;
    while ((i = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      let msg: FromControlMessage;
      try {
        msg = JSON.parse(line) as FromControlMessage;
      } catch {
        continue;
      }
      if (msg.type === 'stopping') this.stopping = { reason: msg.reason, restart: msg.restart };
      if (msg.type !== 'controlResult') continue;
      const p = this.pending.get(msg.requestId);
      if (!p) continue;
      this.pending.delete(msg.requestId);
      clearTimeout(p.timer);
      if (msg.ok) p.resolve(msg.result);
      else p.reject(new Error(msg.error));
    }
  }
}

/** Waits until `pid` has exited (polling: it is not our child), up to `timeoutMs`; true if it did. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}
