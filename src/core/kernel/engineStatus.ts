// What the engine says about itself: its state as /health and /status report it, and the body of
// /status, assembled from the parts the engine, its poller, its scanner and its store hold.
import type { EngineState, LaunchRecord, StatsOverview, StatusResponse } from '../../shared/api';
import { ENGINE_NAME } from '../../shared/api';
import type { EngineMode, EngineOptions } from './engineOptions';
import type { StoreBackend } from '../store/backend';

/**
 * `mode`, except that a running engine whose poll has not started for three intervals is
 * reported as stalled: its loop is stuck. Measured on the monotonic clock (`msSinceLastPoll`), so
 * the wall clock jumping forward is not a stall.
 */
export function engineState(mode: EngineMode, started: boolean, msSinceLastPoll: number | null, pollIntervalMs: number): EngineState {
  if (mode !== 'running') return mode;
  if (started && msSinceLastPoll !== null && msSinceLastPoll > 3 * pollIntervalMs) return 'stalled';
  return 'running';
}

export interface StatusParts {
  version: string;
  state: EngineState;
  startedAt: number;
  options: Pick<EngineOptions, 'pollIntervalMs' | 'concurrency'>;
  /** Attempts running now. */
  running: number;
  polls: number;
  scanner: StatusResponse['scanner'];
  stats: StatsOverview;
  lastLaunch: LaunchRecord | null;
  store: Pick<StoreBackend, 'databasePath' | 'sizeBytes' | 'lastPersistTime' | 'lastError'>;
  /** The last repair of the stored state, kept in view after its log entry has scrolled away. */
  recovery: { at: string; message: string } | null;
}

/** The /status body, but for the fields the server adds (timestamp, server). */
export function engineStatus(p: StatusParts): Omit<StatusResponse, 'timestamp' | 'server'> {
  const now = Date.now();
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  return {
    engine: {
      name: ENGINE_NAME,
      version: p.version,
      state: p.state,
      startedAt: new Date(p.startedAt).toISOString(),
      uptimeMs: now - p.startedAt,
      pollIntervalMs: p.options.pollIntervalMs,
      concurrency: p.options.concurrency,
      running: p.running,
      polls: p.polls,
    },
    scanner: p.scanner,
    stats: p.stats,
    lastLaunch: p.lastLaunch ? { ...p.lastLaunch } : null,
    database: {
      path: p.store.databasePath,
      sizeBytes: p.store.sizeBytes(),
      lastPersistAt: iso(p.store.lastPersistTime),
      lastError: p.store.lastError,
      recovery: p.recovery,
    },
  };
}
