// GET /items/{id}/attempts/{n}/output: an attempt's captured output as
// text/plain, the bytes exactly as the process wrote them (invalid UTF-8 included). Reads go
// through src/core/features/output/outputReader.ts, asynchronously and a 64 KiB buffer at a time with the
// response's backpressure, so a 10 MiB output (or a slow client) never holds the event loop.
//
// - `stream=stdout|stderr`: one stream (plus the engine's own marker lines);
// - `Range: bytes=a-b | a- | -n` (one range) → 206 with Content-Range; unsatisfiable → 416;
//   a Range the server cannot parse, or several ranges, is ignored (200 with everything, as
//   RFC 9110 allows);
// - `format=runs`: the same bytes framed by stream, for a terminal that colours stderr: each run
//   of one stream is a line `<stdout|stderr|engine> <length>\n` followed by exactly <length>
//   bytes (Content-Type application/octet-stream; Range is ignored, follow works);
// - `follow=true`: what exists now, then new output as it arrives (polled every FOLLOW_POLL_MS),
//   until the attempt ends; Range is ignored then. A client that goes away leaves nothing behind:
//   its poll timer and its end listener go with its response's 'close'.
import type { Router } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AttemptOutput, MonitoredEngine } from '../core/kernel/monitoredEngine';
import { closeLayout, copyPieces, outputSince, outputView, pieceLength, readLayout, type OutputLayout, type OutputPiece, type StreamFilter } from '../core/features/output/outputReader';
import type { OutputStreamTag } from '../core/features/output/outputFiles';
import { oneOf } from '../shared/queryParams';
import { parseParams, queryStringOf } from './params';
import { HttpError, badRequest } from './respond';

export const OUTPUT_PARAMS = ['stream', 'follow', 'format'] as const;
const OUTPUT_PATH = /^\/items\/([^/?]+)\/attempts\/([^/?]+)\/output$/;
const TEXT_HEADERS = {
  'Content-Type': 'text/plain; charset=utf-8',
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
} as const;
const RUNS_HEADERS = { ...TEXT_HEADERS, 'Content-Type': 'application/octet-stream' } as const;
const RUN_NAMES: Record<OutputStreamTag, string> = { o: 'stdout', e: 'stderr', m: 'engine' };

/** A piece as format=runs frames it: its header line, then its bytes. */
const SHORT_RUN = 256;
/** The headers of short runs, made once: finely interleaved output is hundreds of thousands of them. */
const SHORT_HEADERS: Record<OutputStreamTag, Buffer[]> = {
  o: Array.from({ length: SHORT_RUN }, (_, n) => Buffer.from(`stdout ${n}\n`)),
  e: Array.from({ length: SHORT_RUN }, (_, n) => Buffer.from(`stderr ${n}\n`)),
  m: Array.from({ length: SHORT_RUN }, (_, n) => Buffer.from(`engine ${n}\n`)),
};
const runHeader = (p: OutputPiece): Buffer => {
  const n = pieceLength(p);
  return n < SHORT_RUN ? SHORT_HEADERS[p.stream][n] : Buffer.from(`${RUN_NAMES[p.stream]} ${n}\n`);
};

/** Sends pieces, framed as runs or as they are. */
async function sendPieces(res: ServerResponse, pieces: OutputPiece[], runs: boolean, skip = 0, length = Infinity): Promise<void> {
  return copyPieces(pieces, skip, length, (chunk) => write(res, chunk), runs ? runHeader : undefined);
}
/** How often a follower looks for new output. */
export const FOLLOW_POLL_MS = 200;

/**
 * Output reads and follows served at once. Each holds open files while its client takes the bytes
 * (up to a dozen for an output past the cap, until a slow client has them), so without a bound
 * enough slow readers run the engine out of file descriptors and every other request fails; with
 * it the next reader gets a 503 it can retry, and the engine keeps its descriptors.
 */
export const MAX_OUTPUT_READERS = 32;

let followers = 0;
let readers = 0;
/** Follow responses open now (for tests: a client that left must not leave one behind). */
export function openFollowers(): number {
  return followers;
}

export function addOutputRoute(app: Router, engine: MonitoredEngine): void {
  // Matched without capture groups: Express percent-decodes captured groups itself and throws on
  // broken encoding before this handler can answer 400; serveOutput decodes the path instead.
  app.get(/^\/items\/[^/?]+\/attempts\/[^/?]+\/output$/, (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => {
    serveOutput(engine, req, res).catch(next);
  });
}

async function serveOutput(engine: MonitoredEngine, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (readers >= MAX_OUTPUT_READERS) {
    throw new HttpError(
      503,
      'too_many_readers',
      `${MAX_OUTPUT_READERS} output reads and follows are open, as many as this engine serves at once; try again in a moment, or close a reader you no longer need.`,
      { 'Retry-After': '1' },
    );
  }
  readers++;
  try {
    await serveOutputNow(engine, req, res);
  } finally {
    readers--;
  }
}

async function serveOutputNow(engine: MonitoredEngine, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const query = parseOutputQuery(queryStringOf(req.url));
  const m = OUTPUT_PATH.exec(pathOf(req.url))!;
  const itemId = decodeSegment(m[1]);
  const attempt = /^[1-9][0-9]{0,8}$/.test(m[2]) ? Number(m[2]) : undefined;
  if (itemId === undefined) {
    throw badRequest(`The item id in the path, ${JSON.stringify(m[1])}, is not valid percent-encoding; encode the id with encodeURIComponent.`);
  }
  const output = attempt === undefined ? ({ found: 'no_attempt' } as const) : engine.attemptOutput(itemId, attempt);
  if (output.found === 'no_item') throw new HttpError(404, 'not_found', `No item with id ${JSON.stringify(itemId)}.`);
  if (output.found === 'no_attempt') {
    throw new HttpError(404, 'not_found', `Item ${JSON.stringify(itemId)} has no attempt ${JSON.stringify(m[2])}; attempts are numbered from 1.`);
  }
  if (output.found === 'pruned') {
    throw new HttpError(410, 'output_pruned', `The output of attempt ${attempt} of item ${JSON.stringify(itemId)} was deleted by retention (engineMonitor.output.maxTotalMB or log retention); its log entries may remain.`);
  }
  const layout = await readLayout(output.dir, output.attemptId);
  try {
    if (!layout && !output.running && !output.started) {
      throw new HttpError(404, 'not_found', `Attempt ${attempt} of item ${JSON.stringify(itemId)} has no output: it never started a process (or ran before this engine captured output).`);
    }
    const filter: StreamFilter = query.runs ? (query.stream ?? 'all') : query.stream;
    if (query.follow && output.running) return await follow(req, res, output, layout, filter, query.runs);
    const view = layout ? await outputView(layout, filter) : { pieces: [], end: 0 };
    const length = view.pieces.reduce((n, p) => n + pieceLength(p) + (query.runs ? runHeader(p).length : 0), 0);
    if (query.runs) {
      res.writeHead(200, { ...RUNS_HEADERS, 'Content-Length': length });
      if (req.method === 'HEAD') return void res.end();
      await sendPieces(res, view.pieces, true);
      return void res.end();
    }
    const range = query.follow ? undefined : parseRange(req.headers.range, length);
    if (range === 'unsatisfiable') {
      throw new HttpError(416, 'range_not_satisfiable', `Range ${req.headers.range} is outside the output, which has ${length} bytes now.`, {
        'Content-Range': `bytes */${length}`,
      });
    }
    const [start, end] = range ?? [0, length];
    const headers: Record<string, string | number> = { ...TEXT_HEADERS, 'Accept-Ranges': 'bytes', 'Content-Length': end - start };
    if (range) headers['Content-Range'] = `bytes ${start}-${end - 1}/${length}`;
    res.writeHead(range ? 206 : 200, headers);
    if (req.method === 'HEAD') return void res.end();
    await sendPieces(res, view.pieces, false, start, end - start);
    res.end();
  } catch (err) {
    if (res.headersSent) res.destroy();
    if (res.headersSent && (err as Error).message === CLIENT_GONE) return;
    throw err;
  } finally {
    await closeLayout(layout);
  }
}

/** Sends what exists, then what arrives, until the attempt ends or the client leaves. */
async function follow(
  req: IncomingMessage,
  res: ServerResponse,
  output: Extract<AttemptOutput, { found: 'output' }>,
  first: OutputLayout | undefined,
  stream: StreamFilter,
  runs: boolean,
): Promise<void> {
  res.writeHead(200, { ...(runs ? RUNS_HEADERS : TEXT_HEADERS) });
  if (req.method === 'HEAD') return void res.end();
  followers++;
  let ended = false;
  let gone = false;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const stopListening = output.onEnd(() => {
    ended = true;
    wake?.();
  });
  const onClose = () => {
    gone = true;
    wake?.();
  };
  res.once('close', onClose);
  try {
    let position = 0;
    if (first) {
      const view = await outputView(first, stream);
      await sendPieces(res, view.pieces, runs);
      position = view.end;
    }
    for (;;) {
      // Ended is read before the last look: output written before the end is in that look.
      const last = ended;
      if (gone) return;
      // Only the parts from where the client is on: a follower holds the newest files, not all.
      const layout = await readLayout(output.dir, output.attemptId, position);
      try {
        if (layout) {
          const next = await outputSince(layout, position, stream);
          await sendPieces(res, next.pieces, runs);
          position = next.end;
        }
      } finally {
        await closeLayout(layout);
      }
      if (last || gone) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, FOLLOW_POLL_MS);
      });
      clearTimeout(timer);
      wake = undefined;
    }
    if (!gone) res.end();
  } catch (err) {
    if ((err as Error).message !== CLIENT_GONE) console.error('engine-monitor: following attempt output failed', err);
    res.destroy();
  } finally {
    followers--;
    clearTimeout(timer);
    stopListening();
    res.off('close', onClose);
  }
}

const CLIENT_GONE = 'the client closed the connection';

/** Writes a chunk, waiting for the socket when the response's buffer is full. */
function write(res: ServerResponse, chunk: Buffer): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.reject(new Error(CLIENT_GONE));
  if (res.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onDrain = () => {
      res.off('close', onClose);
      resolve();
    };
    const onClose = () => {
      res.off('drain', onDrain);
      reject(new Error(CLIENT_GONE));
    };
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}

export function parseOutputQuery(queryString: string): { stream: 'stdout' | 'stderr' | undefined; follow: boolean; runs: boolean } {
  const params = parseParams(queryString, OUTPUT_PARAMS);
  try {
    const stream = oneOf(params, 'stream', ['stdout', 'stderr'] as const);
    const follow = oneOf(params, 'follow', ['true', 'false'] as const) === 'true';
    const runs = oneOf(params, 'format', ['text', 'runs'] as const) === 'runs';
    return { stream, follow, runs };
  } catch (err) {
    throw badRequest((err as Error).message);
  }
}

/**
 * One byte range of a representation of `length` bytes, as [start, end): undefined when there is
 * no Range header or one this server ignores (not bytes, malformed, several ranges).
 */
export function parseRange(header: string | undefined, length: number): [number, number] | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || length === 0) return 'unsatisfiable';
    return [Math.max(0, length - suffix), length];
  }
  const start = Number(m[1]);
  const last = m[2] === '' ? length - 1 : Number(m[2]);
  if (start >= length) return 'unsatisfiable';
  if (last < start) return undefined;
  return [start, Math.min(last, length - 1) + 1];
}

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function pathOf(url: string | undefined): string {
  const target = url ?? '/';
  const q = target.indexOf('?');
  return q === -1 ? target : target.slice(0, q);
}
