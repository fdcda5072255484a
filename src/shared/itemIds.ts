// How an item without an `id` is named: the engine when it ingests a queue
// file, and the editor's CodeLens when it finds that entry in the file, must derive the same id.
import { createHash } from 'node:crypto';

/**
 * Derived ids stay readable (the file's base name and the index) and unique (a hash of the
 * relative path, so `a b.json` and `a_b.json` do not collide).
 */
export function deriveItemId(relPath: string, index: number): string {
  const base = relPath.slice(relPath.lastIndexOf('/') + 1).replace(/\.(jsonl?|JSONL?)$/, '');
  const slug = base.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 80) || 'item';
  const hash = createHash('sha256').update(`${relPath}\n${index}`).digest('hex').slice(0, 10);
  return `${slug}:${index}:${hash}`;
}
