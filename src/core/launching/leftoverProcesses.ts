// Ends the processes an attempt left behind outside its process group. An attempt's group catches
// what its command starts in the background, but a process can leave the group: `setsid`, a double
// fork through `setsid`, setpgid()/setpgrp(). What such a process cannot shed without clearing its
// whole environment is the attempt's marker: every attempt runs with ATTEMPT_MARKER_VARIABLE set to
// a random token, and children inherit it through any fork, setsid or exec. Once an attempt has
// ended, a process whose environment (Linux: /proc/<pid>/environ) still holds its token is a
// leftover: SIGTERM, then SIGKILL after the grace.
//
// The scan reads /proc, so it is kept off the hot path: at most one sweep per interval, only while
// some ended attempt may have leftovers, and only of processes that started after the oldest such
// attempt and belong to this user. It runs where the attempts are spawned: the launch helper, or
// the engine's own process when launching in-process. Other platforms (and a Linux without /proc)
// have only the process group.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';

/** The environment variable that carries an attempt's marker to every process it starts. */
export const ATTEMPT_MARKER_VARIABLE = 'ENGINE_MONITOR_ATTEMPT';

/** This process's random part of every marker it makes; drawn at its first marker. */
let markerPrefix: string | undefined;
let markersMade = 0;

/**
 * A marker no other attempt, engine or run shares: 96 random bits drawn once per process, and a
 * count of the markers it made. One draw per launch cost the engine host's main thread ~20 µs an
 * item (randomBytes; measured in docs/PERFORMANCE.md); a counter is free and just as
 * unique within the process.
 */
export function newAttemptMarker(): string {
  markerPrefix ??= randomBytes(12).toString('hex');
  return `${markerPrefix}-${(++markersMade).toString(36)}`;
}

/**
 * Clock ticks per second of /proc/<pid>/stat's starttime. Linux fixes it (USER_HZ) at 100 on
 * every mainstream architecture; where it is larger, start times read as later than they were,
 * which only widens the scan, never skips a process.
 */
const TICKS_PER_SECOND = 100;
/** Slack for the start-time filter: the uptime and tick resolutions, and a process started in the same instant. */
const START_SLACK_MS = 1000;
/** An ended attempt is forgotten after this many sweeps in a row found nothing carrying its marker (a second one catches a process forked while the first one read /proc). */
const EMPTY_SWEEPS_TO_FORGET = 2;

interface EndedAttempt {
  /** performance.now() when the attempt started (in this process's clock). */
  startedAt: number;
  /** The attempt's own process group: ended by whoever ended the attempt, so not signalled here too. */
  pgid: number | null;
  emptySweeps: number;
}

interface Carrier {
  marker: string;
  pgrp: number;
  /** starttime, so a reused pid is not taken for the process signalled before. */
  startTicks: string;
}

export interface LeftoverSweeperOptions {
  /** Between SIGTERM and SIGKILL for a leftover. */
  graceMs: number;
  /** The least time between two sweeps. */
  intervalMs?: number;
}

/** One per process that spawns attempts. */
export class LeftoverSweeper {
  /** Markers of attempts still running, with their start (performance.now()). */
  private readonly running = new Map<string, number>();
  private readonly finished = new Map<string, EndedAttempt>();
  /** Leftovers sent SIGTERM, by pid: when, and which process it was. */
  private readonly signalled = new Map<number, { at: number; startTicks: string }>();
  private readonly graceMs: number;
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private lastSweepAt = -Infinity;
  private readonly uid = process.getuid?.() ?? -1;
  readonly supported: boolean;

  constructor(options: LeftoverSweeperOptions) {
    this.graceMs = options.graceMs;
    this.intervalMs = options.intervalMs ?? 1000;
    this.supported = process.platform === 'linux' && readable('/proc/self/environ');
  }

  /** An attempt with this marker is starting now. */
  started(marker: string): void {
    if (this.supported) this.running.set(marker, performance.now());
  }

  /**
   * The attempt with this marker has ended (its leader exited, or it was lost with the process
   * that ran it): whatever still carries the marker is swept within the interval. `startedAt`
   * (performance.now() of this process) for an attempt this sweeper did not see start.
   */
  ended(marker: string, pgid: number | null, startedAt?: number): void {
    if (!this.supported) return;
    const known = this.finished.get(marker);
    if (known) {
      // Already counted as ended (a shutdown sweep came first): keep its start, look again.
      known.emptySweeps = 0;
    } else {
      const start = this.running.get(marker) ?? startedAt ?? performance.now();
      this.running.delete(marker);
      this.finished.set(marker, { startedAt: start, pgid, emptySweeps: 0 });
    }
    this.schedule();
  }

  /** The attempt with this marker never got a process: nothing to sweep for. */
  forget(marker: string): void {
    this.running.delete(marker);
  }

  /** How many attempts may still have leftovers (tests and shutdown). */
  get pending(): number {
    return this.finished.size;
  }

  /**
   * Shutdown: every attempt counts as ended, and every process carrying any marker of this
   * sweeper gets `signal` now, group members included (their attempts are being ended too).
   * Returns how many processes were found.
   */
  sweepAll(signal: 'SIGTERM' | 'SIGKILL'): number {
    if (!this.supported) return 0;
    for (const [marker, startedAt] of this.running) this.finished.set(marker, { startedAt, pgid: null, emptySweeps: 0 });
    this.running.clear();
    clearTimeout(this.timer);
    this.timer = undefined;
    return this.sweep(signal);
  }

  /**
   * One pass over /proc: SIGTERM to each new leftover of an ended attempt, SIGKILL to one still
   * there a grace after its SIGTERM (or `force` to everyone found). Returns how many were found.
   */
  sweep(force?: 'SIGTERM' | 'SIGKILL'): number {
    if (!this.supported || this.finished.size === 0) return 0;
    this.lastSweepAt = performance.now();
    const carriers = this.findCarriers();
    const found = new Set<string>();
    const now = performance.now();
    for (const [pid, c] of carriers) {
      found.add(c.marker);
      const attempt = this.finished.get(c.marker)!;
      if (!force && attempt.pgid !== null && c.pgrp === attempt.pgid) continue;
      const before = this.signalled.get(pid);
      const same = before !== undefined && before.startTicks === c.startTicks;
      let signal: NodeJS.Signals;
      if (force) signal = force;
      else if (!same) signal = 'SIGTERM';
      else if (now - before.at >= this.graceMs) signal = 'SIGKILL';
      else continue;
      if (!same) this.signalled.set(pid, { at: now, startTicks: c.startTicks });
      try {
        process.kill(pid, signal);
      } catch {
        // Gone meanwhile.
      }
    }
    for (const pid of this.signalled.keys()) if (!carriers.has(pid)) this.signalled.delete(pid);
    for (const [marker, e] of this.finished) {
      e.emptySweeps = found.has(marker) ? 0 : e.emptySweeps + 1;
      if (e.emptySweeps >= EMPTY_SWEEPS_TO_FORGET) this.finished.delete(marker);
    }
    this.schedule();
    return carriers.size;
  }

  /** Stops the timer (the sweeper's owner is going away). */
  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.timer || this.finished.size === 0) return;
    const wait = Math.max(0, this.lastSweepAt + this.intervalMs - performance.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.sweep();
    }, wait);
    // A pending sweep must not keep its process alive; shutdown sweeps explicitly (sweepAll).
    this.timer.unref();
  }

  /** Processes of this user, started since the oldest ended attempt, that carry an ended attempt's marker. */
  private findCarriers(): Map<number, Carrier> {
    const carriers = new Map<number, Carrier>();
    let oldest = Infinity;
    for (const e of this.finished.values()) oldest = Math.min(oldest, e.startedAt);
    const notBeforeTicks = this.bootTicksAt(oldest - START_SLACK_MS);
    let names: string[];
    try {
      names = readdirSync('/proc');
    } catch {
      return carriers;
    }
    const prefix = Buffer.from(`${ATTEMPT_MARKER_VARIABLE}=`);
    for (const name of names) {
      const pid = Number(name);
      if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) continue;
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
        // The command name in parentheses may itself hold spaces and parentheses.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const startTicks = fields[19];
        if (Number(startTicks) < notBeforeTicks) continue;
        if (this.uid >= 0 && statSync(`/proc/${pid}`).uid !== this.uid) continue;
        const marker = markerIn(readFileSync(`/proc/${pid}/environ`), prefix);
        if (marker !== undefined && this.finished.has(marker)) carriers.set(pid, { marker, pgrp: Number(fields[2]), startTicks });
      } catch {
        // Exited while we looked, or not ours to read.
      }
    }
    return carriers;
  }

  /** `at` (performance.now()) in /proc/<pid>/stat starttime units: clock ticks since boot. */
  private bootTicksAt(at: number): number {
    try {
      const uptimeMs = Number(readFileSync('/proc/uptime', 'latin1').split(' ')[0]) * 1000;
      return Math.floor(((uptimeMs - (performance.now() - at)) / 1000) * TICKS_PER_SECOND);
    } catch {
      return 0;
    }
  }
}

/** The marker in an environment block (NUL-separated NAME=value entries), if it has one. */
function markerIn(environ: Buffer, prefix: Buffer): string | undefined {
  for (let i = environ.indexOf(prefix); i >= 0; i = environ.indexOf(prefix, i + 1)) {
    if (i > 0 && environ[i - 1] !== 0) continue; // the name only ends with ours
    const end = environ.indexOf(0, i);
    return environ.toString('latin1', i + prefix.length, end < 0 ? environ.length : end);
  }
  return undefined;
}

function readable(file: string): boolean {
  try {
    readFileSync(file);
    return true;
  } catch {
    return false;
  }
}
