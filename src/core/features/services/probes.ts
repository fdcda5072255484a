// A service's ready probes. Each probe is one try, asynchronous from start to end (a socket, a
// request, a process a launch helper spawns, output read from disk and matched on the matcher
// thread), so probing never holds the engine's event loop; and each goes only to the address the
// item names: no redirects followed, no other host tried.
import net from 'node:net';
import http from 'node:http';
import https from 'node:https';
import type { ServiceReady } from '../../intake/items';
import { closeLayout, copyPieces, outputSince, pieceLength, readLayout } from '../output/outputReader';

/** The longest one try waits for an answer: a probe runs every 250 ms, and a hung try must not stall it. */
const TRY_TIMEOUT_MS = 2_000;
/** A `command` probe runs at most this long. */
export const COMMAND_PROBE_TIMEOUT_MS = 5_000;
/** Output a `logPattern` probe keeps of an unfinished line (a line longer than this is matched in pieces). */
const MAX_PARTIAL_LINE = 64 * 1024;

/** What a probe needs from the engine beyond the item's own settings. */
export interface ProbeParts {
  /** Runs a shell command line in `cwd` through the launch helpers; true when it exits 0 within `timeoutMs`. */
  runCommand(command: string, cwd: string, timeoutMs: number): Promise<boolean>;
  /** Whether `pattern` matches a line of `text`, on the matcher thread under its time budget (rejects when it is spent). */
  matchLines(text: string, pattern: string): Promise<boolean>;
  /** Where attempts' output is captured. */
  outputDir(): string;
}

export interface Probe {
  /** One try: true when the service answered as ready. Rejects only for a reason that will not change (the pattern's budget). */
  check(): Promise<boolean>;
  /** What it probes, for the log: `tcp 127.0.0.1:5432`. */
  readonly label: string;
}

export function probeFor(ready: ServiceReady, attemptId: number, cwd: string, parts: ProbeParts): Probe {
  if ('port' in ready) {
    const host = ready.host ?? '127.0.0.1';
    return { label: `tcp ${host}:${ready.port}`, check: () => tcpConnects(host, ready.port) };
  }
  if ('http' in ready) return { label: `http ${ready.http}`, check: () => httpAnswers2xx(ready.http) };
  if ('command' in ready) return { label: `command ${ready.command}`, check: () => parts.runCommand(ready.command, cwd, COMMAND_PROBE_TIMEOUT_MS) };
  return logPatternProbe(ready.logPattern, attemptId, parts);
}

function tcpConnects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(TRY_TIMEOUT_MS, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function httpAnswers2xx(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const get = url.toLowerCase().startsWith('https:') ? https.get : http.get;
    let settled = false;
    const done = (ok: boolean) => {
      if (settled) return;
      settled = true;
      resolve(ok);
    };
    try {
      // A fresh connection each try (no agent): a keep-alive socket to a restarted service is stale.
      const req = get(url, { agent: false, timeout: TRY_TIMEOUT_MS, headers: { 'user-agent': 'engine-monitor-ready-probe' } }, (res) => {
        const status = res.statusCode ?? 0;
        res.resume();
        done(status >= 200 && status < 300);
        req.destroy();
      });
      req.once('timeout', () => {
        req.destroy();
        done(false);
      });
      req.once('error', () => done(false));
    } catch {
      done(false);
    }
  });
}

/**
 * Reads the output the attempt printed since the last try and matches its complete lines. The
 * capture writes a running attempt's output to disk within about 300 ms, so a match is seen that
 * much after the line was printed.
 */
function logPatternProbe(pattern: string, attemptId: number, parts: ProbeParts): Probe {
  let from = 0;
  let partial = '';
  return {
    label: `logPattern /${pattern}/`,
    async check() {
      const layout = await readLayout(parts.outputDir(), attemptId);
      if (!layout) return false;
      let text: string;
      try {
        const { pieces, end } = await outputSince(layout, from, undefined);
        const chunks: Buffer[] = [];
        const size = pieces.reduce((n, p) => n + pieceLength(p), 0);
        await copyPieces(pieces, 0, size, async (chunk) => void chunks.push(Buffer.from(chunk)));
        from = end;
        text = partial + Buffer.concat(chunks).toString('utf8');
      } finally {
        await closeLayout(layout);
      }
      const cut = text.lastIndexOf('\n');
      const complete = cut < 0 ? '' : text.slice(0, cut);
      partial = cut < 0 ? text : text.slice(cut + 1);
      if (partial.length > MAX_PARTIAL_LINE) {
        // A line that never ends is matched as far as it has come.
        const whole = complete === '' ? partial : `${complete}\n${partial}`;
        partial = '';
        return parts.matchLines(whole, pattern);
      }
      return complete === '' ? false : parts.matchLines(complete, pattern);
    },
  };
}
