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
// (src/host/launchHelperEntry.ts): it passes the entry in, and this file only forks it.
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import type { ItemDefinition } from './items';
import { KILL_GRACE_MS, launchAttempt, resultWithoutProcess, type AttemptResult, type RunningAttempt } from './attemptProcess';
import type { FromLaunchHelper, LaunchHelperPacket, ToLaunchHelper } from './launchHelperProtocol';
import { LeftoverSweeper, newAttemptMarker } from './leftoverProcesses';
import { endGroup } from './processGroup';
import type { OutputTarget } from './outputFiles';
import { checkpointProcessArgs, startCheckpointThread, type CheckpointJob, type CheckpointMessage, type CheckpointRun } from './store';

/** How to start the helper: the file to fork and the Node options it runs with. */
export interface LaunchHelperEntry {
  file: string;
  execArgv: string[];
}

export interface AttemptLauncherOptions {
  /**
   * The helper to fork; null: always launch in-process (by choice, without a warning);
   * undefined: none was found, so launch in-process after one warning.
   */
  entry?: LaunchHelperEntry | null;
  /**
   * How many helpers share the launches (EngineOptions.launchHelpers): default
   * DEFAULT_LAUNCH_HELPERS; 1 is a single helper.
   */
  helpers?: number;
  /** Warnings worth a log entry (the fallback to in-process launching). */
  warn?: (message: string, details: Record<string, unknown>) => void;
  /** The engine's workspace folders: an attempt's `cwd` must lead into one of them when it starts. */
  workspaceFolders?: readonly string[];
  /** Capturing an attempt's output failed (disk full…), wherever it runs; the attempt runs on. */
  onOutputError?: (attemptId: number, error: string) => void;
}

/**
 * Two helpers, or one on a single core: two bare spawner processes finish 2,000 launches 1.35 ×
 * faster than one on two cores, a third adds nothing there (docs/PERFORMANCE.md, #19 target 1).
 */
export const DEFAULT_LAUNCH_HELPERS = Math.min(2, os.availableParallelism());
/** More helpers than this only cost memory (~40 MB each): each one's spawns already overlap. */
export const MAX_LAUNCH_HELPERS = 16;

/** A helper that started but never became ready this many times in a row: its place in the pool gives up. */
const MAX_START_FAILURES = 3;
/**
 * A helper not ready this long after its fork is hung (its start takes ~50-300 ms on a loaded
 * machine): it is killed and counts as a failed start. Helpers start one at a time, so one that
 * hung before its ready message kept the rest of the pool from starting.
 */
const READY_TIMEOUT_MS = 10_000;
/** A helper that dies sooner than this after its start counts towards the restart backoff. */
const HEALTHY_LIFETIME_MS = 10_000;
const RESTART_BACKOFF_BASE_MS = 500;
const RESTART_BACKOFF_MAX_MS = 30_000;
/** How often a ready helper is asked whether it is still there. */
const PING_INTERVAL_MS = 1000;
/**
 * A helper silent this long while this engine's event loop kept running is stopped or hung. Long
 * enough for a burst of launches it works through in order (each spawn blocks it a few ms) on a
 * loaded machine; short enough that a 1 s timeout is not outlived by much.
 */
const UNRESPONSIVE_MS = 5000;

/** One place in the pool: the helper in it now (if any), and its own restart history. */
interface Slot {
  /** 1-based, for the logs. */
  readonly number: number;
  helper: Helper | undefined;
  restartTimer: NodeJS.Timeout | undefined;
  restartNotBefore: number;
  quickDeaths: number;
  /** Helpers of this slot in a row that exited before they were ready. */
  startFailures: number;
  /** Gave up after MAX_START_FAILURES: the other slots carry the launches. */
  disabled: boolean;
}

interface Helper {
  slot: Slot;
  child: ChildProcess;
  startedAt: number;
  ready: boolean;
  closing: boolean;
  /** Attempts sent to this helper and not done yet. */
  attempts: Map<number, HelperAttempt>;
  /** Checkpoints this helper was asked to run, by id: what settles each one. */
  checkpoints: Map<number, (m: CheckpointMessage, pid: number | null) => void>;
  exited: Promise<void>;
  /** performance.now() of its last message, whatever it was. */
  lastHeardAt: number;
  watchdog?: NodeJS.Timeout;
  /** Kills it if it is not ready by READY_TIMEOUT_MS. */
  readyTimer?: NodeJS.Timeout;
  /** Why it was killed, when the engine killed it for not answering. */
  killedBecause?: string;
  /**
   * Messages said to it in this turn of the event loop, sent together as one packet when the turn
   * ends (`post`): the launches of a dispatch round, and a terminate after the launch it targets.
   */
  outbox: ToLaunchHelper[];
}

/** One attempt as the engine sees it, wherever its process is spawned. */
class HelperAttempt implements RunningAttempt {
  pid: number | null = null;
  readonly done: Promise<AttemptResult>;
  /** Set when the attempt was launched in-process (fallback). */
  inProcess: RunningAttempt | undefined;
  /** The helper it was sent to: the one that can terminate it. */
  helper: Helper | undefined;
  finished = false;
  private resolve!: (result: AttemptResult) => void;

  constructor(
    readonly attemptId: number,
    readonly item: ItemDefinition,
    readonly attempt: number,
    private readonly owner: AttemptLauncher,
    readonly output: OutputTarget | undefined,
  ) {
    this.done = new Promise((resolve) => (this.resolve = resolve));
  }

  readonly startedAt = Date.now();
  /** Its ENGINE_MONITOR_ATTEMPT token, and when it was made in this process's clock (for a sweep). */
  readonly marker = newAttemptMarker();
  readonly markedAt = performance.now();

  terminate(graceMs = KILL_GRACE_MS): void {
    this.owner.terminate(this, graceMs);
  }

  finish(result: AttemptResult): void {
    if (this.finished) return;
    this.finished = true;
    this.resolve(result);
  }
}

/**
 * A checkpoint asked for while no helper was ready (the engine has just started them): it starts in
 * the first helper that becomes ready, or on a worker thread once none will. Waiting is worth it: a
 * thread of the engine host loads the whole snapshot into the host's own memory (docs/PERFORMANCE.md,
 * "Memory (target 4)").
 */
class WaitingCheckpoint implements CheckpointRun {
  readonly done: Promise<CheckpointMessage>;
  private resolve!: (m: CheckpointMessage) => void;
  private run: CheckpointRun | undefined;
  private cancelled = false;

  constructor(
    readonly job: CheckpointJob,
    private readonly forget: (w: WaitingCheckpoint) => void,
  ) {
    this.done = new Promise((resolve) => (this.resolve = resolve));
  }

  get where(): string {
    return this.run?.where ?? 'nowhere yet (waiting for a launch helper)';
  }

  /** Starts it in `run`'s builder; its answer becomes this one's. */
  startIn(run: CheckpointRun): void {
    this.run = run;
    void run.done.then((m) => this.resolve(m));
  }

  cancel(): void {
    if (this.run) return this.run.cancel();
    if (this.cancelled) return;
    this.cancelled = true;
    this.forget(this);
    this.resolve({ ok: false, error: 'cancelled before it started' });
  }
}

/**
 * Launches attempts through a pool of launch helper processes, or in-process when no helper can
 * run. One per engine.
 */
export class AttemptLauncher {
  private readonly entry: LaunchHelperEntry | undefined;
  private readonly slots: Slot[];
  /** Launches waiting for a helper that is starting (or restarting after its backoff). */
  private queue: HelperAttempt[] = [];
  /** Checkpoints waiting for a helper that is starting. */
  private readonly waitingCheckpoints = new Set<WaitingCheckpoint>();
  private inProcess = false;
  private closed = false;
  private spawnTotals = { spawns: 0, spawnMs: 0 };
  private nextCheckpointId = 0;
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
      this.launchInProcess(a);
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
    if (h) return this.checkpointIn(h, job);
    const waiting = new WaitingCheckpoint(job, (w) => this.waitingCheckpoints.delete(w));
    this.waitingCheckpoints.add(waiting);
    return waiting;
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
    this.startWaitingCheckpointsOnThreads();
    const helpers = this.slots.flatMap((slot) => (slot.helper ? [slot.helper] : []));
    await Promise.all(helpers.map((h) => this.closeHelper(h, graceMs)));
    // The helpers swept their own attempts' leftovers; these are what a helper killed for hanging
    // (or an earlier one that died) could not.
    await this.endLeftovers(graceMs);
  }

  private async closeHelper(h: Helper, graceMs: number): Promise<void> {
    h.closing = true;
    if (h.child.connected) {
      // Now, after whatever this turn said to it before.
      this.post(h, { type: 'close', graceMs });
      this.sendOutbox(h);
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
    if (h?.attempts.has(a.attemptId) && h.child.connected) this.post(h, { type: 'terminate', attemptId: a.attemptId, graceMs });
  }

  /**
   * Says `m` to helper `h` with everything else said to it in this turn of the event loop: one
   * packet, sent once the turn's callbacks and their promises have run. Order is kept within the
   * outbox, and every message to a helper goes through it.
   */
  private post(h: Helper, m: ToLaunchHelper): void {
    h.outbox.push(m);
    if (h.outbox.length === 1) setImmediate(() => this.sendOutbox(h));
  }

  private sendOutbox(h: Helper): void {
    if (h.outbox.length === 0) return;
    const packet: LaunchHelperPacket<ToLaunchHelper> = h.outbox.length === 1 ? h.outbox[0] : h.outbox;
    h.outbox = [];
    // A helper that is gone fails the attempts it was sent when its exit is seen; a failed send
    // means it is dying, and the same holds.
    if (h.child.connected) h.child.send(packet, () => undefined);
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
    let child: ChildProcess;
    try {
      child = fork(this.entry.file, [`--engine-pid=${process.pid}`], {
        execArgv: this.entry.execArgv,
        // stdout is the engine host's protocol channel (its ready line): the helper keeps off it.
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
    } catch (err) {
      this.startFailed(slot, `fork failed: ${(err as Error).message}`);
      return;
    }
    let onExit!: () => void;
    const h: Helper = {
      slot,
      child,
      startedAt: Date.now(),
      ready: false,
      closing: false,
      attempts: new Map(),
      checkpoints: new Map(),
      exited: new Promise<void>((resolve) => (onExit = resolve)),
      lastHeardAt: performance.now(),
      outbox: [],
    };
    slot.helper = h;
    h.readyTimer = setTimeout(() => {
      if (h.ready || h.closing || slot.helper !== h) return;
      // Its exit ('close') is the failed start: backoff, and the next helper of the pool starts.
      h.killedBecause = `killed: not ready ${READY_TIMEOUT_MS / 1000} s after it was started`;
      child.kill('SIGKILL');
    }, READY_TIMEOUT_MS);
    h.readyTimer.unref();
    child.on('message', (packet: LaunchHelperPacket<FromLaunchHelper>) => {
      if (Array.isArray(packet)) for (const m of packet) this.onMessage(h, m);
      else this.onMessage(h, packet);
    });
    // 'error' without 'exit' means it never ran (e.g. the Node binary is gone).
    child.on('error', (err) => {
      if (child.pid === undefined) {
        onExit();
        this.onExit(h, null, null, err.message);
      }
    });
    // 'close', not 'exit': it comes after the IPC channel has delivered the helper's last messages.
    child.on('close', (code, signal) => {
      onExit();
      this.onExit(h, code, signal);
    });
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
      for (const a of this.queue.splice(0)) this.launchInProcess(a);
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
      this.post(h, launch);
    }
  }

  private onMessage(h: Helper, m: FromLaunchHelper): void {
    h.lastHeardAt = performance.now();
    switch (m.type) {
      case 'ready':
        h.ready = true;
        clearTimeout(h.readyTimer);
        h.slot.startFailures = 0;
        this.watch(h);
        this.flush();
        for (const waiting of this.waitingCheckpoints) waiting.startIn(this.checkpointIn(h, waiting.job));
        this.waitingCheckpoints.clear();
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
      case 'checkpointed': {
        const settle = h.checkpoints.get(m.checkpointId);
        h.checkpoints.delete(m.checkpointId);
        settle?.(m.message, m.pid);
        break;
      }
    }
  }

  /** A checkpoint in a process the ready helper `h` starts. */
  private checkpointIn(h: Helper, job: CheckpointJob): CheckpointRun {
    const checkpointId = ++this.nextCheckpointId;
    const args = checkpointProcessArgs(job);
    let where = 'a process started by the launch helper';
    const done = new Promise<CheckpointMessage>((resolve) => {
      h.checkpoints.set(checkpointId, (m, pid) => {
        if (pid !== null) where = `process ${pid}`;
        resolve(m);
      });
    });
    this.post(h, { type: 'checkpoint', checkpointId, args });
    return {
      get where() {
        return where;
      },
      done,
      cancel: () => {
        if (h.checkpoints.has(checkpointId) && h.child.connected) {
          this.post(h, { type: 'checkpoint_cancel', checkpointId });
        }
      },
    };
  }

  /** No helper will run the waiting checkpoints (in-process launching, shutdown): worker threads do. */
  private startWaitingCheckpointsOnThreads(): void {
    for (const waiting of this.waitingCheckpoints) {
      let run: CheckpointRun;
      try {
        run = startCheckpointThread(waiting.job);
      } catch (err) {
        // No worker bundle: the store writes the snapshot from memory instead, and says why.
        run = { where: 'worker thread', done: Promise.resolve({ ok: false, error: (err as Error).message }), cancel: () => undefined };
      }
      waiting.startIn(run);
    }
    this.waitingCheckpoints.clear();
  }

  /** Pings the ready helper `h` every second and kills it once it has been silent for UNRESPONSIVE_MS. */
  private watch(h: Helper): void {
    let lastTick = performance.now();
    h.watchdog = setInterval(() => {
      const now = performance.now();
      // This engine's own event loop stalled: the helper's answers may be waiting unread, so the
      // silence is counted again from now.
      if (now - lastTick > 2 * PING_INTERVAL_MS) h.lastHeardAt = now;
      lastTick = now;
      if (h.closing || !h.child.connected) return;
      const silentMs = now - h.lastHeardAt;
      if (silentMs < UNRESPONSIVE_MS) {
        this.post(h, { type: 'ping' });
        return;
      }
      clearInterval(h.watchdog);
      h.killedBecause = `killed after it did not answer for ${Math.round(silentMs / 1000)} s`;
      this.options.warn?.(
        `launch helper ${h.child.pid} did not answer for ${Math.round(silentMs / 1000)} s (stopped or hung) and was killed; its running attempts fail and are retried, and a new helper starts`,
        { pid: h.child.pid ?? null, silentMs: Math.round(silentMs), attempts: h.attempts.size },
      );
      h.child.kill('SIGKILL');
    }, PING_INTERVAL_MS);
    // The watchdog must not keep an engine alive that has nothing else to do.
    h.watchdog.unref();
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
    // Its checkpoint processes end with it (they exit when their IPC channel closes); the store
    // falls back to a snapshot from memory for any that was still running.
    for (const settle of h.checkpoints.values()) settle({ ok: false, error: `the launch helper exited (${how})` }, null);
    h.checkpoints.clear();
    if (h.closing) {
      // Normally the helper ended these itself; not if it had to be killed for hanging.
      for (const a of h.attempts.values()) {
        if (signal === 'SIGKILL') this.endOrphaned(a);
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
      this.endOrphaned(a);
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
    return this.queue.length > 0 || this.waitingCheckpoints.size > 0;
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
    this.startWaitingCheckpointsOnThreads();
  }

  /**
   * An attempt whose helper died: nobody reaps or times out its processes now. Its group is ended
   * by the pid the helper reported; what left the group is swept here, in the engine, by its marker
   * (rare enough that the /proc scan on this event loop does not matter).
   */
  private endOrphaned(a: HelperAttempt): void {
    if (a.pid !== null) endAttemptGroup(a.pid);
    this.sweeper.ended(a.marker, a.pid, a.markedAt);
  }

  private launchInProcess(a: HelperAttempt): void {
    const run = launchAttempt(a.item, a.attempt, {
      marker: a.marker,
      workspaceFolders: this.options.workspaceFolders,
      sweeper: this.sweeper,
      output: a.output,
      onOutputError: (error) => this.options.onOutputError?.(a.attemptId, error),
    });
    a.inProcess = run;
    a.pid = run.pid;
    void run.done.then((result) => a.finish(result));
  }
}

/** SIGTERM to the attempt's process group, SIGKILL after the usual grace if anything is left. */
function endAttemptGroup(pgid: number): void {
  if (process.platform !== 'win32') endGroup(pgid, KILL_GRACE_MS);
}
