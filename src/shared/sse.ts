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
  /** The unfinished line's text, in the chunks it came in (joined once it ends). */
  private partial: string[] = [];
  /** The last chunk ended with CR: a LF at the start of the next one is the rest of that CRLF. */
  private afterCR = false;
  private eventName = '';
  private data: string[] = [];
  private id: string | undefined;
  private sawField = false;
  /** Last `id:` seen on the stream (what Last-Event-ID should carry on reconnect). */
  lastEventId: string | undefined;
  /** Last `retry:` in milliseconds, if the server sent one. */
  retryMs: number | undefined;

  /**
   * Only the new chunk is scanned, and an unfinished line is kept as its pieces: a server that
   * sends one very long line in many chunks costs time in proportion to its length (rescanning a
   * growing buffer on every chunk took 13 s of CPU for a 16 MiB line).
   */
  push(chunk: string): SseEvent[] {
    const out: SseEvent[] = [];
    let start = 0;
    if (this.afterCR) {
      this.afterCR = false;
      if (chunk.charCodeAt(0) === 10) start = 1;
    }
    // A line ends at CRLF, LF or CR.
    for (let i = start; i < chunk.length; i++) {
      const ch = chunk.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      const tail = chunk.slice(start, i);
      const text = this.partial.length === 0 ? tail : this.partial.join('') + tail;
      this.partial = [];
      const ev = this.line(text);
      if (ev) out.push(ev);
      if (ch === 13) {
        if (i + 1 >= chunk.length) this.afterCR = true;
        else if (chunk.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    if (start < chunk.length) this.partial.push(chunk.slice(start));
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
