// The one typed accessor for the extension's settings. Defaults and bounds come from the settings
// table (shared/settings.ts), which package.json's contributes.configuration mirrors; the manifest
// is what users see, the table keeps the code safe when a value is missing or of the wrong type.
import * as vscode from 'vscode';
import { SETTINGS, settingValue, type SettingKey } from '../shared/settings';
import { CONFIG_SECTION } from './constants';

export interface EngineMonitorConfig {
  server: { port: number; host: string; token: string };
  engine: {
    autoStart: boolean;
    /** With no window attached and nothing running, the engine stops after this many seconds. */
    keepAliveSeconds: number;
    pollIntervalMs: number;
    concurrency: number;
    maxAttempts: number;
    timeoutMs: number;
  };
  queue: { directory: string };
  logs: { maxEntries: number; maxAgeDays: number };
  /** What is kept of attempts' output. */
  output: { maxBytesPerAttempt: number; maxTotalMB: number };
  /** A headless engine to monitor instead of starting one (its token lives in SecretStorage). */
  remote: { url: string };
  /**
   * Hooks: commands and a URL the engine host runs and POSTs to. Restricted
   * settings: never passed to the host while the workspace is untrusted (hostArgsFor).
   */
  hooks: { onItemFailed: string; onHealthChange: string; notifyUrl: string; timeoutMs: number };
  /** A PostgreSQL database shared with a fleet; its password lives in SecretStorage. */
  store: { url: string };
}

/** The settings, each checked against the settings table (its default when missing or invalid). */
export function readConfig(): EngineMonitorConfig {
  const c = vscode.workspace.getConfiguration(CONFIG_SECTION);
  const read = <K extends SettingKey>(key: K) => settingValue(key, c.get(key));
  // Blank strings count as unset where an empty value would mean nothing useful.
  const orDefault = (key: 'server.host' | 'queue.directory') => read(key).trim() || SETTINGS[key].default;
  return {
    server: { port: read('server.port'), host: orDefault('server.host'), token: read('server.token') },
    engine: {
      autoStart: read('engine.autoStart'),
      keepAliveSeconds: read('engine.keepAliveSeconds'),
      pollIntervalMs: read('engine.pollIntervalMs'),
      concurrency: read('engine.concurrency'),
      maxAttempts: read('engine.maxAttempts'),
      timeoutMs: read('engine.timeoutMs'),
    },
    queue: { directory: orDefault('queue.directory') },
    logs: { maxEntries: read('logs.maxEntries'), maxAgeDays: read('logs.maxAgeDays') },
    output: { maxBytesPerAttempt: read('output.maxBytesPerAttempt'), maxTotalMB: read('output.maxTotalMB') },
    remote: { url: read('remote.url').trim() },
    hooks: {
      onItemFailed: read('hooks.onItemFailed').trim(),
      onHealthChange: read('hooks.onHealthChange').trim(),
      notifyUrl: read('hooks.notifyUrl').trim(),
      timeoutMs: read('hooks.timeoutMs'),
    },
    store: { url: read('store.url').trim() },
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

export function onDidChangeConfig(listener: (e: vscode.ConfigurationChangeEvent) => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration(CONFIG_SECTION)) listener(e);
  });
}
