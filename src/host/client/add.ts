// `engine-monitor add`: submits one item (POST /items) and prints its id. With --follow it then
// streams the output of each attempt as it runs, until the item is launched (exit 0) or failed
// (exit 1), as `output --follow` does for one attempt; the id goes to stderr then, since stdout is
// the program's output.
import type { ItemDetail, ScheduleSummary } from '../../shared/api';
import { escapeControls } from '../../shared/format';
import { requestJson, type Endpoint } from './connection';
import { ADDED, ITEM_DETAIL } from './shapes';
import { EXIT_ENGINE_ERROR, EXIT_OK, type AddedItem } from './options';
import type { Io } from './commands';

/** How often a followed item is asked whether its next attempt has started. */
const NEXT_ATTEMPT_POLL_MS = 100;

/** Follows attempt `attempt` of the item until it ends: 0 if it succeeded, 1 if it failed. */
export type FollowAttempt = (itemId: string, attempt: number) => Promise<number>;

export async function add(endpoint: Endpoint, io: Io, asJson: boolean, item: AddedItem, follow: boolean, followAttempt: FollowAttempt): Promise<number> {
  const { body } = await requestJson<{ items: ItemDetail[]; schedules?: ScheduleSummary[] }>(endpoint, '/items', ADDED, { method: 'POST', json: JSON.stringify(item) });
  const id = body.items[0]?.item.id ?? body.schedules?.[0]?.id ?? item.id;
  if (asJson && !follow) return io.out(`${JSON.stringify(body)}\n`).then(() => EXIT_OK);
  if (!follow) return io.out(`${id}\n`).then(() => EXIT_OK);
  io.err(`engine-monitor: added ${escapeControls(id)}\n`);
  let followed = 0;
  for (;;) {
    // The next attempt, or the item's outcome without one (a dependency failed, a cancel).
    let detail = body.items[0];
    const next = () => detail.attempts.map((a) => a.attempt).filter((n) => n > followed);
    while (next().length === 0 && detail.outcome === 'pending') {
      await sleep(NEXT_ATTEMPT_POLL_MS, io.stop);
      if (io.stop.aborted) return EXIT_OK;
      detail = (await requestJson<ItemDetail>(endpoint, `/items/${encodeURIComponent(id)}`, ITEM_DETAIL)).body;
    }
    if (next().length === 0) return outcome(io, id, detail);
    followed = Math.min(...next());
    await followAttempt(id, followed);
    if (io.stop.aborted) return EXIT_OK;
    detail = (await requestJson<ItemDetail>(endpoint, `/items/${encodeURIComponent(id)}`, ITEM_DETAIL)).body;
    body.items[0] = detail;
    if (detail.outcome !== 'pending') return outcome(io, id, detail);
  }
}

function outcome(io: Io, id: string, detail: ItemDetail): number {
  if (detail.outcome === 'launched') return EXIT_OK;
  io.err(`engine-monitor: ${escapeControls(id)} failed${detail.error ? `: ${escapeControls(detail.error)}` : ''}\n`);
  return EXIT_ENGINE_ERROR;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
