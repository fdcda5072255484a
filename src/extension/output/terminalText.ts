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

/** Frame header of `?format=tagged`: 1 byte stream tag, 4 bytes length (u32 big-endian). */
const FRAME_HEADER = 5;
const TAGS: Record<number, OutputStream> = { 0x6f /* o */: 'stdout', 0x65 /* e */: 'stderr', 0x6d /* m */: 'engine' };

/**
 * Splits the body of `GET …/output?format=tagged` into runs of one stream: frames of a 1-byte tag
 * ('o' stdout, 'e' stderr, 'm' a line of the engine's), a u32 big-endian length and that many
 * bytes. Frames are cut anywhere by the HTTP chunks: an incomplete header waits for the next
 * chunk, an incomplete payload is passed on as far as it goes. An unknown tag is an error (the
 * body is not this format) rather than bytes shown in the wrong colour.
 */
export class FrameReader {
  private header = new Uint8Array(FRAME_HEADER);
  private headerFill = 0;
  private stream: OutputStream = 'stdout';
  /** Payload bytes still to come in the current frame. */
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
      const n = Math.min(FRAME_HEADER - this.headerFill, chunk.length - i);
      this.header.set(chunk.subarray(i, i + n), this.headerFill);
      this.headerFill += n;
      i += n;
      if (this.headerFill < FRAME_HEADER) break;
      this.headerFill = 0;
      const stream = TAGS[this.header[0]];
      if (!stream) throw new Error(`the output is not in the tagged format (a frame starts with byte ${this.header[0]})`);
      this.stream = stream;
      this.remaining = new DataView(this.header.buffer).getUint32(1, false);
    }
    return runs;
  }

  /** True when the body ended between frames (not inside one). */
  get complete(): boolean {
    return this.remaining === 0 && this.headerFill === 0;
  }
}

/** Builds a tagged body (for tests, and as the format's one definition). */
export function encodeFrame(stream: OutputStream, bytes: Uint8Array): Uint8Array {
  const tag = stream === 'stdout' ? 0x6f : stream === 'stderr' ? 0x65 : 0x6d;
  const frame = new Uint8Array(FRAME_HEADER + bytes.length);
  frame[0] = tag;
  new DataView(frame.buffer).setUint32(1, bytes.length, false);
  frame.set(bytes, FRAME_HEADER);
  return frame;
}
