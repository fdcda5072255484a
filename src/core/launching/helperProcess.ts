// One launch helper process: forking it, and what the engine keeps of it (its attempts, its
// checkpoints, its outbox, its timers). A pool holds helpers in slots, each slot with its own
// restart history (attemptLauncher.ts).
import { fork, type ChildProcess } from 'node:child_process';
import type { CheckpointMessage } from '../store';
import type { HelperAttempt } from './helperAttempt';
import type { LaunchHelperEntry } from './options';
import type { FromLaunchHelper, LaunchHelperPacket, ToLaunchHelper } from './protocol';

/**
 * A helper not ready this long after its fork is hung (its start takes ~50-300 ms on a loaded
 * machine): it is killed and counts as a failed start. Helpers start one at a time, so one that
 * hung before its ready message kept the rest of the pool from starting.
 */
export const READY_TIMEOUT_MS = 10_000;

/** One place in the pool: the helper in it now (if any), and its own restart history. */
export interface Slot {
  /** 1-based, for the logs. */
  readonly number: number;
  helper: Helper | undefined;
  restartTimer: NodeJS.Timeout | undefined;
  restartNotBefore: number;
  quickDeaths: number;
  /** Helpers of this slot in a row that exited before they were ready. */
  startFailures: number;
  /** Gave up after too many failed starts: the other slots carry the launches. */
  disabled: boolean;
}

export interface Helper {
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
   * ends (outbox.ts): the launches of a dispatch round, and a terminate after the launch it targets.
   */
  outbox: ToLaunchHelper[];
}

/** What the pool hears from a helper: each message, and its end (`error`: it never ran). */
export interface HelperEvents {
  message(h: Helper, m: FromLaunchHelper): void;
  exit(h: Helper, code: number | null, signal: NodeJS.Signals | null, error?: string): void;
}

/** Forks a helper for `slot`; throws when the fork itself fails. */
export function forkHelper(entry: LaunchHelperEntry, slot: Slot, on: HelperEvents): Helper {
  const child = fork(entry.file, [`--engine-pid=${process.pid}`], {
    execArgv: entry.execArgv,
    // stdout is the engine host's protocol channel (its ready line): the helper keeps off it.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
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
  h.readyTimer = setTimeout(() => {
    if (h.ready || h.closing || slot.helper !== h) return;
    // Its exit ('close') is the failed start: backoff, and the next helper of the pool starts.
    h.killedBecause = `killed: not ready ${READY_TIMEOUT_MS / 1000} s after it was started`;
    child.kill('SIGKILL');
  }, READY_TIMEOUT_MS);
  h.readyTimer.unref();
  child.on('message', (packet: LaunchHelperPacket<FromLaunchHelper>) => {
    if (Array.isArray(packet)) for (const m of packet) on.message(h, m);
    else on.message(h, packet);
  });
  // 'error' without 'exit' means it never ran (e.g. the Node binary is gone).
  child.on('error', (err) => {
    if (child.pid === undefined) {
      onExit();
      on.exit(h, null, null, err.message);
    }
  });
  // 'close', not 'exit': it comes after the IPC channel has delivered the helper's last messages.
  child.on('close', (code, signal) => {
    onExit();
    on.exit(h, code, signal);
  });
  return h;
}
