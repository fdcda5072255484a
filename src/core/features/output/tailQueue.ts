// An attempt's output waiting to be written, and the part of it that can never be kept.
//
// Past the head, only the last TAIL_SEGMENTS segments of the tail survive (outputFiles.ts). The
// writer already counts without writing the whole segments of a batch that later bytes of the same
// batch push out. At a small cap a fast printer fills the tail many times over between two batches;
// holding those bytes until the writer gets to them only to skip them would need memory (or paused
// pipes) for nothing. So they are dropped as they arrive, whole segments at a time on the tail's
// fixed grid, and stand in the queue as one gap of that many bytes: the writer counts the gap as it
// counts any skipped segment, and the readers find the same files as if it had skipped them itself.
import { TAIL_SEGMENTS, type OutputGeometry, type OutputStreamTag } from './outputFiles';

/**
 * Tail segments smaller than this (caps below about 1.3 MiB) rotate every few KiB: each rotation
 * opens, announces and deletes files, so writing such a tail as the bytes come costs far more than
 * the bytes do. There the writer waits for COALESCE_BYTES (or LAZY_FLUSH_MS) before a batch, and a
 * batch's segments that its later bytes push out are never written (see write()).
 */
export const COALESCE_BELOW_SEGMENT = 256 << 10;

export interface Queued {
  stream: OutputStreamTag;
  /** Empty for a gap. */
  chunk: Buffer;
  /** Bytes counted and never written (whole tail segments); 0 or absent for output. */
  gap?: number;
}

export const queuedLength = (entry: Queued): number => entry.gap || entry.chunk.length;

/** The first segment boundary at or after logical offset `at`: the head's end, or a tail segment's. */
export function boundaryFrom(at: number, { head, segment }: OutputGeometry): number {
  return at <= head ? head : head + Math.ceil((at - head) / segment) * segment;
}

/**
 * `queue` holds the logical bytes [start, start + its length). The writer, reaching the first
 * boundary B at or after `start` with L bytes left, skips ceil(L / S) − TAIL_SEGMENTS whole segments
 * from B (outputCapture.ts, write()). Those segments are taken out of `queue` here, as one gap at B;
 * the bytes before B (they fill the segment being written) and after the gap stay. Returns the new
 * queue and how many bytes of output it no longer holds, or undefined when nothing can go.
 */
export function dropUnkept(queue: readonly Queued[], start: number, geometry: OutputGeometry): { queue: Queued[]; dropped: number } | undefined {
  let end = start;
  let gapBefore = 0;
  for (const entry of queue) {
    end += queuedLength(entry);
    gapBefore += entry.gap ?? 0;
  }
  const boundary = boundaryFrom(start, geometry);
  const skippable = Math.max(0, Math.ceil((end - boundary) / geometry.segment) - TAIL_SEGMENTS) * geometry.segment;
  if (skippable <= gapBefore) return undefined;
  const gapEnd = boundary + skippable;
  const kept: Queued[] = [];
  let at = start;
  let dropped = 0;
  let gapAt = -1;
  for (const entry of queue) {
    const from = at;
    const to = at + queuedLength(entry);
    at = to;
    if (to <= boundary || from >= gapEnd) {
      kept.push(entry);
      continue;
    }
    if (entry.gap) continue; // the old gap, at the boundary: inside the new one
    dropped += Math.min(to, gapEnd) - Math.max(from, boundary);
    if (from < boundary) kept.push({ stream: entry.stream, chunk: entry.chunk.subarray(0, boundary - from) });
    if (gapAt < 0) gapAt = kept.length;
    if (to > gapEnd) kept.push({ stream: entry.stream, chunk: entry.chunk.subarray(gapEnd - from) });
  }
  if (gapAt < 0) return undefined; // only the old gap was in the way: nothing new to drop
  kept.splice(gapAt, 0, { stream: 'o', chunk: Buffer.alloc(0), gap: skippable });
  return { queue: kept, dropped };
}
