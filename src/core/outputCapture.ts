// Writes one attempt's stdout and stderr to its output files as they arrive (layout: outputFiles.ts).
// Runs where the attempt's pipes are read: in the launch helper, or in the engine when it launches
// in-process. Writes go through the thread pool one batch at a time; what arrives meanwhile waits
// in a backlog, and above BACKLOG_HIGH bytes the caller pauses the pipes (the attempt then blocks
// in its own write), so memory per attempt stays bounded however fast it prints.
import { mkdir, open, rename, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import {
  cutMarker,
  encodeIndexHeader,
  encodeRecord,
  headFile,
  headIndexFile,
  keptBytes,
  outputGeometry,
  segmentFile,
  segmentIndexFile,
  TAIL_SEGMENTS,
  tailsFile,
  type OutputGeometry,
  type OutputStreamTag,
  type OutputTarget,
} from './outputFiles';

/** Backlog at which the pipes are paused, and below which they resume. */
export const BACKLOG_HIGH = 1 << 20;
export const BACKLOG_LOW = 256 << 10;

interface Part {
  k: number; // -1: the head
  data: FileHandle;
  index: FileHandle;
  /** Logical offset of the part's first byte. */
  start: number;
  size: number;
  capacity: number;
}

export interface CaptureEnd {
  /** The output's size as served (null: nothing could be written at all). */
  bytes: number | null;
  error: string | null;
}

export class OutputCapture {
  private readonly geometry: OutputGeometry;
  private queue: { stream: OutputStreamTag; chunk: Buffer }[] = [];
  private queued = 0;
  /** Bytes of L written or on their way (N). */
  private total = 0;
  private part: Part | undefined;
  private firstSegment = 0;
  private pumping: Promise<void> | undefined;
  private failed: string | null = null;
  private drainWaiters: (() => void)[] = [];
  private closed = false;

  constructor(
    private readonly target: OutputTarget,
    private readonly onError: (error: string) => void = () => undefined,
  ) {
    this.geometry = outputGeometry(target.maxBytes);
  }

  /** Bytes accepted and not yet written. */
  get backlog(): number {
    return this.queued;
  }

  push(stream: 'o' | 'e', chunk: Buffer): void {
    if (this.closed || this.failed !== null || chunk.length === 0) return;
    this.queue.push({ stream, chunk });
    this.queued += chunk.length;
    this.pumping ??= this.pump();
  }

  /** Calls `fn` once the backlog is below BACKLOG_LOW (now, if it is). */
  whenDrained(fn: () => void): void {
    if (this.queued < BACKLOG_LOW) fn();
    else this.drainWaiters.push(fn);
  }

  /** Writes what is queued, closes the files and drops tail segments wholly before the kept tail. */
  async close(): Promise<CaptureEnd> {
    this.closed = true;
    while (this.pumping) await this.pumping;
    const { cap, head, tail, segment } = this.geometry;
    const part = this.part;
    this.part = undefined;
    if (part) await Promise.all([part.data.close(), part.index.close()]).catch(() => undefined);
    if (part && part.k >= 0 && this.failed === null) {
      // Segments wholly before N − T are never read again.
      const keepFrom = Math.max(this.firstSegment, Math.floor((this.total - tail - head) / segment));
      if (keepFrom > this.firstSegment) {
        const old = this.firstSegment;
        await this.writeTails(keepFrom, part.k).catch(() => undefined);
        await this.removeSegments(old, keepFrom);
      }
    }
    if (this.total === 0 && this.failed !== null) return { bytes: null, error: this.failed };
    return { bytes: keptBytes(this.total, cap), error: this.failed };
  }

  private async pump(): Promise<void> {
    try {
      while (this.queue.length > 0 && this.failed === null) {
        const batch = this.queue;
        this.queue = [];
        const size = this.queued;
        try {
          await this.write(batch);
        } catch (err) {
          await this.fail(err as NodeJS.ErrnoException);
        }
        this.queued -= size;
        if (this.queued < 0 || this.failed !== null) this.queued = 0;
        if (this.queued < BACKLOG_LOW) for (const fn of this.drainWaiters.splice(0)) fn();
      }
    } finally {
      this.pumping = undefined;
      for (const fn of this.drainWaiters.splice(0)) fn();
    }
  }

  /** Writes a batch: each part's data with one writev, then its index records. */
  private async write(batch: { stream: OutputStreamTag; chunk: Buffer }[]): Promise<void> {
    let data: Buffer[] = [];
    let records: Buffer[] = [];
    let run: { stream: OutputStreamTag; length: number } | undefined;
    const flush = async () => {
      if (run) records.push(encodeRecord(run.stream, run.length));
      run = undefined;
      const part = this.part!;
      if (data.length > 0) await writeAll(part.data, data);
      if (records.length > 0) await writeAll(part.index, records);
      data = [];
      records = [];
    };
    for (const { stream, chunk } of batch) {
      let rest = chunk;
      while (rest.length > 0) {
        if (!this.part || this.part.size === this.part.capacity) {
          await flush();
          await this.nextPart();
        }
        const part = this.part!;
        const piece = rest.subarray(0, part.capacity - part.size);
        rest = rest.subarray(piece.length);
        data.push(piece);
        if (run && run.stream === stream) run.length += piece.length;
        else {
          if (run) records.push(encodeRecord(run.stream, run.length));
          run = { stream, length: piece.length };
        }
        part.size += piece.length;
        this.total += piece.length;
      }
    }
    await flush();
  }

  private async nextPart(): Promise<void> {
    const { dir, attemptId: id } = this.target;
    const { head, segment } = this.geometry;
    const previous = this.part;
    if (!previous) {
      await mkdir(dir, { recursive: true });
      const data = await open(headFile(dir, id), 'w');
      const index = await open(headIndexFile(dir, id), 'w');
      this.part = { k: -1, data, index, start: 0, size: 0, capacity: head };
      await writeAll(index, [encodeIndexHeader(this.target.maxBytes)]);
      return;
    }
    await Promise.all([previous.data.close(), previous.index.close()]);
    const k = previous.k + 1;
    const data = await open(segmentFile(dir, id, k), 'w');
    const index = await open(segmentIndexFile(dir, id, k), 'w');
    this.part = { k, data, index, start: head + k * segment, size: 0, capacity: segment };
    // Announced before anything is written to it; the oldest go only once readers are told.
    const first = Math.max(0, k - TAIL_SEGMENTS + 1);
    const old = this.firstSegment;
    await this.writeTails(first, k);
    if (first > old) await this.removeSegments(old, first);
  }

  private async writeTails(first: number, last: number): Promise<void> {
    const { dir, attemptId: id } = this.target;
    const file = tailsFile(dir, id);
    await writeFile(`${file}.tmp`, `${first} ${last}\n`);
    await rename(`${file}.tmp`, file);
    this.firstSegment = first;
  }

  private async removeSegments(from: number, to: number): Promise<void> {
    const { dir, attemptId: id } = this.target;
    const gone: Promise<void>[] = [];
    for (let k = from; k < to; k++) {
      gone.push(unlink(segmentFile(dir, id, k)).catch(() => undefined), unlink(segmentIndexFile(dir, id, k)).catch(() => undefined));
    }
    await Promise.all(gone);
  }

  /**
   * A write failed (disk full, folder removed…): the attempt runs on, its further output is
   * discarded, and the file ends with a line saying so if there is room for it.
   */
  private async fail(err: NodeJS.ErrnoException): Promise<void> {
    const reason = err.code ? `${err.code}: ${err.message.replace(/^[A-Z]+: /, '')}` : err.message;
    this.failed = reason;
    this.queue = [];
    this.onError(reason);
    const part = this.part;
    if (!part) return;
    const marker = cutMarker(reason);
    try {
      // What reached the disk, rather than what was on its way.
      this.total = part.start + (await part.data.stat()).size;
      part.size = this.total - part.start;
      await writeAll(part.data, [marker]);
      this.total += marker.length;
      await writeAll(part.index, [encodeRecord('m', marker.length)]);
    } catch {
      // No room even for that: the engine's /health and log say it instead.
    }
  }
}

async function writeAll(handle: FileHandle, buffers: Buffer[]): Promise<void> {
  let rest = buffers;
  while (rest.length > 0) {
    let { bytesWritten } = await handle.writev(rest);
    const next: Buffer[] = [];
    for (const b of rest) {
      if (bytesWritten >= b.length) {
        bytesWritten -= b.length;
        continue;
      }
      next.push(bytesWritten > 0 ? b.subarray(bytesWritten) : b);
      bytesWritten = 0;
    }
    rest = next;
  }
}
