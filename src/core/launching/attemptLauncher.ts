// The engine's client of its launch helpers (src/host/launchHelperMain.ts): small processes forked
// by the engine that spawn attempts for it, so the engine's event loop never blocks in
// child_process.spawn() (a fork of a 100–800 MB process, docs/PERFORMANCE.md).
//
// A pool of them (EngineOptions.launchHelpers; two by default, one on a single core): spawn()
// blocks the calling thread for the whole fork + exec handshake, so one helper is busy ~1 ms per
// launch whatever the core count, and a second one overlaps its spawns on the other core. Each
// launch goes to the ready helper with the fewest attempts in flight.
//
// Launches keep the RunningAttempt shape of in-process launching; only the pid arrives later.
// Failure handling, for each helper of the pool on its own:
// - a helper dies: its attempts finish as failed (the engine retries them with backoff), their
//   process groups are ended by the pids the helper reported, what left those groups is swept by
//   the attempts' markers (chosen here for that reason), and the next launch forks a replacement,
//   later and later if it keeps dying; meanwhile launches go to the other helpers;
// - the engine dies: each helper sees its IPC channel close and ends every attempt's group;
// - a helper stops answering (SIGSTOP, a hang): it is the one enforcing its attempts' timeouts,
//   so a ping every second that goes unanswered for UNRESPONSIVE_MS gets it killed with SIGKILL,
//   logged, and then handled as a dead helper;
// - a helper cannot start (file missing, crashes before it is ready): the others carry the
//   launches; when none can start at all, launches run in-process.
//
// Which file the helper is, and with which Node options it runs, is the host's knowledge
// (src/host/launchHelperEntry.ts): it passes the entry in, and this folder only forks it.
//
// This file is the pool and its queue of launches; helperProcess.ts forks one helper, outbox.ts
// batches what is said to it, watchdog.ts kills one that stops answering, inProcess.ts is the
// fallback, and helperCheckpoints.ts runs the store's checkpoints in the helpers' processes.
import { existsSync } from 'node:fs';
import { KILL_GRACE_MS, resultWithoutProcess, type RunningAttempt } from './attemptProcess';
import type { ItemDefinition } from '../intake/items';
import { LeftoverSweeper } from './leftoverProcesses';
import type { OutputTarget } from '../features/output/outputFiles';
import type { CheckpointJob, CheckpointRun } from '../store';
import { HelperAttempt } from './helperAttempt';
import { HelperCheckpoints } from './helperCheckpoints';
import { forkHelper, type Helper, type Slot } from './helperProcess';
import { endOrphaned, launchInProcess } from './inProcess';
import { DEFAULT_LAUNCH_HELPERS, MAX_LAUNCH_HELPERS, type AttemptLauncherOptions, type LaunchHelperEntry } from './options';
import { post, sendOutbox } from './outbox';
import type { FromLaunchHelper, ToLaunchHelper } from './protocol';
import { watchHelper } from './watchdog';
import { windowsTreesEnded } from './windowsTree';

/** A helper that started but never became ready this many times in a row: its place in the pool gives up. */
const MAX_START_FAILURES = 3;
/** A helper that dies sooner than this after its start counts towards the restart backoff. */
const HEALTHY_LIFETIME_MS = 10_000;
const RESTART_BACKOFF_BASE_MS = 500;
const RESTART_BACKOFF_MAX_MS = 30_000;

/**
 * Launches attempts through a pool of launch helper processes, or in-process when no helper can
 * run. One per engine.
 */
export class AttemptLauncher {
  private readonly entry: LaunchHelperEntry | undefined;
  private readonly slots: Slot[];
  /** Launches waiting for a helper that is starting (or restarting after its backoff). */
  private queue: HelperAttempt[] = [];
  /** Checkpoints run by the helpers, or waiting for one that is starting. */
  private readonly checkpoints = new HelperCheckpoints();
  private inProcess = false;
  private closed = false;
  private spawnTotals = { spawns: 0, spawnMs: 0 };
  /**
   * Leftovers of attempts launched in this process, and of a dead helper's attempts. Its own, not
   * the process-wide one, so that closing this launcher ends only what its own attempts left.
   */
  private readonly sweeper = new LeftoverSweeper({ graceMs: KILL_GRACE_MS });
  /** The workspace folders every launch message carries (one copy, not one per launch). */
  private readonly workspaceFolders: string[] | undefined;

  constructor(private readonly options: AttemptLauncherOptions = {}) {
    this.entry = options.entry ?? undefined;
    this.workspaceFolders = options.workspaceFolders ? [...options.workspaceFolders] : undefined;
    if (options.entry === null) this.inProcess = true;
    const size = Math.min(MAX_LAUNCH_HELPERS, Math.max(1, Math.floor(options.helpers ?? DEFAULT_LAUNCH_HELPERS)));
    this.slots = Array.from({ length: size }, (_, i) => ({
      number: i + 1,
      helper: undefined,
      restartTimer: undefined,
      restartNotBefore: 0,
      quickDeaths: 0,
      startFailures: 0,
      disabled: false,
    }));
  }

  /** Starts the attempt's process; the engine calls this only after the attempt is journaled. */
  launch(attemptId: number, item: ItemDefinition, attempt: number, output?: OutputTarget): RunningAttempt {
    const a = new HelperAttempt(attemptId, item, attempt, this, output);
    if (this.closed) {
      a.finish(resultWithoutProcess(a.startedAt, 'the engine is shutting down; not launched'));
    } else if (this.inProcess) {
      launchInProcess(a, this.options, this.sweeper);
    } else {
      this.queue.push(a);
      this.ensureHelpers();
      this.flush();
    }
    return a;
  }

  /** Starts the helpers now rather than at the first launch (no-op when launching in-process). */
  prepare(): void {
    if (!this.closed) this.ensureHelpers();
  }

  /**
   * Runs a store checkpoint in a process a helper starts (StoreOptions.runCheckpoint). While the
   * helpers are starting it waits for the first one ready; undefined when no helper will run it
   * (launching in-process, or shutting down): the store then uses a worker thread.
   */
  runCheckpoint(job: CheckpointJob): CheckpointRun | undefined {
    if (this.closed) return undefined;
    // An engine that has not launched anything yet may have no helper: start them.
    this.ensureHelpers();
    if (this.inProcess) return undefined;
    const h = this.leastBusyHelper();
    return h ? this.checkpoints.runIn(h, job) : this.checkpoints.waitForHelper(job);
  }

  /** Where the spawns happen now, for the benchmark and tests. */
  get mode(): 'helper' | 'in-process' {
    return this.inProcess ? 'in-process' : 'helper';
  }

  /** How many helpers the pool holds when all are running. */
  get poolSize(): number {
    return this.slots.length;
  }

  /** Pid of the first helper of the pool that is running (ready or starting), if any. */
  get helperPid(): number | undefined {
    for (const slot of this.slots) if (slot.helper) return slot.helper.child.pid;
    return undefined;
  }

  /** Pids of the helpers ready for launches, in pool order. */
  get helperPids(): number[] {
    const pids: number[] = [];
    for (const slot of this.slots) {
      const h = slot.helper;
      if (h?.ready && !h.closing && h.child.pid !== undefined) pids.push(h.child.pid);
    }
    return pids;
  }

  /** Pid of the helper `run` was sent to (undefined: launched in-process, or not sent yet). */
  helperPidOf(run: RunningAttempt): number | undefined {
    return run instanceof HelperAttempt ? run.helper?.child.pid : undefined;
  }

  /** How long the helpers' threads were blocked in spawn(), summed over the attempts they launched. */
  helperSpawnStats(): { spawns: number; spawnMs: number } {
    return { ...this.spawnTotals };
  }

  /**
   * Ends the helpers: attempts still running get SIGTERM, SIGKILL after `graceMs`, and this
   * resolves once every helper has exited. The engine calls it last in its shutdown.
   */
  async close(graceMs = 1000): Promise<void> {
    this.closed = true;
    for (const slot of this.slots) clearTimeout(slot.restartTimer);
    for (const a of this.queue.splice(0)) a.finish(resultWithoutProcess(a.startedAt, 'the engine shut down before it was launched'));
    // The store gives up its checkpoint before this (Store.abandonCheckpoint); one still waiting
    // for a helper is built where it would have been without helpers.
    this.checkpoints.startWaitingOnThreads();
    const helpers = this.slots.flatMap((slot) => (slot.helper ? [slot.helper] : []));
    await Promise.all(helpers.map((h) => this.closeHelper(h, graceMs)));
    // Windows: the process trees being ended (a timeout, a cancel, this shutdown) are, before the engine exits.
    await windowsTreesEnded();
    // The helpers swept their own attempts' leftovers; these are what a helper killed for hanging
    // (or an earlier one that died) could not.
    await this.endLeftovers(graceMs);
  }

  private async closeHelper(h: Helper, graceMs: number): Promise<void> {
    h.closing = true;
    if (h.child.connected) {
      // Now, after whatever this turn said to it before.
      post(h, { type: 'close', graceMs });
      sendOutbox(h);
    } else h.child.kill('SIGTERM');
    // The helper exits on its own within the grace; a wedged one does not hold the engine.
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        h.child.kill('SIGKILL');
        resolve();
      }, graceMs + 2000);
    });
    await Promise.race([h.exited, killed]);
    clearTimeout(timer);
  }

  /**
   * Ends everything still carrying the marker of an attempt this launcher swept for: SIGTERM,
   * SIGKILL after `graceMs` to what is left. Shutdown only: the sweeps' timer does not hold the
   * process open, so nothing else would.
   */
  private async endLeftovers(graceMs: number): Promise<void> {
    if (this.sweeper.sweepAll('SIGTERM') > 0) {
      const deadline = performance.now() + graceMs;
      while (performance.now() < deadline && this.sweeper.sweep() > 0) await new Promise((r) => setTimeout(r, 100));
      this.sweeper.sweepAll('SIGKILL');
    }
    this.sweeper.dispose();
  }

  terminate(a: HelperAttempt, graceMs: number): void {
    if (a.finished) return;
    if (a.inProcess) {
      a.inProcess.terminate(graceMs);
      return;
    }
    const queued = this.queue.indexOf(a);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      a.finish(resultWithoutProcess(a.startedAt, 'ended before it was launched'));
      return;
    }
    const h = a.helper;
    // Behind its launch in the same outbox, if that has not gone yet: the helper sees it second.
    if (h?.attempts.has(a.attemptId) && h.child.connected) post(h, { type: 'terminate', attemptId: a.attemptId, graceMs });
  }

  // ---- the helper processes -------------------------------------------------------------

  /**
   * Starts a helper in a slot that has none (each after its own backoff), one at a time: each fork
   * blocks this event loop for as long as forking this (large) process takes, 20–200 ms on a
   * loaded machine, and two back to back made the engine's poll late enough to be reported
   * stalled. The next one starts when this one is ready (or has failed).
   */
  private ensureHelpers(): void {
    if (this.closed || this.inProcess) return;
    if (this.slots.some((s) => s.helper && !s.helper.ready)) return;
    for (const slot of this.slots) {
      if (slot.helper || slot.restartTimer || slot.disabled) continue;
      this.startHelper(slot);
      // A missing helper file makes this launcher fall back at once; a fork that threw leaves the
      // slot to its backoff, and the next slot may try.
      if (this.inProcess || slot.helper) return;
    }
  }

  private startHelper(slot: Slot): void {
    if (!this.entry || !existsSync(this.entry.file)) {
      this.fallBack(this.entry ? `${this.entry.file} is missing` : 'no launch helper was found (run "npm run build")', {});
      return;
    }
    const wait = slot.restartNotBefore - Date.now();
    if (wait > 0) {
      slot.restartTimer = setTimeout(() => {
        slot.restartTimer = undefined;
        this.ensureHelpers();
      }, wait);
      return;
    }
    try {
      slot.helper = forkHelper(this.entry, slot, { message: (h, m) => this.onMessage(h, m), exit: (h, code, signal, error) => this.onExit(h, code, signal, error) });
    } catch (err) {
      this.startFailed(slot, `fork failed: ${(err as Error).message}`);
    }
  }

  /** The ready helper with the fewest attempts in flight (the first of the pool on a tie). */
  private leastBusyHelper(): Helper | undefined {
    let best: Helper | undefined;
    for (const slot of this.slots) {
      const h = slot.helper;
      if (!h?.ready || h.closing || !h.child.connected) continue;
      if (!best || h.attempts.size < best.attempts.size) best = h;
    }
    return best;
  }

  private flush(): void {
    if (this.inProcess) {
      for (const a of this.queue.splice(0)) launchInProcess(a, this.options, this.sweeper);
      return;
    }
    if (this.queue.length === 0) return;
    if (!this.leastBusyHelper()) return;
    for (const a of this.queue.splice(0)) {
      const h = this.leastBusyHelper()!;
      a.helper = h;
      h.attempts.set(a.attemptId, a);
      // A failed send means the helper is dying: its exit fails the attempt like any it ran.
      const launch: ToLaunchHelper = { type: 'launch', attemptId: a.attemptId, item: a.item, attempt: a.attempt, marker: a.marker };
      if (this.workspaceFolders) launch.workspaceFolders = this.workspaceFolders;
      if (a.output) launch.output = a.output;
      post(h, launch);
    }
  }

  private onMessage(h: Helper, m: FromLaunchHelper): void {
    h.lastHeardAt = performance.now();
    switch (m.type) {
      case 'ready':
        h.ready = true;
        clearTimeout(h.readyTimer);
        h.slot.startFailures = 0;
        watchHelper(h, (silentMs) =>
          this.options.warn?.(
            `launch helper ${h.child.pid} did not answer for ${Math.round(silentMs / 1000)} s (stopped or hung) and was killed; its running attempts fail and are retried, and a new helper starts`,
            { pid: h.child.pid ?? null, silentMs: Math.round(silentMs), attempts: h.attempts.size },
          ),
        );
        this.flush();
        this.checkpoints.startWaitingIn(h);
        // The rest of the pool, one fork at a time.
        this.ensureHelpers();
        break;
      case 'pong':
        break;
      case 'started': {
        const a = h.attempts.get(m.attemptId);
        if (a) a.pid = m.pid;
        this.spawnTotals.spawns++;
        this.spawnTotals.spawnMs += m.spawnMs;
        break;
      }
      case 'done': {
        const a = h.attempts.get(m.attemptId);
        if (!a) return;
        h.attempts.delete(m.attemptId);
        a.finish(m.result);
        break;
      }
      case 'output_error':
        this.options.onOutputError?.(m.attemptId, m.error);
        break;
      case 'checkpointed':
        this.checkpoints.answered(h, m);
        break;
    }
  }

  private onExit(h: Helper, code: number | null, signal: NodeJS.Signals | null, error?: string): void {
    clearInterval(h.watchdog);
    clearTimeout(h.readyTimer);
    // Never to be sent: its attempts among them fail below like those it had.
    h.outbox = [];
    const slot = h.slot;
    if (slot.helper !== h) return;
    slot.helper = undefined;
    const how = error ?? h.killedBecause ?? (signal ? `signal ${signal}` : `exit code ${code}`);
    this.checkpoints.helperExited(h, how);
    if (h.closing) {
      // Normally the helper ended these itself; not if it had to be killed for hanging.
      for (const a of h.attempts.values()) {
        if (signal === 'SIGKILL') endOrphaned(a, this.sweeper);
        a.finish(resultWithoutProcess(a.startedAt, 'ended by the engine shutdown'));
      }
      return;
    }
    if (!h.ready) {
      // Nothing was sent to it: the queued launches wait for the next helper, or run in-process.
      this.startFailed(slot, `the launch helper exited before it was ready (${how})`);
      return;
    }
    // Its attempts' processes live on in their own process groups; nobody would reap or time
    // them out now, so end them, and let the engine retry the attempts as failed. The other
    // helpers' attempts are not theirs to worry about.
    for (const a of h.attempts.values()) {
      endOrphaned(a, this.sweeper);
      a.finish({
        ...resultWithoutProcess(a.startedAt, `launch helper exited unexpectedly (${how}); the attempt's processes were ended`),
        pid: a.pid,
      });
    }
    const lived = Date.now() - h.startedAt;
    slot.quickDeaths = lived < HEALTHY_LIFETIME_MS ? slot.quickDeaths + 1 : 1;
    const delay = slot.quickDeaths <= 1 ? 0 : Math.min(RESTART_BACKOFF_BASE_MS * 2 ** (slot.quickDeaths - 2), RESTART_BACKOFF_MAX_MS);
    slot.restartNotBefore = Date.now() + delay;
    // A replacement starts with the next launch; at once if some are waiting for it.
    if (this.waiting()) this.ensureHelpers();
  }

  /** Launches or checkpoints are waiting for a helper. */
  private waiting(): boolean {
    return this.queue.length > 0 || this.checkpoints.anyWaiting;
  }

  private startFailed(slot: Slot, reason: string): void {
    slot.startFailures++;
    if (slot.startFailures >= MAX_START_FAILURES) {
      slot.disabled = true;
      if (this.slots.every((s) => s.disabled)) {
        this.fallBack(reason, { attempts: slot.startFailures });
        return;
      }
      // Said only when the others already work: while all of them keep failing the same way, the
      // fallback's single warning says it.
      if (this.leastBusyHelper()) {
        this.options.warn?.(`launch helper ${slot.number} of ${this.slots.length} could not start (${reason}); launching through the others`, {
          reason,
          attempts: slot.startFailures,
          helper: this.entry?.file ?? null,
        });
      }
      // A slot whose restart came due while this one was starting has not started yet.
      if (this.waiting()) this.ensureHelpers();
      return;
    }
    slot.restartNotBefore = Date.now() + RESTART_BACKOFF_BASE_MS * 2 ** (slot.startFailures - 1);
    if (this.waiting()) this.ensureHelpers();
  }

  private fallBack(reason: string, details: Record<string, unknown>): void {
    if (this.inProcess) return;
    this.inProcess = true;
    for (const slot of this.slots) clearTimeout(slot.restartTimer);
    this.options.warn?.(`launch helper unavailable: ${reason}; launching in the engine's own process (slower, and its event loop blocks in each spawn)`, {
      ...details,
      reason,
      helper: this.entry?.file ?? null,
    });
    this.flush();
    this.checkpoints.startWaitingOnThreads();
  }
}
