// TerminalText: an attempt's output bytes as the Show Output terminal writes them. The HTTP body
// arrives in chunks cut anywhere, so the text must not depend on where the cuts fall.
import * as assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodeFrame, FrameReader, noteLine, NOTE_END, NOTE_START, STDERR_END, STDERR_START, TerminalText, type OutputStream } from '../../src/extension/output/terminalText';

const enc = (s: string) => new TextEncoder().encode(s);

/** Cuts `bytes` at the given offsets (sorted, deduplicated, inside the array). */
function cut(bytes: Uint8Array, at: number[]): Uint8Array[] {
  const points = [...new Set(at.map((n) => n % (bytes.length + 1)))].sort((a, b) => a - b);
  const parts: Uint8Array[] = [];
  let from = 0;
  for (const p of points) {
    parts.push(bytes.subarray(from, p));
    from = p;
  }
  parts.push(bytes.subarray(from));
  return parts;
}

function convertAll(parts: Uint8Array[]): string {
  const t = new TerminalText();
  return parts.map((p) => t.push('stdout', p)).join('') + t.end();
}

describe('TerminalText (Show Output terminal text)', () => {
  it('turns a lone \\n into \\r\\n and keeps a written \\r\\n as one line break', () => {
    assert.equal(convertAll([enc('one\ntwo\r\nthree\rfour\n')]), 'one\r\ntwo\r\nthree\rfour\r\n');
  });

  it('keeps \\r\\n one line break when the chunk boundary falls between \\r and \\n', () => {
    assert.equal(convertAll([enc('a\r'), enc('\nb\n')]), 'a\r\nb\r\n');
    assert.equal(convertAll([enc('a\n'), enc('\nb')]), 'a\r\n\r\nb');
  });

  it('decodes a UTF-8 character split across chunks as one character', () => {
    const bytes = enc('é€😀');
    // Every byte its own chunk: the decoder must carry the partial sequences over.
    const parts = [...bytes].map((b) => Uint8Array.of(b));
    assert.equal(convertAll(parts), 'é€😀');
  });

  it('shows invalid UTF-8 as replacement characters, and an unfinished sequence at the end as one', () => {
    assert.equal(convertAll([Uint8Array.of(0x61, 0xff, 0x62)]), 'a\uFFFDb');
    assert.equal(convertAll([Uint8Array.of(0x61, 0xe2, 0x82)]), 'a\uFFFD');
  });

  it('writes stderr in ANSI red and back to the default colour, each stream decoded on its own', () => {
    const t = new TerminalText();
    const euro = enc('€');
    let out = t.push('stdout', euro.subarray(0, 1));
    // A stderr chunk between two halves of a stdout character does not break it.
    out += t.push('stderr', enc('oops\n'));
    out += t.push('stdout', euro.subarray(1));
    out += t.end();
    assert.equal(out, `${STDERR_START}oops\r\n${STDERR_END}€`);
  });

  it('gives the same text however the bytes are cut (any bytes, any cuts)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.array(fc.nat(), { maxLength: 12 }), (bytes, at) => {
        const whole = convertAll([bytes]);
        assert.equal(convertAll(cut(bytes, at)), whole);
        // ...and that text is the UTF-8 decoding with lone \n turned into \r\n.
        assert.equal(whole, new TextDecoder().decode(bytes).replace(/(?<!\r)\n/g, '\r\n'));
      }),
      { numRuns: 500 },
    );
  });

  it('writes notes faint, with the engine strings in them escaped', () => {
    assert.equal(noteLine('attempt 1 failed: \x1b[2Jboom\n'), '\x1b[2mattempt 1 failed: \\u001b[2Jboom\\n\x1b[22m\r\n');
  });
});

describe('FrameReader (?format=tagged output)', () => {
  const concat = (parts: Uint8Array[]) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  };

  it('gives the runs of each stream in order, however the body is cut', () => {
    const runs: Array<[OutputStream, string]> = [
      ['stdout', 'line 1\n'],
      ['stderr', 'warning: é\n'],
      ['engine', '[… 10 bytes dropped …]\n'],
      ['stdout', ''],
      ['stdout', 'done\n'],
    ];
    const body = concat(runs.map(([s, t]) => encodeFrame(s, enc(t))));
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 10 }), (at) => {
        const reader = new FrameReader();
        const text = new TerminalText();
        let out = '';
        for (const part of cut(body, at)) for (const run of reader.push(part)) out += text.push(run.stream, run.bytes);
        out += text.end();
        assert.ok(reader.complete);
        // A run cut in two is coloured in two pieces: "back to default, red again" draws nothing.
        out = out.split(STDERR_END + STDERR_START).join('').split(NOTE_END + NOTE_START).join('');
        assert.equal(out, `line 1\r\n${STDERR_START}warning: é\r\n${STDERR_END}${NOTE_START}[… 10 bytes dropped …]\r\n${NOTE_END}done\r\n`);
      }),
    );
  });

  it('says when the body stopped inside a frame, and refuses a body that is not tagged', () => {
    const reader = new FrameReader();
    reader.push(encodeFrame('stdout', enc('abc')).subarray(0, 6));
    assert.equal(reader.complete, false);
    assert.throws(() => new FrameReader().push(enc('plain text')), /not in the tagged format/);
  });
});
