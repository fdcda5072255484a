import * as assert from 'node:assert/strict';
import { SseParser } from '../../src/extension/sse';

describe('SseParser', () => {
  it('parses named events with ids across arbitrary chunk boundaries', () => {
    const text = 'id: 7\nevent: log\ndata: {"a":1}\n\n: keep-alive\n\nevent: stats\ndata: {"b":2}\n\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const p = new SseParser();
      const events = [...p.push(text.slice(0, cut)), ...p.push(text.slice(cut))];
      assert.deepEqual(events, [
        { event: 'log', data: '{"a":1}', id: '7' },
        { event: 'stats', data: '{"b":2}' },
      ]);
      assert.equal(p.lastEventId, '7');
    }
  });

  it('handles CRLF and CR line endings, multi-line data and retry', () => {
    const p = new SseParser();
    const events = p.push('retry: 1500\r\ndata: one\r\ndata: two\r\n\r\ndata:x\r\r\n');
    assert.deepEqual(events, [
      { event: 'message', data: 'one\ntwo' },
      { event: 'message', data: 'x' },
    ]);
    assert.equal(p.retryMs, 1500);
  });

  it('waits for the LF of a CRLF split across chunks', () => {
    const p = new SseParser();
    assert.deepEqual(p.push('data: a\r'), []);
    assert.deepEqual(p.push('\n\r\n'), [{ event: 'message', data: 'a' }]);
  });

  it('reads one 32 MiB line sent in 16 KiB chunks in one pass, not a rescan per chunk', function () {
    // Rescanning the growing buffer on every chunk made this quadratic: about a minute of CPU for
    // this line; one pass is well under a second, far inside the timeout even on a loaded machine.
    this.timeout(20_000);
    const p = new SseParser();
    const piece = 'x'.repeat(16 * 1024);
    const pieces = 2048;
    assert.deepEqual(p.push('event: log\ndata: '), []);
    for (let i = 0; i < pieces; i++) assert.deepEqual(p.push(piece), []);
    const [ev] = p.push('\r');
    assert.equal(ev, undefined, 'the line ended; the event ends at the blank line');
    const events = p.push('\n\n');
    assert.equal(events.length, 1);
    assert.equal(events[0].event, 'log');
    assert.equal(events[0].data.length, piece.length * pieces);
  });

  it('drops events without data', () => {
    const p = new SseParser();
    assert.deepEqual(p.push('event: log\n\nid: 3\n\n'), []);
    assert.equal(p.lastEventId, '3');
  });
});
