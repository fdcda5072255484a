// A small incremental parser for text/event-stream (the WHATWG "server-sent events" format), so
// no client needs an EventSource polyfill: the extension (remote engines, the host) and the
// command-line client. Feed it decoded text chunks as they arrive; it returns the events completed
// by each chunk. No vscode import: it is tested in plain Node too.

export interface SseEvent {
  /** `event:` field; "message" when absent. */
  event: string;
  data: string;
  /** `id:` field of this event, if it had one. */
  id?: string;
}

export class SseParser {
  private buffer = '';
  private eventName = '';
  private data: string[] = [];
  private id: string | undefined;
  private sawField = false;
  /** Last `id:` seen on the stream (what Last-Event-ID should carry on reconnect). */
  lastEventId: string | undefined;
  /** Last `retry:` in milliseconds, if the server sent one. */
  retryMs: number | undefined;

  push(chunk: string): SseEvent[] {
    this.buffer += chunk;
    const out: SseEvent[] = [];
    let start = 0;
    for (;;) {
      // A line ends at CRLF, LF or CR. A trailing CR may be the first half of a CRLF: wait.
      let end = -1;
      let next = -1;
      for (let i = start; i < this.buffer.length; i++) {
        const ch = this.buffer.charCodeAt(i);
        if (ch === 10) {
          end = i;
          next = i + 1;
          break;
        }
        if (ch === 13) {
          if (i + 1 >= this.buffer.length) break;
          end = i;
          next = this.buffer.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
          break;
        }
      }
      if (end < 0) break;
      const ev = this.line(this.buffer.slice(start, end));
      if (ev) out.push(ev);
      start = next;
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined; // comment / keep-alive
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventName = value;
        this.sawField = true;
        break;
      case 'data':
        this.data.push(value);
        this.sawField = true;
        break;
      case 'id':
        if (!value.includes('\0')) {
          this.id = value;
          this.lastEventId = value;
        }
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break; // unknown fields are ignored, as the spec says
    }
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    const had = this.sawField && this.data.length > 0;
    const ev: SseEvent = { event: this.eventName || 'message', data: this.data.join('\n') };
    if (this.id !== undefined) ev.id = this.id;
    this.eventName = '';
    this.data = [];
    this.id = undefined;
    this.sawField = false;
    return had ? ev : undefined;
  }
}
