// Items submitted by a request (POST /items, `engine-monitor add`): one more intake beside the queue
// folders. Each entry is judged exactly as a queue file's entry is (items.ts, and a cwd that leads
// out of the workspace through a link), and then against what the engine knows (a running or
// launched item keeps its definition): all of it before anything is recorded, so one refused entry
// leaves the whole submission unrecorded. What is taken is recorded as queue files' entries are
// (ingest.ts), with the source "api", and is on disk before submit() resolves.
import { randomBytes } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { isInside, parseItem, type ItemDefinition } from './items';
import { SUBMITTED_SOURCE, type ItemIngestion } from './ingest';
import { confineWorkingFolders, type QueueEntry } from './queueSource';
import type { StoreBackend } from '../store/backend';
import { isStoreUnavailable, StoreConflictError } from '../store/pgStore';
import type { ChangeEnd } from '../kernel/context';

/** Entries one submission may hold, and its body's size (a queue file's limit). */
export const MAX_SUBMITTED_ITEMS = 1000;
export const MAX_SUBMIT_BYTES = 1024 * 1024;

/** One refused entry: its position in the submitted array (0 for a single object) and why. */
export interface SubmitRejection {
  index: number;
  reason: string;
}

/**
 * Why a submission was not taken: `invalid` (an entry is not a valid item, or the body is not
 * items at all: HTTP 400), `conflict` (a valid entry the engine's state refuses: HTTP 409), or
 * `unavailable` (the store cannot be read or written now: HTTP 503, try again).
 */
export class SubmitError extends Error {
  constructor(
    readonly kind: 'invalid' | 'conflict' | 'unavailable',
    message: string,
    readonly entries: SubmitRejection[],
  ) {
    super(message);
    this.name = 'SubmitError';
  }
}

/** What a submission recorded, in the order submitted: item ids, and the ids of schedule templates. */
export interface SubmitResult {
  itemIds: string[];
  templateIds: string[];
}

export interface SubmissionContext {
  store: StoreBackend;
  options: { workspaceFolders: string[]; timeoutMs: number; maxAttempts: number };
  ingestion: Pick<ItemIngestion, 'submitConflict' | 'ingestSubmitted'>;
  /** The end of every change: settle, commit, tell readers, dispatch (kernel/context.ts). */
  changed(how: ChangeEnd): void;
  /** True once the engine has shut down: nothing more is taken. */
  isClosed(): boolean;
}

/**
 * Takes `body` (one item object, or an array of them) as a queue file's entries, all or none.
 * Throws SubmitError saying which entries were refused and why. Resolves once what was taken is
 * on disk, with the ids recorded; `now` names the generated ids.
 */
export async function submitItems(body: unknown, ctx: SubmissionContext, now = Date.now()): Promise<SubmitResult> {
  try {
    return await submit(body, ctx, now);
  } catch (err) {
    // A fleet's database that cannot be reached right now: not taken, say so, and why.
    if (err instanceof StoreConflictError) throw new SubmitError('unavailable', `The items were not taken: ${err.message}; submit them again.`, []);
    if (isStoreUnavailable(err)) throw new SubmitError('unavailable', `The items were not taken: the database cannot be reached (${(err as Error).message}); submit them again once /health says it is back.`, []);
    throw err;
  }
}

async function submit(body: unknown, ctx: SubmissionContext, now: number): Promise<SubmitResult> {
  const raw = Array.isArray(body) ? body : [body];
  if (Array.isArray(body) && body.length === 0) throw new SubmitError('invalid', 'The array holds no items; send one item object or an array of 1 to 1000 of them.', []);
  if (raw.length > MAX_SUBMITTED_ITEMS) {
    throw new SubmitError('invalid', `${raw.length} items in one request; at most ${MAX_SUBMITTED_ITEMS}: send them in several requests.`, []);
  }
  const contexts = raw.map((value, index) => contextFor(value, index, ctx.options));
  const entries = raw.map((value, index): QueueEntry => ({ index, result: parseItem(withId(value, now), contexts[index]) }));
  // A cwd inside the workspace by its spelling may still lead out of it through a link.
  for (const folder of new Set(contexts.map((c) => c.workspaceFolder))) {
    const realRoot = await realpath(folder).catch(() => folder);
    await confineWorkingFolders(entries.filter((e) => contexts[e.index].workspaceFolder === folder), folder, realRoot);
  }
  const invalid: SubmitRejection[] = [];
  const seen = new Map<string, number>();
  for (const { index, result } of entries) {
    if (!result.ok) {
      invalid.push({ index, reason: result.reason });
      continue;
    }
    const first = seen.get(result.item.id);
    if (first !== undefined) invalid.push({ index, reason: `id "${result.item.id}" is already used by entry ${first} of this request; give this entry an id of its own` });
    else seen.set(result.item.id, index);
  }
  if (invalid.length > 0) throw new SubmitError('invalid', refusal('invalid', invalid, raw.length), invalid);
  if (ctx.isClosed()) throw new SubmitError('conflict', 'The engine is shutting down; submit the items again once it has restarted.', []);
  // From here to the batch nothing waits: the state judged is the state the items are recorded in.
  const items = entries.map((e) => ({ index: e.index, item: (e.result as { ok: true; item: ItemDefinition }).item }));
  const conflicts = items.flatMap(({ index, item }) => {
    const reason = ctx.ingestion.submitConflict(item);
    return reason === undefined ? [] : [{ index, reason }];
  });
  if (conflicts.length > 0) throw new SubmitError('conflict', refusal('conflict', conflicts, raw.length), conflicts);
  ctx.ingestion.ingestSubmitted(items, SUBMITTED_SOURCE);
  // Written by the dispatch round in this turn's immediate phase, with the attempts it launches
  // from them, under one fdatasync; answered once that is done (the wait queued after the round).
  ctx.changed({ settle: true, commit: 'dispatch', dispatch: true });
  await new Promise((resolve) => setImmediate(resolve));
  if (!(await ctx.store.commitDurably())) {
    throw new SubmitError(
      'unavailable',
      `The items were taken but could not be written to disk (${ctx.store.lastError ?? 'storage unavailable'}); the engine keeps them in memory and writes them once storage works again, and launches nothing meanwhile. /health says when it is back.`,
      [],
    );
  }
  return {
    itemIds: items.filter(({ item }) => !item.schedule).map(({ item }) => item.id),
    templateIds: items.filter(({ item }) => item.schedule).map(({ item }) => item.id),
  };
}

/**
 * A generated id for an entry without one: a queue file's entry gets one derived from its file
 * and position, which a request does not have; `api-<ms>-<random>` never repeats.
 */
function withId(value: unknown, now: number): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || 'id' in value) return value;
  return { id: `api-${now}-${randomBytes(4).toString('hex')}`, ...value };
}

/** The workspace folder an entry's cwd is relative to: the one holding an absolute cwd, else the first. */
function contextFor(value: unknown, index: number, options: SubmissionContext['options']) {
  const cwd = value !== null && typeof value === 'object' ? (value as { cwd?: unknown }).cwd : undefined;
  const holding = typeof cwd === 'string' && path.isAbsolute(cwd) ? options.workspaceFolders.find((f) => isInside(f, path.resolve(cwd))) : undefined;
  return {
    workspaceFolder: holding ?? options.workspaceFolders[0],
    relPath: SUBMITTED_SOURCE,
    index,
    defaults: { timeoutMs: options.timeoutMs, maxAttempts: options.maxAttempts },
  };
}

/** One message for the whole refusal: how many entries and the first reasons. */
function refusal(kind: SubmitError['kind'], entries: SubmitRejection[], total: number): string {
  const shown = entries.slice(0, 3).map((e) => (total === 1 ? e.reason : `entry ${e.index}: ${e.reason}`));
  const more = entries.length > 3 ? `; and ${entries.length - 3} more (see "entries")` : '';
  const which = total === 1 ? `The item is ${kind === 'invalid' ? 'not valid' : 'refused'}` : `${entries.length} of ${total} entries are ${kind === 'invalid' ? 'not valid items' : 'refused'}`;
  return `${which}, so nothing was taken: ${shown.join('; ')}${more}.`;
}
