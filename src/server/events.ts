// /events: server-sent events for live UIs.
//
// One EventHub per server owns the single engine subscription and the timers, so the cost of an
// engine event is one serialisation however many clients listen. The subscription and timers
// exist only while at least one client is connected.
//
// Slow clients: the engine's log is the buffer. When a client's unsent data would pass
// maxBufferedBytes, live log entries stop being queued for it; once its socket drains, it catches
// up from engine.queryLogs (the same path as a Last-Event-ID replay) and goes live again. So a burst
// (thousands of item_discovered entries in one poll) costs a fast client nothing, and a client that
// does not read at all holds at most about maxBufferedBytes until it is dropped after stallTimeoutMs.
//
// Ordering guarantees per client: initial `stats` and `health`, then (with Last-Event-ID) every
// log entry after that id in ascending order, then live entries — with no gap and no duplicate,
// because a client only goes live once a replay query returned hasMore=false *in the same tick*
// (the engine emits synchronously, so nothing can slip in between), and a live entry is skipped
// only when a replay sent it already (its notification came late).
//
// Live entries are sent as they come, not only above the last id sent: on a fleet, ids come from
// one sequence that every engine draws from, and engines commit in any order. Another engine's
// entry can arrive after one of ours with a higher id (it took its id first and committed last,
// or its notification came later), and a rule of "above the last id sent" dropped it: the engine
// that claimed an item another engine discovered never streamed the discovery.
import type { ServerResponse } from 'node:http';
import type { HealthResponse, LogEntry } from '../shared/api';
import type { EngineEvent, HealthSnapshot, MonitoredEngine } from '../core/kernel/monitoredEngine';
import { RecentIds } from '../shared/recentIds';

export interface EventHubOptions {
  /** Minimum gap between two `stats` events to one client (at most 4 per second, as the API promises). */
  statsIntervalMs: number;
  /** Health is re-evaluated this often while clients are connected ("stalled" depends on the clock). */
  healthIntervalMs: number;
  /** A comment line this often keeps proxies and idle-connection reapers from closing the stream. */
  heartbeatMs: number;
  /** Unsent data per client above which live log entries are no longer queued (it catches up later). */
  maxBufferedBytes: number;
  /** A client that stays above maxBufferedBytes this long is dropped (it can resume with Last-Event-ID). */
  stallTimeoutMs: number;
  /** Log entries fetched per query while replaying after Last-Event-ID (at most one page per turn). */
  replayPageSize: number;
  /** Bytes of log frames replays write in one event-loop turn, all clients together, at most. */
  replayTurnBytes: number;
}

export const DEFAULT_EVENT_HUB_OPTIONS: EventHubOptions = {
  statsIntervalMs: 250,
  healthIntervalMs: 1000,
  heartbeatMs: 15_000,
  maxBufferedBytes: 1024 * 1024,
  stallTimeoutMs: 30_000,
  replayPageSize: 500,
  replayTurnBytes: 256 * 1024,
};

interface Client {
  res: ServerResponse;
  closed: boolean;
  /** While true, live log events are skipped: the replay (catch-up) loop will fetch them. */
  replaying: boolean;
  /** Highest log id sent to this client (-1: none): where a catch-up replay resumes. */
  lastLogId: number;
  /** Ids the replays sent lately: a live entry among them was sent already. */
  replayed?: RecentIds;
  lastStatsAt: number;
  statsTimer?: NodeJS.Timeout;
}

export const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  // Tell buffering reverse proxies (nginx) to pass events through at once.
  'X-Accel-Buffering': 'no',
});

export class EventHub {
  private readonly clients = new Set<Client>();
  /** Replay bytes written in this event-loop turn, by all clients together (spendReplayBytes). */
  private replaySpent = 0;
  private replayBudgetRenewal = false;
  private unsubscribe?: () => void;
  private healthTimer?: NodeJS.Timeout;
  private heartbeatTimer?: NodeJS.Timeout;
  private flushTimer?: NodeJS.Timeout;
  private lastFlushAt = 0;
  private statsDirty = false;
  private lastHealthKey?: string;

  constructor(
    private readonly engine: MonitoredEngine,
    /** Builds the /health body from a snapshot (the server owns its shape). */
    private readonly healthBody: (snapshot: HealthSnapshot) => HealthResponse,
    private readonly options: EventHubOptions = DEFAULT_EVENT_HUB_OPTIONS,
  ) {}

  get clientCount(): number {
    return this.clients.size;
  }

  /** Takes over `res` as an event stream. `afterId`: replay log entries after this id first. */
  open(res: ServerResponse, afterId: number | undefined): void {
    const client: Client = { res, closed: false, replaying: afterId !== undefined, lastLogId: afterId ?? -1, lastStatsAt: 0 };
    res.writeHead(200, SSE_HEADERS);
    // Re-evaluated before the client joins: a change is broadcast to the existing clients, and
    // the new one gets the current body exactly once, below.
    const health = this.checkHealth();
    res.on('close', () => this.remove(client));
    this.clients.add(client);
    if (this.clients.size === 1) this.start();

    this.write(client, 'retry: 2000\n\n');
    this.sendStatsNow(client, this.statsFrame());
    this.write(client, frame('health', JSON.stringify(health)));
    if (afterId !== undefined) this.startReplay(client);
  }

  /** Ends every stream (server shutdown). */
  closeAll(): void {
    for (const client of [...this.clients]) {
      client.res.end();
      this.remove(client);
    }
  }

  // -- lifecycle ---------------------------------------------------------------------------------

  private start(): void {
    this.unsubscribe = this.engine.subscribe((event) => {
      // Never let a failure here propagate into the engine that is emitting.
      try {
        this.onEngineEvent(event);
      } catch (error) {
        console.error('engine-monitor: /events failed to handle an engine event', error);
      }
    });
    this.healthTimer = setInterval(() => this.guard(() => this.checkHealth()), this.options.healthIntervalMs);
    this.heartbeatTimer = setInterval(() => this.guard(() => this.broadcast(': heartbeat\n\n')), this.options.heartbeatMs);
  }

  private stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    clearInterval(this.healthTimer);
    clearInterval(this.heartbeatTimer);
    clearTimeout(this.flushTimer);
    this.healthTimer = this.heartbeatTimer = this.flushTimer = undefined;
    this.statsDirty = false;
    this.lastHealthKey = undefined;
  }

  private remove(client: Client): void {
    if (client.closed) return;
    client.closed = true;
    clearTimeout(client.statsTimer);
    this.clients.delete(client);
    if (this.clients.size === 0) this.stop();
  }

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      console.error('engine-monitor: /events timer failed', error);
    }
  }

  // -- engine events -----------------------------------------------------------------------------

  private onEngineEvent(event: EngineEvent): void {
    if (event.type === 'log') {
      const entry = event.entry;
      let text: string | undefined;
      for (const client of this.clients) {
        if (client.replaying || client.replayed?.has(entry.id)) continue;
        text ??= logFrame(entry);
        if (client.res.writableLength + text.length > this.options.maxBufferedBytes) {
          // Too far behind: stop queueing; fetch from the engine once the socket drains.
          client.replaying = true;
          this.startReplay(client);
          continue;
        }
        client.lastLogId = Math.max(client.lastLogId, entry.id);
        this.write(client, text);
      }
    } else {
      this.statsDirty = true;
    }
    // Stats and health are read back from the engine later, never inside its emit call (it may be
    // mid-update), and at most once per statsIntervalMs; the timer is the trailing edge, so the
    // last change is always sent.
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer) return;
    const wait = Math.max(0, this.lastFlushAt + this.options.statsIntervalMs - Date.now());
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.lastFlushAt = Date.now();
      this.guard(() => this.flush());
    }, wait);
  }

  private flush(): void {
    if (this.statsDirty) {
      this.statsDirty = false;
      const text = this.statsFrame();
      for (const client of this.clients) this.sendStats(client, text);
    }
    this.checkHealth();
  }

  private statsFrame(): string {
    return frame('stats', JSON.stringify(this.engine.stats()));
  }

  /** Sends stats to one client unless it got some less than statsIntervalMs ago; then later. */
  private sendStats(client: Client, text: string): void {
    const since = Date.now() - client.lastStatsAt;
    if (since >= this.options.statsIntervalMs) {
      this.sendStatsNow(client, text);
    } else if (!client.statsTimer) {
      // Only around a client's connect (the hub itself already flushes at that pace); +1 ms so
      // timer rounding never lands a hair inside the window.
      client.statsTimer = setTimeout(() => {
        client.statsTimer = undefined;
        if (!client.closed) this.guard(() => this.sendStatsNow(client, this.statsFrame()));
      }, this.options.statsIntervalMs - since + 1);
    }
  }

  private sendStatsNow(client: Client, text: string): void {
    client.lastStatsAt = Date.now();
    this.write(client, text);
  }

  /** Evaluates health; broadcasts it when the status or a check changed. Returns the body. */
  private checkHealth(): HealthResponse {
    const snapshot = this.engine.health();
    const key = `${snapshot.status}/${snapshot.checks.database}/${snapshot.checks.engine}`;
    const body = this.healthBody(snapshot);
    if (key !== this.lastHealthKey) {
      const changed = this.lastHealthKey !== undefined;
      this.lastHealthKey = key;
      if (changed) this.broadcast(frame('health', JSON.stringify(body)));
    }
    return body;
  }

  // -- writing -----------------------------------------------------------------------------------

  private startReplay(client: Client): void {
    this.replay(client).catch((error: unknown) => {
      console.error('engine-monitor: /events replay failed', error);
      client.res.destroy();
      this.remove(client);
    });
  }

  /**
   * Sends every entry after client.lastLogId, oldest first, then goes live. Paced: at most one page
   * (replayPageSize entries, replayTurnBytes of frames) per event-loop turn, shared by every replaying client, and nothing
   * more while the socket needs draining. A loopback socket accepts megabytes without pushing back,
   * so backpressure alone let one replay of 100,000 entries hold the engine's thread for seconds.
   */
  private async replay(client: Client): Promise<void> {
    for (;;) {
      if (client.res.writableNeedDrain) await this.drained(client);
      else await nextTurn();
      if (client.closed) return;
      // The turn's budget is shared by every replaying client: paced per client alone, twenty-five
      // clients replaying at once did twenty-five pages of work a turn and /health went unanswered.
      if (this.replaySpent >= this.options.replayTurnBytes) continue;
      const page = this.engine.queryLogs({ order: 'asc', afterId: client.lastLogId, limit: this.options.replayPageSize });
      let complete = true;
      for (const entry of page.entries) {
        // The rest of the page is fetched again in a later turn, after the last id sent.
        if (this.replaySpent >= this.options.replayTurnBytes || client.res.writableNeedDrain) {
          complete = false;
          break;
        }
        const text = logFrame(entry);
        client.lastLogId = Math.max(client.lastLogId, entry.id);
        (client.replayed ??= new RecentIds([], 1024)).add(entry.id);
        this.write(client, text);
        if (client.closed) return;
        this.spendReplayBytes(text.length);
      }
      // Live only if nothing could have been logged since the query: the whole page was sent in
      // this turn and it was the last one. (Entries logged between turns were skipped live, and the
      // next page's query finds them.)
      if (complete && !page.hasMore) {
        client.replaying = false;
        return;
      }
    }
  }

  /**
   * Counts replay bytes against this event-loop turn's budget; the budget is renewed in the next
   * turn. Clients waiting for it queue behind the ones served, so they take turns.
   */
  private spendReplayBytes(n: number): void {
    this.replaySpent += n;
    if (this.replayBudgetRenewal) return;
    this.replayBudgetRenewal = true;
    setImmediate(() => {
      this.replaySpent = 0;
      this.replayBudgetRenewal = false;
    });
  }

  private broadcast(text: string): void {
    for (const client of this.clients) this.write(client, text);
  }

  private write(client: Client, text: string): void {
    if (client.closed) return;
    const res = client.res;
    res.write(text);
    // Log entries are held back at maxBufferedBytes (above); only the small stats/health/heartbeat
    // frames can pass it. Twice the cap means the client has not read for a long time: drop it.
    if (res.writableLength > 2 * this.options.maxBufferedBytes) this.drop(client);
  }

  /** Waits for the socket to drain; a client that does not read within stallTimeoutMs is dropped. */
  private drained(client: Client): Promise<void> {
    const res = client.res;
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      const timer = setTimeout(() => {
        this.drop(client);
        done();
      }, this.options.stallTimeoutMs);
      res.on('drain', done);
      res.on('close', done);
    });
  }

  /** A client that does not read must not make the server hold an ever-growing buffer; it can
   * reconnect with Last-Event-ID and lose nothing. */
  private drop(client: Client): void {
    client.res.destroy();
    this.remove(client);
  }
}

/** Resolves after the I/O the event loop has waiting: other requests are served in between. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function frame(event: string, data: string): string {
  return `event: ${event}\ndata: ${data}\n\n`;
}

function logFrame(entry: LogEntry): string {
  // JSON.stringify escapes newlines, so the data is always one line.
  return `event: log\nid: ${entry.id}\ndata: ${JSON.stringify(entry)}\n\n`;
}
