// When the engine polls its sources: once at start, every interval while it may launch, on
// demand, and as soon as a queue folder's watch reports a change (the interval stays as the
// safety net for what a watch misses). One poll runs at a time; a poll under way serves whoever
// asks for one meanwhile, and a change reported during a poll brings one more right after it.
import type { ItemIngestion } from './ingest';
import { WallClockWatch } from './wallClock';
import type { StoreBackend } from '../store/backend';
import { isStoreUnavailable } from '../store/pgStore';

export interface PollerHooks {
  /** True once the engine has closed: no poll starts, and one under way stops. */
  isClosed(): boolean;
  /** True while the engine is stopped: polls are taken on demand only. */
  isStopped(): boolean;
  /** After a complete poll: what it ingested is committed and may be launched. */
  onPolled(): void;
  /** The wall clock jumped by `ms` (negative: back) since the previous poll. */
  onClockJump(ms: number): void;
}

/**
 * A poll a change prompts starts at least this long after the previous one ended: the first change
 * after a quiet spell is polled at once, and a writer that appends to a queue file line by line
 * makes at most one poll per gap (each reads the whole file again) instead of one per write.
 */
const PROMPTED_GAP_MS = 20;

export class Poller {
  /** When the last poll started (epoch ms), also across restarts: /stats reports it. */
  lastPollAt: number | null = null;
  /** Polls since this engine started. */
  polls = 0;
  /** performance.now() when the last poll of this process started. */
  private lastPollMonotonic: number | null = null;
  private readonly wallClock = new WallClockWatch();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  /** A change was reported: a prompted poll is on its way (queued, or after the one under way). */
  private prompted = false;
  /** The last poll failed to record what it read: the next one reads every file again. */
  private scanEveryFile = false;
  /** performance.now() when the last prompted poll ended. */
  private promptedEndedAt = -Infinity;

  constructor(
    private readonly store: StoreBackend,
    private readonly ingestion: ItemIngestion,
    private readonly intervalMs: number,
    private readonly hooks: PollerHooks,
  ) {
    ingestion.onQueueChanged = () => this.changeReported();
  }

  /** Milliseconds since this process's last poll started, on the monotonic clock; null before one. */
  msSinceLastPoll(): number | null {
    return this.lastPollMonotonic === null ? null : performance.now() - this.lastPollMonotonic;
  }

  /** The poll under way, if any: a shutdown waits for it. */
  get underWay(): Promise<void> | undefined {
    return this.polling;
  }

  poll(): Promise<void> {
    this.polling ??= this.doPoll(false).finally(() => (this.polling = undefined));
    return this.polling;
  }

  /**
   * A poll asked for (Poll Now): it sees every file written before the ask. A poll under way may
   * have read the folder already, and the watch may not have reported a change made a moment ago,
   * so this one starts after it and looks at every file.
   */
  async pollNow(): Promise<void> {
    while (this.polling) await this.polling.catch(() => undefined);
    this.polling = this.doPoll(true).finally(() => (this.polling = undefined));
    return this.polling;
  }

  /** The next poll, an interval from now (and the next after it), unless stopped or closed. */
  schedule(): void {
    clearTimeout(this.timer);
    if (this.hooks.isClosed() || this.hooks.isStopped()) return;
    this.timer = setTimeout(() => {
      void this.poll().finally(() => this.schedule());
    }, this.intervalMs);
  }

  cancel(): void {
    clearTimeout(this.timer);
  }

  /**
   * A queue folder changed: poll in this turn's immediate phase (a burst of events makes one
   * poll), or right after the poll under way, which may have read the folder before the change,
   * and not within PROMPTED_GAP_MS of the last prompted one. Not while stopped: then polls are
   * taken on demand only.
   */
  private changeReported(): void {
    if (this.prompted || this.hooks.isClosed() || this.hooks.isStopped()) return;
    this.prompted = true;
    const run = (): void => {
      if (this.polling) {
        void this.polling.then(run, run);
        return;
      }
      const wait = this.promptedEndedAt + PROMPTED_GAP_MS - performance.now();
      if (wait > 0) {
        setTimeout(run, wait);
        return;
      }
      this.prompted = false;
      if (this.hooks.isClosed() || this.hooks.isStopped()) return;
      this.polling = this.doPoll(false, true).finally(() => {
        this.promptedEndedAt = performance.now();
        this.polling = undefined;
      });
    };
    setImmediate(run);
  }

  private async doPoll(everyFile: boolean, prompted = false): Promise<void> {
    // The poll before could not record what it read: the changes the watch reported were taken
    // by it, so this one looks at every file (what was recorded is skipped by its fingerprint).
    everyFile ||= this.scanEveryFile;
    this.scanEveryFile = false;
    if (this.hooks.isClosed()) return;
    const jump = this.wallClock.jumped();
    if (jump !== 0) this.hooks.onClockJump(jump);
    const started = Date.now();
    this.lastPollAt = started;
    this.lastPollMonotonic = performance.now();
    this.polls++;
    try {
      this.store.setMeta('last_poll_at', String(started));
      if (!(await this.ingestion.scanSources(started, everyFile, prompted))) return;
      this.hooks.onPolled();
    } catch (err) {
      // A fleet's database that cannot be reached, or that aborted the transaction: the next
      // poll tries again, and /health says why meanwhile. The sql.js store never throws here.
      if (!isStoreUnavailable(err)) throw err;
      this.scanEveryFile = true;
    }
  }
}
