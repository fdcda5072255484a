// The engine host's control connection: how VS Code windows attach to the engine and control it.
// The host outlives the window that started it (a reload or a closed window must not end running
// attempts), so no window is its parent and an IPC channel cannot serve: a window connects to a
// loopback port instead and proves itself with a secret the host wrote to `control.json` in the
// storage folder, a file only the user can read (mode 0600). Without the secret a caller gets
// nothing but a refusal, so the HTTP API's rule stands: control over HTTP only with a token.
//
// A connection held open is an attachment: it closes when the window's process dies, however it
// dies, so the host always knows whether a window is watching. With --keep-alive, the host stops
// by itself once no window has been attached for that long and no attempt is running (a service
// does not count: closing VS Code stops its services).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { CONTROL_FILE, type ControlFile, type FromControlMessage, type HostInfo, type ToControlMessage } from '../shared/hostProtocol';
import { runControl } from './controlChannel';
import type { RunningHost } from './engineHost';
import { storageError } from './storageFiles';

/** A line longer than this is no message of ours: the caller is cut off. */
const MAX_LINE = 64 * 1024;
/** A caller that has not proved itself by then is cut off. */
const ATTACH_TIMEOUT_MS = 5_000;

export interface ControlServerOptions {
  storageDir: string;
  launchKey: string;
  /** Stop when no window has been attached this long and nothing runs; undefined: never. */
  keepAliveMs?: number;
  /** How often the keep-alive is checked (tests shorten it). */
  keepAliveCheckMs?: number;
  /** Stops the host (graceful); `restart` is told to the windows before they are disconnected. */
  stop(reason: string): void;
}

export interface ControlServer {
  readonly port: number;
  readonly file: string;
  /** Windows attached now. */
  readonly attached: number;
  /** Tell every window why the host is ending, then close the connections and the file. */
  close(reason: string, restart: boolean): Promise<void>;
}

export async function startControlServer(host: RunningHost, options: ControlServerOptions): Promise<ControlServer> {
  const token = randomBytes(32).toString('base64url');
  const expected = digest(token);
  const sockets = new Set<net.Socket>();
  const attached = new Set<net.Socket>();
  let restartAsked = false;
  let lastDetachedAt = Date.now();
  let closing = false;
  const startedAt = new Date().toISOString();

  const info = (): HostInfo => ({
    pid: process.pid,
    url: host.url,
    startedAt,
    launchKey: options.launchKey,
    restricted: host.engine.state === 'restricted',
    keepAliveSeconds: options.keepAliveMs === undefined ? undefined : options.keepAliveMs / 1000,
    attached: attached.size,
    terminalToken: host.terminalToken,
  });

  const server = net.createServer((socket) => {
    if (closing) return void socket.destroy();
    sockets.add(socket);
    socket.setEncoding('utf8');
    socket.setNoDelay(true);
    const send = (m: FromControlMessage) => {
      if (!socket.destroyed) socket.write(JSON.stringify(m) + '\n');
    };
    const refuse = (error: string) => {
      send({ type: 'refused', error });
      socket.end();
      socket.destroySoon();
    };
    const timer = setTimeout(() => refuse('no attach message in time'), ATTACH_TIMEOUT_MS);
    let buf = '';
    let isAttached = false;
    socket.on('data', (chunk: string) => {
      buf += chunk;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (!onLine(line)) return;
      }
      if (buf.length > MAX_LINE) refuse('message too long');
    });
    // Returns false when the connection is cut off and nothing more is read from it.
    const onLine = (line: string): boolean => {
      let message: ToControlMessage;
      try {
        message = JSON.parse(line) as ToControlMessage;
      } catch {
        refuse('not a control message');
        return false;
      }
      if (!isAttached) {
        clearTimeout(timer);
        if (message?.type !== 'attach' || typeof message.token !== 'string' || !timingSafeEqual(digest(message.token), expected)) {
          refuse(`wrong or missing secret: a window reads it from ${CONTROL_FILE} in the engine's storage folder`);
          return false;
        }
        isAttached = true;
        attached.add(socket);
        send({ type: 'welcome', info: info() });
        return true;
      }
      if (message.type === 'shutdown') {
        restartAsked = message.restart;
        send({ type: 'controlResult', requestId: message.requestId, ok: true });
        options.stop(message.restart ? 'a window asked for a fresh engine host' : 'a window asked the engine host to stop');
        return true;
      }
      if (message.type === 'control') {
        const { type: _type, requestId, ...command } = message;
        void runControl(host, command).then((result) => send({ type: 'controlResult', requestId, ...result }));
        return true;
      }
      return true;
    };
    socket.on('error', () => undefined); // a window that died mid-write: 'close' follows
    socket.on('close', () => {
      clearTimeout(timer);
      sockets.delete(socket);
      if (attached.delete(socket) && attached.size === 0) lastDetachedAt = Date.now();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as net.AddressInfo).port;
  const file = path.join(options.storageDir, CONTROL_FILE);
  try {
    writePrivately(file, { pid: process.pid, port, token } satisfies ControlFile);
  } catch (err) {
    server.close();
    throw storageError('write', file, err);
  }

  let keepAlive: NodeJS.Timeout | undefined;
  if (options.keepAliveMs !== undefined) {
    const keepAliveMs = options.keepAliveMs;
    keepAlive = setInterval(() => {
      if (closing || attached.size > 0 || Date.now() - lastDetachedAt < keepAliveMs) return;
      // A running attempt (a deploy, a migration) is never ended because its window went away. A
      // service is not such work: it runs for the windows, and the host's stop stops it.
      const status = host.engine.status();
      const services = status.services?.filter((s) => s.state === 'starting' || s.state === 'ready').length ?? 0;
      if (status.engine.running - services > 0) return;
      options.stop(`no window attached for ${keepAliveMs / 1000} s and nothing running`);
    }, options.keepAliveCheckMs ?? Math.min(1000, Math.max(50, keepAliveMs / 4)));
    keepAlive.unref();
  }

  return {
    port,
    file,
    get attached() {
      return attached.size;
    },
    async close(reason: string, restart: boolean) {
      if (closing) return;
      closing = true;
      clearInterval(keepAlive);
      // The file first: a window that looks now finds no engine to attach to, rather than a dying one.
      try {
        const current = JSON.parse(readFileSync(file, 'utf8')) as ControlFile;
        if (current.pid === process.pid) rmSync(file, { force: true });
      } catch {
        // already gone
      }
      const stopping = JSON.stringify({ type: 'stopping', reason, restart: restart || restartAsked } satisfies FromControlMessage) + '\n';
      for (const s of attached) s.write(stopping);
      for (const s of sockets) s.end();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // A window that does not close its end is not waited for.
        setTimeout(() => {
          for (const s of sockets) s.destroy();
        }, 500).unref();
      });
    },
  };
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Written whole under a temporary name created private (0600), then renamed into place. */
function writePrivately(file: string, value: unknown): void {
  const tmp = `${file}.tmp-${process.pid}`;
  // 'wx' creates it afresh, so the mode applies: never a leftover of another process's making.
  rmSync(tmp, { force: true });
  try {
    writeFileSync(tmp, JSON.stringify(value) + '\n', { mode: 0o600, flag: 'wx' });
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
