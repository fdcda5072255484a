// File triggers. A queue item with `watch` is a template, like a scheduled one, and is kept in the
// same `schedules` table (so it is journaled, held and released, and listed by GET /schedules the
// same way); what fires it is a settled burst of changes to the files its globs name, not a cron
// expression. Each firing becomes its own item `<template id>@<ISO 8601 UTC, millisecond>`.
//
// The files are watched with chokidar (the watcher mocha and many editors' tools use): Node 20's
// own `fs.watch(…, { recursive: true })` on Linux walks the whole tree synchronously (1.5 s of the
// event loop for 25 000 files), puts an inotify watch on every file, node_modules included, and
// cannot be told to leave a folder out. chokidar is told which folders and files to leave out
// before it watches them (so only folders that can hold a match, and the matching files, cost a
// watch), and follows a file an editor saves by writing a temporary file and renaming it over the
// old one. It runs on a thread of its own (watchThread.ts): setting up its watches still took
// 400 ms of event loop for 5 000 matching files, which the engine's launches and API must not wait for.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ItemOutcome } from '../../../shared/api';
import type { LogWriter } from '../../intake/ingest';
import type { ItemDefinition } from '../../intake/items';
import type { EngineHooks } from '../../kernel/hooks';
import type { StoreBackend } from '../../store/backend';
import { watchGlob } from './globs';
import { WatchThread, type ThreadWatch } from './watchThread';

/** How long after the watching thread died its watches are set up again (each try logs the failure). */
const THREAD_RETRY_MS = 60_000;
/** Changed paths a `watch_fired` entry names; a burst may have more. */
const MAX_PATHS = 20;

export interface WatchHooks {
  log: LogWriter;
  /** Records an occurrence as a new pending item (the queue files' path: counters, priority, dependencies). */
  insertOccurrence(item: ItemDefinition, source: string, now: number): void;
  /** Something fired: the engine commits and dispatches. */
  onFired(): void;
  /** False while the engine does not launch (stopped, restricted, closed): changes then fire nothing. */
  isActive(): boolean;
  /** Cancels a pending item, ending its running attempt (onChange: restart). */
  cancel(itemId: string): void;
  /** Folders never watched: the queue folders and the engine's storage. */
  excluded: string[];
}

interface TemplateRow {
  id: string;
  name: string;
  source: string;
  definition: string;
  def_hash: string;
  enabled: number;
  last_occurrence: string | null;
}

/** One watched template: its watcher and the burst being collected. */
interface Watched {
  hash: string;
  watch: ThreadWatch;
  /** Paths changed in the burst under way (relative to the item's cwd), the first MAX_PATHS. */
  burst: string[];
  burstSize: number;
  timer: NodeJS.Timeout | undefined;
  /** Bursts settled so far, fired or not (tests wait for them). */
  settledBursts: number;
  /** onChange: queue — the burst waiting for the pending occurrence to end (at most one). */
  waiting: { paths: string[]; count: number } | null;
}

export class WatchTriggers {
  private readonly watched = new Map<string, Watched>();
  private readonly thread = new WatchThread();
  private closed = false;
  /** When the watching thread last died: watches are set up again a minute later, not at every poll. */
  private threadDiedAt = -Infinity;

  constructor(
    private readonly store: StoreBackend,
    private readonly hooks: WatchHooks,
    engineHooks: EngineHooks,
  ) {
    // A waiting burst fires once the occurrence it waited for has its outcome: after the batch
    // that records it, so its own writes are not part of that batch.
    engineHooks.on('outcome', (itemId) => {
      const at = itemId.lastIndexOf('@');
      const w = at > 0 ? this.watched.get(itemId.slice(0, at)) : undefined;
      if (w?.waiting) setImmediate(() => this.fireWaiting(itemId.slice(0, at), itemId));
    });
  }

  /**
   * Watches what the enabled watched templates name, and stops watching the rest: called after
   * every poll, so a template new, edited, removed, held or released is followed within one poll
   * interval (a held template fires nothing from the moment it is held: settled() checks).
   */
  sync(): void {
    if (this.closed) return;
    // Only the rows that can be watched templates are parsed (this runs after every poll).
    const rows = this.store.all<TemplateRow>(`SELECT id, name, source, definition, def_hash, enabled, last_occurrence FROM schedules WHERE definition LIKE '%"watch":%' ORDER BY id`);
    const wanted = new Map<string, TemplateRow>();
    for (const t of rows) if (t.enabled === 1 && (JSON.parse(t.definition) as ItemDefinition).watch) wanted.set(t.id, t);
    for (const [id, w] of this.watched) {
      const t = wanted.get(id);
      if (!t || t.def_hash !== w.hash) void this.unwatch(id);
    }
    if (Date.now() - this.threadDiedAt < THREAD_RETRY_MS) return;
    for (const [id, t] of wanted) if (!this.watched.has(id)) this.watchTemplate(t);
  }

  /** Resolves once `id`'s watcher has read its folders (tests wait for it); undefined when it is not watched. */
  ready(id: string): Promise<void> | undefined {
    return this.watched.get(id)?.watch.ready;
  }

  /** How many bursts of `id` have settled (fired, skipped or queued); for tests. */
  settledBursts(id: string): number {
    return this.watched.get(id)?.settledBursts ?? 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.watched.values()) clearTimeout(w.timer);
    this.watched.clear();
    await this.thread.close();
  }

  private watchTemplate(t: TemplateRow): void {
    const def = JSON.parse(t.definition) as ItemDefinition;
    const globs = def.watch!.paths.map((g) => watchGlob(g, def.cwd));
    // A folder that does not exist yet is watched from its nearest existing parent, so its creation is seen.
    const bases = [...new Set(globs.map((g) => nearestExisting(g.base, def.cwd)))];
    const w: Watched = {
      hash: t.def_hash,
      burst: [],
      burstSize: 0,
      timer: undefined,
      settledBursts: 0,
      waiting: null,
      watch: this.thread.watch(
        { bases, globs: def.watch!.paths, cwd: def.cwd, excluded: this.hooks.excluded },
        {
          change: (changed) => this.changed(t.id, w, def, path.relative(def.cwd, changed).split(path.sep).join('/')),
          error: (message, gone) => {
            this.hooks.log('source_error', 'warn', `watched item "${t.name}": watching its files failed: ${message}`, t.id, { watch: def.watch!.paths });
            // Gone with the thread: the next sync watches again.
            if (gone && this.watched.get(t.id) === w) {
              this.watched.delete(t.id);
              this.threadDiedAt = Date.now();
            }
          },
        },
      ),
    };
    this.watched.set(t.id, w);
  }

  private unwatch(id: string): Promise<void> {
    const w = this.watched.get(id);
    if (!w) return Promise.resolve();
    this.watched.delete(id);
    clearTimeout(w.timer);
    return w.watch.close();
  }

  /** One change: the burst settles once `debounceMs` pass without another. */
  private changed(id: string, w: Watched, def: ItemDefinition, rel: string): void {
    if (!this.hooks.isActive()) return;
    if (!w.burst.includes(rel)) {
      w.burstSize++;
      if (w.burst.length < MAX_PATHS) w.burst.push(rel);
    }
    clearTimeout(w.timer);
    w.timer = setTimeout(() => {
      const burst = { paths: w.burst, count: w.burstSize };
      w.burst = [];
      w.burstSize = 0;
      if (this.watched.get(id) !== w) return;
      w.settledBursts++;
      this.settled(id, w, def, burst);
    }, def.watch!.debounceMs);
  }

  /** A settled burst: fire, or restart, queue behind or skip the occurrence still pending. */
  private settled(id: string, w: Watched, def: ItemDefinition, burst: { paths: string[]; count: number }): void {
    if (this.closed || !this.hooks.isActive()) return;
    const t = this.store.get<TemplateRow>('SELECT id, name, source, definition, def_hash, enabled, last_occurrence FROM schedules WHERE id = ?', [id]);
    if (!t || t.enabled !== 1) return;
    const previous = this.pendingOccurrence(t);
    if (previous) {
      const onChange = def.watch!.onChange;
      if (onChange === 'skip') {
        this.hooks.log('watch_skipped', 'info', `watched item "${t.name}" skipped a change: "${previous}" is still pending (onChange: skip)`, id, {
          previous,
          paths: burst.paths,
          changed: burst.count,
        });
        this.hooks.onFired();
        return;
      }
      if (onChange === 'queue') {
        // At most one waits: a later burst joins the one already waiting.
        const paths = [...new Set([...(w.waiting?.paths ?? []), ...burst.paths])];
        w.waiting = { paths: paths.slice(0, MAX_PATHS), count: (w.waiting?.count ?? 0) + burst.count };
        return;
      }
      try {
        this.hooks.cancel(previous);
      } catch {
        // It ended meanwhile (the cancel found it launched or failed): nothing left to restart.
      }
    }
    // A burst left waiting for an occurrence that ended without an outcome hook (a failed
    // dependency) goes with this one rather than firing a second time later.
    if (w.waiting) {
      const paths = [...new Set([...w.waiting.paths, ...burst.paths])].slice(0, MAX_PATHS);
      burst = { paths, count: w.waiting.count + burst.count };
      w.waiting = null;
    }
    this.fire(t, def, burst, previous);
  }

  private fireWaiting(id: string, ended: string): void {
    const w = this.watched.get(id);
    if (!w?.waiting || this.closed || !this.hooks.isActive()) return;
    const t = this.store.get<TemplateRow>('SELECT id, name, source, definition, def_hash, enabled, last_occurrence FROM schedules WHERE id = ?', [id]);
    if (!t || t.enabled !== 1 || t.last_occurrence !== ended || this.pendingOccurrence(t)) return;
    const burst = w.waiting;
    w.waiting = null;
    this.fire(t, JSON.parse(t.definition) as ItemDefinition, burst, null);
  }

  private pendingOccurrence(t: TemplateRow): string | null {
    if (t.last_occurrence === null) return null;
    const row = this.store.get<{ outcome: ItemOutcome }>('SELECT outcome FROM items WHERE id = ?', [t.last_occurrence]);
    return row?.outcome === 'pending' ? t.last_occurrence : null;
  }

  private fire(t: TemplateRow, def: ItemDefinition, burst: { paths: string[]; count: number }, restarted: string | null): void {
    let now = Date.now();
    // Two firings in one millisecond (a restart racing a save) still get ids of their own.
    while (this.store.get('SELECT 1 AS x FROM items WHERE id = ?', [`${t.id}@${new Date(now).toISOString()}`]) !== undefined) now++;
    const id = `${t.id}@${new Date(now).toISOString()}`;
    this.store.batch(() => {
      const { watch: _watch, ...fields } = def;
      this.hooks.insertOccurrence({ ...fields, id, name: def.name === def.id ? id : def.name, runAt: null }, t.source, now);
      const more = burst.count > burst.paths.length ? ` and ${burst.count - burst.paths.length} more` : '';
      const restart = restarted ? `; "${restarted}" was cancelled (onChange: restart)` : '';
      this.hooks.log('watch_fired', 'info', `watched item "${t.name}" fired "${id}": ${burst.paths.join(', ')}${more} changed${restart}`, id, {
        template: t.id,
        occurrence: id,
        paths: burst.paths,
        changed: burst.count,
        restarted,
      });
      this.store.mutate('schedule_ran', [now, now, id, now, t.id]);
    });
    this.hooks.onFired();
  }
}

/** The folders no watch looks into: every workspace folder's queue folder, and the engine's storage. */
export function excludedFolders(options: { workspaceFolders: string[]; queueDirectory: string; storageDir: string | null }): string[] {
  const queues = options.workspaceFolders.map((f) => path.resolve(f, options.queueDirectory));
  return options.storageDir ? [...queues, path.resolve(options.storageDir)] : queues;
}

function nearestExisting(folder: string, cwd: string): string {
  let at = folder;
  while (!existsSync(at) && at !== cwd && path.dirname(at) !== at) at = path.dirname(at);
  return at;
}
