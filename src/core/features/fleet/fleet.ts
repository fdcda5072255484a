// What an engine does only on a PostgreSQL store shared by a fleet: fleet-wide
// counters and /status.fleet from the shared database, taking over the attempts of engines whose
// lease expired, other engines' log entries for /events (LISTEN/NOTIFY), and the work that waits
// in memory while the database is unreachable (outcomes of attempts that ended, log entries), and
// what engines whose workspace folders differ tell people about it.
import type { AttemptProblem, FleetEngine, LogAction, LogLevel, StatsOverview, StatusResponse } from '../../../shared/api';
import type { AttemptResult } from '../../launching/attemptProcess';
import type { EngineEventBus } from '../../kernel/eventBus';
import { itemFromRow, type ItemDefinition } from '../../intake/items';
import { isInside } from '../../intake/workingFolder';
import { LOG_LEVELS } from '../../../shared/api';
import { statsOverview } from '../../reads/records';
import type { FleetCounters, FleetEngineRow, PgStore } from '../../store/pgStore';

export type LogArgs = [LogAction, LogLevel, string, string | null, Record<string, unknown> | null];

export interface LostAttempt {
  id: number;
  attempt: number;
  startedAt: number;
  item: ItemDefinition;
  engineId: string;
}

export class FleetWork {
  private lastCounters: FleetCounters = { launched: 0, pending: 0, failed: 0, held: 0, running: 0, total_launches: 0, total_failed: 0 };
  private lastFleet: FleetEngine[] = [];
  private deferred: [{ attemptId: number }, AttemptResult, AttemptProblem[] | null][] = [];
  private unwrittenLogs: LogArgs[] = [];
  /** Whether the log said already that no other engine shares this engine's workspace folders. */
  private saidAlone = false;
  private lastWorkspaceCheck = 0;

  constructor(
    readonly store: PgStore,
    private readonly events: EngineEventBus,
    private readonly workspaces: readonly string[],
  ) {}

  /** /stats from the counters row the triggers keep (one read); the last one read while the database is unreachable. */
  stats(lastPollAt: number | null): StatsOverview {
    try {
      this.lastCounters = this.store.counters();
    } catch {
      // /health says why; /stats keeps answering with what was last known.
    }
    const c = this.lastCounters;
    return statsOverview(
      { launched: c.launched, pending: c.pending, failed: c.failed, held: c.held, totalLaunches: c.total_launches, totalFailed: c.total_failed },
      lastPollAt,
      c.running,
    );
  }

  /** /status with the fleet: every engine in the engines table, `lost` once its lease has expired. */
  status<T extends Omit<StatusResponse, 'timestamp' | 'server'>>(body: T): T {
    try {
      this.lastFleet = this.store.engines().map((e) => ({
        engineId: e.engine_id,
        host: e.host,
        pid: e.pid,
        state: e.lease_until < e.now ? 'lost' : (e.state as FleetEngine['state']),
        startedAt: new Date(e.started_at).toISOString(),
        lastHeartbeatAt: new Date(e.last_heartbeat_at).toISOString(),
        running: e.running,
        workspaces: folders(e),
      }));
    } catch {
      // Unreachable: the last list read.
    }
    return { ...body, engine: { ...body.engine, engineId: this.store.engineId }, fleet: this.lastFleet };
  }

  /**
   * Why an item due now waits, when this engine cannot start it (its cwd is outside this engine's
   * workspace folders): the engines that can, or that none of the live ones can. Undefined when
   * this engine can, or the fleet cannot be read.
   */
  whyWaiting(cwd: string): string | undefined {
    if (this.workspaces.some((w) => isInside(w, cwd))) return undefined;
    let live: FleetEngineRow[];
    try {
      live = this.store.engines().filter((e) => e.lease_until >= e.now && e.state !== 'stopped');
    } catch {
      return undefined;
    }
    const able = live.filter((e) => folders(e).some((w) => isInside(w, cwd)));
    if (able.length > 0) {
      return `an engine whose workspace folders hold its cwd "${cwd}": ${able.map(name).join(', ')} can start it (this engine's folders: ${this.workspaces.join(', ')})`;
    }
    return (
      `an engine whose workspace folders hold its cwd "${cwd}": none of the ${live.length} live engine(s) of the fleet can start it ` +
      `(${live.map((e) => `${name(e)}: ${folders(e).join(', ') || 'no folders recorded'}`).join('; ')}); ` +
      `start an engine with --workspace set to that folder or one above it`
    );
  }

  /**
   * Once in the engine's life, as soon as other engines are seen: a warning when none of them
   * shares a workspace folder with this one, so its items run here only and it runs none of
   * theirs. Allowed (hosts may split the work on purpose), but rarely what was meant.
   */
  checkWorkspaces(warn: (message: string, details: Record<string, unknown>) => void): void {
    const now = Date.now();
    if (this.saidAlone || now - this.lastWorkspaceCheck < 5000) return;
    this.lastWorkspaceCheck = now;
    const others = this.store.engines().filter((e) => e.engine_id !== this.store.engineId && e.lease_until >= e.now && e.state !== 'stopped');
    if (others.length === 0) return;
    const overlaps = (e: FleetEngineRow) => folders(e).some((w) => this.workspaces.some((ours) => isInside(w, ours) || isInside(ours, w)));
    if (others.some(overlaps)) return;
    this.saidAlone = true;
    warn(
      `this engine's workspace folders (${this.workspaces.join(', ')}) match no other engine of the fleet ` +
        `(${others.map((e) => `${name(e)}: ${folders(e).join(', ') || 'none recorded'}`).join('; ')}): ` +
        `items whose cwd is in them run on this engine only, and it runs none of the other engines' items`,
      { workspaceFolders: this.workspaces, others: others.map((e) => ({ engineId: e.engine_id, workspaces: folders(e) })) },
    );
  }

  /**
   * Running attempts of engines whose lease expired (or that are gone from the engines table),
   * locked so that exactly one engine records each as interrupted. Call inside a transaction.
   */
  claimLostAttempts(): LostAttempt[] {
    return this.store
      .query<{ id: number; attempt: number; started_at: number; definition: string; engine_id: string; item_id: string; name: string; max_attempts: number; run_at: number | null }>(
        `SELECT a.id, a.attempt, a.started_at, i.definition, a.engine_id, i.id AS item_id, i.name, i.max_attempts, i.run_at FROM attempts a JOIN items i ON i.id = a.item_id
         WHERE a.outcome = 'running' AND a.engine_id IS DISTINCT FROM $1
           AND NOT EXISTS (SELECT 1 FROM engines e WHERE e.engine_id = a.engine_id AND e.lease_until >= em_now())
         ORDER BY a.id LIMIT 100 FOR UPDATE OF a SKIP LOCKED`,
        [this.store.engineId],
      )
      .map((r) => ({ id: r.id, attempt: r.attempt, startedAt: r.started_at, item: itemFromRow(r.definition, { ...r, id: r.item_id }), engineId: r.engine_id }));
  }

  /** Another engine committed a log entry: /events listeners get it as if it were ours. */
  remoteLog(id: number): void {
    if (!this.events.hasListeners) return;
    try {
      const r = this.store.query<{ id: number; ts: number; action: LogAction; level: number; message: string; item_id: string | null; details: string | null; engine_id: string | null }>(
        'SELECT id, ts, action, level, message, item_id, details, engine_id FROM logs WHERE id = $1',
        [id],
      )[0];
      if (!r || r.engine_id === this.store.engineId) return;
      this.events.emit({
        type: 'log',
        entry: {
          id: r.id,
          timestamp: new Date(r.ts).toISOString(),
          action: r.action,
          level: LOG_LEVELS[r.level] ?? 'info',
          message: r.message,
          itemId: r.item_id,
          details: r.details === null ? null : (JSON.parse(r.details) as Record<string, unknown>),
          engineId: r.engine_id,
        },
      });
    } catch {
      // A reader that missed it finds it in /logs.
    }
  }

  /** An outcome (with what the problem matcher found) to record once the database is back. */
  defer<A extends { attemptId: number }>(a: A, result: AttemptResult, problems: AttemptProblem[] | null): void {
    this.deferred.push([a, result, problems]);
  }

  takeDeferred<A extends { attemptId: number }>(): [A, AttemptResult, AttemptProblem[] | null][] {
    const d = this.deferred as [A, AttemptResult, AttemptProblem[] | null][];
    this.deferred = [];
    return d;
  }

  keepLog(entry: LogArgs): void {
    // A database down for hours must not grow memory without bound: the newest entries are kept.
    if (this.unwrittenLogs.length >= 10_000) this.unwrittenLogs.shift();
    this.unwrittenLogs.push(entry);
  }

  takeUnwrittenLogs(): LogArgs[] {
    const l = this.unwrittenLogs;
    this.unwrittenLogs = [];
    return l;
  }
}

/** An engine's workspace folders as recorded at join (none for an engine of an older build). */
function folders(e: FleetEngineRow): string[] {
  try {
    const v = JSON.parse(e.workspaces ?? '[]') as unknown;
    return Array.isArray(v) ? v.filter((f): f is string => typeof f === 'string') : [];
  } catch {
    return [];
  }
}

function name(e: FleetEngineRow): string {
  return `engine ${e.engine_id}`;
}
