// Applies an item's problem matcher to a finished attempt's captured output.
// Bounded so that a chatty attempt costs little: at most SCAN_MAX_BYTES of the output are read (all
// of it when smaller; otherwise its first quarter and last three quarters of that, the same split
// the capture keeps) and at most MAX_PROBLEMS_PER_ATTEMPT problems are kept. Output that retention
// cut or pruned is matched as far as it is there.
import type { AttemptProblem } from '../../../shared/api';
import { hasOwnRegexp, type MatcherThread } from './matcherThread';
import { closeLayout, copyPieces, outputView, pieceLength, readLayout } from '../output/outputReader';
import { matchProblems, type ProblemMatcherInput } from './problemMatchers';

/** Bytes of an attempt's output a matcher reads at most. */
export const SCAN_MAX_BYTES = 1024 * 1024;

/**
 * The problems in attempt `attemptId`'s output under `dir`; empty when it printed nothing. A matcher
 * with a queue file's own regexp runs on `thread` (it may backtrack without end); built-ins here.
 */
export async function attemptProblems(dir: string, attemptId: number, matcher: ProblemMatcherInput, cwd: string, thread: MatcherThread): Promise<AttemptProblem[]> {
  const text = await readForScan(dir, attemptId, SCAN_MAX_BYTES);
  if (text === '') return [];
  return hasOwnRegexp(matcher) ? thread.match(text, matcher, cwd) : matchProblems(text, matcher, cwd);
}

/** At most `max` bytes of the combined output as text: the whole of it, or its head and tail. */
export async function readForScan(dir: string, attemptId: number, max: number): Promise<string> {
  const layout = await readLayout(dir, attemptId);
  if (!layout) return '';
  try {
    const { pieces } = await outputView(layout, undefined);
    const size = pieces.reduce((n, p) => n + pieceLength(p), 0);
    const chunks: Buffer[] = [];
    const collect = async (chunk: Buffer): Promise<void> => void chunks.push(Buffer.from(chunk));
    if (size <= max) {
      await copyPieces(pieces, 0, size, collect);
      return Buffer.concat(chunks).toString('utf8');
    }
    const headBytes = Math.floor(max / 4);
    await copyPieces(pieces, 0, headBytes, collect);
    const head = Buffer.concat(chunks.splice(0));
    await copyPieces(pieces, size - (max - headBytes), max - headBytes, collect);
    const tail = Buffer.concat(chunks);
    // Only whole lines: the head up to its last line end, the tail from its first.
    return `${head.subarray(0, head.lastIndexOf(0x0a) + 1).toString('utf8')}${tail.subarray(tail.indexOf(0x0a) + 1).toString('utf8')}`;
  } finally {
    await closeLayout(layout);
  }
}
