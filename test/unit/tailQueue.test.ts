// Output a small cap can never keep is dropped before it is written (src/core/features/output/
// tailQueue.ts): whole tail segments on the tail's grid, standing in the queue as one gap that the
// writer counts as it counts segments it skips. The pure function on its own, then the capture
// writer with real files read back by the server's reader, whatever the writes' sizes and timing.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { OutputCapture } from '../../src/core/features/output/outputCapture';
import { droppedMarker, MIN_OUTPUT_MAX_BYTES, outputGeometry, TAIL_SEGMENTS } from '../../src/core/features/output/outputFiles';
import { closeLayout, copyPieces, outputView, readLayout } from '../../src/core/features/output/outputReader';
import { boundaryFrom, dropUnkept, queuedLength, type Queued } from '../../src/core/features/output/tailQueue';
import { waitFor } from './support/workspace';

async function served(dir: string, attemptId: number): Promise<Buffer> {
  const layout = await readLayout(dir, attemptId);
  assert.ok(layout, 'the output exists');
  try {
    const view = await outputView(layout, undefined);
    const chunks: Buffer[] = [];
    await copyPieces(view.pieces, 0, Infinity, async (chunk) => void chunks.push(Buffer.from(chunk)));
    return Buffer.concat(chunks);
  } finally {
    await closeLayout(layout);
  }
}

/** What the readers serve for `all` under `cap`: all of it, or the head, the marker and the tail. */
function kept(all: Buffer, cap: number): Buffer {
  if (all.length <= cap) return all;
  const { head, tail } = outputGeometry(cap);
  return Buffer.concat([all.subarray(0, head), droppedMarker(all.length - cap), all.subarray(all.length - tail)]);
}

/** Bytes that say where they are: byte i of the stream is a function of i. */
function bytesAt(from: number, length: number): Buffer {
  const b = Buffer.alloc(length);
  for (let i = 0; i < length; i++) b[i] = ((from + i) * 7 + ((from + i) >> 9)) & 0xff;
  return b;
}

describe('output at a small cap: what can never be kept is dropped before it is written', function () {
  this.timeout(300_000);
  const geometry = outputGeometry(MIN_OUTPUT_MAX_BYTES);
  const { head, segment } = geometry;

  describe('dropUnkept()', () => {
    const chunks = (start: number, sizes: number[]): Queued[] => {
      let at = start;
      return sizes.map((n, i) => {
        const chunk = bytesAt(at, n);
        at += n;
        return { stream: i % 2 === 0 ? 'o' : 'e', chunk };
      });
    };
    const lengthOf = (q: readonly Queued[]): number => q.reduce((n, e) => n + queuedLength(e), 0);

    it('keeps the bytes up to the first boundary and the last segments, and puts one gap of whole segments between', () => {
      // The queue starts 1,000 bytes into tail segment 2 and holds 20 segments' worth.
      const start = head + 2 * segment + 1000;
      const queue = chunks(start, Array.from({ length: 20 }, () => segment));
      const trimmed = dropUnkept(queue, start, geometry)!;
      const boundary = boundaryFrom(start, geometry);
      assert.equal(boundary, head + 3 * segment);
      const end = start + 20 * segment;
      const skippable = (Math.ceil((end - boundary) / segment) - TAIL_SEGMENTS) * segment;
      const gaps = trimmed.queue.filter((e) => e.gap);
      assert.equal(gaps.length, 1);
      assert.equal(gaps[0].gap, skippable);
      assert.equal(skippable % segment, 0);
      assert.equal(trimmed.dropped, skippable);
      assert.equal(lengthOf(trimmed.queue), end - start, 'the queue still spans the same logical bytes');
      // The bytes before the gap end on the boundary; those after it are the stream's own from there.
      const before = Buffer.concat(trimmed.queue.slice(0, trimmed.queue.indexOf(gaps[0])).map((e) => e.chunk));
      assert.deepEqual(before, bytesAt(start, boundary - start));
      const after = Buffer.concat(trimmed.queue.slice(trimmed.queue.indexOf(gaps[0]) + 1).map((e) => e.chunk));
      assert.deepEqual(after, bytesAt(boundary + skippable, end - boundary - skippable));
      assert.ok(after.length >= (TAIL_SEGMENTS - 1) * segment, 'at least what the tail keeps stays');
    });

    it('grows its one gap as more output comes, and leaves alone what it cannot drop', () => {
      const start = head;
      let queue = chunks(start, [(TAIL_SEGMENTS - 1) * segment]);
      assert.equal(dropUnkept(queue, start, geometry), undefined, 'less than the tail keeps: nothing goes');
      queue = chunks(start, Array.from({ length: 10 }, () => segment));
      const first = dropUnkept(queue, start, geometry)!;
      assert.equal(dropUnkept(first.queue, start, geometry), undefined, 'a second pass over the same bytes drops nothing');
      const more = [...first.queue, ...chunks(start + 10 * segment, [segment, segment])];
      const second = dropUnkept(more, start, geometry)!;
      assert.equal(second.queue.filter((e) => e.gap).length, 1, 'still one gap');
      assert.equal(second.dropped, 2 * segment);
      assert.equal(first.queue[0].gap, (10 - TAIL_SEGMENTS) * segment);
      assert.equal(second.queue[0].gap, (12 - TAIL_SEGMENTS) * segment);
    });

    it('never drops head bytes: a queue starting in the head keeps all of it up to the head\'s end', () => {
      const start = 100;
      const queue = chunks(start, [head, 10 * segment]);
      const trimmed = dropUnkept(queue, start, geometry)!;
      const at = trimmed.queue.findIndex((e) => e.gap);
      assert.equal(lengthOf(trimmed.queue.slice(0, at)), head - start);
    });
  });

  for (const cap of [MIN_OUTPUT_MAX_BYTES, 256 * 1024, 1024 * 1024]) {
    it(`the capture at a ${cap / 1024} KiB cap serves exactly the head, the marker and the tail, whatever the writes and their timing`, async () => {
      const root = mkdtempSync(path.join(os.tmpdir(), 'engine-tailqueue-'));
      let attemptId = 0;
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.record({ size: fc.integer({ min: 1, max: 150_000 }), stream: fc.constantFrom('o' as const, 'e' as const), catchUp: fc.boolean() }), { minLength: 1, maxLength: 60 }),
            async (writes) => {
              const dir = path.join(root, String(++attemptId));
              const capture = new OutputCapture({ dir, attemptId, maxBytes: cap });
              let at = 0;
              for (const w of writes) {
                capture.push(w.stream, bytesAt(at, w.size));
                at += w.size;
                // Sometimes the writer catches up (a slow printer), sometimes the output piles up.
                if (w.catchUp) await waitFor('the writer to catch up', () => capture.backlog === 0, 60_000);
              }
              const end = await capture.close();
              const want = kept(bytesAt(0, at), cap);
              assert.equal(end.error, null);
              assert.equal(end.bytes, want.length);
              assert.ok((await served(dir, attemptId)).equals(want), `${at} bytes in ${writes.length} writes at a ${cap}-byte cap`);
              // No segment beyond what the tail keeps is left on disk.
              assert.ok(readdirSync(dir).filter((f) => /\.t\d+\.out$/.test(f)).length <= TAIL_SEGMENTS);
            },
          ),
          { numRuns: 25 },
        );
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });
  }

  it('a fast printer at the smallest cap never waits for the disk: the backlog stays about the tail\'s size, the pipes are never paused', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'engine-tailqueue-'));
    try {
      const capture = new OutputCapture({ dir: root, attemptId: 1, maxBytes: MIN_OUTPUT_MAX_BYTES });
      const chunk = 64 * 1024;
      let most = 0;
      let at = 0;
      // 32 MB without ever letting the writer run: before, all of it waited in memory.
      for (let i = 0; i < 512; i++) {
        capture.push(i % 3 === 0 ? 'e' : 'o', bytesAt(at, chunk));
        at += chunk;
        most = Math.max(most, capture.backlog);
      }
      assert.ok(most < 2 * geometry.tail + chunk, `backlog at most ${most} bytes`);
      const end = await capture.close();
      assert.ok((await served(root, 1)).equals(kept(bytesAt(0, at), MIN_OUTPUT_MAX_BYTES)));
      assert.equal(end.bytes, kept(bytesAt(0, at), MIN_OUTPUT_MAX_BYTES).length);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
