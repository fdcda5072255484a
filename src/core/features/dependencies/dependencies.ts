// Dependencies between items. An item with `dependsOn` is blocked until every
// dependency has launched (a service: is ready, features/services; it blocks its dependents
// again that have not started when it leaves ready); the `blocked` flag on its row is kept on every transition (insert, a
// dependency launching, failing or appearing), so dispatch skips blocked items through an index
// and never joins. A dependency that fails for good (or is cancelled) fails its dependents without
// an attempt, transitively; a cycle among known items fails every item on it. The rows of the
// `dependencies` table name ids, known or not: an unknown dependency keeps the item blocked until
// an item with that id is discovered.
import type { LogWriter } from '../../intake/ingest';
import type { EngineHooks } from '../../kernel/hooks';
import type { Transitions } from '../../kernel/transitions';
import type { StoreBackend } from '../../store/backend';

export interface DependencyParts {
  log: LogWriter;
  /** Where the blocked flag is set and a failed dependency fails its dependents. */
  transitions: Pick<Transitions, 'blocked' | 'failedWithoutAttempt'>;
  /** What it follows: items discovered and redefined, outcomes, and each change's settle. */
  hooks: EngineHooks;
}

interface DependencyRow {
  id: string;
  /** Null while no item has this id. */
  outcome: string | null;
  running: number | null;
}

/**
 * A cycle is named in full up to this many items. Every item on it fails with the cycle in its
 * error and its log entry, so naming all of a 2,000-item cycle wrote 2,000 × 2,000 ids (some 80 MB
 * into the log, its search index and the journal): ten seconds before an unrelated item launched.
 */
const CYCLE_NAMED_IN_FULL = 10;

/**
 * `a → b → c → a`; a longer cycle by its first and last items and how many are between. The ids
 * shown go to the entry's `details.cycle`, the cycle's size to `details.cycleLength`.
 */
export function nameCycle(cycle: readonly string[]): { text: string; shown: string[]; length: number } {
  const length = cycle.length - 1; // the first item closes it again
  if (length <= CYCLE_NAMED_IN_FULL) return { text: cycle.join(' → '), shown: [...cycle], length };
  const first = cycle.slice(0, 5);
  const last = cycle.slice(-4);
  const between = cycle.length - first.length - last.length;
  return { text: `${first.join(' → ')} → … ${between} more … → ${last.join(' → ')} (${length} items)`, shown: [...first, ...last], length };
}

/** In SQL, over the dependency's row `i` (LEFT JOINed): it does not let its dependents start yet. A ready service (running 3) does. */
const UNSATISFIED = "(i.outcome IS NULL OR (i.outcome <> 'launched' AND NOT (i.outcome = 'pending' AND i.running = 3)))";

export class Dependencies {
  /** The missing set each item was last logged as blocked on, so one set is logged once. */
  private readonly loggedMissing = new Map<string, string>();
  /**
   * Whether any item may have dependencies. Until one does, there is nothing to judge, unblock or
   * fail, and the queries that would find so (three per item discovered, one per outcome: about
   * 50 µs an item, docs/PERFORMANCE.md) are skipped. Once true it stays so. On a store shared by
   * a fleet, other engines add dependencies this one never sees recorded: always true there.
   */
  private any: boolean;
  /** Items discovered or redefined since dependencies were last settled (after each poll and firing). */
  private readonly unsettled = new Set<string>();

  constructor(
    private readonly store: StoreBackend,
    private readonly hooks: DependencyParts,
    shared = false,
  ) {
    this.any = shared || store.get('SELECT 1 AS x FROM dependencies LIMIT 1') !== undefined;
    hooks.hooks.on('itemDiscovered', (item) => {
      if (item.dependsOn) this.record(item.id, item.dependsOn, false);
      this.unsettled.add(item.id);
    });
    hooks.hooks.on('itemRedefined', (item, before) => {
      this.record(item.id, item.dependsOn ?? [], (before.dependsOn?.length ?? 0) > 0);
      this.unsettled.add(item.id);
    });
    hooks.hooks.on('outcome', (itemId, outcome) => (outcome === 'launched' ? this.launched(itemId) : this.failed(itemId)));
    hooks.hooks.on('settle', () => this.settleDiscovered());
    hooks.hooks.on('serviceReady', (itemId, ready) => (ready ? this.launched(itemId) : this.notReady(itemId)));
  }

  /** Judges the dependencies of what was discovered since the last time, in one batch. */
  private settleDiscovered(): void {
    if (this.unsettled.size === 0) return;
    const ids = [...this.unsettled];
    this.unsettled.clear();
    this.store.batch(() => this.settle(ids));
  }

  /**
   * Records an item's dependencies (replacing what a previous definition had) and whether it
   * waits for them. Called in the batch that inserts or redefines the item; settle() then judges
   * failures, cycles and missing ids once the rest of the poll is in.
   */
  record(itemId: string, dependsOn: readonly string[], hadDependencies: boolean): void {
    if (dependsOn.length > 0) this.any = true;
    if (hadDependencies) this.store.mutate('dependencies_clear', [itemId]);
    for (const dep of dependsOn) this.store.mutate('dependency_insert', [itemId, dep]);
    const waits = dependsOn.length > 0 && this.unlaunched(itemId) > 0;
    if (waits || hadDependencies) this.hooks.transitions.blocked(itemId, waits);
    this.loggedMissing.delete(itemId);
  }

  /**
   * After a poll: the items just discovered or redefined, and the items that were waiting for one
   * of those ids to appear, are judged (failed dependency, cycle, still missing).
   */
  settle(itemIds: Iterable<string>): void {
    if (!this.any) return;
    const ids = [...itemIds];
    if (ids.length === 0) return;
    // Only an item with dependencies has anything to judge (one without is neither blocked nor on
    // a cycle): two reads for the whole set instead of three per item. On a fleet's database each
    // read is a round trip the engine waits for; 300 items discovered at once held it 15 s.
    const json = JSON.stringify(ids);
    const withDependencies = new Set(
      this.store.all<{ item_id: string }>('SELECT DISTINCT item_id FROM dependencies WHERE item_id IN (SELECT value FROM json_each(?))', [json]).map((r) => r.item_id),
    );
    const dependents = new Map<string, string[]>();
    for (const r of this.store.all<{ item_id: string; depends_on: string }>(
      'SELECT item_id, depends_on FROM dependencies WHERE depends_on IN (SELECT value FROM json_each(?)) ORDER BY rowid',
      [json],
    )) {
      const list = dependents.get(r.depends_on);
      if (list) list.push(r.item_id);
      else dependents.set(r.depends_on, [r.item_id]);
    }
    const judged = new Set<string>();
    for (const id of ids) {
      if (withDependencies.has(id)) judged.add(id);
      for (const dependent of dependents.get(id) ?? []) judged.add(dependent);
    }
    if (judged.size === 0) return;
    // One pass finds every item on a cycle; a search per judged item was quadratic: a 2,000-item
    // chain held the engine 45 s.
    const cyclic = this.onCycles(judged);
    for (const id of judged) this.evaluate(id, cyclic);
  }

  /** An item launched: its dependents whose last unlaunched dependency it was are no longer blocked. */
  launched(itemId: string): void {
    if (!this.any) return;
    for (const dependent of this.dependents(itemId)) {
      const row = this.store.get<{ outcome: string; blocked: number }>('SELECT outcome, blocked FROM items WHERE id = ?', [dependent]);
      if (row?.outcome === 'pending' && row.blocked === 1 && this.unlaunched(dependent) === 0) {
        this.hooks.transitions.blocked(dependent, false);
      }
    }
  }

  /** A service left ready: its pending dependents that have not started wait for it again. */
  notReady(itemId: string): void {
    if (!this.any) return;
    for (const dependent of this.dependents(itemId)) {
      const row = this.store.get<{ outcome: string; blocked: number; running: number }>('SELECT outcome, blocked, running FROM items WHERE id = ?', [dependent]);
      if (row?.outcome === 'pending' && row.blocked === 0 && row.running === 0) this.hooks.transitions.blocked(dependent, true);
    }
  }

  /**
   * An item failed for good or was cancelled: its pending dependents fail, and theirs, without an
   * attempt. A worklist, not recursion: a chain of 10,000 fails without deepening the stack.
   */
  failed(itemId: string): void {
    if (!this.any) return;
    const work = [itemId];
    while (work.length > 0) {
      const failedId = work.shift()!;
      for (const dependent of this.dependents(failedId)) {
        if (this.outcomeOf(dependent) !== 'pending') continue;
        this.failOne(dependent, `dependency failed: ${failedId}`, { dependency: failedId });
        work.push(dependent);
      }
    }
  }

  /**
   * Judges one item: fails it when a dependency failed or it is on a cycle; otherwise blocked or
   * not, and missing ids logged. `cyclic`: the items known to be on a cycle (settle's one pass);
   * without it, a search from this item decides.
   */
  evaluate(itemId: string, cyclic?: ReadonlySet<string>): void {
    if (!this.any) return;
    const row = this.store.get<{ outcome: string; blocked: number }>('SELECT outcome, blocked FROM items WHERE id = ?', [itemId]);
    if (row?.outcome !== 'pending') return;
    const deps = this.store.all<DependencyRow>(
      'SELECT d.depends_on AS id, i.outcome AS outcome, i.running AS running FROM dependencies d LEFT JOIN items i ON i.id = d.depends_on WHERE d.item_id = ? ORDER BY d.rowid',
      [itemId],
    );
    if (deps.length === 0) return;
    const failedDep = deps.find((d) => d.outcome === 'failed');
    if (failedDep) {
      this.fail([itemId], `dependency failed: ${failedDep.id}`, { dependency: failedDep.id });
      return;
    }
    const cycle = cyclic === undefined || cyclic.has(itemId) ? this.cycleThrough(itemId) : null;
    if (cycle) {
      const named = nameCycle(cycle);
      this.fail(cycle.slice(0, -1), `dependency cycle: ${named.text}`, { cycle: named.shown, cycleLength: named.length });
      return;
    }
    const waiting = deps.filter((d) => d.outcome !== 'launched' && !(d.outcome === 'pending' && d.running === 3));
    const blocked = waiting.length > 0 ? 1 : 0;
    if (blocked !== row.blocked) this.hooks.transitions.blocked(itemId, blocked === 1);
    const missing = deps.filter((d) => d.outcome === null).map((d) => d.id);
    const key = missing.join('\n');
    if (missing.length > 0 && this.loggedMissing.get(itemId) !== key) {
      this.loggedMissing.set(itemId, key);
      const list = missing.map((m) => `"${m}"`).join(', ');
      this.hooks.log('item_blocked', 'warn', `"${itemId}" is blocked: it depends on ${list}, which no item has (yet); it waits until they appear and launch`, itemId, {
        missing,
        waitingFor: waiting.map((d) => d.id),
      });
    } else if (missing.length === 0) {
      this.loggedMissing.delete(itemId);
    }
  }

  /** Fails `itemIds` with `error` (one `dependency_failed` each), then what depends on them. */
  private fail(itemIds: string[], error: string, details: Record<string, unknown>): void {
    for (const id of itemIds) this.failOne(id, error, details);
    // After every member of a cycle has failed with the cycle named, so none of them is reported
    // as failing because of another.
    for (const id of itemIds) this.failed(id);
  }

  private failOne(itemId: string, error: string, details: Record<string, unknown>): void {
    this.hooks.transitions.failedWithoutAttempt(itemId, error);
    this.loggedMissing.delete(itemId);
    // A cycle is the queue files' doing: the entry's file and field, so the editor can point at
    // its dependsOn in the queue file's diagnostics, as item_rejected does.
    const source = 'cycle' in details ? this.store.get<{ source: string }>('SELECT source FROM items WHERE id = ?', [itemId])?.source : undefined;
    this.hooks.log('dependency_failed', 'error', `"${itemId}" failed without an attempt: ${error}`, itemId, {
      error,
      ...details,
      ...(source !== undefined ? { file: source, field: 'dependsOn' } : {}),
    });
  }

  /**
   * A cycle of pending items through `itemId`, as `[itemId, …, itemId]`, or null. Only an item
   * something depends on can be on one: the check is skipped for the rest (every item of a long
   * chain read in order), so ingesting a chain stays linear.
   */
  private cycleThrough(itemId: string): string[] | null {
    if (this.dependents(itemId).length === 0) return null;
    const parent = new Map<string, string>();
    const stack = [itemId];
    const seen = new Set([itemId]);
    while (stack.length > 0) {
      const current = stack.pop()!;
      const next = this.store.all<{ id: string }>(
        "SELECT d.depends_on AS id FROM dependencies d JOIN items i ON i.id = d.depends_on WHERE d.item_id = ? AND i.outcome = 'pending' ORDER BY d.rowid",
        [current],
      );
      for (const { id } of next) {
        if (id === itemId) {
          const path = [current];
          while (path[0] !== itemId) path.unshift(parent.get(path[0])!);
          return [...path, itemId];
        }
        if (seen.has(id)) continue;
        seen.add(id);
        parent.set(id, current);
        stack.push(id);
      }
    }
    return null;
  }

  /**
   * The items on a cycle of pending items reachable from `roots` (Tarjan's strongly connected
   * components, without recursion): each item's pending dependencies are read once.
   */
  private onCycles(roots: Iterable<string>): Set<string> {
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const onStack = new Set<string>();
    const stack: string[] = [];
    const cyclic = new Set<string>();
    const work: { id: string; deps: string[]; next: number }[] = [];
    const visit = (id: string) => {
      index.set(id, index.size);
      low.set(id, index.get(id)!);
      stack.push(id);
      onStack.add(id);
      work.push({ id, deps: this.pendingDependencies(id), next: 0 });
    };
    for (const root of roots) {
      if (index.has(root)) continue;
      visit(root);
      while (work.length > 0) {
        const top = work[work.length - 1];
        if (top.next < top.deps.length) {
          const dep = top.deps[top.next++];
          if (!index.has(dep)) visit(dep);
          else if (onStack.has(dep)) low.set(top.id, Math.min(low.get(top.id)!, index.get(dep)!));
          continue;
        }
        work.pop();
        if (work.length > 0) {
          const parent = work[work.length - 1].id;
          low.set(parent, Math.min(low.get(parent)!, low.get(top.id)!));
        }
        if (low.get(top.id) !== index.get(top.id)) continue;
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== top.id);
        if (component.length > 1 || top.deps.includes(top.id)) for (const m of component) cyclic.add(m);
      }
    }
    return cyclic;
  }

  private pendingDependencies(itemId: string): string[] {
    return this.store
      .all<{ id: string }>("SELECT d.depends_on AS id FROM dependencies d JOIN items i ON i.id = d.depends_on WHERE d.item_id = ? AND i.outcome = 'pending' ORDER BY d.rowid", [itemId])
      .map((r) => r.id);
  }

  private dependents(itemId: string): string[] {
    return this.store.all<{ item_id: string }>('SELECT item_id FROM dependencies WHERE depends_on = ? ORDER BY rowid', [itemId]).map((r) => r.item_id);
  }

  private unlaunched(itemId: string): number {
    return (
      this.store.get<{ n: number }>(
        `SELECT COUNT(*) AS n FROM dependencies d LEFT JOIN items i ON i.id = d.depends_on WHERE d.item_id = ? AND ${UNSATISFIED}`,
        [itemId],
      )?.n ?? 0
    );
  }

  private outcomeOf(itemId: string): string | undefined {
    return this.store.get<{ outcome: string }>('SELECT outcome FROM items WHERE id = ?', [itemId])?.outcome;
  }
}
