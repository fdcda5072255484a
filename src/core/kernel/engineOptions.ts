// What the engine is told when it is created: where to look for items, how to launch them, how
// much to keep and where. The host builds it from the CLI flags or the extension's settings; the
// defaults of the optional fields live with the code that uses them (persistence.ts,
// retryPolicy.ts).
import type { LaunchHelperEntry } from '../launching';

export interface EngineOptions {
  workspaceFolders: string[];
  /**
   * A PostgreSQL store shared by a fleet of engines, e.g.
   * `postgres://user@host:5432/db`; undefined: the sql.js store in `storageDir`. The folder still
   * holds this engine's lock and attempts' output.
   */
  storeUrl?: string;
  /** On a PostgreSQL store: how long this engine's claim on its attempts lasts unless renewed (default 30 000). */
  leaseMs?: number;
  /** null: memory only (tests); otherwise the folder for engine.sqlite and its journal. */
  storageDir: string | null;
  queueDirectory: string;
  pollIntervalMs: number;
  concurrency: number;
  maxAttempts: number;
  timeoutMs: number;
  logMaxEntries: number;
  logMaxAgeDays: number;
  /** How the engine starts: launching, stopped by the user/settings, or restricted (untrusted). */
  initialMode: EngineMode;
  version: string;
  /**
   * Full snapshot cadence at most; the journal covers what happens in between. A snapshot is
   * taken only once the journal is worth folding in (snapshotMinJournalBytes).
   */
  snapshotIntervalMs?: number;
  /**
   * The journal a snapshot waits for: at least this many bytes (default 1 MiB) and 1/32 of the
   * snapshot it would rewrite. 0: every interval in which something changed.
   */
  snapshotMinJournalBytes?: number;
  /**
   * Captured output per attempt (engineMonitor.output.maxBytesPerAttempt, default 10 MiB): beyond
   * it, the first quarter and the last three quarters are kept (src/core/features/output/outputFiles.ts).
   */
  outputMaxBytes?: number;
  /** false: attempts' output is not captured at all (benchmarks measure what capturing costs). Default true. */
  captureOutput?: boolean;
  /** All captured output together, in MiB (engineMonitor.output.maxTotalMB, default 1024): the oldest goes first. */
  outputMaxTotalMB?: number;
  /**
   * How long a queue file's own problem matcher may take on one attempt's output before its thread
   * is stopped (default 5 000 ms, src/core/features/problems/matcherThread.ts); tests may shorten it.
   */
  matcherBudgetMs?: number;
  /** Base of the exponential backoff (1 s); tests may shorten it. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /**
   * Where attempts are spawned: an entry, in that launch helper process (found by the host,
   * src/host/launchHelperEntry.ts); null, in the engine's own process; undefined, none was found:
   * in the engine's own process after one warning.
   */
  launchHelper?: LaunchHelperEntry | null;
  /**
   * How many launch helper processes share the launches (1–16; default two, one on a single core):
   * a spawn blocks its helper for the whole fork + exec handshake, and a second helper overlaps
   * those on another core (docs/PERFORMANCE.md, "Launch throughput"). 1: a single helper.
   */
  launchHelpers?: number;
  /**
   * Storage is writable again after a failure (the folder was removed and recreated, say): called
   * before any launch, for the host to put back what it keeps there (its lock). False: the folder
   * is not this engine's any more, and it launches nothing from then on.
   */
  onStorageRecovered?: () => boolean;
  /**
   * Test-only: the wall clock schedule occurrences are computed against (default Date.now), so
   * the schedule tests can step across minute boundaries and downtime without waiting for them.
   * Attempts, backoff and logs keep the real clock. The host never sets it.
   */
  scheduleClock?: () => number;
}

/** Launching items, stopped (by the user or the settings), or restricted until the workspace is trusted. */
export type EngineMode = 'running' | 'stopped' | 'restricted';
