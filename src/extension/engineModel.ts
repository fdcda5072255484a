// EngineModel: the snapshot the tree views and the status bar render (stats, health, status and
// items, schedules), kept up to date from /events with coalesced HTTP refreshes. Views never fetch; they map
// this model to TreeItems. When the engine is not connected the model holds nothing, so no view
// can show stale numbers.
import * as vscode from 'vscode';
import type { HealthResponse, ScheduleSummary, StatsOverview, StatusResponse } from '../shared/api';
import { Disposable } from './dispose';
import type { EngineConnection } from './engineConnection';
import { Throttled } from './throttle';
import {
  emptyGroups,
  GROUP_ORDERS,
  GROUP_STATES,
  groupFilter,
  ITEM_GROUPS,
  ITEMS_PER_GROUP,
  pagePath,
  withoutEnded,
  withServicesTogether,
  type ItemGroup,
  type ItemsPage,
  type ItemsSnapshot,
} from './itemGroups';

export { GROUP_STATES, ITEM_GROUPS, ITEMS_PER_GROUP, withServicesTogether, type ItemGroup, type ItemsSnapshot } from './itemGroups';

export type ModelPart = 'stats' | 'health' | 'status' | 'items' | 'schedules';
/** The parts fetched only while a view shows them. */
export type WatchedPart = 'status' | 'items' | 'schedules';

/** Log actions that end an item's attempt: the item no longer runs, whatever comes next for it. */
const ATTEMPT_ENDS: ReadonlySet<string> = new Set(['launch_succeeded', 'launch_failed', 'launch_cancelled', 'launch_interrupted', 'item_failed', 'item_removed']);

export class EngineModel extends Disposable {
  stats: StatsOverview | undefined;
  health: HealthResponse | undefined;
  status: StatusResponse | undefined;
  items: ItemsSnapshot | undefined;
  /** GET /schedules: one row per schedule template; empty from an engine without schedules. */
  schedules: ScheduleSummary[] | undefined;
  /** The last refresh error while connected (e.g. 401), shown by the views. */
  error: string | undefined;

  private readonly _onDidChange = this._register(new vscode.EventEmitter<ReadonlySet<ModelPart>>());
  readonly onDidChange = this._onDidChange.event;

  private readonly refreshers: Record<ModelPart, Throttled>;
  /**
   * Reads /status once even while no view shows it: whether the store is shared by a fleet
   * decides whether the Fleet view appears at all. Asked on connecting and when an
   * engine starts or stops (in a fleet, /events carries every engine's entries).
   */
  private readonly fleetProbe: Throttled;
  /**
   * Parts someone is looking at. Stats and health feed the status bar and are pushed by /events
   * anyway; status and items are fetched only while their view is visible (and once on
   * connecting, see load()), so a busy engine costs nothing for views nobody sees.
   */
  private readonly watched = new Set<ModelPart>(['stats', 'health']);
  /**
   * Whether the engine takes `/items?state=` . An older engine (a remote one not
   * yet upgraded) refuses the parameter with 400; then the items are read by outcome and grouped
   * by their `state` field here. Asked again after every reconnect.
   */
  private stateFilter: boolean | undefined;
  /** Whether the engine takes `/items?order=` (an older one answers 400); asked again after every reconnect. */
  private orderParam: boolean | undefined;
  /** Each group's last page, shown until the group's next read is in. */
  private lastPages: Partial<Record<ItemGroup, ItemsPage>> = {};
  /** How many items each group lists, once "Show more…" was used on it. */
  private readonly limits = new Map<ItemGroup, number>();
  /**
   * Items whose attempt ended (by its log event) since the read of /items under way began: that
   * read may still list them running, and must not bring back a row the event took away.
   */
  private endedDuringRead = new Set<string>();
  /** Parts with an answer since the engine connected (see `loaded`). */
  private readonly answered = new Set<ModelPart>();
  /** Parts no view shows whose held answer the engine has changed since (see load()). */
  private readonly stale = new Set<ModelPart>();
  /** Parts the next load reads although no view shows them (see refresh()). */
  private readonly readUnwatched = new Set<ModelPart>();

  constructor(private readonly connection: EngineConnection) {
    super();
    this.refreshers = {
      stats: this._register(new Throttled(() => this.load('stats'), 250)),
      health: this._register(new Throttled(() => this.load('health'), 250)),
      status: this._register(new Throttled(() => this.load('status'), 1000)),
      // The Items view follows the engine's events as the dashboard does: the events of one turn
      // become one read, and events during a read one more after it, at most one read a quarter
      // second (the views draw no more often than that). The first read after a quiet spell is at
      // once: a second's wait showed an attempt running for up to a second after the dashboard said
      // it ended; reading back to back kept the extension host busy while many items launched.
      items: this._register(new Throttled(() => this.load('items'), 250)),
      schedules: this._register(new Throttled(() => this.load('schedules'), 1000)),
    };
    this.fleetProbe = this._register(new Throttled(() => this.load('status', true), 1000));
    this._register(
      connection.onDidChangeConnection((connected) => {
        this.stateFilter = undefined;
        this.orderParam = undefined;
        if (connected) this.refresh(true);
        else this.clear();
      }),
    );
    this._register(
      connection.onDidReceiveEvent((e) => {
        switch (e.name) {
          case 'stats':
            this.stats = e.data;
            this.answered.add('stats');
            this.fire('stats');
            // Nothing runs: the Items view says so at once, as the dashboard does. (Not in a fleet,
            // whose other engines' attempts this engine's stats may not have caught up with yet.)
            if (e.data.running === 0 && !this.status?.fleet) this.endRunning(() => true);
            // Counters moved: items changed outcome and /status's numbers are stale.
            this.changed('status');
            this.changed('items');
            // An occurrence became an item or finished (last run), or a template was held or released.
            this.changed('schedules');
            break;
          case 'health':
            this.health = e.data;
            this.answered.add('health');
            this.fire('health');
            this.changed('status');
            break;
          case 'log':
            if (e.data.action === 'engine_started' || e.data.action === 'engine_stopped') {
              this.refreshers.health.trigger();
              this.changed('status');
              this.fleetProbe.trigger();
            } else if (e.data.itemId) {
              const itemId = e.data.itemId;
              // Shown at once, on the event itself; the read that follows brings the rest.
              if (ATTEMPT_ENDS.has(e.data.action)) this.endRunning((id) => id === itemId);
              this.changed('items');
              // Hold/release of a template logs under the template's id; a new template is scanned.
              this.changed('schedules');
            }
            break;
        }
      }),
    );
    if (connection.connected) this.refresh(true);
  }

  /**
   * True once every part someone looks at has had the engine's first answer (data or error) since
   * it connected: until then an empty view would say "no items" before the engine was asked.
   */
  get loaded(): boolean {
    if (!this.connection.connected) return false;
    for (const part of this.watched) if (!this.answered.has(part)) return false;
    return true;
  }

  /** True while the engine is connected and a first snapshot has arrived. */
  get available(): boolean {
    return this.connection.connected && this.stats !== undefined;
  }

  get baseUrl(): string | undefined {
    return this.connection.baseUrl;
  }

  /** A view became visible (refresh its part now) or hidden (stop refreshing it). */
  setWatched(part: WatchedPart, watched: boolean): void {
    if (watched === this.watched.has(part)) return;
    if (watched) {
      this.watched.add(part);
      // Read while no view showed it, and changed since: not shown, the view waits for its read.
      if (this.stale.delete(part)) this.drop(part);
      this.refreshers[part].trigger(true);
    } else {
      this.watched.delete(part);
    }
  }

  /**
   * Reads /status again (throttled): the Fleet view's heartbeats age and an engine that dies
   * quietly (no attempts to take over) changes nothing else that would trigger a read.
   */
  refreshStatus(): void {
    this.refreshers.status.trigger();
  }

  /**
   * The reads this model makes first once connected, beside /stats and /health
   * (EngineClient.setFirstReads): each group's first page exactly as groupPage() asks for it.
   */
  firstReads(): string[] {
    return ['/status', '/schedules', ...ITEM_GROUPS.map((g) => pagePath(this.groupQuery(g), this.limitOf(g)))];
  }

  /** Lists ITEMS_PER_GROUP more items of `group` (the Items view's "Show more…"). */
  showMore(group: ItemGroup): void {
    this.limits.set(group, this.limitOf(group) + ITEMS_PER_GROUP);
    this.refreshers.items.trigger(true);
  }

  private limitOf(group: ItemGroup): number {
    return this.limits.get(group) ?? ITEMS_PER_GROUP;
  }

  /** Refresh every part (the Refresh command; `now` skips the throttle interval). */
  refresh(now = false): void {
    for (const part of Object.keys(this.refreshers) as ModelPart[]) this.readUnwatched.add(part);
    for (const r of Object.values(this.refreshers)) r.trigger(now);
    this.fleetProbe.trigger(now);
  }

  /**
   * Takes the items `ended` picks out of the Running group of the snapshot shown, and of the read
   * under way when it arrives. The engine's events are the same the dashboard follows.
   */
  private endRunning(ended: (itemId: string) => boolean): void {
    for (const item of this.items?.byGroup.running.items ?? []) if (ended(item.id)) this.endedDuringRead.add(item.id);
    // The pages kept for groups not read again yet must not bring the row back either.
    const kept = this.lastPages.running;
    if (kept) this.lastPages.running = { items: kept.items.filter((i) => !ended(i.id)), total: kept.total - kept.items.filter((i) => ended(i.id)).length };
    if (!this.items || !withoutEnded(this.items, ended)) return;
    this.fire('items');
  }

  /** Forgets what is held of `part`, as if it had never been read since connecting. */
  private drop(part: WatchedPart): void {
    this.answered.delete(part);
    if (part === 'items') this.lastPages = {};
    this[part] = undefined;
    this.fire(part);
  }

  private clear(): void {
    this.answered.clear();
    this.stale.clear();
    this.readUnwatched.clear();
    this.lastPages = {};
    this.stats = this.health = this.status = this.items = this.schedules = undefined;
    this.error = undefined;
    this.fire('stats', 'health', 'status', 'items', 'schedules');
  }

  private fire(...parts: ModelPart[]): void {
    this._onDidChange.fire(new Set(parts));
  }

  /**
   * The engine said `part` changed: read it again (throttled), or, while no view shows it, note
   * that what is held is out of date.
   */
  private changed(part: WatchedPart): void {
    if (!this.watched.has(part) && this.answered.has(part)) this.stale.add(part);
    this.refreshers[part].trigger();
  }

  /**
   * `unwatched`: load the part although no view shows it (the fleet probe). Every part is also
   * read on refresh(), shown or not (on connecting, and again when an answer turns out to predate
   * the event stream): after a reload VS Code says which views are visible only once it has drawn
   * them (a few hundred ms later), and a view whose part is then already here shows its rows when
   * asked instead of after one more round trip. Changes to a part no view shows are not read; the
   * part is marked stale instead, and dropped when its view shows up (setWatched).
   */
  private async load(part: ModelPart, unwatched = false): Promise<void> {
    if (!this.connection.connected) return;
    if (!unwatched && !this.watched.has(part) && !this.readUnwatched.delete(part)) {
      if (this.answered.has(part)) this.stale.add(part);
      return;
    }
    // This read serves the refresh's request too: a later change while the view is hidden must
    // not be read on its account.
    this.readUnwatched.delete(part);
    this.stale.delete(part);
    try {
      switch (part) {
        case 'stats':
          this.stats = (await this.connection.get<{ overview: StatsOverview }>('/stats')).overview;
          break;
        case 'health':
          this.health = await this.connection.get<HealthResponse>('/health');
          break;
        case 'status':
          this.status = await this.connection.get<StatusResponse>('/status');
          break;
        case 'items': {
          const ended = (this.endedDuringRead = new Set());
          const items = await this.loadItems((partial) => {
            // Each group as soon as its page is in: the cheap ones (read by counters) are not held
            // back by a group whose read scans a big queue.
            if (!this.connection.connected) return;
            withoutEnded(partial, (id) => ended.has(id));
            this.items = partial;
            this.answered.add('items');
            this.fire('items');
          });
          withoutEnded(items, (id) => ended.has(id));
          this.items = items;
          break;
        }
        case 'schedules':
          this.schedules = await this.loadSchedules();
          break;
      }
      if (!this.connection.connected) return this.clear();
      this.error = undefined;
      this.answered.add(part);
      this.fire(part);
    } catch (err) {
      if (!this.connection.connected) return;
      this.error = err instanceof Error ? err.message : String(err);
      this.answered.add(part);
      this.fire(part);
    }
  }

  /**
   * An engine from before schedules (a remote one not yet upgraded) answers 404 for /schedules:
   * it has no schedules, which the view shows as its empty message rather than as an error.
   */
  private async loadSchedules(): Promise<ScheduleSummary[]> {
    try {
      return await this.connection.get<ScheduleSummary[]>('/schedules');
    } catch (err) {
      if (/HTTP 404\b/.test(String(err))) return [];
      throw err;
    }
  }

  private async loadItems(partial: (snapshot: ItemsSnapshot) => void): Promise<ItemsSnapshot> {
    if (this.stateFilter !== false) {
      try {
        const snapshot = await this.loadItemsByState(partial);
        this.stateFilter = true;
        return snapshot;
      } catch (err) {
        if (this.stateFilter === true || !/HTTP 400\b[\s\S]*\bstate\b/.test(String(err))) throw err;
        this.stateFilter = false;
      }
    }
    return this.loadItemsByOutcome();
  }

  private page(query: string, limit = ITEMS_PER_GROUP): Promise<ItemsPage> {
    return this.connection.get<ItemsPage>(pagePath(query, limit));
  }

  /** A group's filter, with its order unless the engine said it does not know `order`. */
  private groupQuery(group: ItemGroup): string {
    const order = GROUP_ORDERS[group];
    return order && this.orderParam !== false ? `${groupFilter(group)}&order=${order}` : groupFilter(group);
  }

  /** A group's first page in the group's order; without the order from an engine that does not know it yet. */
  private async groupPage(group: ItemGroup): Promise<ItemsPage> {
    const filter = groupFilter(group);
    const order = GROUP_ORDERS[group];
    if (order && this.orderParam !== false) {
      try {
        const page = await this.page(this.groupQuery(group), this.limitOf(group));
        this.orderParam = true;
        return page;
      } catch (err) {
        if (this.orderParam === true || !/HTTP 400\b[\s\S]*\border\b/.test(String(err))) throw err;
        this.orderParam = false;
      }
    }
    return this.page(filter, this.limitOf(group));
  }

  /**
   * One read per group (`state=` takes several, comma-separated): each complete up to its limit,
   * however many items wait. A group /stats counts as empty is not read (in a queue of 100,000
   * items, a read by state scans them all). `partial` gets the snapshot each time a group is in;
   * the groups not read again yet keep their last pages meanwhile.
   */
  private async loadItemsByState(partial: (snapshot: ItemsSnapshot) => void): Promise<ItemsSnapshot> {
    const pages = { ...this.lastPages } as Record<ItemGroup, ItemsPage>;
    const ended = this.endedDuringRead;
    // In a fleet the counters may lag the other engines' changes that /events announces.
    const empty = this.status?.fleet ? new Set<ItemGroup>() : emptyGroups(this.stats);
    const snapshot = () => {
      const byGroup = {} as ItemsSnapshot['byGroup'];
      for (const g of ITEM_GROUPS) byGroup[g] = { items: [...(pages[g]?.items ?? [])], total: pages[g]?.total ?? 0 };
      return withServicesTogether({ byGroup });
    };
    let pending = 0;
    await Promise.all(
      ITEM_GROUPS.map(async (g) => {
        if (empty.has(g)) {
          pages[g] = { items: [], total: 0 };
          return;
        }
        pending++;
        pages[g] = await this.groupPage(g);
        // The last one is the whole snapshot, returned below.
        if (--pending > 0) partial(snapshot());
      }),
    );
    const running = pages.running;
    if (running) pages.running = { items: running.items.filter((i) => !ended.has(i.id)), total: running.total - running.items.filter((i) => ended.has(i.id)).length };
    this.lastPages = pages;
    return snapshot();
  }

  /**
   * For an engine without `state=`: pending items are split by their `state` field. Beyond the
   * first page of pending items the split is unknown; those are counted in the Waiting group.
   */
  private async loadItemsByOutcome(): Promise<ItemsSnapshot> {
    const [pending, failed, launched] = await Promise.all(['pending', 'failed', 'launched'].map((o) => this.page(`outcome=${o}`)));
    const byGroup = {} as ItemsSnapshot['byGroup'];
    for (const g of ITEM_GROUPS) {
      const items = pending.items.filter((i) => GROUP_STATES[g].includes(i.state ?? (i.phase === 'done' ? i.outcome : i.phase)));
      byGroup[g] = { items, total: items.length };
    }
    byGroup.waiting.total += pending.total - pending.items.length;
    byGroup.failed = failed;
    byGroup.launched = launched;
    return withServicesTogether({ byGroup });
  }
}
