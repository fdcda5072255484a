// Which engine this window shows, with the data each kind needs: the engine host on this
// workspace's storage, which this window started or attached to over its control connection
// (local), an engine that owns the storage folder but did not accept this window's control
// connection, read only (attached), or a headless engine at engineMonitor.remote.url (remote). The state the status bar, the views and the
// `engineMonitor.hostState` context key use is derived from it.
import type { EngineLock } from '../shared/hostProtocol';

/**
 * off: no engine; starting; running: the host this window controls (whichever window started it);
 * attached: an engine this window reads only; remote: a headless engine at
 * engineMonitor.remote.url; failed: gave up (or a bad remote URL).
 */
export type HostState = 'off' | 'starting' | 'running' | 'attached' | 'remote' | 'failed';

export type EngineMode =
  | { kind: 'local'; state: 'off' | 'starting' }
  /** `argsKey`: the settings and folders it was started with; a change to them restarts it. */
  | { kind: 'local'; state: 'running'; argsKey: string }
  /** It could not start, or kept exiting; `error` says why. */
  | { kind: 'local'; state: 'failed'; error: string }
  /** The engine named by `lock` refused this window's control connection: this window only reads it. */
  | { kind: 'attached'; lock: EngineLock }
  | { kind: 'remote'; url: string }
  /** engineMonitor.remote.url is set but is not a usable URL: state failed, and no engine runs here. */
  | { kind: 'remote'; url: undefined; error: string };

export function hostStateOf(mode: EngineMode): HostState {
  switch (mode.kind) {
    case 'local':
      return mode.state;
    case 'attached':
      return 'attached';
    case 'remote':
      return mode.url === undefined ? 'failed' : 'remote';
  }
}
