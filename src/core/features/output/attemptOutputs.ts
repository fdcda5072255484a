// Attempts' captured output as the engine serves it: where each attempt's files are, the followers
// of a running attempt's output (told when it ends), the total cap, and the last failure to write
// output, which /health reports like a storage error. It follows the kernel through its hooks: an
// attempt's end completes its output, and pruning that forgets an item removes its files.
import type { AttemptOutput } from '../../kernel/monitoredEngine';
import type { EngineEventBus } from '../../kernel/eventBus';
import type { EngineHooks } from '../../kernel/hooks';
import type { LogWriter } from '../../intake/ingest';
import type { AttemptRef } from '../../kernel/transitions';
import type { OutputTarget } from './outputFiles';
import { OutputRetention, type OutputOptions } from './outputRetention';
import { readItem } from '../../reads/records';
import type { StoreBackend } from '../../store/backend';

export interface AttemptOutputParts {
  store: StoreBackend;
  log: LogWriter;
  events: EngineEventBus;
  hooks: EngineHooks;
  /** The attempts running (or journaled and about to be spawned) on this engine, by id. */
  running(): ReadonlyMap<number, AttemptRef>;
}

export class AttemptOutputs {
  private readonly retention: OutputRetention;
  /** Followers of running attempts' output, by attempt id: told when the attempt ends. */
  private readonly endListeners = new Map<number, Set<() => void>>();
  /** The last failure to capture an attempt's output (disk full…); cleared by the next attempt that writes its output. */
  private error: string | null = null;

  constructor(
    private readonly parts: AttemptOutputParts,
    options: OutputOptions,
  ) {
    this.retention = new OutputRetention(parts.store, options);
    parts.hooks.on('attemptEnded', (attemptId, result) => {
      this.retention.recordFinished(result.outputBytes);
      // Its followers end and the total cap applies, as for any attempt that ends.
      this.ended(attemptId, result.outputBytes !== null && result.outputError === null);
    });
    parts.hooks.on('itemsForgotten', (itemIds) => this.retention.itemsForgotten(itemIds));
  }

  get dir(): string {
    return this.retention.dir;
  }

  get lastError(): string | null {
    return this.error;
  }

  /** Where the attempt's output goes; undefined when capture is off. */
  target(attemptId: number): OutputTarget | undefined {
    return this.retention.target(attemptId);
  }

  /** At start: a cap lowered since the last run applies now; output files no attempt of this database owns go. */
  async start(lastAttemptId: number): Promise<void> {
    this.retention.enforceTotal();
    await this.retention.removeStrays(lastAttemptId);
  }

  /** The launcher could not write an attempt's output: the attempt runs on, its output cut. */
  captureFailed(attemptId: number, error: string): void {
    const first = this.error === null;
    this.error = error;
    const a = this.parts.running().get(attemptId);
    this.parts.log('database_error', 'error', `cannot write the output of attempt ${a?.attempt ?? '?'} of "${a?.item.name ?? '?'}": ${error}; the attempt runs on, its output is cut`, a?.item.id ?? null, {
      error,
      output: this.dir,
    });
    if (first) this.parts.events.emit({ type: 'stats' });
  }

  /** The attempt's output is complete: its followers end, the total cap applies, a capture error clears. */
  private ended(attemptId: number, written: boolean): void {
    const listeners = this.endListeners.get(attemptId);
    this.endListeners.delete(attemptId);
    if (listeners) for (const l of listeners) l();
    this.retention.enforceTotal();
    if (written && this.error !== null) {
      this.error = null;
      this.parts.log('database_recovered', 'info', 'attempt output is written again', null, null);
    }
  }

  /** GET /items/{id}/attempts/{n}/output: where to read it, and a way to follow it while it runs. */
  attemptOutput(itemId: string, attempt: number): AttemptOutput {
    const { store } = this.parts;
    const row = store.get<{ id: number; outcome: string; output_bytes: number | null; output_pruned: number }>(
      'SELECT id, outcome, output_bytes, output_pruned FROM attempts WHERE item_id = ? AND attempt = ? ORDER BY id DESC LIMIT 1',
      [itemId, attempt],
    );
    if (!row) return readItem(store, itemId) ? { found: 'no_attempt' } : { found: 'no_item' };
    if (row.output_pruned) return { found: 'pruned' };
    // Spawned, or about to be (journaled): a follower waits for its output and its end.
    const running = this.parts.running().has(row.id);
    if (!running && row.output_bytes === null && row.outcome !== 'running') {
      // Never spawned (spawn failed, storage down), or cut short by a crash: whatever reached
      // the disk is served, and an attempt with no file at all is one that never started.
      return { found: 'output', dir: this.dir, attemptId: row.id, running: false, started: false, onEnd: () => () => undefined };
    }
    return {
      found: 'output',
      dir: this.dir,
      attemptId: row.id,
      running,
      started: true,
      onEnd: (listener) => {
        if (!this.parts.running().has(row.id)) {
          queueMicrotask(listener);
          return () => undefined;
        }
        let set = this.endListeners.get(row.id);
        if (!set) this.endListeners.set(row.id, (set = new Set()));
        set.add(listener);
        return () => {
          set.delete(listener);
          if (set.size === 0 && this.endListeners.get(row.id) === set) this.endListeners.delete(row.id);
        };
      },
    };
  }

  /** Followers still registered. */
  get followers(): number {
    let n = 0;
    for (const set of this.endListeners.values()) n += set.size;
    return n;
  }

  /** At shutdown: followers of attempts that did not finish get the end of their response. */
  endFollowers(): void {
    for (const listeners of this.endListeners.values()) for (const l of listeners) l();
    this.endListeners.clear();
  }

  close(): Promise<void> {
    return this.retention.close();
  }
}
