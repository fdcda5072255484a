// What the CodeLens above each queue-file entry says and offers, as plain
// data: no `vscode` import, so the unit tests and the bench run it in Node. queueLens.ts turns
// these into vscode.CodeLens objects.
//
// An entry is matched to an item by its id: the `id` it writes, or the id the engine derives from
// the file's path and the entry's index (src/shared/itemIds.ts, the engine's own function).
import type { ItemState, ItemSummary, ScheduleSummary } from '../shared/api';
import { formatClock, formatRelativeTime } from '../shared/format';
import { deriveItemId } from '../shared/itemIds';
import { entryRanges } from './queueFileRanges';
import { serviceText } from './serviceText';

export interface QueueEntry {
  /** The engine's number for it: a .jsonl line (0-based) or a .json array index. */
  index: number;
  /** Offsets of the entry in the text. */
  start: number;
  end: number;
  /** The item id the engine gives it; undefined when the entry is not an object the engine could read. */
  id: string | undefined;
}

/**
 * Every entry of a queue file with its item id. `relPath` is the file as the engine names it
 * (relative to its workspace folder, `/`-separated): derived ids are made from it. `derived` keeps
 * them by index across calls for the same file: a derived id depends only on the path and the
 * index, and each costs a SHA-256, so an edit of the document does not hash every entry again.
 */
export function readQueueEntries(text: string, relPath: string, jsonLines: boolean, derived: Map<number, string> = new Map()): QueueEntry[] {
  const spans = entryRanges(text, jsonLines);
  const entries: QueueEntry[] = new Array<QueueEntry>(spans.length);
  if (jsonLines) {
    for (let i = 0; i < spans.length; i++) {
      const s = spans[i];
      entries[i] = { index: s.index, start: s.start, end: s.end, id: idOf(parseOrUndefined(text.slice(s.start, s.end)), relPath, s.index, derived) };
    }
    return entries;
  }
  // One parse of the whole file, as the engine reads it; the spans say where each element is.
  const value = parseOrUndefined(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  const array = Array.isArray(value);
  for (let i = 0; i < spans.length; i++) {
    const s = spans[i];
    const entry = array ? (value as unknown[])[s.index] : value;
    entries[i] = { index: s.index, start: s.start, end: s.end, id: entry === undefined ? undefined : idOf(entry, relPath, s.index, derived) };
  }
  return entries;
}

/** The id the engine gives an entry: its own, or derived; undefined when it is not an object or its id is not a string. */
function idOf(value: unknown, relPath: string, index: number, derived: Map<number, string>): string | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const id = (value as { id?: unknown }).id;
  if (id === undefined) {
    let made = derived.get(index);
    if (made === undefined) derived.set(index, (made = deriveItemId(relPath, index)));
    return made;
  }
  return typeof id === 'string' ? id : undefined;
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** One lens: a title, and the command it runs (none: the lens is text). */
export interface LensSpec {
  start: number;
  end: number;
  title: string;
  tooltip?: string;
  command?: { id: string; args: unknown[] };
}

export interface LensContext {
  /** The item the engine knows under this id, from this file. */
  item(id: string): ItemSummary | undefined;
  /** The engine's reason for rejecting this entry (or the whole file), if it did and the file has not changed since. */
  rejection(index: number): string | undefined;
  /** The schedule template with this id, if the engine has one: a template is no item of its own. */
  schedule?(id: string): ScheduleSummary | undefined;
  /** Workspace trusted: actions offered. Untrusted (restricted mode): the state only. */
  trusted: boolean;
  /** False while no engine is connected: every entry says so instead of "not yet scanned". */
  connected: boolean;
  now: number;
  /**
   * The file is a draft (queueDrafts.ts): edited here and not saved on purpose since, so the
   * engine does not read it. A lens at the top says so; entries it does not know have no lens of
   * their own (not "not yet scanned": the engine is not going to scan them).
   */
  draft?: boolean;
}

/** The lens at the top of a draft; it saves the file (the active editor's, which is the one clicked). */
export const DRAFT_LENS = {
  title: '$(edit) draft · save to queue (Ctrl+S)',
  tooltip: 'The engine does not read this file while you edit it, even when auto-save writes it: save it (Ctrl+S) or close it to queue what it holds.',
  command: 'workbench.action.files.save',
} as const;

/** The command ids the lenses run (the Items view's own commands, given an item id). */
export const LENS_COMMANDS = {
  showOutput: 'engineMonitor.showOutput',
  retry: 'engineMonitor.retryItem',
  cancel: 'engineMonitor.cancelItem',
  hold: 'engineMonitor.holdItem',
  release: 'engineMonitor.releaseItem',
  openInTerminal: 'engineMonitor.openInTerminal',
  restart: 'engineMonitor.restartItem',
  compareOutput: 'engineMonitor.compareOutput',
} as const;

const STATE_ICONS: Record<ItemState, string> = {
  launched: '$(pass)',
  failed: '$(error)',
  running: '$(sync~spin)',
  waiting: '$(clock)',
  scheduled: '$(calendar)',
  backoff: '$(history)',
  held: '$(debug-pause)',
  blocked: '$(lock)',
  starting: '$(loading~spin)',
  ready: '$(vm-running)',
};

/** The lenses of every entry, in entry order: a state lens first, then the actions that apply. */
export function lensesFor(entries: readonly QueueEntry[], ctx: LensContext): LensSpec[] {
  const lenses: LensSpec[] = [];
  if (ctx.draft) lenses.push({ start: 0, end: 0, title: DRAFT_LENS.title, tooltip: DRAFT_LENS.tooltip, command: { id: DRAFT_LENS.command, args: [] } });
  for (const e of entries) {
    const item = e.id === undefined ? undefined : ctx.item(e.id);
    const template = item || e.id === undefined ? undefined : ctx.schedule?.(e.id);
    if (template) {
      lenses.push({ start: e.start, end: e.end, title: scheduleTitle(template, ctx.now), tooltip: `${template.schedule} (${template.timezone})` });
      if (ctx.trusted) {
        const id = template.enabled ? LENS_COMMANDS.hold : LENS_COMMANDS.release;
        lenses.push({ start: e.start, end: e.end, title: template.enabled ? 'Hold' : 'Release', command: { id, args: [template.id] } });
      }
      continue;
    }
    if (!item) {
      const reason = ctx.rejection(e.index);
      // A draft's new entries: the lens at the top says it all.
      if (ctx.draft) continue;
      if (reason !== undefined) lenses.push({ start: e.start, end: e.end, title: `$(warning) rejected: ${oneLine(reason, 120)}`, tooltip: reason });
      else if (!ctx.connected) lenses.push({ start: e.start, end: e.end, title: '$(debug-disconnect) engine not connected' });
      else lenses.push({ start: e.start, end: e.end, title: '$(circle-outline) not yet scanned', tooltip: 'The engine has not read this entry yet: it reads queue files when it polls.' });
      continue;
    }
    lenses.push({ start: e.start, end: e.end, title: stateTitle(item, ctx.now), tooltip: item.lastError ?? undefined });
    if (!ctx.trusted) continue;
    const state = item.state;
    const args = [item.id];
    const action = (title: string, id: string) => lenses.push({ start: e.start, end: e.end, title, command: { id, args } });
    if (item.service) {
      // A service: Restart (or start again, once stopped), Stop while it runs or waits to restart.
      const stopped = state === 'launched' || state === 'failed';
      if (stopped || state === 'starting' || state === 'ready') action('Restart', LENS_COMMANDS.restart);
      if (!stopped) action('Stop', LENS_COMMANDS.cancel);
      if (item.attempts > 0) action('Show Output', LENS_COMMANDS.showOutput);
      continue;
    }
    if (item.attempts > 0 || state === 'running') action('Show Output', LENS_COMMANDS.showOutput);
    if (state === 'failed') action('Retry', LENS_COMMANDS.retry);
    const open = state !== 'launched' && state !== 'failed';
    if (open) action('Cancel', LENS_COMMANDS.cancel);
    if (state === 'held') action('Release', LENS_COMMANDS.release);
    else if (open) action('Hold', LENS_COMMANDS.hold);
    if (item.attempts > 0) action('Open in Terminal', LENS_COMMANDS.openInTerminal);
    // What changed since it last worked: its output beside the last success's.
    if (state === 'failed' && item.attempts > 0) action('Compare with Last Success', LENS_COMMANDS.compareOutput);
  }
  return lenses;
}

/** "$(calendar) schedule · next 14:05:00 · last launched 3 min ago": a template's next run and last outcome. */
export function scheduleTitle(s: ScheduleSummary, now: number): string {
  const next = s.enabled ? (s.nextRunAt ? `next ${formatClock(s.nextRunAt)}` : 'no next run') : 'held: no occurrence fires';
  const last = s.lastRunAt ? ` · last ${s.lastOutcome ?? 'pending'} ${formatRelativeTime(s.lastRunAt, now)}` : ' · not run yet';
  return `$(calendar) schedule · ${next}${last}`;
}

/** "$(error) failed · 3/3 · 3 min ago": state, attempts, and when the latest attempt finished. */
export function stateTitle(item: ItemSummary, now: number): string {
  if (item.service) return `${STATE_ICONS[item.state] ?? ''} ${serviceText(item, now, false)}`;
  const head = `${STATE_ICONS[item.state] ?? ''} ${item.state} · ${item.attempts}/${item.maxAttempts}`;
  return item.lastFinishedAt ? `${head} · ${formatRelativeTime(item.lastFinishedAt, now)}` : head;
}

/** Engine text on one line of a lens: control characters and newlines flattened, long text cut. */
function oneLine(text: string, max: number): string {
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
