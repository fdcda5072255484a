// Schedule templates. A queue item with `schedule` is a template, kept in the
// `schedules` table and not counted as an item; each occurrence becomes its own item, with id
// `<template id>@<occurrence in UTC, minute precision>Z`, inheriting the template's fields.
//
// Occurrences are computed by croner (maintained, no dependencies, IANA time zones and DST), never
// by hand. Each template keeps `next_from`, the time its next occurrence is computed from: the
// last occurrence fired or skipped, its discovery, or its release. A check fires, per template,
// the latest occurrence in (next_from, now] only: occurrences missed while the engine was down or
// stopped are not replayed one by one, at most one catch-up runs. Everything is journaled
// (schedule_upsert, schedule_ran, schedule_enabled), so templates and their state survive kill -9.
//
// DST, as croner computes it (test/unit/schedule.test.ts pins it in Europe/Berlin): a time that
// does not exist (the spring-forward gap, 02:30 on the last Sunday of March) runs at the first
// minute after the gap (03:00 summer time) — once, not skipped; a time that exists twice (02:30 on
// the last Sunday of October) runs once, at its first (summer time) instance — not doubled.
// Expressions with a wildcard hour (`*/30 * * * *`) follow real time and run in both instances of
// the repeated hour, which are distinct instants, with distinct occurrence ids.
import { Cron } from 'croner';
import type { ItemOutcome, ScheduleSummary } from '../../../shared/api';
import type { LogWriter } from '../../intake/ingest';
import type { ItemDefinition } from '../../intake/items';
import type { StoreBackend } from '../../store/backend';

export interface SchedulerHooks {
  log: LogWriter;
  /** The wall clock the occurrences are computed against: Date.now, or a test's (EngineOptions.scheduleClock). */
  now(): number;
  /** Records an occurrence as a new pending item (the queue files' path: counters, priority, dependencies). */
  insertOccurrence(item: ItemDefinition, source: string, now: number): void;
  /** Something fired: the engine commits and dispatches. */
  onFired(): void;
  /** False while the engine does not launch (stopped, restricted, closed): nothing fires, it catches up once after. */
  isActive(): boolean;
}

interface TemplateRow {
  id: string;
  name: string;
  source: string;
  definition: string;
  enabled: number;
  next_from: number;
  last_run_at: number | null;
  last_occurrence: string | null;
}

/** Re-checked at least this often, so a jump of the wall clock delays an occurrence by a minute at most. */
const RECHECK_MS = 60_000;

/** `nightly@2026-11-24T02:00Z`: the template's id and the occurrence in UTC, to the minute. */
export function occurrenceId(templateId: string, at: number): string {
  return `${templateId}@${new Date(at).toISOString().slice(0, 16)}Z`;
}

function cronOf(def: ItemDefinition): Cron {
  // paused: croner computes occurrences only; the engine's own timer fires them.
  return new Cron(def.schedule!.cron, { timezone: def.schedule!.timezone, paused: true });
}

export class Scheduler {
  private timer: NodeJS.Timeout | undefined;
  private armed = false;

  constructor(
    private readonly store: StoreBackend,
    private readonly hooks: SchedulerHooks,
  ) {}

  /**
   * Fires, for every enabled template, the latest occurrence due since it was last computed from
   * (at most one each), then re-arms the timer. Called after every poll and by the timer.
   */
  check(): void {
    if (!this.hooks.isActive()) return;
    const now = this.hooks.now();
    let fired = false;
    for (const t of this.store.all<TemplateRow>('SELECT * FROM schedules WHERE enabled = 1 ORDER BY id')) {
      if (t.next_from > now) {
        // Counted from a time still ahead: the wall clock was corrected backwards (it ran a day
        // ahead, say). Count from now, or nothing would fire until the clock caught up again.
        this.store.mutate('schedule_enabled', [1, now, now, t.id]);
        t.next_from = now;
      }
      const def = JSON.parse(t.definition) as ItemDefinition;
      if (!def.schedule) continue; // a watched template: its files fire it (features/triggers)
      const cron = cronOf(def);
      // The latest occurrence at or before now (previousRuns is strictly before its reference).
      const latest = cron.previousRuns(1, new Date(now + 1))[0]?.getTime();
      if (latest === undefined || latest <= t.next_from) continue;
      const first = cron.nextRun(new Date(t.next_from))?.getTime();
      const missed = first !== undefined && first < latest;
      this.store.batch(() => this.fire(t, def, latest, missed, now));
      fired = true;
    }
    if (fired) this.hooks.onFired();
    this.arm();
  }

  /** Stops the timer (engine stopped or shutting down). */
  cancel(): void {
    clearTimeout(this.timer);
    this.armed = false;
  }

  /** GET /schedules, in id order. */
  list(): ScheduleSummary[] {
    const now = this.hooks.now();
    const rows = this.store.all<TemplateRow & { last_outcome: ItemOutcome | null }>(
      'SELECT s.*, i.outcome AS last_outcome FROM schedules s LEFT JOIN items i ON i.id = s.last_occurrence ORDER BY s.id',
    );
    return rows.map((t) => {
      const def = JSON.parse(t.definition) as ItemDefinition;
      const last = { lastRunAt: t.last_run_at === null ? null : new Date(t.last_run_at).toISOString(), lastOutcome: t.last_outcome ?? null, enabled: t.enabled === 1 };
      if (def.watch) return { id: t.id, watch: def.watch, nextRunAt: null, ...last };
      const next = t.enabled === 1 ? cronOf(def).nextRun(new Date(Math.max(now, t.next_from))) : null;
      return {
        id: t.id,
        schedule: def.schedule!.cron,
        timezone: def.schedule!.timezone,
        overlap: def.overlap ?? 'skip',
        nextRunAt: next ? next.toISOString() : null,
        ...last,
      };
    });
  }

  /** Whether `id` is a template. */
  has(id: string): boolean {
    return this.store.get('SELECT 1 AS x FROM schedules WHERE id = ?', [id]) !== undefined;
  }

  /**
   * Hold (false) or release (true) a template. A released template counts from the release: the
   * occurrences it was held through are not caught up. False when it already was so.
   */
  setEnabled(id: string, enabled: boolean): boolean {
    const row = this.store.get<TemplateRow>('SELECT * FROM schedules WHERE id = ?', [id]);
    if (!row || (row.enabled === 1) === enabled) return false;
    const now = this.hooks.now();
    this.store.mutate('schedule_enabled', [enabled ? 1 : 0, enabled ? now : row.next_from, now, id]);
    return true;
  }

  /** Sets the timer for the earliest next occurrence, re-checking at least every minute. */
  arm(): void {
    clearTimeout(this.timer);
    const now = this.hooks.now();
    let next = Infinity;
    for (const t of this.store.all<TemplateRow>('SELECT * FROM schedules WHERE enabled = 1')) {
      const def = JSON.parse(t.definition) as ItemDefinition;
      if (!def.schedule) continue;
      const at = cronOf(def).nextRun(new Date(Math.max(now, t.next_from)))?.getTime();
      if (at !== undefined && at < next) next = at;
    }
    this.armed = next !== Infinity;
    if (!this.armed) return;
    this.timer = setTimeout(() => this.check(), Math.min(Math.max(next - now, 0), RECHECK_MS));
  }

  private fire(t: TemplateRow, def: ItemDefinition, at: number, missed: boolean, now: number): void {
    const id = occurrenceId(t.id, at);
    const when = new Date(at).toISOString();
    const catchUp = missed ? ' (catch-up: the only one of the occurrences missed while the engine was not running)' : '';
    if ((def.overlap ?? 'skip') === 'skip' && t.last_occurrence !== null) {
      const previous = this.store.get<{ outcome: string }>('SELECT outcome FROM items WHERE id = ?', [t.last_occurrence]);
      if (previous?.outcome === 'pending') {
        this.store.mutate('schedule_ran', [at, t.last_run_at, t.last_occurrence, now, t.id]);
        this.hooks.log('schedule_skipped', 'warn', `schedule "${t.name}" skipped its occurrence at ${when}: the previous one, "${t.last_occurrence}", is still pending (overlap: skip)`, t.id, {
          occurrence: id,
          previous: t.last_occurrence,
          catchUp: missed,
        });
        return;
      }
    }
    // An occurrence already recorded (the same minute fired before a crash lost next_from) is not fired twice.
    if (this.store.get('SELECT 1 AS x FROM items WHERE id = ?', [id]) === undefined) {
      const { schedule: _schedule, overlap: _overlap, ...fields } = def;
      const item: ItemDefinition = { ...fields, id, name: def.name === def.id ? id : def.name, runAt: null };
      this.hooks.insertOccurrence(item, t.source, now);
      this.hooks.log('schedule_fired', 'info', `schedule "${t.name}" fired "${id}"${catchUp}`, id, { template: t.id, occurrence: id, at: when, catchUp: missed });
    }
    this.store.mutate('schedule_ran', [at, at, id, now, t.id]);
  }
}
