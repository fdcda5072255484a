// Writing the engine log: every entry is a row in the store, and a `log` event for the listeners if
// there are any. Ids only grow, so they also order entries in time. The full-text index takes the
// entries in batches (Store.indexLogs: every second, and before a search reads it), not one by one.
import type { LogAction, LogEntry, LogLevel } from '../../shared/api';
import type { EngineEventBus } from './eventBus';
import { LEVEL_RANK } from '../reads/logQuery';
import type { StoreBackend } from '../store/backend';

export class EngineLog {
  /** The id of the newest entry (loaded from the store at startup). */
  lastId = 0;

  constructor(
    private readonly store: StoreBackend,
    private readonly events: EngineEventBus,
    /**
     * On a store shared by a fleet, the database gives the id (unique and growing fleet-wide) as
     * it inserts the entry: one round trip. Takes log_insert's parameters after the id.
     */
    private readonly insertWithId?: (params: (string | number | null)[]) => number,
  ) {}

  write(action: LogAction, level: LogLevel, message: string, itemId: string | null, details: Record<string, unknown> | null): void {
    const ts = Date.now();
    const row = [ts, action, LEVEL_RANK[level], message, itemId, details === null ? null : JSON.stringify(details)];
    let id: number;
    if (this.insertWithId) {
      id = this.lastId = this.insertWithId(row);
    } else {
      id = ++this.lastId;
      this.store.mutate('log_insert', [id, ...row]);
    }
    // Nobody would receive it: skip building the entry (this runs for every log entry).
    if (!this.events.hasListeners) return;
    const entry: LogEntry = { id, timestamp: new Date(ts).toISOString(), action, level, message, itemId, details };
    this.events.emit({ type: 'log', entry });
  }
}
