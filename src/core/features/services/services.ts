// Services: items that are expected to keep running (a dev server, a database, a watcher). A
// service's attempt is `starting` until its ready probe succeeds (probed every 250 ms; without a
// probe, once it has run 1 s), then `ready`, and what depends on it may start. A service that
// exits is started again per its `restart` policy after the usual backoff, counting consecutive
// failures (the count starts over once an attempt has been ready for 60 s); Cancel stops it for
// good; the engine stops its services in reverse dependency order when it stops.
//
// The feature joins the kernel through its hooks (an attempt spawned), judges the ends of its
// items' attempts (Attempts.judgeWith), and records every change of state through the named
// service transitions in kernel/transitions.ts.
import type { ServiceStatus } from '../../../shared/api';
import { KILL_GRACE_MS, type AttemptResult } from '../../launching/attemptProcess';
import type { AttemptLauncher } from '../../launching';
import type { ActiveAttempt, Attempts } from '../../kernel/attempts';
import { describeFailure } from '../../kernel/attemptOutcome';
import type { KernelContext } from '../../kernel/context';
import { ControlError } from '../../kernel/monitoredEngine';
import type { ProblemMatching } from '../problems/problemMatching';
import { itemFromRow, type ItemDefinition } from '../../intake/items';
import { itemState, readItem, readServiceSummary } from '../../reads/records';
import { probeFor, type ProbeParts } from './probes';

/** Between two tries of a ready probe. */
export const PROBE_EVERY_MS = 250;
/** A service without a probe is ready once it has run this long without exiting. */
export const READY_WITHOUT_PROBE_MS = 1_000;
/** Ready this long, a service's count of consecutive failures starts over. */
export const READY_RESETS_AFTER_MS = 60_000;
/** The error of an attempt the user restarted (not a failure of the service). */
const RESTARTED_BY_USER = 'restarted by the user';
const STOPPED_WITH_ENGINE = 'stopped with the engine';

export interface ServiceParts {
  launcher: AttemptLauncher;
  problems: ProblemMatching;
  outputDir(): string;
}

/** A service's attempt this engine runs, from its spawn to its end. */
interface Watch {
  a: ActiveAttempt;
  timer: NodeJS.Timeout | undefined;
  deadline: NodeJS.Timeout | undefined;
  readyAt: number | null;
  /** Ended on purpose: by the engine stopping, or the user's Restart. */
  stopping?: 'engine' | 'user';
}

export class Services {
  private readonly watches = new Map<number, Watch>();
  /** Ids of the items that are services, for /status (kept from discovery; read once at start). */
  private readonly known = new Set<string>();
  private nextProbeId = -1;
  private readonly probeParts: ProbeParts;

  constructor(
    private readonly k: KernelContext,
    private readonly attempts: Attempts,
    parts: ServiceParts,
  ) {
    this.probeParts = {
      outputDir: () => parts.outputDir(),
      matchLines: (text, pattern) => parts.problems.matchLines(text, pattern),
      runCommand: async (command, cwd, timeoutMs) => {
        // Through the launch helpers, like an attempt: spawning here would hold the event loop.
        const probe: ItemDefinition = { id: 'ready-probe', name: 'ready probe', command, args: [], shell: true, cwd, env: {}, timeoutMs, maxAttempts: 1, runAt: null };
        const result = await parts.launcher.launch(this.nextProbeId--, probe, 1).done;
        return result.succeeded;
      },
    };
    for (const row of k.store.all<{ id: string }>(`SELECT id FROM items WHERE instr(definition, '"service":{') > 0`)) this.known.add(row.id);
    k.hooks.on('itemDiscovered', (item) => item.service && this.known.add(item.id));
    k.hooks.on('itemRedefined', (item) => (item.service ? this.known.add(item.id) : this.known.delete(item.id)));
    k.hooks.on('itemsForgotten', (ids) => ids.forEach((id) => this.known.delete(id)));
    k.hooks.on('attemptSpawned', (ref) => {
      const a = attempts.active.get(ref.attemptId);
      if (a?.item.service) this.watch(a);
    });
    // A cancel ends the attempt (its process is the cancel's to end) without judging it: its probe stops here.
    k.hooks.on('outcome', (itemId, outcome) => {
      if (outcome === 'failed') for (const w of this.watches.values()) if (w.a.item.id === itemId && w.a.cancelled) this.unwatch(w);
    });
    attempts.judgeWith((a, result, how) => this.judge(a, result, how));
  }

  // ---- from spawn to ready --------------------------------------------------------------

  private watch(a: ActiveAttempt): void {
    const spec = a.item.service!;
    const w: Watch = { a, timer: undefined, deadline: undefined, readyAt: null };
    this.watches.set(a.attemptId, w);
    if (!spec.ready) {
      w.timer = setTimeout(() => this.ready(w, `ran ${READY_WITHOUT_PROBE_MS} ms without exiting`), READY_WITHOUT_PROBE_MS);
      return;
    }
    const probe = probeFor(spec.ready, a.attemptId, a.item.cwd, this.probeParts);
    w.deadline = setTimeout(() => this.end(w, `not ready within ${spec.readyTimeoutMs} ms`), spec.readyTimeoutMs);
    const attempt = async (): Promise<void> => {
      let ok: boolean;
      try {
        ok = await probe.check();
      } catch (err) {
        if (this.watches.get(a.attemptId) === w) this.end(w, `its ready probe (${probe.label}) failed: ${(err as Error).message}`);
        return;
      }
      if (this.watches.get(a.attemptId) !== w || w.readyAt !== null) return;
      if (ok) this.ready(w, probe.label);
      else w.timer = setTimeout(() => void attempt(), PROBE_EVERY_MS);
    };
    w.timer = setTimeout(() => void attempt(), PROBE_EVERY_MS);
  }

  private ready(w: Watch, how: string): void {
    clearTimeout(w.deadline);
    if (this.k.isClosed() || w.a.cancelled || !this.attempts.active.has(w.a.attemptId)) return;
    const now = Date.now();
    w.readyAt = now;
    this.k.store.batch(() => this.k.transitions.serviceReady(w.a, now, how));
    this.attempts.markReady(w.a);
    this.k.changed({ commit: 'background', dispatch: true });
  }

  /** Ends the service's processes (SIGTERM, SIGKILL after the grace); its attempt ends with `error`. */
  private end(w: Watch, error: string): void {
    clearTimeout(w.timer);
    clearTimeout(w.deadline);
    w.a.endError ??= error;
    w.a.run?.terminate(KILL_GRACE_MS);
  }

  private unwatch(w: Watch): void {
    clearTimeout(w.timer);
    clearTimeout(w.deadline);
    this.watches.delete(w.a.attemptId);
  }

  // ---- the end of a service's attempt ---------------------------------------------------

  /** In the end's batch: service_exited, then the item's next state by its restart policy. */
  private judge(a: ActiveAttempt, result: AttemptResult, how: { interrupted: boolean; details: Record<string, unknown>; held: () => boolean }): boolean {
    const spec = a.item.service;
    if (!spec) return false;
    const { transitions } = this.k;
    const w = this.watches.get(a.attemptId);
    if (w) this.unwatch(w);
    const now = result.finishedAt;
    const why = describeFailure(result);
    transitions.serviceExited(a, result, w?.readyAt !== null && w !== undefined, why, w?.stopping !== undefined);
    if (!result.succeeded) transitions.attemptFailed(a, why, how.interrupted || w?.stopping !== undefined, how.details);
    if (w?.stopping === 'engine') {
      transitions.serviceStopped(a, now);
      return true;
    }
    if (w?.stopping === 'user') {
      transitions.serviceRestartLater(a, why, now, 0, { byUser: true });
      return true;
    }
    if (spec.restart === 'never' || (spec.restart === 'on-failure' && result.succeeded)) {
      if (result.succeeded) transitions.launched(a, now, how.held, result.finishedAt - result.startedAt, how.details);
      else transitions.failedForGood(a, why, now, how.held, how.details);
      return true;
    }
    const failures = result.succeeded ? 0 : this.consecutiveFailures(a, w?.readyAt ?? null, now);
    if (failures >= a.item.maxAttempts) {
      transitions.failedForGood(a, why, now, how.held, { ...how.details, failures });
      return true;
    }
    transitions.serviceRestartLater(a, why, now, transitions.nextDelay(failures), { failures, restart: spec.restart });
    return true;
  }

  /**
   * Failures in a row up to this one (which failed): back to the service's start (attempt 1), a
   * restart by the user, or an attempt that was ready for 60 s (the count starts over in it).
   */
  private consecutiveFailures(a: ActiveAttempt, readyAt: number | null, now: number): number {
    if (a.attempt <= 1 || (readyAt !== null && now - readyAt >= READY_RESETS_AFTER_MS)) return 1;
    const rows = this.k.store.all<{ attempt: number; outcome: string; error: string | null; ready_at: number | null; finished_at: number | null }>(
      'SELECT attempt, outcome, error, ready_at, finished_at FROM attempts WHERE item_id = ? AND id < ? ORDER BY id DESC LIMIT ?',
      [a.item.id, a.attemptId, a.item.maxAttempts],
    );
    let failures = 1;
    for (const r of rows) {
      if (r.error === RESTARTED_BY_USER || r.error === STOPPED_WITH_ENGINE) break;
      if (r.outcome === 'failed') failures++;
      if (r.attempt <= 1 || (r.ready_at !== null && r.finished_at !== null && r.finished_at - r.ready_at >= READY_RESETS_AFTER_MS)) break;
    }
    return failures;
  }

  // ---- control --------------------------------------------------------------------------

  /**
   * Restart Service: a running service's processes are ended and it starts again at once; a
   * stopped one (failed, or exited 0) is started again, like Retry.
   */
  restart(itemId: string, retry: (itemId: string) => void): void {
    const row = readItem(this.k.store, itemId);
    if (!row) throw new ControlError('not_found', `no item has id "${itemId}"`);
    if (!itemFromRow(row.definition, row).service) throw new ControlError('conflict', `"${row.name}" is not a service (only an item with "service": true can be restarted); use Retry for other items`);
    const a = this.attempts.of(itemId);
    const w = a && [...this.watches.values()].find((x) => x.a === a);
    if (w) {
      w.stopping = 'user';
      this.end(w, RESTARTED_BY_USER);
      return;
    }
    if (row.outcome === 'pending') throw new ControlError('conflict', `"${row.name}" is not running yet: it starts when it is due (${itemState(row, Date.now())})`);
    if (row.outcome === 'failed') return retry(itemId);
    this.k.store.batch(() => this.k.transitions.serviceStartedByHand(row));
    this.k.changed({ commit: 'sync', dispatch: true });
  }

  /**
   * The engine stops: its services are ended in reverse dependency order (a service another one
   * depends on ends after it), each given the grace period; each is recorded pending, to start
   * afresh when the engine launches again. Resolves once every one has exited and is recorded.
   */
  async stopAll(): Promise<void> {
    // Those a Stop is ending already are waited for too (a shutdown right after a Stop); one the
    // user is restarting is stopped with the engine instead.
    let left = [...this.watches.values()].filter((w) => !w.a.cancelled);
    for (const w of left) w.stopping = 'engine';
    while (left.length > 0) {
      const needed = new Set(left.flatMap((w) => w.a.item.dependsOn ?? []));
      let wave = left.filter((w) => !needed.has(w.a.item.id));
      if (wave.length === 0) wave = left;
      for (const w of wave) this.end(w, STOPPED_WITH_ENGINE);
      await Promise.all(wave.flatMap((w): Promise<unknown>[] => (w.a.recorded ? [w.a.recorded] : w.a.run ? [w.a.run.done] : [])));
      left = left.filter((w) => !wave.includes(w));
    }
  }

  /** Whether `a` is a service's attempt (the engine's shutdown waits only for the others). */
  isService(a: ActiveAttempt): boolean {
    return a.item.service !== undefined;
  }

  /** /metrics: services by state; one read per service, of which there are few. */
  counts(): Record<'starting' | 'ready' | 'stopped', number> {
    const counts = { starting: 0, ready: 0, stopped: 0 };
    const now = Date.now();
    for (const id of this.known) {
      const row = readItem(this.k.store, id);
      if (!row) continue;
      const state = itemState(row, now);
      counts[state === 'starting' || state === 'ready' ? state : 'stopped']++;
    }
    return counts;
  }

  /** /status.services: every service, by discovery order. */
  status(): ServiceStatus[] {
    const rows = [...this.known].flatMap((id) => readItem(this.k.store, id) ?? []).sort((x, y) => x.seq - y.seq);
    const now = Date.now();
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      state: itemState(r, now),
      pid: this.attempts.of(r.id)?.run?.pid ?? null,
      ...readServiceSummary(this.k.store, r),
    }));
  }
}
