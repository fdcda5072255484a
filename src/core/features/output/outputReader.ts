// Reads an attempt's captured output (layout and format: outputFiles.ts) while it is being written
// or after: the combined output, one stream of it, and what arrived after a given point (for a
// follower). Every read is asynchronous and bounded by what it returns; nothing here holds the
// event loop for a time that grows with the output.
import { open, readFile, type FileHandle } from 'node:fs/promises';
import {
  droppedMarker,
  headFile,
  headIndexFile,
  INDEX_HEADER_BYTES,
  INDEX_MAGIC,
  outputGeometry,
  parseTails,
  RECORD_BYTES,
  segmentFile,
  segmentIndexFile,
  PACK_HEADER_BYTES,
  PACK_MAGIC,
  SINGLE_HEADER_BYTES,
  SINGLE_MAGIC,
  singleFile,
  tailsFile,
  type OutputGeometry,
  type OutputStreamTag,
} from './outputFiles';

/** One file's part of the logical output L. */
interface Part {
  /** Offset in L of its first byte. */
  start: number;
  size: number;
  file: string;
  /** Open from the moment the layout was read: a segment the writer deletes meanwhile stays readable. */
  data: FileHandle;
  index: FileHandle;
  /** Bytes to skip at the start of its index file (the header). */
  indexOffset: number;
  /** Where its index ends (a single file: where the data starts); undefined: at the end of the index file. */
  indexEnd?: number;
  /** Offset of its first data byte in its data file (a single file: after header and index). */
  dataOffset: number;
}

export interface OutputLayout {
  geometry: OutputGeometry;
  /** N: bytes of L on disk now. */
  total: number;
  /**
   * The parts held open, in order: the head, then the tail segments kept (a reader that asked from
   * a later offset holds only the parts that reach past it).
   */
  parts: Part[];
  /** Offset in L where the kept tail starts: what lies between the head and here was dropped. */
  firstKept: number;
}

/** Closes the layout's files; its pieces cannot be copied after this. */
export async function closeLayout(layout: OutputLayout | undefined): Promise<void> {
  if (!layout) return;
  // A single file is both a part's data and its index: closed once.
  const handles = new Set(layout.parts.flatMap((p) => [p.data, p.index]));
  await Promise.all([...handles].map((h) => h.close())).catch(() => undefined);
}

/** Bytes of a file, or bytes given directly (a marker line). */
export type OutputPiece = { part: Part; offset: number; length: number; stream: OutputStreamTag } | { bytes: Buffer; stream: OutputStreamTag };

/** undefined: the combined bytes (untagged); 'all': every stream, each piece tagged by the index. */
export type StreamFilter = 'stdout' | 'stderr' | 'all' | undefined;

const TAG: Record<'stdout' | 'stderr', OutputStreamTag> = { stdout: 'o', stderr: 'e' };

export const pieceLength = (p: OutputPiece): number => ('bytes' in p ? p.bytes.length : p.length);

/** How often a layout is read again when even the newest segment it was told of is gone. */
const LAYOUT_TRIES = 50;

/**
 * The attempt's files as they are now; undefined when it has none (it printed nothing, or never
 * ran). Older tail segments deleted under the reader are left out (the writer moved on; the bytes
 * kept are those after them); only when the newest one named is gone as well, the writer has moved
 * on past everything read, and the layout is read again, yielding between tries so it can.
 */
export async function readLayout(dir: string, attemptId: number, from = 0): Promise<OutputLayout | undefined> {
  for (let tries = 1; ; tries++) {
    try {
      return await tryReadLayout(dir, attemptId, from);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || tries >= LAYOUT_TRIES) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.min(tries, 10)));
    }
  }
}

/**
 * `from`: the reader needs only the bytes from this offset of L on (a follower that has the rest),
 * so parts wholly before it are not held open: a follower waiting on a slow client then holds the
 * newest segment's two files, not every part's.
 */
async function tryReadLayout(dir: string, id: number, from: number): Promise<OutputLayout | undefined> {
  const opened: Part[] = [];
  const openPart = async (start: number, file: string, indexFile: string, indexOffset: number): Promise<Part> => {
    const index = await open(indexFile, 'r');
    let data: FileHandle;
    try {
      data = await open(file, 'r');
    } catch (err) {
      await index.close();
      throw err;
    }
    // The index first, then the data: data is written before its index, so this order never sees
    // an index record whose data is missing.
    const part: Part = { start, size: 0, file, data, index, indexOffset, dataOffset: 0 };
    opened.push(part);
    return part;
  };
  try {
    let head: Part;
    try {
      head = await openPart(0, headFile(dir, id), headIndexFile(dir, id), INDEX_HEADER_BYTES);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return await readSingle(dir, id);
      throw err;
    }
    const header = Buffer.alloc(INDEX_HEADER_BYTES);
    const { bytesRead } = await head.index.read(header, 0, INDEX_HEADER_BYTES, 0);
    // The writer creates the index and writes its header right after: a short one is that moment.
    if (bytesRead < INDEX_HEADER_BYTES) {
      await closeLayout({ geometry: outputGeometry(1), total: 0, parts: opened, firstKept: 0 });
      return undefined;
    }
    if (header.toString('latin1', 0, 4) !== INDEX_MAGIC) throw new Error(`${headIndexFile(dir, id)} is not an output index`);
    const geometry = outputGeometry(header.readUInt32LE(4));
    let tails: { first: number; last: number } | undefined;
    try {
      tails = parseTails(await readFile(tailsFile(dir, id), 'latin1'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    let firstKept = geometry.head;
    if (tails) {
      firstKept = geometry.head + tails.first * geometry.segment;
      // Newest first: the writer deletes the oldest segments once it has moved on, so the first one
      // found gone means every older one is going too, and what is kept starts after it. Holding the
      // newer ones open first keeps them readable whatever the writer deletes meanwhile.
      const segments: Part[] = [];
      for (let k = tails.last; k >= tails.first; k--) {
        const start = geometry.head + k * geometry.segment;
        if (k < tails.last && start + geometry.segment <= from) break;
        try {
          segments.push(await openPart(start, segmentFile(dir, id, k), segmentIndexFile(dir, id, k), 0));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || k === tails.last) throw err;
          firstKept = start + geometry.segment;
          break;
        }
      }
      opened.splice(1, opened.length - 1, ...segments.reverse());
    }
    // Sizes from the last part back to the head: a part is full before the next one gets a byte,
    // so no size read here counts bytes that follow bytes an earlier part does not show.
    for (let i = opened.length - 1; i >= 0; i--) opened[i].size = (await opened[i].data.stat()).size;
    if (opened.length > 1) opened[0].size = Math.min(opened[0].size, geometry.head);
    if (opened.length > 1 && from >= geometry.head) {
      // The reader is past the head: its files need not stay open.
      const [h] = opened.splice(0, 1);
      await Promise.all([h.data.close(), h.index.close()]);
    }
    const last = opened[opened.length - 1];
    return { geometry, total: last.start + last.size, parts: opened, firstKept };
  } catch (err) {
    await closeLayout({ geometry: outputGeometry(1), total: 0, parts: opened, firstKept: 0 });
    throw err;
  }
}

/**
 * A short attempt's output written as one file when it ended (outputFiles.ts); undefined when
 * there is none, or it is being written.
 */
async function readSingle(dir: string, id: number): Promise<OutputLayout | undefined> {
  const file = singleFile(dir, id);
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const header = Buffer.alloc(SINGLE_HEADER_BYTES);
    const { bytesRead } = await handle.read(header, 0, SINGLE_HEADER_BYTES, 0);
    if (bytesRead >= 4 && header.toString('latin1', 0, 4) === PACK_MAGIC) return await findInPack(file, handle, id);
    if (bytesRead === SINGLE_HEADER_BYTES && header.toString('latin1', 0, 4) !== SINGLE_MAGIC) throw new Error(`${file} is not an output file`);
    const indexBytes = header.readUInt32LE(8);
    const dataBytes = header.readUInt32LE(12);
    const dataOffset = SINGLE_HEADER_BYTES + indexBytes;
    if (bytesRead < SINGLE_HEADER_BYTES || (await handle.stat()).size < dataOffset + dataBytes) {
      await handle.close();
      return undefined;
    }
    const part: Part = { start: 0, size: dataBytes, file, data: handle, index: handle, indexOffset: SINGLE_HEADER_BYTES, indexEnd: dataOffset, dataOffset };
    const geometry = outputGeometry(header.readUInt32LE(4));
    return { geometry, total: dataBytes, parts: [part], firstKept: geometry.head };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * The attempt's record in a pack (`<id>.o` is a link to it, made once the record was complete):
 * the pack is read whole (at most PACK_BYTES and one record) and its records walked.
 */
async function findInPack(file: string, handle: FileHandle, id: number): Promise<OutputLayout | undefined> {
  const pack = await readWhole(handle);
  for (let at = 0; at + PACK_HEADER_BYTES <= pack.length; ) {
    if (pack.toString('latin1', at, at + 4) !== PACK_MAGIC) break;
    const indexBytes = pack.readUInt32LE(at + 16);
    const dataBytes = pack.readUInt32LE(at + 20);
    const dataOffset = at + PACK_HEADER_BYTES + indexBytes;
    if (pack.readDoubleLE(at + 8) === id && dataOffset + dataBytes <= pack.length) {
      const part: Part = { start: 0, size: dataBytes, file, data: handle, index: handle, indexOffset: at + PACK_HEADER_BYTES, indexEnd: dataOffset, dataOffset };
      const geometry = outputGeometry(pack.readUInt32LE(at + 4));
      return { geometry, total: dataBytes, parts: [part], firstKept: geometry.head };
    }
    at = dataOffset + dataBytes;
  }
  // The caller closes the handle.
  throw new Error(`${file} holds no output of attempt ${id}`);
}

/**
 * The logical ranges of L that are kept: all of it, or the head and the last T bytes (fewer when
 * the writer deleted older segments while the layout was read: the marker then counts those too).
 */
function keptRanges(layout: OutputLayout): { ranges: [number, number][]; dropped: number } {
  const { total, firstKept } = layout;
  const { cap, head, tail } = layout.geometry;
  // Read while the writer counts whole segments without writing them, an output can be under the
  // cap and still lack the bytes between the head and its newest segment: those are dropped too.
  if (total <= cap && firstKept <= head) return { ranges: [[0, total]], dropped: 0 };
  const tailStart = Math.max(total - tail, firstKept);
  return { ranges: [[0, head], [tailStart, total]], dropped: tailStart - head };
}

/**
 * The output as served now: combined, or one stream (with the engine's own lines, so a reader of
 * one stream learns that output was dropped or cut). `end` is how far into L it reaches.
 */
export async function outputView(layout: OutputLayout, stream: StreamFilter): Promise<{ pieces: OutputPiece[]; end: number }> {
  const { ranges, dropped } = keptRanges(layout);
  const pieces: OutputPiece[] = [];
  let end = 0;
  for (let i = 0; i < ranges.length; i++) {
    if (i > 0) pieces.push({ bytes: droppedMarker(dropped), stream: 'm' });
    const got = await rangePieces(layout, ranges[i][0], ranges[i][1], stream);
    appendAll(pieces, got.pieces);
    end = got.end;
  }
  return { pieces, end };
}

/**
 * What a follower at `from` (an offset in L) gets next: the bytes from there on; when the writer
 * has deleted some of them already (the follower fell more than the kept tail behind), a marker
 * line for those first.
 */
export async function outputSince(layout: OutputLayout, from: number, stream: StreamFilter): Promise<{ pieces: OutputPiece[]; end: number }> {
  const pieces: OutputPiece[] = [];
  const { head } = layout.geometry;
  const { firstKept } = layout;
  let start = from;
  if (from < head && firstKept > head && layout.total > head) {
    // Still in the head while the tail moved past what follows it: the rest of the head, then the marker.
    const got = await rangePieces(layout, from, head, stream);
    appendAll(pieces, got.pieces);
    if (got.end < head) return { pieces, end: got.end };
    start = head;
  }
  if (start >= head && start < firstKept) {
    pieces.push({ bytes: droppedMarker(firstKept - start), stream: 'm' });
    start = firstKept;
  }
  if (start >= layout.total) return { pieces, end: Math.max(start, from) };
  const got = await rangePieces(layout, start, layout.total, stream);
  appendAll(pieces, got.pieces);
  return { pieces, end: got.end };
}

/**
 * push(...source) passes every element as an argument: finely interleaved output (one run per
 * byte) has more runs than a call may take, and overflowed the stack.
 */
function appendAll<T>(target: T[], source: readonly T[]): void {
  for (const x of source) target.push(x);
}

/**
 * The bytes of L[from, to) on disk, combined (by the data files' sizes) or one stream's (by the
 * index, which may not cover the newest data yet: `end` then stops where it does).
 */
async function rangePieces(layout: OutputLayout, from: number, to: number, stream: StreamFilter): Promise<{ pieces: OutputPiece[]; end: number }> {
  const pieces: OutputPiece[] = [];
  let end = from;
  for (const part of layout.parts) {
    const a = Math.max(from, part.start);
    const b = Math.min(to, part.start + part.size);
    if (a >= b) continue;
    if (stream === undefined) {
      pieces.push({ part, offset: a - part.start, length: b - a, stream: 'o' });
      end = b;
      continue;
    }
    // One stream: walk the part's index records over [a, b).
    const records = await readWhole(part.index, part.indexEnd);
    let at = part.start;
    for (let r = part.indexOffset; r + RECORD_BYTES <= records.length && at < b; r += RECORD_BYTES) {
      const tag = String.fromCharCode(records[r]) as OutputStreamTag;
      const length = records.readUInt32LE(r + 4);
      const runEnd = at + length;
      const x = Math.max(a, at);
      const y = Math.min(b, runEnd);
      if (x < y) {
        if (stream === 'all' || tag === TAG[stream] || tag === 'm') pieces.push({ part, offset: x - part.start, length: y - x, stream: tag });
        end = y;
      }
      at = runEnd;
    }
    // The index stops short of the data: the rest is for the next read.
    if (end < b) break;
  }
  return { pieces, end };
}

/** The most `copyPieces` hands to `write` at once, and reads from a file at once. */
const COPY_CHUNK = 64 * 1024;

/**
 * Copies `length` bytes of the pieces from `skip` on to `write`, in buffers of at most 64 KiB.
 * With `header`, each piece's header goes before its bytes (format=runs). Finely
 * interleaved output is hundreds of thousands of pieces of a byte or two each, neighbours in one
 * data file: they are read a block at a time and copied into full buffers without an allocation or
 * an await of their own, not a read and a write per piece.
 */
export async function copyPieces(
  pieces: OutputPiece[],
  skip: number,
  length: number,
  write: (chunk: Buffer) => Promise<void>,
  header?: (piece: OutputPiece) => Buffer,
): Promise<void> {
  const out = new ChunkedWriter(write);
  const block = new BlockReader();
  let toSkip = skip;
  let left = length;
  for (const piece of pieces) {
    if (left <= 0) break;
    const size = pieceLength(piece);
    if (size > 0 && toSkip >= size) {
      toSkip -= size;
      continue;
    }
    const n = Math.min(size - toSkip, left);
    if (header) {
      const bytes = header(piece);
      if (!out.tryRange(bytes, 0, bytes.length)) await out.put(bytes);
    }
    if ('bytes' in piece) {
      if (!out.tryRange(piece.bytes, toSkip, toSkip + n)) await out.put(piece.bytes.subarray(toSkip, toSkip + n));
    } else if (n > 0) {
      const position = piece.part.dataOffset + piece.offset + toSkip;
      if (!block.tryCopy(piece.part, position, n, out)) await block.copy(piece.part, position, n, out);
    }
    toSkip = 0;
    left -= n;
  }
  await out.flush();
}

/** Gathers bytes into buffers of COPY_CHUNK and hands each one on, full, to `write`. */
class ChunkedWriter {
  private buffer = Buffer.allocUnsafe(COPY_CHUNK);
  private used = 0;

  constructor(private readonly write: (chunk: Buffer) => Promise<void>) {}

  /** Copies `src[start, end)` in when it fits without filling the buffer (nothing to hand on yet). */
  tryRange(src: Buffer, start: number, end: number): boolean {
    const n = end - start;
    if (n >= COPY_CHUNK - this.used) return false;
    // A few bytes (a run's header, a run of a byte or two) are copied here: a native copy's call
    // costs more than they do.
    if (n <= 16) for (let i = 0; i < n; i++) this.buffer[this.used + i] = src[start + i];
    else src.copy(this.buffer, this.used, start, end);
    this.used += n;
    return true;
  }

  async put(bytes: Buffer): Promise<void> {
    for (let at = 0; at < bytes.length; ) {
      const n = Math.min(bytes.length - at, COPY_CHUNK - this.used);
      bytes.copy(this.buffer, this.used, at, at + n);
      this.used += n;
      at += n;
      if (this.used === COPY_CHUNK) await this.flush();
    }
  }

  /** Reads `n` bytes of the part's data file at `position` straight into the buffer, as room allows. */
  async readInto(part: Part, position: number, n: number): Promise<void> {
    for (let remaining = n; remaining > 0; ) {
      const room = Math.min(remaining, COPY_CHUNK - this.used);
      const { bytesRead } = await part.data.read(this.buffer, this.used, room, position);
      if (bytesRead === 0) throw new Error(`${part.file} ended before the output it should hold`);
      this.used += bytesRead;
      position += bytesRead;
      remaining -= bytesRead;
      if (this.used === COPY_CHUNK) await this.flush();
    }
  }

  async flush(): Promise<void> {
    if (this.used === 0) return;
    const chunk = this.buffer.subarray(0, this.used);
    // A new buffer each time: `write` may still hold the last one (a response not yet flushed).
    this.buffer = Buffer.allocUnsafe(COPY_CHUNK);
    this.used = 0;
    await this.write(chunk);
  }
}

/** The last block read of a data file, so neighbouring small pieces cost one read between them. */
class BlockReader {
  private part: Part | undefined;
  private start = 0;
  private bytes = Buffer.alloc(0);

  /** Copies from the block already read, without waiting, when it holds the bytes and they fit. */
  tryCopy(part: Part, position: number, n: number, out: ChunkedWriter): boolean {
    if (part !== this.part || position < this.start || position + n > this.start + this.bytes.length) return false;
    return out.tryRange(this.bytes, position - this.start, position - this.start + n);
  }

  async copy(part: Part, position: number, n: number, out: ChunkedWriter): Promise<void> {
    // A large piece gains nothing from the block: read straight into what is handed on.
    if (n >= COPY_CHUNK / 2) return out.readInto(part, position, n);
    if (part !== this.part || position < this.start || position + n > this.start + this.bytes.length) {
      const buffer = this.bytes.length === COPY_CHUNK ? this.bytes : Buffer.allocUnsafe(COPY_CHUNK);
      const { bytesRead } = await part.data.read(buffer, 0, COPY_CHUNK, position);
      if (bytesRead < n) throw new Error(`${part.file} ended before the output it should hold`);
      this.part = part;
      this.start = position;
      this.bytes = buffer.subarray(0, bytesRead);
    }
    await out.put(this.bytes.subarray(position - this.start, position - this.start + n));
  }
}

/** A file's whole content through its open handle, or its first `end` bytes (an index: 8 bytes per run of output). */
async function readWhole(handle: FileHandle, end?: number): Promise<Buffer> {
  const size = end ?? (await handle.stat()).size;
  const buffer = Buffer.alloc(size);
  let at = 0;
  while (at < size) {
    const { bytesRead } = await handle.read(buffer, at, size - at, at);
    if (bytesRead === 0) break;
    at += bytesRead;
  }
  return buffer.subarray(0, at);
}
