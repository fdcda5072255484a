// Where an attempt's captured output lives and how its files are laid out.
// Written by the launch helper (outputCapture.ts), read by the server (outputReader.ts); this file
// holds what both must agree on, and imports only Node, so the helper's bundle stays small.
//
// The attempt's output, everything its process printed on stdout and stderr in arrival order, is
// a logical byte stream L of N bytes. With the per-attempt cap C, H = floor(C/4) (the head) and
// T = C − H (the tail), what is kept is all of L when N ≤ C, else L[0, H) + one marker line +
// L[N − T, N). So that memory stays bounded and a follower can read output as it arrives, the
// writer never holds more than a small backlog: L is written to disk as it comes, in parts:
//
//   <dir>/<attemptId>.out        part 0: L[0, H) (all of L while N ≤ H, the common case)
//   <dir>/<attemptId>.idx        its index (below), starting with an 8-byte header: "EMO1", C (u32 LE)
//   <dir>/<attemptId>.t<k>.out   tail segment k: L[H + k·S, H + (k+1)·S), S = ceil(T / 4)
//   <dir>/<attemptId>.t<k>.idx   its index (no header)
//   <dir>/<attemptId>.tails      "<first k> <last k>\n": the tail segments that exist (replaced by rename)
//
// An attempt whose whole output is small and complete before anything was written (most attempts:
// a few lines, milliseconds) is written instead as one file, because creating a file (an inode) is
// the costly part of capture (0.4–0.9 ms of kernel time per file on the benchmark's machine,
// docs/PERFORMANCE.md):
//
//   <dir>/<attemptId>.o          "EMS1", C (u32 LE), the index's length in bytes (u32 LE), the
//                                data's length (u32 LE), then the index records, then the data
//
// It is written once, when the attempt ends, and never appended to; a reader that finds it shorter
// than its header says is seeing it being written and reads it as no output yet.
//
// Even one file per attempt costs that inode, so the writer first tries a pack: the short outputs
// of many attempts appended to one file, each attempt's `<id>.o` a hard link to it (a name costs
// no inode). The writer's own name for the pack, `pack-<pid>-<n>.p`, goes once the pack is full
// (PACK_BYTES) or the writer exits, so the pack's bytes go with the last attempt's link: retention
// deletes `<id>.o` as it would the single file. A pack is a sequence of records:
//
//   "EMP1", C (u32 LE), the attempt's id (f64 LE), the index's length in bytes (u32 LE), the
//   data's length (u32 LE), then the index records, then the data
//
// A record is complete before its attempt's link exists. `<id>.o` is therefore either the single
// file or a pack; the first four bytes tell which. Where hard links are refused, the single file.
//
// Only the last TAIL_SEGMENTS segments are kept (enough for L[N − T, N) whatever N is); older ones
// are deleted as new ones start, and at the end of the attempt those wholly before N − T go too.
// An index is a sequence of 8-byte records, one per run of bytes of one stream, in file order:
// byte 0 the stream ('o' stdout, 'e' stderr, 'm' a line the engine wrote itself, e.g. that the
// output was cut because the disk is full), bytes 1–3 zero, bytes 4–7 the run's length (u32 LE).
// The data is written before its index record, so a reader may see data an index does not cover
// yet: the combined output goes by the data files' sizes, one stream's view by the index.
//
// The marker line for dropped output is not stored: readers insert it between the head and the
// kept tail (its count changes while the attempt runs), so "the output as far as it exists" is
// the same formula during the run and after it.
import path from 'node:path';

/** Where the launch helper writes an attempt's output; part of the launch message. */
export interface OutputTarget {
  dir: string;
  attemptId: number;
  /** The per-attempt cap C (engineMonitor.output.maxBytesPerAttempt). */
  maxBytes: number;
}

export const INDEX_MAGIC = 'EMO1';
export const INDEX_HEADER_BYTES = 8;
export const SINGLE_MAGIC = 'EMS1';
export const SINGLE_HEADER_BYTES = 16;
export const PACK_MAGIC = 'EMP1';
export const PACK_HEADER_BYTES = 24;
/** A pack takes no more records once it has this many bytes; a record is at most LAZY_BYTES (64 KiB). */
export const PACK_BYTES = 256 * 1024;
export const RECORD_BYTES = 8;
export const TAIL_SEGMENTS = 5;

export type OutputStreamTag = 'o' | 'e' | 'm';

export const DEFAULT_OUTPUT_MAX_BYTES = 10 * 1024 * 1024;
export const MIN_OUTPUT_MAX_BYTES = 64 * 1024;

export interface OutputGeometry {
  cap: number;
  head: number;
  tail: number;
  segment: number;
}

export function outputGeometry(cap: number): OutputGeometry {
  const head = Math.floor(cap / 4);
  const tail = cap - head;
  return { cap, head, tail, segment: Math.ceil(tail / 4) };
}

export const headFile = (dir: string, id: number): string => path.join(dir, `${id}.out`);
export const headIndexFile = (dir: string, id: number): string => path.join(dir, `${id}.idx`);
export const segmentFile = (dir: string, id: number, k: number): string => path.join(dir, `${id}.t${k}.out`);
export const segmentIndexFile = (dir: string, id: number, k: number): string => path.join(dir, `${id}.t${k}.idx`);
export const singleFile = (dir: string, id: number): string => path.join(dir, `${id}.o`);
export const packFile = (dir: string, pid: number, n: number): string => path.join(dir, `pack-${pid}-${n}.p`);
/** Pack names a writer left behind (it was killed): removed at the engine's start, before any launch. */
export const isPackName = (name: string): boolean => /^pack-\d+-\d+\.p$/.test(name);
export const tailsFile = (dir: string, id: number): string => path.join(dir, `${id}.tails`);

/** The marker line the readers insert where output was dropped. */
export function droppedMarker(bytes: number): Buffer {
  return Buffer.from(`\n[engine-monitor: ${bytes} bytes of output dropped here]\n`);
}

/** The line the writer appends when it cannot write any more (disk full…). */
export function cutMarker(reason: string): Buffer {
  return Buffer.from(`\n[engine-monitor: output cut here, it could not be written: ${reason}]\n`);
}

/** Size of the output as served once complete: all of it, or the cap plus the marker line. */
export function keptBytes(total: number, cap: number): number {
  return total <= cap ? total : cap + droppedMarker(total - cap).length;
}

export function encodeRecord(stream: OutputStreamTag, length: number): Buffer {
  const b = Buffer.alloc(RECORD_BYTES);
  b[0] = stream.charCodeAt(0);
  b.writeUInt32LE(length, 4);
  return b;
}

export function encodeIndexHeader(cap: number): Buffer {
  const b = Buffer.alloc(INDEX_HEADER_BYTES);
  b.write(INDEX_MAGIC, 0, 'latin1');
  b.writeUInt32LE(cap, 4);
  return b;
}

/** The single file's header (layout above). */
export function encodeSingleHeader(cap: number, indexBytes: number, dataBytes: number): Buffer {
  const b = Buffer.alloc(SINGLE_HEADER_BYTES);
  b.write(SINGLE_MAGIC, 0, 'latin1');
  b.writeUInt32LE(cap, 4);
  b.writeUInt32LE(indexBytes, 8);
  b.writeUInt32LE(dataBytes, 12);
  return b;
}

/** A pack record's header (layout above). */
export function encodePackHeader(cap: number, attemptId: number, indexBytes: number, dataBytes: number): Buffer {
  const b = Buffer.alloc(PACK_HEADER_BYTES);
  b.write(PACK_MAGIC, 0, 'latin1');
  b.writeUInt32LE(cap, 4);
  b.writeDoubleLE(attemptId, 8);
  b.writeUInt32LE(indexBytes, 16);
  b.writeUInt32LE(dataBytes, 20);
  return b;
}

export function parseTails(text: string): { first: number; last: number } | undefined {
  const m = /^(\d+) (\d+)\n$/.exec(text);
  return m ? { first: Number(m[1]), last: Number(m[2]) } : undefined;
}
