// Show Output: an attempt's output in a terminal. A vscode.Pseudoterminal prints what the engine
// stored (GET /items/{id}/attempts/{n}/output) and, while the attempt runs, follows it live
// (?follow=true, the response stays open until the attempt ends). Closing the terminal aborts the
// request. Nothing here throws into VS Code: every failure becomes a line in the terminal. Each
// item has one terminal: showing another attempt of it (or the same one again after it stopped
// early) clears that terminal and prints there, so Show Output never piles terminals up.
import * as vscode from 'vscode';
import type { AttemptDetail, ItemDetail } from '../../shared/api';
import { formatDateTime, formatDuration } from '../../shared/format';
import { describeError, type EngineClient } from '../engineClient';
import { Disposable, toDisposable } from '../dispose';
import { RunReader, noteLine, TerminalText } from './terminalText';

/** What the tests (and a reused terminal) can read back: the start and the end of what was written. */
const TRANSCRIPT_KEEP = 64 * 1024;
/** Clears the screen and the scrollback, cursor home: a reused terminal starts afresh. */
const CLEAR = '\x1b[2J\x1b[3J\x1b[H';
/** Ctrl+C in the terminal stops following (the terminal stays open with what it shows). */
const CTRL_C = '\x03';
const HIDE_CURSOR = '\x1b[?25l';
/** SGR 0: every colour and style back to the default. */
const RESET = '\x1b[0m';

export type OutputSessionState = 'opening' | 'following' | 'ended';

export function itemPath(itemId: string): string {
  return `/items/${encodeURIComponent(itemId)}`;
}

export function outputPath(itemId: string, attempt: number): string {
  return `${itemPath(itemId)}/attempts/${attempt}/output`;
}

/** `deploy · attempt 2/3`: the terminal's name. */
export function terminalName(detail: ItemDetail, attempt: number): string {
  const name = (detail.item.name || detail.item.id).replace(/\s+/g, ' ');
  return `${name} · attempt ${attempt}/${detail.item.maxAttempts}`;
}

/** How an attempt ended, in one line: `attempt 2 failed after 1.2 s: exit code 3`. */
export function describeAttemptEnd(a: AttemptDetail): string {
  const took = a.durationMs === null ? '' : ` after ${formatDuration(a.durationMs)}`;
  if (a.outcome === 'running') return `attempt ${a.attempt} is still running`;
  if (a.outcome === 'succeeded') return `attempt ${a.attempt} succeeded${took} (exit code 0)`;
  const why = a.error ?? (a.signal ? `signal ${a.signal}` : a.exitCode !== null ? `exit code ${a.exitCode}` : 'failed');
  return `attempt ${a.attempt} failed${took}: ${why}`;
}

/** One terminal showing one attempt. */
export class OutputSession implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  readonly onDidWrite = this.writeEmitter.event;
  private readonly closeEmitter = new vscode.EventEmitter<void>();
  readonly onDidClose = this.closeEmitter.event;
  private readonly endEmitter = new vscode.EventEmitter<void>();
  /** Fires once per attempt shown, when the output has been printed to its end (or could not be). */
  readonly onDidEnd = this.endEmitter.event;
  private readonly nameEmitter = new vscode.EventEmitter<string>();
  readonly onDidChangeName = this.nameEmitter.event;

  private abort = new AbortController();
  /** Bumped when the terminal is given another attempt: the previous run writes nothing more. */
  private generation = 0;
  private _state: OutputSessionState = 'opening';
  private _closed = false;
  private _complete = false;
  private headText = '';
  private tailText = '';
  terminal: vscode.Terminal | undefined;

  constructor(
    private readonly client: EngineClient,
    readonly itemId: string,
    public attempt: number,
    /** The attempt shown (its startedAt tells runs of a retried item apart). */
    public startedAt: string,
    private header: string,
  ) {}

  /** Shows another attempt of the same item in this terminal: cleared, then printed and followed. */
  retarget(attempt: number, startedAt: string, header: string, name: string): void {
    this.abort.abort();
    this.generation++;
    this.attempt = attempt;
    this.startedAt = startedAt;
    this.header = header;
    this._state = 'opening';
    this._complete = false;
    this.headText = '';
    this.tailText = '';
    this.nameEmitter.fire(name);
    this.writeEmitter.fire(CLEAR);
    void this.run();
  }

  get state(): OutputSessionState {
    return this._state;
  }

  /** Everything up to the attempt's end was printed (not stopped by Ctrl+C or an error). */
  get complete(): boolean {
    return this._complete;
  }

  /** The terminal was closed (by the user or by disposal). */
  get closed(): boolean {
    return this._closed;
  }

  /** The first 64 KiB written to the terminal. */
  get head(): string {
    return this.headText;
  }

  /** The last 64 KiB written to the terminal. */
  get tail(): string {
    return this.tailText;
  }

  open(): void {
    void this.run();
  }

  close(): void {
    this._closed = true;
    this.abort.abort();
    this.finish();
  }

  /** Whether this terminal is showing `attempt` (started at `startedAt`), following it or printed to its end. */
  shows(attempt: number, startedAt: string): boolean {
    return !this._closed && this.attempt === attempt && this.startedAt === startedAt && (this._state !== 'ended' || this._complete);
  }

  handleInput(data: string): void {
    if (data === CTRL_C && this._state !== 'ended') {
      this.abort.abort();
    }
  }

  dispose(): void {
    this.close();
    this.writeEmitter.dispose();
    this.closeEmitter.dispose();
    this.endEmitter.dispose();
    this.nameEmitter.dispose();
  }

  private write(text: string): void {
    if (!text || this._closed) return;
    if (this.headText.length < TRANSCRIPT_KEEP) this.headText += text.slice(0, TRANSCRIPT_KEEP - this.headText.length);
    this.tailText = (this.tailText + text).slice(-TRANSCRIPT_KEEP);
    this.writeEmitter.fire(text);
  }

  private finish(): void {
    if (this._state === 'ended') return;
    this._state = 'ended';
    this.endEmitter.fire();
  }

  private async run(): Promise<void> {
    const generation = this.generation;
    const abort = (this.abort = new AbortController());
    // Writes of a run the terminal has moved on from go nowhere.
    const write = (text: string) => {
      if (generation === this.generation) this.write(text);
    };
    // A read-only terminal: no cursor blinking under the output.
    write(HIDE_CURSOR + noteLine(this.header));
    const text = new TerminalText();
    try {
      const res = await this.request(abort.signal);
      if (!res.ok || !res.body) {
        write(noteLine(await refusal(res)));
        return;
      }
      if (generation === this.generation) this._state = 'following';
      const runs = res.headers.get('content-type')?.startsWith('application/octet-stream') ? new RunReader() : undefined;
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (runs) for (const run of runs.push(value)) write(text.push(run.stream, run.bytes));
        else write(text.push('stdout', value));
      }
      write(text.end());
      if (generation !== this.generation) return;
      this._complete = !runs || runs.complete;
      if (runs && !runs.complete) write(`${RESET}\r\n${noteLine('the output ended in the middle of a run')}`);
      await this.writeEnd(generation);
    } catch (err) {
      const byUser = abort.signal.aborted;
      // Whatever stopped the reading (a body not in runs, a lost connection), the request goes too.
      abort.abort();
      write(text.end());
      if (this._closed || generation !== this.generation) return;
      if (byUser) write(`${RESET}\r\n${noteLine('stopped following (Ctrl+C); the attempt goes on')}`);
      else write(`${RESET}\r\n${noteLine(`the output stopped: ${describeError(err)}`)}`);
    } finally {
      if (generation === this.generation) this.finish();
    }
  }

  /**
   * The output, always followed: for an attempt that has ended the engine sends what it stored
   * and closes. In runs of one stream each (`format=runs`, so stderr can be red); an engine that
   * does not know the parameter (400) is asked for the combined text, shown uncoloured.
   */
  private async request(signal: AbortSignal): Promise<Response> {
    const path = `${outputPath(this.itemId, this.attempt)}?follow=true`;
    const runs = await this.client.open(`${path}&format=runs`, { signal });
    if (runs.status !== 400) return runs;
    await runs.body?.cancel();
    return this.client.open(path, { signal, headers: { Accept: 'text/plain' } });
  }

  /** After the output: how the attempt ended, from GET /items/{id}. */
  private async writeEnd(generation: number): Promise<void> {
    try {
      const detail = await this.client.get<ItemDetail>(itemPath(this.itemId));
      if (generation !== this.generation) return;
      const attempt = detail.attempts.find((a) => a.attempt === this.attempt && a.startedAt === this.startedAt);
      // The program may have left a colour on: the note starts from the default one.
      if (attempt) this.write(RESET + (endsWithNewline(this.tailText) ? '' : '\r\n') + noteLine(describeAttemptEnd(attempt)));
    } catch {
      // The output itself was printed; how the attempt ended is a courtesy.
    }
  }
}

/** True when the output written so far ends a line (colour changes after the line break do not count). */
function endsWithNewline(text: string): boolean {
  const visible = text.replace(/(\x1b\[[0-9;]*m)+$/, '');
  return visible.length === 0 || visible.endsWith('\n');
}

/** A sentence for an output request the engine did not answer with the output. */
async function refusal(res: Response): Promise<string> {
  let detail = res.statusText;
  try {
    const body = JSON.parse(await res.text()) as { error?: { message?: string } };
    if (body.error?.message) detail = body.error.message;
  } catch {
    // not our JSON error body
  }
  switch (res.status) {
    case 404:
      return `no output: ${detail}`;
    case 410:
      return `the output was deleted by retention (engineMonitor.output.maxTotalMB): ${detail}`;
    default:
      return `the engine did not send the output (HTTP ${res.status}: ${detail})`;
  }
}

/** The open output terminals, so that showing the same attempt again reuses its terminal. */
export class OutputTerminals extends Disposable {
  private readonly sessions = new Set<OutputSession>();

  constructor(private readonly client: EngineClient) {
    super();
    this._register(
      vscode.window.onDidCloseTerminal((t) => {
        for (const s of this.sessions) {
          if (s.terminal === t) {
            this.sessions.delete(s);
            s.dispose();
          }
        }
      }),
    );
    this._register(toDisposable(() => this.sessions.forEach((s) => s.dispose())));
  }

  /** Every open output terminal's session (for the tests). */
  get open(): readonly OutputSession[] {
    return [...this.sessions];
  }

  /**
   * Shows `attempt` of the item in the item's terminal: as it is when it already shows that very
   * run (following, or printed to its end), else cleared and given this attempt; a new terminal
   * only for an item that has none open.
   */
  show(detail: ItemDetail, attempt: AttemptDetail): OutputSession {
    // Local time, in the locale's format, as everywhere else in the UI (the views, the dashboard).
    const header = `${detail.item.name} (${detail.item.id}) · attempt ${attempt.attempt} of ${detail.item.maxAttempts} · started ${formatDateTime(attempt.startedAt)}`;
    const existing = [...this.sessions].find((s) => !s.closed && s.itemId === detail.item.id && s.terminal);
    if (existing?.terminal) {
      if (!existing.shows(attempt.attempt, attempt.startedAt)) existing.retarget(attempt.attempt, attempt.startedAt, header, terminalName(detail, attempt.attempt));
      existing.terminal.show();
      return existing;
    }
    const session = new OutputSession(this.client, detail.item.id, attempt.attempt, attempt.startedAt, header);
    this.sessions.add(session);
    session.terminal = vscode.window.createTerminal({
      name: terminalName(detail, attempt.attempt),
      pty: session,
      iconPath: new vscode.ThemeIcon('output'),
      isTransient: true,
    });
    session.terminal.show();
    return session;
  }
}
