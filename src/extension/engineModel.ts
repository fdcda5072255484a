// EngineModel: the snapshot the tree views and the status bar render (stats, health, status and
// items), kept up to date from /events with coalesced HTTP refreshes. Views never fetch; they map
// this model to TreeItems. When the engine is not connected the model holds nothing, so no view
// can show stale numbers.
import * as vscode from 'vscode';
import type { HealthResponse, ItemOutcome, ItemSummary, StatsOverview, StatusResponse } from '../shared/api';
import { Disposable } from './dispose';
import type { EngineConnection } from './engineConnection';
import { Throttled } from './throttle';

export type ModelPart = 'stats' | 'health' | 'status' | 'items';
export const OUTCOMES: readonly ItemOutcome[] = ['failed', 'pending', 'launched'];
/** Items per outcome the Items view lists; the rest is summarised as "… more". */
export const ITEMS_PER_OUTCOME = 200;

export interface ItemsSnapshot {
  byOutcome: Record<ItemOutcome, { items: ItemSummary[]; total: number }>;
}

export class EngineModel extends Disposable {
  stats: StatsOverview | undefined;
  health: HealthResponse | undefined;
  status: StatusResponse | undefined;
  items: ItemsSnapshot | undefined;
  /** The last refresh error while connected (e.g. 401), shown by the views. */
  error: string | undefined;

  private readonly _onDidChange = this._register(new vscode.EventEmitter<ReadonlySet<ModelPart>>());
  readonly onDidChange = this._onDidChange.event;

  private readonly refreshers: Record<ModelPart, Throttled>;
  /**
   * Parts someone is looking at. Stats and health feed the status bar and are pushed by /events
   * anyway; status and items are fetched only while their view is visible, so a busy engine
   * costs nothing for views nobody sees.
   */
  private readonly watched = new Set<ModelPart>(['stats', 'health']);

  constructor(private readonly connection: EngineConnection) {
    super();
    this.refreshers = {
      stats: this._register(new Throttled(() => this.load('stats'), 250)),
      health: this._register(new Throttled(() => this.load('health'), 250)),
      status: this._register(new Throttled(() => this.load('status'), 1000)),
      items: this._register(new Throttled(() => this.load('items'), 1000)),
    };
    this._register(connection.onDidChangeConnection((connected) => (connected ? this.refresh(true) : this.clear())));
    this._register(
      connection.onDidReceiveEvent((e) => {
        switch (e.name) {
          case 'stats':
            this.stats = e.data;
            this.fire('stats');
            // Counters moved: items changed outcome and /status's numbers are stale.
            this.refreshers.status.trigger();
            this.refreshers.items.trigger();
            break;
          case 'health':
            this.health = e.data;
            this.fire('health');
            this.refreshers.status.trigger();
            break;
          case 'log':
            if (e.data.action === 'engine_started' || e.data.action === 'engine_stopped') {
              this.refreshers.health.trigger();
              this.refreshers.status.trigger();
            } else if (e.data.itemId) {
              this.refreshers.items.trigger();
            }
            break;
        }
      }),
    );
    if (connection.connected) this.refresh(true);
  }

  /** True while the engine is connected and a first snapshot has arrived. */
  get available(): boolean {
    return this.connection.connected && this.stats !== undefined;
  }

  get baseUrl(): string | undefined {
    return this.connection.baseUrl;
  }

  /** A view became visible (refresh its part now) or hidden (stop refreshing it). */
  setWatched(part: 'status' | 'items', watched: boolean): void {
    if (watched === this.watched.has(part)) return;
    if (watched) {
      this.watched.add(part);
      this.refreshers[part].trigger(true);
    } else {
      this.watched.delete(part);
    }
  }

  /** Refresh every part (the Refresh command; `now` skips the throttle interval). */
  refresh(now = false): void {
    for (const r of Object.values(this.refreshers)) r.trigger(now);
  }

  private clear(): void {
    this.stats = this.health = this.status = this.items = undefined;
    this.error = undefined;
    this.fire('stats', 'health', 'status', 'items');
  }

  private fire(...parts: ModelPart[]): void {
    this._onDidChange.fire(new Set(parts));
  }

  private async load(part: ModelPart): Promise<void> {
    if (!this.connection.connected || !this.watched.has(part)) return;
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
        case 'items':
          this.items = await this.loadItems();
          break;
      }
      if (!this.connection.connected) return this.clear();
      this.error = undefined;
      this.fire(part);
    } catch (err) {
      if (!this.connection.connected) return;
      this.error = err instanceof Error ? err.message : String(err);
      this.fire(part);
    }
  }

  private async loadItems(): Promise<ItemsSnapshot> {
    const lists = await Promise.all(
      OUTCOMES.map((o) =>
        this.connection.get<{ items: ItemSummary[]; total: number }>(`/items?outcome=${o}&limit=${ITEMS_PER_OUTCOME}&offset=0`),
      ),
    );
    const byOutcome = {} as ItemsSnapshot['byOutcome'];
    OUTCOMES.forEach((o, i) => (byOutcome[o] = { items: lists[i].items, total: lists[i].total }));
    return { byOutcome };
  }
}
