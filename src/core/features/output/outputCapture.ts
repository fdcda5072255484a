// Writes one attempt's stdout and stderr to its output files as they arrive (layout: outputFiles.ts).
// Runs where the attempt's pipes are read: in the launch helper, or in the engine when it launches
// in-process. Writes go through the thread pool one batch at a time; what arrives meanwhile waits
// in a backlog, and above BACKLOG_HIGH bytes the caller pauses the pipes (the attempt then blocks
// in its own write), so memory per attempt stays bounded however fast it prints.
//
// Most attempts print a few lines and end within milliseconds. Their output first stays in memory:
// files are started only once it reaches LAZY_BYTES or a flush tick (every LAZY_FLUSH_MS, one timer
// for the whole process) finds it still running; an attempt that ends before either has its
// output written at once by `writeSmall`: appended to a pack shared by many attempts, with a hard
// link named after the attempt (or, where links are refused, one file holding index and data),
// with no thread-pool round trips (layout: outputFiles.ts). Creating a file is what capture costs
// most (an inode: 0.4–2 ms of kernel time on the benchmark's machine, more the more were just
// deleted); with two files per attempt, capture cost short `sh` items about a quarter of launch
// throughput (docs/PERFORMANCE.md).
import { close, existsSync, ftruncate, mkdirSync, open, unlinkSync, writeFileSync, writev } from 'node:fs';
import { mkdir, rename, unlink, writeFile } from 'node:fs/promises';
import {
  cutMarker,
  encodeIndexHeader,
  encodePackHeader,
  encodeRecord,
  encodeSingleHeader,
  headFile,
  headIndexFile,
  keptBytes,
  outputGeometry,
  RECORD_BYTES,
  segmentFile,
  singleFile,
  segmentIndexFile,
  TAIL_SEGMENTS,
  tailsFile,
  type OutputGeometry,
  type OutputStreamTag,
  type OutputTarget,
} from './outputFiles';
import { appendToPack } from './outputPacks';
import { COALESCE_BELOW_SEGMENT, dropUnkept, queuedLength, type Queued } from './tailQueue';

/** Backlog at which the pipes are paused, and below which they resume. */
export const BACKLOG_HIGH = 1 << 20;
export const BACKLOG_LOW = 256 << 10;
/** A small tail's batch waits for this much (tailQueue.ts): below BACKLOG_HIGH, so paused pipes never wait for it. */
const COALESCE_BYTES = BACKLOG_HIGH / 2;

/**
 * File descriptors with the callback API: an attempt's few writes cost less than through
 * FileHandle's promises, which matters at hundreds of launches a second.
 */
type Fd = number;
const openFd = (file: string): Promise<Fd> => new Promise((resolve, reject) => open(file, 'w', (err, fd) => (err ? reject(err) : resolve(fd))));
const closeFd = (fd: Fd): Promise<void> => new Promise((resolve) => close(fd, () => resolve()));
const writevFd = (fd: Fd, buffers: Buffer[], position: number | null = null): Promise<number> =>
  new Promise((resolve, reject) => writev(fd, buffers, position, (err, n) => (err ? reject(err) : resolve(n))));
const truncateFd = (fd: Fd, size: number): Promise<void> => new Promise((resolve, reject) => ftruncate(fd, size, (err) => (err ? reject(err) : resolve())));

interface Part {
  k: number; // -1: the head
  data: Fd;
  index: Fd;
  /** Logical offset of the part's first byte. */
  start: number;
  size: number;
  /** Bytes its index covers (data is written first, so at most `size`). */
  indexed: number;
  capacity: number;
}

export interface CaptureEnd {
  /** The output's size as served (null: nothing could be written at all). */
  bytes: number | null;
  error: string | null;
}

/** Output folders this process has made: an attempt's first write does not ask again. */
const madeFolders = new Set<string>();

/** Output an attempt keeps in memory before its files are started (at most; see LAZY_FLUSH_MS). */
export const LAZY_BYTES = 64 << 10;
/**
 * How long output may stay in memory at most before its files are started, so a follower (who
 * polls every 200 ms) sees a running attempt's output about as soon as before.
 */
export const LAZY_FLUSH_MS = 100;

/** Captures whose output is still only in memory; the flush tick starts their files. */
const inMemory = new Set<OutputCapture>();
let flushTick: NodeJS.Timeout | undefined;

function startFlushTick(): void {
  if (flushTick) return;
  flushTick = setInterval(() => {
    for (const capture of inMemory) capture.startWriting();
    if (inMemory.size === 0) {
      clearInterval(flushTick);
      flushTick = undefined;
    }
  }, LAZY_FLUSH_MS);
  flushTick.unref();
}

export class OutputCapture {
  private readonly geometry: OutputGeometry;
  private queue: Queued[] = [];
  /** Bytes of output in `queue` (what memory and the pipes' pauses go by). */
  private queued = 0;
  /** Bytes of `queue`'s gap: output dropped before it was written (tailQueue.ts). */
  private queuedGap = 0;
  /** Logical offset of `queue`'s first byte: everything before it went to write(). */
  private queueStart = 0;
  /** Bytes of L written or on their way (N). */
  private total = 0;
  private part: Part | undefined;
  private firstSegment = 0;
  /** The head index's header, until it goes out with the first records. */
  private indexHeader: Buffer | undefined;
  private pumping: Promise<void> | undefined;
  private failed: string | null = null;
  private drainWaiters: (() => void)[] = [];
  private closed = false;
  /** Nothing written yet: output stays in `queue` (see LAZY_BYTES). */
  private lazy = true;
  /** Ends the pump's wait for a bigger batch (see COALESCE_BYTES), while it waits. */
  private wakeBatch: (() => void) | undefined;

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
    if (this.wakeBatch && this.queued >= COALESCE_BYTES) this.wakeBatch();
    if (this.lazy && this.queued < LAZY_BYTES) {
      inMemory.add(this);
      startFlushTick();
      return;
    }
    if (this.geometry.segment < COALESCE_BELOW_SEGMENT && this.queued >= 2 * this.geometry.tail) this.dropUnkept();
    this.startWriting();
  }

  /** Takes out of the queue the whole tail segments that later output has already pushed out. */
  private dropUnkept(): void {
    const trimmed = dropUnkept(this.queue, this.queueStart, this.geometry);
    if (!trimmed) return;
    this.queue = trimmed.queue;
    this.queued -= trimmed.dropped;
    this.queuedGap += trimmed.dropped;
  }

  /** Starts (or goes on) writing what is queued through the thread pool. */
  startWriting(): void {
    if (this.lazy) {
      this.lazy = false;
      inMemory.delete(this);
    }
    if (this.queue.length > 0) this.pumping ??= this.pump();
  }

  /** Calls `fn` once the backlog is below BACKLOG_LOW (now, if it is). */
  whenDrained(fn: () => void): void {
    if (this.queued < BACKLOG_LOW) fn();
    else this.drainWaiters.push(fn);
  }

  /** Writes what is queued, closes the files and drops tail segments wholly before the kept tail. */
  async close(): Promise<CaptureEnd> {
    this.closed = true;
    this.wakeBatch?.();
    if (this.lazy && this.writeSmall()) return { bytes: keptBytes(this.total, this.geometry.cap), error: null };
    this.startWriting();
    while (this.pumping) await this.pumping;
    const { cap, head, tail, segment } = this.geometry;
    const part = this.part;
    this.part = undefined;
    if (part) await Promise.all([closeFd(part.data), closeFd(part.index)]);
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

  /**
   * Writes an attempt's whole output, still in memory, in one go: into the pack, else as its
   * single file. False when it was not written (it does not fit the head, or the writes failed:
   * the thread-pool path then writes it as usual, and handles a failure as for any write).
   */
  private writeSmall(): boolean {
    this.lazy = false;
    inMemory.delete(this);
    if (this.queue.length === 0) return true;
    if (this.queued > this.geometry.head) return false;
    const { dir, attemptId: id } = this.target;
    const data: Buffer[] = [];
    const index: Buffer[] = [];
    let run: { stream: OutputStreamTag; length: number } | undefined;
    for (const { stream, chunk } of this.queue) {
      data.push(chunk);
      if (run && run.stream === stream) run.length += chunk.length;
      else {
        if (run) index.push(encodeRecord(run.stream, run.length));
        run = { stream, length: chunk.length };
      }
    }
    index.push(encodeRecord(run!.stream, run!.length));
    const indexBytes = index.length * RECORD_BYTES;
    const cap = this.target.maxBytes;
    if (!madeFolders.has(dir)) {
      try {
        mkdirSync(dir, { recursive: true });
      } catch {
        return false;
      }
      madeFolders.add(dir);
    }
    const body = [...index, ...data];
    const packed = () => appendToPack(dir, id, Buffer.concat([encodePackHeader(cap, id, indexBytes, this.queued), ...body]));
    let written = packed();
    if (!written && !existsSync(dir)) {
      // The folder was removed since (by hand): made again, as the thread-pool path does.
      try {
        mkdirSync(dir, { recursive: true });
      } catch {
        return false;
      }
      written = packed();
    }
    if (!written) written = this.writeSingle(Buffer.concat([encodeSingleHeader(cap, indexBytes, this.queued), ...body]));
    if (!written) return false;
    this.total = this.queued;
    this.queue = [];
    this.queued = 0;
    return true;
  }

  /** The attempt's output as its own file (outputFiles.ts): where the pack could not take it. */
  private writeSingle(bytes: Buffer): boolean {
    const file = singleFile(this.target.dir, this.target.attemptId);
    try {
      // 'wx': never through an existing name, which may be a link to a pack holding other attempts' output.
      writeFileSync(file, bytes, { flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      // Half written (disk full): readers must not find it; the thread-pool path says why.
      try {
        unlinkSync(file);
      } catch {
        // never created
      }
      return false;
    }
    return true;
  }

  private async pump(): Promise<void> {
    try {
      while (this.queue.length > 0 && this.failed === null) {
        if (this.waitsForBatch()) await this.biggerBatch();
        const batch = this.queue;
        this.queue = [];
        const size = this.queued;
        this.queueStart += size + this.queuedGap;
        this.queuedGap = 0;
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

  /** Whether the next batch goes into a small tail and is worth waiting for more of (see COALESCE_BYTES). */
  private waitsForBatch(): boolean {
    const part = this.part;
    const inTail = part !== undefined && (part.k >= 0 || part.size === part.capacity);
    // Paused pipes (a drain waiter) wait for this batch: then it goes as it is.
    return inTail && !this.closed && this.drainWaiters.length === 0 && this.geometry.segment < COALESCE_BELOW_SEGMENT && this.queued < COALESCE_BYTES;
  }

  /** Resolves once COALESCE_BYTES are queued, the capture closes, or LAZY_FLUSH_MS have passed (a follower's poll). */
  private biggerBatch(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => wake(), LAZY_FLUSH_MS);
      const wake = () => {
        clearTimeout(timer);
        this.wakeBatch = undefined;
        resolve();
      };
      this.wakeBatch = wake;
    });
  }

  /** Writes a batch: each part's data with one writev, then its index records. */
  private async write(batch: Queued[]): Promise<void> {
    let data: Buffer[] = [];
    let records: Buffer[] = [];
    let run: { stream: OutputStreamTag; length: number } | undefined;
    const flush = async () => {
      if (run) records.push(encodeRecord(run.stream, run.length));
      run = undefined;
      const part = this.part;
      if (!part) return; // before the first part: nothing to write yet
      if (data.length > 0) await writeAll(part.data, data);
      if (records.length > 0) await writeAll(part.index, this.withHeader(records));
      part.indexed = part.size;
      data = [];
      records = [];
    };
    const { segment } = this.geometry;
    let left = 0;
    for (const entry of batch) left += queuedLength(entry);
    for (let i = 0; i < batch.length; i++) {
      let stream = batch[i].stream;
      let rest = batch[i].chunk;
      // A gap (tailQueue.ts) starts on a boundary and is always within what is skipped there.
      let gap = batch[i].gap ?? 0;
      while (rest.length > 0 || gap > 0) {
        if (!this.part || this.part.size === this.part.capacity) {
          await flush();
          // Past the head, the tail keeps the last TAIL_SEGMENTS segments: whole segments of this
          // batch that later bytes of it would push out are counted, not written and deleted again.
          // A fast printer at a small cap otherwise spent its time opening, announcing and deleting
          // segments (a 1 GB print took 13 times as long at the smallest cap as at 10 MiB).
          const skipped = this.part ? Math.max(0, Math.ceil(left / segment) - TAIL_SEGMENTS) : 0;
          let skip = skipped * segment;
          this.total += skip;
          left -= skip;
          while (skip > 0) {
            if (rest.length === 0 && gap === 0) {
              i++;
              stream = batch[i].stream;
              rest = batch[i].chunk;
              gap = batch[i].gap ?? 0;
            }
            const n = Math.min(skip, gap || rest.length);
            if (gap > 0) gap -= n;
            else rest = rest.subarray(n);
            skip -= n;
          }
          await this.nextPart(skipped);
          if (rest.length === 0 && gap === 0) continue;
        }
        if (gap > 0) throw new Error(`the output lost its place: ${gap} bytes dropped off a segment boundary`);
        const part = this.part!;
        const piece = rest.subarray(0, part.capacity - part.size);
        rest = rest.subarray(piece.length);
        left -= piece.length;
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

  /** Index records, behind the header while it has not been written. */
  private withHeader(records: Buffer[]): Buffer[] {
    const header = this.indexHeader;
    this.indexHeader = undefined;
    return header ? [header, ...records] : records;
  }

  /** Opens the next part; `skipped` segments before it were counted without being written. */
  private async nextPart(skipped = 0): Promise<void> {
    const { dir, attemptId: id } = this.target;
    const { head, segment } = this.geometry;
    const previous = this.part;
    if (!previous) {
      // The folder is made once per process (and again if it was removed since).
      if (!madeFolders.has(dir)) {
        await mkdir(dir, { recursive: true });
        madeFolders.add(dir);
      }
      const data = await openFd(headFile(dir, id)).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
        await mkdir(dir, { recursive: true });
        return openFd(headFile(dir, id));
      });
      const index = await openFd(headIndexFile(dir, id));
      this.part = { k: -1, data, index, start: 0, size: 0, indexed: 0, capacity: head };
      // Written with the first records (one write fewer): until then readers see no output yet.
      this.indexHeader = encodeIndexHeader(this.target.maxBytes);
      return;
    }
    await Promise.all([closeFd(previous.data), closeFd(previous.index)]);
    const k = previous.k + 1 + skipped;
    const data = await openFd(segmentFile(dir, id, k));
    const index = await openFd(segmentIndexFile(dir, id, k));
    this.part = { k, data, index, start: head + k * segment, size: 0, indexed: 0, capacity: segment };
    // Announced before anything is written to it; the oldest go only once readers are told.
    const first = Math.max(0, k - TAIL_SEGMENTS + 1);
    const old = this.firstSegment;
    await this.writeTails(first, k);
    // Only segments that were written: skipped ones never had files.
    if (first > old) await this.removeSegments(old, Math.min(first, previous.k + 1));
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
    this.queuedGap = 0;
    this.onError(reason);
    const part = this.part;
    if (!part) return;
    const marker = cutMarker(reason);
    try {
      // Back to what the index covers: a batch half written would put the marker out of step.
      await truncateFd(part.data, part.indexed);
      part.size = part.indexed;
      this.total = part.start + part.indexed;
      // At that offset: the descriptor's own is still past what was cut off.
      await writeAll(part.data, [marker], part.indexed);
      this.total += marker.length;
      await writeAll(part.index, this.withHeader([encodeRecord('m', marker.length)]));
    } catch {
      // No room even for that: the engine's /health and log say it instead.
    }
    // An index without its header would not read as one.
    if (this.indexHeader) await writeAll(part.index, this.withHeader([])).catch(() => undefined);
  }
}

/** Writes every byte of `buffers`, at `position` (null: the descriptor's offset), however many writes it takes. */
async function writeAll(fd: Fd, buffers: Buffer[], position: number | null = null): Promise<void> {
  let rest = buffers;
  let at = position;
  while (rest.length > 0) {
    let bytesWritten = await writevFd(fd, rest, at);
    if (at !== null) at += bytesWritten;
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
