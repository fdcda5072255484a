// One entry judged exactly as a queue file's entry is (parseItem), without taking it: Add Item…
// asks this while the user types each field, so the file it writes is one the engine accepts.
import path from 'node:path';
import { parseItem, type ItemDefaults } from './items';

/** What a check answers: the id the entry would have, or why the engine would reject it. */
export type EntryCheck = { ok: true; id: string } | { ok: false; reason: string; field?: string };

/** The defaults only fill fields the entry leaves out; they never decide whether it is valid. */
const CHECK_DEFAULTS: ItemDefaults = { timeoutMs: 600_000, maxAttempts: 3 };

/** `workspaceFolder`: the folder whose queue the entry is for (its `cwd` and `watch` paths are judged against it). */
export function checkEntry(entry: unknown, workspaceFolder: unknown): EntryCheck {
  if (typeof workspaceFolder !== 'string' || !path.isAbsolute(workspaceFolder)) {
    return { ok: false, reason: `the workspace folder to judge the entry in must be an absolute path; got ${JSON.stringify(workspaceFolder)}` };
  }
  const result = parseItem(entry, { workspaceFolder, relPath: 'add-item.json', index: 0, defaults: CHECK_DEFAULTS });
  if (result.ok) return { ok: true, id: result.item.id };
  return result.field === undefined ? { ok: false, reason: result.reason } : { ok: false, reason: result.reason, field: result.field };
}
