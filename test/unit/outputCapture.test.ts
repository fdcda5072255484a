// The capture writer's in-memory stage (src/core/outputCapture.ts): short output is written in one
// go when the attempt ends, into a pack shared by many attempts (a hard link per attempt), output
// of a running attempt reaches the disk by the flush tick or once it is large, an attempt that
// prints nothing leaves no file, and what the reader serves is the same as through the thread-pool
// path. Real files in a real temporary folder, read back with the
// server's own reader (src/core/outputReader.ts).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LAZY_BYTES, OutputCapture } from '../../src/core/features/output/outputCapture';
import { retireOutputPack } from '../../src/core/features/output/outputPacks';
import { encodeRecord, encodeSingleHeader, headFile, headIndexFile, keptBytes, MIN_OUTPUT_MAX_BYTES, singleFile, type OutputTarget } from '../../src/core/features/output/outputFiles';
import { closeLayout, copyPieces, outputSince, outputView, readLayout, type StreamFilter } from '../../src/core/features/output/outputReader';
import { waitFor } from './support/workspace';

async function served(dir: string, attemptId: number, stream: StreamFilter): Promise<string | undefined> {
  const layout = await readLayout(dir, attemptId);
  if (!layout) return undefined;
  try {
    const view = await outputView(layout, stream);
    const chunks: Buffer[] = [];
    await copyPieces(view.pieces, 0, Infinity, async (chunk) => void chunks.push(Buffer.from(chunk)));
    return Buffer.concat(chunks).toString('latin1');
  } finally {
    await closeLayout(layout);
  }
}

describe('output capture: output kept in memory until it is large, old or complete', () => {
  let root: string;
  let dir: string;
  let nextId = 1;
  const target = (maxBytes = 10 * 1024 * 1024): OutputTarget => ({ dir, attemptId: nextId++, maxBytes });

  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'engine-capture-'));
    // Not made yet: the writer makes the output folder itself.
    dir = path.join(root, 'output');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('writes a short attempt\'s output when it ends, in arrival order with its streams, and says its size', async () => {
    const t = target();
    const capture = new OutputCapture(t);
    capture.push('o', Buffer.from('out 1\n'));
    capture.push('e', Buffer.from('err 1\n'));
    capture.push('e', Buffer.from('err 2\n'));
    capture.push('o', Buffer.from('out 2\n'));
    const end = await capture.close();
    assert.deepEqual(end, { bytes: 24, error: null });
    assert.equal(await served(dir, t.attemptId, undefined), 'out 1\nerr 1\nerr 2\nout 2\n');
    assert.equal(await served(dir, t.attemptId, 'stdout'), 'out 1\nout 2\n');
    assert.equal(await served(dir, t.attemptId, 'stderr'), 'err 1\nerr 2\n');
  });

  it('serves one stream of finely interleaved output: hundreds of thousands of runs', async function () {
    this.timeout(60_000);
    // A program alternating stdout and stderr a byte at a time: every byte is a run of its own, far
    // more runs than a function call may take as arguments.
    const t = target();
    const capture = new OutputCapture(t);
    const runs = 500_000;
    const o = Buffer.from('o');
    const e = Buffer.from('e');
    for (let i = 0; i < runs / 2; i++) {
      capture.push('o', o);
      capture.push('e', e);
    }
    assert.deepEqual(await capture.close(), { bytes: runs, error: null });
    assert.equal(await served(dir, t.attemptId, 'stdout'), 'o'.repeat(runs / 2));
    assert.equal(await served(dir, t.attemptId, 'stderr'), 'e'.repeat(runs / 2));
  });

  it('short outputs share a pack: each attempt\'s <id>.o is a hard link to it, and its bytes go with the last link', async () => {
    const a = target();
    const b = target();
    for (const [t, text] of [[a, 'first attempt\n'], [b, 'second attempt\n']] as const) {
      const capture = new OutputCapture(t);
      capture.push('o', Buffer.from(text));
      capture.push('e', Buffer.from(`${t.attemptId} oops\n`));
      await capture.close();
    }
    const names = readdirSync(dir).sort();
    const packName = names.find((n) => n.startsWith('pack-'));
    assert.deepEqual(names, [`${a.attemptId}.o`, `${b.attemptId}.o`, packName].sort());
    // One inode, three names: no file was created per attempt.
    const inode = statSync(path.join(dir, packName!)).ino;
    assert.equal(statSync(singleFile(dir, a.attemptId)).ino, inode);
    assert.equal(statSync(singleFile(dir, b.attemptId)).ino, inode);
    assert.equal(await served(dir, a.attemptId, undefined), `first attempt\n${a.attemptId} oops\n`);
    assert.equal(await served(dir, b.attemptId, 'stdout'), 'second attempt\n');
    assert.equal(await served(dir, b.attemptId, 'stderr'), `${b.attemptId} oops\n`);
    // The writer lets go of the pack (it exits): its name goes, the attempts' output stays.
    retireOutputPack(dir);
    assert.deepEqual(readdirSync(dir).sort(), [`${a.attemptId}.o`, `${b.attemptId}.o`].sort());
    unlinkSync(singleFile(dir, a.attemptId));
    assert.equal(await served(dir, a.attemptId, undefined), undefined);
    assert.equal(await served(dir, b.attemptId, undefined), `second attempt\n${b.attemptId} oops\n`);
    // The next short output starts a new pack.
    const c = target();
    const capture = new OutputCapture(c);
    capture.push('o', Buffer.from('third\n'));
    await capture.close();
    assert.notEqual(statSync(singleFile(dir, c.attemptId)).ino, inode);
    assert.equal(await served(dir, c.attemptId, undefined), 'third\n');
  });

  it('a full pack is let go and the next output starts another; every attempt still reads its own', async () => {
    const outputs: { t: OutputTarget; bytes: Buffer }[] = [];
    // 60 KiB each (under LAZY_BYTES): the fifth goes past PACK_BYTES (256 KiB).
    for (let i = 0; i < 6; i++) {
      const t = target();
      const bytes = Buffer.alloc(60 * 1024, String.fromCharCode(97 + i));
      const capture = new OutputCapture(t);
      capture.push(i % 2 === 0 ? 'o' : 'e', bytes);
      await capture.close();
      outputs.push({ t, bytes });
    }
    const inodes = new Set(outputs.map(({ t }) => statSync(singleFile(dir, t.attemptId)).ino));
    assert.equal(inodes.size, 2, 'two packs');
    assert.equal(readdirSync(dir).filter((n) => n.startsWith('pack-')).length, 1, 'only the pack in use keeps its own name');
    for (const [i, { t, bytes }] of outputs.entries()) {
      assert.equal(await served(dir, t.attemptId, undefined), bytes.toString('latin1'));
      assert.equal(await served(dir, t.attemptId, i % 2 === 0 ? 'stdout' : 'stderr'), bytes.toString('latin1'));
      assert.equal(await served(dir, t.attemptId, i % 2 === 0 ? 'stderr' : 'stdout'), '');
    }
  });

  it('a name in the way of <id>.o is never written through: the output goes to the head files', async () => {
    const t = target();
    mkdirSync(dir, { recursive: true });
    writeFileSync(singleFile(dir, t.attemptId), 'stale, or another attempt\'s pack');
    const capture = new OutputCapture(t);
    capture.push('o', Buffer.from('mine\n'));
    assert.deepEqual(await capture.close(), { bytes: 5, error: null });
    assert.equal(readFileSync(singleFile(dir, t.attemptId), 'utf8'), 'stale, or another attempt\'s pack');
    assert.equal(await served(dir, t.attemptId, undefined), 'mine\n');
  });

  it('reads the single-file layout (where hard links are refused), and a single file cut short as no output yet', async () => {
    const t = target();
    mkdirSync(dir, { recursive: true });
    const records = Buffer.concat([encodeRecord('o', 6), encodeRecord('e', 5)]);
    const whole = Buffer.concat([encodeSingleHeader(t.maxBytes, records.length, 11), records, Buffer.from('hello\noops\n')]);
    writeFileSync(singleFile(dir, t.attemptId), whole);
    assert.equal(await served(dir, t.attemptId, undefined), 'hello\noops\n');
    assert.equal(await served(dir, t.attemptId, 'stderr'), 'oops\n');
    // As a reader may find it while it is written: no output yet.
    writeFileSync(singleFile(dir, t.attemptId), whole.subarray(0, whole.length - 1));
    assert.equal(await served(dir, t.attemptId, undefined), undefined);
    writeFileSync(singleFile(dir, t.attemptId), whole.subarray(0, 10));
    assert.equal(await served(dir, t.attemptId, undefined), undefined);
  });

  it('an attempt that prints nothing leaves no file, and its output reads as none', async () => {
    const t = target();
    const end = await new OutputCapture(t).close();
    assert.deepEqual(end, { bytes: 0, error: null });
    assert.equal(existsSync(headFile(dir, t.attemptId)), false);
    assert.equal(await served(dir, t.attemptId, undefined), undefined);
  });

  it('a running attempt\'s few bytes reach the disk without waiting for its end (the flush tick)', async () => {
    const t = target();
    const capture = new OutputCapture(t);
    capture.push('o', Buffer.from('still running\n'));
    // Kept in memory at first: nothing is on disk yet.
    assert.equal(existsSync(headIndexFile(dir, t.attemptId)), false);
    assert.equal(existsSync(singleFile(dir, t.attemptId)), false);
    const seen = await waitFor('the running attempt\'s output on disk', async () => (await served(dir, t.attemptId, undefined)) === 'still running\n', 5000);
    assert.equal(seen, true);
    capture.push('e', Buffer.from('and more\n'));
    assert.deepEqual(await capture.close(), { bytes: 23, error: null });
    assert.equal(await served(dir, t.attemptId, 'stderr'), 'and more\n');
    // Written as it came: the head's data and index, not the single file.
    assert.equal(existsSync(headFile(dir, t.attemptId)), true);
    assert.equal(existsSync(singleFile(dir, t.attemptId)), false);
  });

  it('output reaching LAZY_BYTES is written at once, and output beyond the cap keeps head, marker and tail as before', async () => {
    const t = target(MIN_OUTPUT_MAX_BYTES);
    const capture = new OutputCapture(t);
    const line = Buffer.alloc(1024, 'x');
    line[1023] = 10;
    for (let i = 0; i < LAZY_BYTES / 1024; i++) capture.push(i % 2 === 0 ? 'o' : 'e', line);
    // Started without waiting for a tick: the writes are under way on the thread pool.
    assert.ok(capture.backlog > 0 || existsSync(headFile(dir, t.attemptId)));
    const head = Buffer.alloc(MIN_OUTPUT_MAX_BYTES / 4, 'h');
    const tail = Buffer.alloc(MIN_OUTPUT_MAX_BYTES, 't');
    capture.push('o', head);
    capture.push('o', tail);
    const total = LAZY_BYTES + head.length + tail.length;
    const end = await capture.close();
    assert.deepEqual(end, { bytes: keptBytes(total, MIN_OUTPUT_MAX_BYTES), error: null });
    const text = (await served(dir, t.attemptId, undefined))!;
    assert.equal(text.length, end.bytes);
    assert.match(text, new RegExp(`\\[engine-monitor: ${total - MIN_OUTPUT_MAX_BYTES} bytes of output dropped here\\]`));
    assert.ok(text.startsWith('x'.repeat(1023)));
    assert.ok(text.endsWith('t'.repeat(1000)));
  });

  it('short output of an attempt with the smallest cap, larger than the head, still keeps head and tail', async () => {
    // 64 KiB cap: a 16 KiB head, smaller than what stays in memory; the thread-pool path writes it.
    const t = target(MIN_OUTPUT_MAX_BYTES);
    const capture = new OutputCapture(t);
    const chunk = Buffer.alloc(20 * 1024, 'a');
    capture.push('o', chunk);
    capture.push('e', Buffer.from('the end\n'));
    const end = await capture.close();
    assert.deepEqual(end, { bytes: chunk.length + 8, error: null });
    assert.equal(await served(dir, t.attemptId, 'stderr'), 'the end\n');
    assert.equal((await served(dir, t.attemptId, undefined))!.length, chunk.length + 8);
    assert.ok(readdirSync(dir).some((f) => f.endsWith('.t0.out')), 'the output went on into a tail segment');
  });

  for (const [linesPerPush, how] of [
    [100, 'small writes'],
    [4096, 'writes of 64 KiB, more than the tail keeps, so whole segments are counted without being written'],
  ] as const) {
  it(`readers while the tail segments rotate fast get a whole view every time: head, a marker counting exactly what is missing, and the newest bytes (${how})`, async function () {
    this.timeout(120_000);
    // The smallest cap rotates a 12 KiB segment every few writes; readers that open the segments
    // while the writer deletes the oldest ones used to give up (ENOENT) after five tries.
    const t = target(MIN_OUTPUT_MAX_BYTES);
    const capture = new OutputCapture(t);
    const lineOf = (i: number): string => `${String(i).padStart(15, '0')}\n`;
    const lines = 40_000;
    const expected = Array.from({ length: lines }, (_, i) => lineOf(i)).join('');
    let writing = true;
    let views = 0;
    const check = (text: string): void => {
      const marker = /\n\[engine-monitor: (\d+) bytes of output dropped here\]\n/.exec(text);
      if (!marker) {
        assert.equal(text, expected.slice(0, text.length));
        return;
      }
      const head = text.slice(0, marker.index);
      const tail = text.slice(marker.index + marker[0].length);
      const dropped = Number(marker[1]);
      assert.equal(head, expected.slice(0, head.length), 'the head is the first bytes');
      assert.equal(tail, expected.slice(head.length + dropped, head.length + dropped + tail.length), 'the tail follows exactly the bytes the marker says were dropped');
    };
    const reader = async (): Promise<void> => {
      while (writing) {
        const text = await served(dir, t.attemptId, undefined);
        if (text !== undefined) {
          check(text);
          views++;
        }
      }
    };
    // A follower, as GET …/output?follow=true reads: from its position on, each time.
    const followed: string[] = [];
    const follower = async (): Promise<void> => {
      let position = 0;
      const step = async (): Promise<void> => {
        const layout = await readLayout(dir, t.attemptId, position);
        if (!layout) return;
        try {
          const next = await outputSince(layout, position, undefined);
          const chunks: Buffer[] = [];
          await copyPieces(next.pieces, 0, Infinity, async (chunk) => void chunks.push(Buffer.from(chunk)));
          followed.push(Buffer.concat(chunks).toString('latin1'));
          position = next.end;
        } finally {
          await closeLayout(layout);
        }
      };
      while (writing) await step();
      await step();
    };
    const readers = [reader(), reader(), reader()];
    const following = follower();
    // A small tail's batch waits for more output (or 100 ms): every so often the test lets the
    // writer catch up, so segments rotate while the readers read. Between two such points the
    // 64 KiB writes fill the tail several times over (whole segments dropped before any write).
    const pushesPerBatch = linesPerPush === 100 ? 30 : 4;
    for (let i = 0, n = 1; i < lines; i += linesPerPush, n++) {
      capture.push('o', Buffer.from(expected.slice(i * 16, (i + linesPerPush) * 16)));
      // Let the writes and the readers take turns on the thread pool.
      await new Promise((resolve) => setImmediate(resolve));
      if (n % pushesPerBatch === 0) await waitFor('the writer to catch up', () => capture.backlog === 0, 30_000);
    }
    await capture.close();
    writing = false;
    await Promise.all(readers);
    await following;
    // What the follower got is the whole stream but for the bytes its markers say were dropped.
    let offset = 0;
    for (const part of followed.join('').split(/(\n\[engine-monitor: \d+ bytes of output dropped here\]\n)/)) {
      const dropped = /^\n\[engine-monitor: (\d+) bytes/.exec(part);
      if (dropped) offset += Number(dropped[1]);
      else {
        assert.equal(part, expected.slice(offset, offset + part.length), `the followed bytes at ${offset}`);
        offset += part.length;
      }
    }
    assert.equal(offset, expected.length, 'the follower reached the end');
    assert.ok(views > 0, 'the readers read while the output was written');
    check((await served(dir, t.attemptId, undefined))!);
  });
  }

  it('a folder removed under the writer is made again', async () => {
    const first = target();
    const a = new OutputCapture(first);
    a.push('o', Buffer.from('one\n'));
    await a.close();
    rmSync(dir, { recursive: true, force: true });
    // The writer's pack went with the folder; it starts another.
    const second = target();
    const b = new OutputCapture(second);
    b.push('o', Buffer.from('two\n'));
    assert.deepEqual(await b.close(), { bytes: 4, error: null });
    assert.equal(await served(dir, second.attemptId, undefined), 'two\n');
  });
});
