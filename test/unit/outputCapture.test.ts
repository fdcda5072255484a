// The capture writer's in-memory stage (src/core/outputCapture.ts): short output is written in one
// go when the attempt ends, output of a running attempt reaches the disk by the flush tick or once
// it is large, an attempt that prints nothing leaves no file, and what the reader serves is the
// same as through the thread-pool path. Real files in a real temporary folder, read back with the
// server's own reader (src/core/outputReader.ts).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LAZY_BYTES, OutputCapture } from '../../src/core/outputCapture';
import { headFile, headIndexFile, keptBytes, MIN_OUTPUT_MAX_BYTES, singleFile, type OutputTarget } from '../../src/core/outputFiles';
import { closeLayout, copyPieces, outputView, readLayout, type StreamFilter } from '../../src/core/outputReader';
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

  it('a short attempt\'s output is one file holding index and data; read while being written, it is no output yet', async () => {
    const t = target();
    const capture = new OutputCapture(t);
    capture.push('o', Buffer.from('hello\n'));
    capture.push('e', Buffer.from('oops\n'));
    await capture.close();
    assert.deepEqual(readdirSync(dir), [`${t.attemptId}.o`]);
    const whole = readFileSync(singleFile(dir, t.attemptId));
    assert.equal(whole.toString('latin1', 0, 4), 'EMS1');
    assert.equal(whole.readUInt32LE(4), t.maxBytes);
    assert.equal(whole.readUInt32LE(8), 16, 'two index records');
    assert.equal(whole.readUInt32LE(12), 11, 'eleven bytes of output');
    assert.equal(whole.toString('latin1', 32), 'hello\noops\n');
    // The same file cut short, as a reader may find it while it is written: no output yet.
    writeFileSync(singleFile(dir, t.attemptId), whole.subarray(0, whole.length - 1));
    assert.equal(await served(dir, t.attemptId, undefined), undefined);
    writeFileSync(singleFile(dir, t.attemptId), whole.subarray(0, 10));
    assert.equal(await served(dir, t.attemptId, undefined), undefined);
    writeFileSync(singleFile(dir, t.attemptId), whole);
    assert.equal(await served(dir, t.attemptId, 'stderr'), 'oops\n');
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

  it('a folder removed under the writer is made again', async () => {
    const first = target();
    const a = new OutputCapture(first);
    a.push('o', Buffer.from('one\n'));
    await a.close();
    rmSync(dir, { recursive: true, force: true });
    const second = target();
    const b = new OutputCapture(second);
    b.push('o', Buffer.from('two\n'));
    assert.deepEqual(await b.close(), { bytes: 4, error: null });
    assert.equal(await served(dir, second.attemptId, undefined), 'two\n');
  });
});
