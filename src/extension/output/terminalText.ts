// An attempt's output bytes → what a terminal (a vscode.Pseudoterminal) is written. Pure: no
// `vscode` import, so the unit tests run it in plain Node.
//
// - Bytes arrive in HTTP chunks that split UTF-8 sequences anywhere: each stream keeps its own
//   streaming decoder, and bytes that are not UTF-8 become U+FFFD (never an exception).
// - A Pseudoterminal is a raw terminal: "\n" only moves down a row, so a lone "\n" becomes "\r\n"
//   (a "\r\n" that the program wrote stays one line break, even split across chunks).
// - stderr is written in ANSI red, which the terminal draws with the theme's red
//   (terminal.ansiRed), and then back to the default colour, so it never bleeds into stdout.

import { escapeControls } from '../../shared/format';

/** stdout, stderr, or a line the engine wrote into the output itself (e.g. how much was dropped). */
export type OutputStream = 'stdout' | 'stderr' | 'engine';

/** SGR 31: the theme's ANSI red; SGR 39: the default foreground. */
export const STDERR_START = '\x1b[31m';
export const STDERR_END = '\x1b[39m';
/** Faint text for the lines the terminal adds itself (header, "attempt ended"). */
export const NOTE_START = '\x1b[2m';
export const NOTE_END = '\x1b[22m';

class StreamDecoder {
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });
  /** The last character written was "\r": a "\n" that follows belongs to it. */
  private afterCr = false;

  decode(bytes: Uint8Array | undefined, final: boolean): string {
    const text = final ? this.decoder.decode(bytes) : this.decoder.decode(bytes, { stream: true });
    if (text.length === 0) return '';
    let out = '';
    let from = 0;
    for (let i = 0; i < text.length; i++) {
      if (text.charCodeAt(i) !== 10 /* \n */) continue;
      const crBefore = i > 0 ? text.charCodeAt(i - 1) === 13 : this.afterCr;
      if (crBefore) continue;
      out += text.slice(from, i) + '\r\n';
      from = i + 1;
    }
    out += text.slice(from);
    this.afterCr = text.charCodeAt(text.length - 1) === 13;
    return out;
  }
}

/** Converts one attempt's output, chunk by chunk, for a Pseudoterminal. */
export class TerminalText {
  private readonly decoders: Record<OutputStream, StreamDecoder> = { stdout: new StreamDecoder(), stderr: new StreamDecoder(), engine: new StreamDecoder() };

  /** The text to write for `bytes` of `stream`; may be '' while a UTF-8 sequence is incomplete. */
  push(stream: OutputStream, bytes: Uint8Array): string {
    return this.wrap(stream, this.decoders[stream].decode(bytes, false));
  }

  /** The end of the output: an incomplete UTF-8 sequence left over is one U+FFFD. */
  end(): string {
    return (['stdout', 'stderr', 'engine'] as const).map((s) => this.wrap(s, this.decoders[s].decode(undefined, true))).join('');
  }

  private wrap(stream: OutputStream, text: string): string {
    if (!text) return '';
    if (stream === 'stderr') return STDERR_START + text + STDERR_END;
    if (stream === 'engine') return NOTE_START + text + NOTE_END;
    return text;
  }
}

/**
 * A line the terminal writes itself (not the program's output), faint, on its own line. Its text
 * comes from the engine (item names, error messages): escaped, so it cannot move the cursor.
 */
export function noteLine(text: string): string {
  return `${NOTE_START}${escapeControls(text)}${NOTE_END}\r\n`;
}

/** The longest run header there is ("stderr 4294967295\n" and some slack). */
const MAX_HEADER = 32;
const STREAMS: ReadonlySet<string> = new Set<OutputStream>(['stdout', 'stderr', 'engine']);

/**
 * Splits the body of `GET …/output?format=runs` into runs of one stream: each run is a header line
 * `<stdout|stderr|engine> <length>\n` followed by exactly <length> bytes. The HTTP chunks cut runs
 * anywhere: an incomplete header waits for the next chunk, an incomplete run is passed on as far
 * as it goes. A header that is not one is an error (the body is not this format), rather than
 * bytes shown in the wrong colour.
 */
export class RunReader {
  private header = '';
  private stream: OutputStream = 'stdout';
  /** Bytes of the current run still to come. */
  private remaining = 0;

  push(chunk: Uint8Array): Array<{ stream: OutputStream; bytes: Uint8Array }> {
    const runs: Array<{ stream: OutputStream; bytes: Uint8Array }> = [];
    let i = 0;
    while (i < chunk.length) {
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, chunk.length - i);
        runs.push({ stream: this.stream, bytes: chunk.subarray(i, i + n) });
        this.remaining -= n;
        i += n;
        continue;
      }
      const nl = chunk.indexOf(0x0a, i);
      const end = nl === -1 ? chunk.length : nl;
      // Header bytes are ASCII; latin1 keeps a stray byte visible in the error instead of hiding it.
      for (let k = i; k < end; k++) this.header += String.fromCharCode(chunk[k]);
      if (this.header.length > MAX_HEADER) throw new Error(`the output is not in runs (no run header in ${JSON.stringify(this.header.slice(0, MAX_HEADER))}…)`);
      if (nl === -1) break;
      i = nl + 1;
      const m = /^([a-z]+) (\d{1,10})$/.exec(this.header);
      if (!m || !STREAMS.has(m[1])) throw new Error(`the output is not in runs (a run header reads ${JSON.stringify(this.header)})`);
      this.header = '';
      this.stream = m[1] as OutputStream;
      this.remaining = Number(m[2]);
    }
    return runs;
  }

  /** True when the body ended between runs (not inside one). */
  get complete(): boolean {
    return this.remaining === 0 && this.header === '';
  }
}

/** One run as `format=runs` sends it (for tests, and as the format's definition on this side). */
export function encodeRun(stream: OutputStream, bytes: Uint8Array): Uint8Array {
  const header = new TextEncoder().encode(`${stream} ${bytes.length}\n`);
  const run = new Uint8Array(header.length + bytes.length);
  run.set(header);
  run.set(bytes, header.length);
  return run;
}
