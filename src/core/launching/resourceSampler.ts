// What an attempt cost: the CPU time and the peak resident memory of every process of its session
// and process group, read from Linux's /proc where the attempt's process lives (the launch helper,
// so the engine's event loop never pays for the reads).
//
// How, and how far off it can be (the README says the same to users):
// - One scan serves every attempt this process runs: an attempt's first sample is due 50 ms after
//   its spawn (so that most attempts get one; one that ends sooner is never scanned for, so a burst
//   of /bin/true costs no scan at all), then at least every SAMPLE_EVERY_MS while it runs; scans
//   for new attempts come at most every MIN_SCAN_GAP_MS, so a steady stream of them (every attempt
//   50 ms after its spawn) does not make one scan per attempt. A scan walks each attempt's tree:
//   the `stat` of every process known to be in its session or group, and the children each one
//   has now (/proc/<pid>/task/<tid>/children), so it costs what the attempt's own processes cost
//   to read (~40 µs for one process), not the machine's. A process whose parent has exited stays
//   known by its pid. Missed: a process started and orphaned between two scans (a double fork
//   that does not also setsid). Where the children lists do not exist (a kernel without
//   CONFIG_PROC_CHILDREN), a scan lists /proc instead and reads every process it has not seen; one
//   found outside every attempt's session and group is not read again, since it can never join
//   one (setpgid stays in its session; setsid makes a session of its own).
// - CPU is utime + stime + cutime + cstime summed over the group, the largest sum any scan saw: a
//   child's time moves into its parent's cutime when the parent reaps it, so the sum only drops when
//   a process leaves by being reaped outside the group (the leader, by us). When the leader is
//   reaped, this process's own cutime + cstime grow by exactly the leader's total and that of every
//   child it waited for: in the launch helper, whose only other children are checkpoint processes
//   it reports (otherChildExited), that growth is the attempt's CPU when no other child was reaped
//   in the same turn. Otherwise (two at once, or launching in the engine's own process, which has
//   children of its own) only the scans count, and the CPU after the last scan is missed. Tick
//   resolution: 10 ms per process.
// - Peak memory is the largest sum of resident set sizes any scan saw: a peak between two scans is
//   missed (a lower bound), and pages shared between processes (a fork's copy-on-write) count once
//   per process (an upper bound). An attempt that ended before its first scan has none: null.
// - A process that left the session with setsid is not counted (its marker still ends it).
// Elsewhere than Linux, or without /proc, an attempt's resources are null; so they are with
// ENGINE_MONITOR_SAMPLE_RESOURCES=0 in the engine's environment, which `npm run bench` compares with.
import { existsSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import type { AttemptResources } from '../../shared/api';

/** The longest time between two samples of a running attempt. */
export const SAMPLE_EVERY_MS = 250;
/** A new attempt's first sample comes this soon, shared with every attempt started meanwhile. */
const FIRST_SAMPLE_MS = 50;
/** …but not sooner than this after the last scan. */
const MIN_SCAN_GAP_MS = 100;
/** Set to 0 in the engine's environment (its launch helpers inherit it): no sampling, resources null. */
export const SAMPLE_RESOURCES_VARIABLE = 'ENGINE_MONITOR_SAMPLE_RESOURCES';
/** USER_HZ: /proc's clock ticks per second, 100 on every mainstream Linux. */
const TICKS_PER_SECOND = 100;

interface ProcStat {
  pgrp: number;
  session: number;
  /** utime + stime + cutime + cstime, in ticks. */
  ticks: number;
  /** cutime + cstime: its reaped children's. */
  childTicks: number;
  threads: number;
  rssPages: number;
}

/** Fields after the command name, which may itself hold spaces and parentheses. */
function parseStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const f = text.slice(close + 2).split(' ');
  // f[0] is field 3 (state): field n is f[n - 3].
  return {
    pgrp: Number(f[2]),
    session: Number(f[3]),
    ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]),
    childTicks: Number(f[13]) + Number(f[14]),
    threads: Number(f[17]),
    rssPages: Number(f[21]),
  };
}

/** The processes `pid` has started and not yet lost: every thread's, or the main thread's alone. */
function childrenOf(pid: number, threads: number): number[] {
  const out: number[] = [];
  try {
    const tasks = threads > 1 ? readdirSync(`/proc/${pid}/task`) : [String(pid)];
    for (const tid of tasks) {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1').split(' ')) if (c) out.push(Number(c));
    }
  } catch {
    // gone meanwhile
  }
  return out;
}

function readStat(pid: number | 'self'): ProcStat | undefined {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return undefined; // gone meanwhile
  }
}

/** One running attempt's figures so far. */
export class AttemptUsage {
  maxTicks = 0;
  peakRssPages: number | null = null;
  /** CPU ticks of the leader and its reaped children, when its reaping could be told apart. */
  reapedTicks: number | null = null;
  dueAt: number;
  /** Samples of this group in the current scan (reset per scan). */
  scanTicks = 0;
  scanRss = 0;
  /** Its processes as the last scan found them (a tree walk starts from these). */
  readonly members: Set<number>;
  constructor(
    readonly pgid: number,
    now: number,
    lastScanAt: number,
  ) {
    this.dueAt = Math.max(now + FIRST_SAMPLE_MS, lastScanAt + MIN_SCAN_GAP_MS);
    this.members = new Set([pgid]);
  }
}

export class ResourceSampler {
  readonly supported: boolean;
  /** Whether the kernel lists each task's children (else every scan lists /proc). */
  readonly walksTrees: boolean;
  private readonly running = new Map<number, AttemptUsage>();
  /** Pids seen outside every attempt's session and group: never read again while they exist. */
  private readonly foreign = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  private pageBytes = 4096;
  /** This process's reaped children's CPU (cutime + cstime) at its last reading. */
  private childTicks = 0;
  /** Children reaped in this turn of the event loop (an attempt's leader, or another), whose share of childTicks is being settled. */
  private reapedThisTurn: { usage: AttemptUsage | undefined; ticks: number }[] = [];
  /** Set by a process whose every child is an attempt's leader or reported (countReapedChildren). */
  private countsReaped = false;
  /** Scans made, for the tests and the bench. */
  scans = 0;

  /** `walk` false: list /proc on every scan even where the children lists exist (the tests cover both). */
  constructor(platform = process.platform, enabled = process.env[SAMPLE_RESOURCES_VARIABLE] !== '0', walk = true) {
    const self = platform === 'linux' && enabled ? readStat('self') : undefined;
    this.supported = self !== undefined;
    this.walksTrees = walk && this.supported && existsSync(`/proc/self/task/${process.pid}/children`);
    if (self && self.rssPages > 0) {
      // Node has no page size; this process's resident bytes over its resident pages give it.
      const ratio = process.memoryUsage().rss / self.rssPages;
      this.pageBytes = 2 ** Math.round(Math.log2(ratio));
    }
  }

  /**
   * Called by a process that knows all of its children (the launch helper): an attempt's CPU may
   * then be read from what its leader's reaping added to this process's children's time. Its
   * other children must be reported with otherChildExited().
   */
  countReapedChildren(): void {
    this.countsReaped = this.supported;
    this.childTicks = this.ownChildTicks();
  }

  /** A child that is no attempt's leader was reaped: its time is not an attempt's. */
  otherChildExited(): void {
    if (this.countsReaped) this.reaped(undefined);
  }

  /** Starts sampling the attempt whose leader is `child` (its pid is the group's and the session's id). */
  track(child: ChildProcess): AttemptUsage | undefined {
    if (!this.supported || child.pid === undefined) return undefined;
    const usage = new AttemptUsage(child.pid, performance.now(), this.lastScanAt);
    this.running.set(child.pid, usage);
    child.once('exit', () => this.leaderExited(usage));
    this.schedule();
    return usage;
  }

  /** Stops sampling; the figures once this turn's reaping is settled. */
  stop(usage: AttemptUsage | undefined): Promise<AttemptResources | null> {
    if (!usage) return Promise.resolve(null);
    this.running.delete(usage.pgid);
    // The timer was for this attempt's sample: the next is the others' (or none).
    if (this.running.size === 0 || usage.dueAt <= this.timerAt) {
      this.clearTimer();
      this.schedule();
    }
    return new Promise((resolve) =>
      setImmediate(() => {
        const ticks = Math.max(usage.maxTicks, usage.reapedTicks ?? 0);
        const sampled = usage.peakRssPages !== null || usage.reapedTicks !== null;
        resolve({
          cpuMs: sampled ? Math.round((ticks * 1000) / TICKS_PER_SECOND) : null,
          peakRssBytes: usage.peakRssPages === null ? null : usage.peakRssPages * this.pageBytes,
          sampledEveryMs: SAMPLE_EVERY_MS,
        });
      }),
    );
  }

  /**
   * The leader was reaped just now: what this process's children's CPU grew by is its total, unless
   * another child was reaped in the same turn (both leaders' exits run in one turn), when nobody
   * can tell whose it is.
   */
  private leaderExited(usage: AttemptUsage): void {
    if (this.countsReaped) this.reaped(usage);
  }

  private reaped(usage: AttemptUsage | undefined): void {
    const now = this.ownChildTicks();
    this.reapedThisTurn.push({ usage, ticks: now - this.childTicks });
    this.childTicks = now;
    if (this.reapedThisTurn.length > 1) return;
    // Every child reaped together is reported in this same turn (libuv reaps them all, then calls
    // each one's exit): once it is over, a lone leader's share is known.
    setImmediate(() => {
      const reaped = this.reapedThisTurn;
      this.reapedThisTurn = [];
      if (reaped.length === 1 && reaped[0].usage) reaped[0].usage.reapedTicks = reaped[0].ticks;
    });
  }

  /** /proc/self/stat, kept open: read again from offset 0 it is current, at a fifth of an open and a read (read at every reaping). */
  private selfStat: { fd: number; buf: Buffer } | undefined;

  private ownChildTicks(): number {
    try {
      this.selfStat ??= { fd: openSync('/proc/self/stat', 'r'), buf: Buffer.alloc(1024) };
      const n = readSync(this.selfStat.fd, this.selfStat.buf, 0, this.selfStat.buf.length, 0);
      return parseStat(this.selfStat.buf.toString('latin1', 0, n))?.childTicks ?? this.childTicks;
    } catch {
      return this.childTicks;
    }
  }

  private schedule(): void {
    if (this.running.size === 0) return;
    let due = Infinity;
    for (const u of this.running.values()) due = Math.min(due, u.dueAt);
    const delay = Math.max(0, due - performance.now());
    if (this.timer && this.timerAt <= due) return;
    this.clearTimer();
    this.timerAt = due;
    // unref: sampling must never keep a process alive.
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.scan();
      this.schedule();
    }, delay).unref();
  }

  private timerAt = Infinity;
  private lastScanAt = -Infinity;

  private clearTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** Reads every attempt's processes once. */
  scan(): void {
    this.scans++;
    if (this.walksTrees) for (const u of this.running.values()) this.walk(u);
    else this.scanAll();
    const now = performance.now();
    this.lastScanAt = now;
    for (const u of this.running.values()) {
      u.maxTicks = Math.max(u.maxTicks, u.scanTicks);
      if (u.scanRss > 0) u.peakRssPages = Math.max(u.peakRssPages ?? 0, u.scanRss);
      u.dueAt = now + SAMPLE_EVERY_MS;
    }
  }

  /** The attempt's processes: those it had, and their children now. */
  private walk(u: AttemptUsage): void {
    u.scanTicks = 0;
    u.scanRss = 0;
    const seen = new Set<number>();
    const queue = [...u.members];
    while (queue.length > 0) {
      const pid = queue.pop()!;
      if (seen.has(pid)) continue;
      seen.add(pid);
      const stat = readStat(pid);
      // Gone, left with setsid, or its pid reused: no longer the attempt's. The leader stays known:
      // in the instant between its fork and its setsid it is not in its session yet.
      if (!stat || (stat.session !== u.pgid && stat.pgrp !== u.pgid)) {
        if (pid !== u.pgid) u.members.delete(pid);
        continue;
      }
      u.members.add(pid);
      u.scanTicks += stat.ticks;
      u.scanRss += stat.rssPages;
      for (const child of childrenOf(pid, stat.threads)) if (!seen.has(child)) queue.push(child);
    }
  }

  /** Every process on the machine not yet known to be outside every attempt. */
  private scanAll(): void {
    let pids: string[];
    try {
      pids = readdirSync('/proc');
    } catch {
      return;
    }
    const groups = this.running;
    for (const u of groups.values()) {
      u.scanTicks = 0;
      u.scanRss = 0;
    }
    const present = new Set<number>();
    for (const name of pids) {
      const c = name.charCodeAt(0);
      if (c < 48 || c > 57) continue;
      const pid = Number(name);
      present.add(pid);
      // A leader is always read: in the instant between its fork and its setsid it looked foreign.
      if (this.foreign.has(pid) && !groups.has(pid)) continue;
      const stat = readStat(pid);
      if (!stat) continue;
      const usage = groups.get(stat.session) ?? groups.get(stat.pgrp);
      if (!usage) {
        this.foreign.add(pid);
        continue;
      }
      usage.scanTicks += stat.ticks;
      usage.scanRss += stat.rssPages;
    }
    for (const pid of this.foreign) if (!present.has(pid)) this.foreign.delete(pid);
  }
}

/** The one sampler of the process that spawns attempts (the launch helper, or the engine's own). */
export const resourceSampler = new ResourceSampler();
