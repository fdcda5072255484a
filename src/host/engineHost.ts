// The engine host: wires the engine core to the HTTP server in one process of its own, so the
// VS Code extension host never runs engine work. Used by `engine-monitor serve`, which VS Code
// windows start detached and attach to (control messages then arrive over its control
// connection, controlServer.ts).
import { randomBytes } from 'node:crypto';
import { mkdirSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { Engine, type EngineOptions } from '../core/kernel/engine';
import type { LaunchHelperEntry } from '../core/launching';
import { startHttpServer, type RunningHttpServer } from '../server/server';
import type { EndpointFile, EngineLock } from '../shared/hostProtocol';
import { hasHooks, startHooks, type HookOptions, type HookRunner } from './hooks';
import { locateLaunchHelper } from './launchHelperEntry';
import { acquireLock, type HeldLock } from './lock';
import { writeStorageFile } from './storageFiles';

export interface HostOptions extends Omit<EngineOptions, 'storageDir' | 'launchHelper' | 'onStorageRecovered'> {
  storageDir: string;
  /** The launch helper the engine forks; undefined: the one locateLaunchHelper() finds. */
  launchHelper?: LaunchHelperEntry | null;
  host: string;
  port: number;
  token?: string;
  /** Extra Host names the API answers to (`--allowed-host`). */
  allowedHosts?: string[];
  /** `--on-item-failed`, `--on-health-change`, `--notify-url` (hooks.ts); none when absent. */
  hooks?: HookOptions;
}

export type HostStart =
  | { kind: 'running'; host: RunningHost }
  /** Another live engine owns the storage folder. */
  | { kind: 'locked'; holder: EngineLock };

export interface RunningHost {
  readonly url: string;
  readonly engine: Engine;
  /** Set when the requested port was taken and another was used. */
  readonly requestedPortInUse: boolean;
  /** Set when a stale engine.lock was taken over: which one and why. */
  readonly lockTakeover?: string;
  /**
   * A token this host makes up at start and accepts for HTTP control besides the configured one.
   * It is told only to windows that attached with control.json's secret, which hand it to their
   * integrated terminals: whoever can read that 0600 file can control the engine already.
   */
  readonly terminalToken: string;
  /** Stop launching, wait for running attempts up to `graceMs`, persist, close the server. */
  shutdown(graceMs: number): Promise<void>;
}

export const ENDPOINT_FILE = 'endpoint.json';

export async function startEngineHost(options: HostOptions): Promise<HostStart> {
  mkdirSync(options.storageDir, { recursive: true });
  const startedAt = new Date().toISOString();
  const lock = acquireLock(options.storageDir, startedAt);
  if (!lock.acquired) return { kind: 'locked', holder: lock.holder };

  let engine: Engine | undefined;
  let server: RunningHttpServer | undefined;
  const endpointFile = path.join(options.storageDir, ENDPOINT_FILE);
  // The storage folder removed and recreated under a running engine: its lock and endpoint file
  // went with it, and a second engine could start there. They are put back before the engine
  // launches again; if another engine holds the folder by then, this one launches nothing more.
  const onStorageRecovered = (): boolean => {
    const url = server?.url ?? '';
    try {
      if (!lock.reestablish({ pid: process.pid, url, startedAt })) return false;
      if (server) writeStorageFile(endpointFile, { url, pid: process.pid, startedAt } satisfies EndpointFile);
      return true;
    } catch {
      return false; // the lock cannot be vouched for: launching could run beside another engine
    }
  };
  const terminalToken = randomBytes(32).toString('base64url');
  try {
    const launchHelper = options.launchHelper === undefined ? locateLaunchHelper() : options.launchHelper;
    engine = await Engine.create({ ...options, storageDir: options.storageDir, launchHelper, onStorageRecovered });
    // The first poll completes before the server accepts a request, so no client ever sees an
    // engine that has not looked at its queue yet.
    await engine.start();
    server = await startHttpServer(engine, {
      host: options.host,
      port: options.port,
      token: options.token,
      controlToken: terminalToken,
      fallbackToFreePort: options.port !== 0,
      allowedHosts: options.allowedHosts,
    });
    const endpoint: EndpointFile = { url: server.url, pid: process.pid, startedAt };
    lock.update({ pid: process.pid, url: server.url, startedAt });
    writeStorageFile(endpointFile, endpoint);
    // Last: an event needs the server's URL, and nothing after this can fail and leave hooks running.
    const hooks = hasHooks(options.hooks) ? startHooks(engine, server.url, options.workspaceFolders[0], options.hooks) : undefined;
    return { kind: 'running', host: runningHost(engine, server, endpointFile, lock, hooks, terminalToken) };
  } catch (err) {
    // Whatever had started is ended before the lock goes: a server left listening (or a helper
    // left launching) after the lock is released would run beside the next engine on this folder.
    await server?.close().catch(() => undefined);
    await engine?.shutdown(0).catch(() => undefined);
    lock.release();
    throw err;
  }
}

function runningHost(engine: Engine, server: RunningHttpServer, endpointFile: string, lock: HeldLock, hooks: HookRunner | undefined, terminalToken: string): RunningHost {
  let shuttingDown: Promise<void> | undefined;
  return {
    url: server.url,
    engine,
    requestedPortInUse: server.requestedPortInUse,
    lockTakeover: lock.takeover,
    terminalToken,
    shutdown(graceMs: number) {
      shuttingDown ??= (async () => {
        // Hooks first: the stop itself changes health, and no hook process may outlive the host.
        await hooks?.stop();
        await engine.shutdown(graceMs);
        await server.close();
        try {
          unlinkSync(endpointFile);
        } catch {
          // already gone
        }
        lock.release();
      })();
      return shuttingDown;
    },
  };
}
