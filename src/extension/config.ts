// The one typed accessor for the extension's settings (contract section 6). Defaults here mirror
// package.json's contributes.configuration; the manifest is what users see, these keep the code
// safe when a value is missing or of the wrong type.
import * as vscode from 'vscode';
import { CONFIG_SECTION } from './constants';

export interface EngineMonitorConfig {
  server: { port: number; host: string; token: string };
  engine: {
    autoStart: boolean;
    pollIntervalMs: number;
    concurrency: number;
    maxAttempts: number;
    timeoutMs: number;
  };
  queue: { directory: string };
  logs: { maxEntries: number; maxAgeDays: number };
  /** A headless engine to monitor instead of starting one (its token lives in SecretStorage). */
  remote: { url: string };
}

export const DEFAULT_CONFIG: EngineMonitorConfig = {
  server: { port: 7411, host: '127.0.0.1', token: '' },
  engine: { autoStart: true, pollIntervalMs: 2000, concurrency: 4, maxAttempts: 3, timeoutMs: 600000 },
  queue: { directory: '.engine/queue' },
  logs: { maxEntries: 100000, maxAgeDays: 14 },
  remote: { url: '' },
};

function int(value: unknown, fallback: number, min: number, max: number): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max ? value : fallback;
}

function str(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

export function readConfig(): EngineMonitorConfig {
  const c = vscode.workspace.getConfiguration(CONFIG_SECTION);
  const d = DEFAULT_CONFIG;
  const directory = str(c.get('queue.directory'), d.queue.directory).trim();
  return {
    server: {
      port: int(c.get('server.port'), d.server.port, 0, 65535),
      host: str(c.get('server.host'), d.server.host).trim() || d.server.host,
      token: str(c.get('server.token'), d.server.token),
    },
    engine: {
      autoStart: typeof c.get('engine.autoStart') === 'boolean' ? (c.get('engine.autoStart') as boolean) : d.engine.autoStart,
      pollIntervalMs: int(c.get('engine.pollIntervalMs'), d.engine.pollIntervalMs, 100, 86_400_000),
      concurrency: int(c.get('engine.concurrency'), d.engine.concurrency, 1, 64),
      maxAttempts: int(c.get('engine.maxAttempts'), d.engine.maxAttempts, 1, 100),
      timeoutMs: int(c.get('engine.timeoutMs'), d.engine.timeoutMs, 1, 86_400_000),
    },
    queue: { directory: directory || d.queue.directory },
    logs: {
      maxEntries: int(c.get('logs.maxEntries'), d.logs.maxEntries, 1, 100_000_000),
      maxAgeDays: int(c.get('logs.maxAgeDays'), d.logs.maxAgeDays, 1, 3650),
    },
    remote: { url: str(c.get('remote.url'), d.remote.url).trim() },
  };
}

/**
 * The remote engine's base URL from `engineMonitor.remote.url`: undefined when the setting is
 * empty (run our own engine), an error message when it is not a plain http(s) URL.
 */
export function parseRemoteUrl(value: string): { url?: string; error?: string } {
  if (!value) return {};
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return { error: `engineMonitor.remote.url is not a URL: ${JSON.stringify(value)}.` };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return { error: `engineMonitor.remote.url must start with http:// or https:// (it is ${JSON.stringify(value)}).` };
  }
  if (u.username || u.password || u.search || u.hash) {
    return { error: 'engineMonitor.remote.url must be the engine\'s base URL only (no credentials, query or fragment); the token is set with "Engine Monitor: Set Remote Engine Token…".' };
  }
  return { url: `${u.origin}${u.pathname}`.replace(/\/+$/, '') };
}

/** The host's command-line flags for a configuration (everything but workspaces, storage and mode). */
export function hostArgsFor(config: EngineMonitorConfig): string[] {
  const args = [
    '--host', config.server.host,
    '--port', String(config.server.port),
    '--poll-interval', String(config.engine.pollIntervalMs),
    '--concurrency', String(config.engine.concurrency),
    '--max-attempts', String(config.engine.maxAttempts),
    '--timeout', String(config.engine.timeoutMs),
    '--queue-dir', config.queue.directory,
    '--log-max-entries', String(config.logs.maxEntries),
    '--log-max-age-days', String(config.logs.maxAgeDays),
  ];
  if (config.server.token) args.push('--token', config.server.token);
  return args;
}

export function onDidChangeConfig(listener: (e: vscode.ConfigurationChangeEvent) => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration(CONFIG_SECTION)) listener(e);
  });
}
