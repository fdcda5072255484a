// Show Output: an attempt's output in a terminal. A vscode.Pseudoterminal prints what the engine
// stored (GET /items/{id}/attempts/{n}/output) and, while the attempt runs, follows it live
// (?follow=true, the response stays open until the attempt ends). Closing the terminal aborts the
// request. Nothing here throws into VS Code: every failure becomes a line in the terminal.
import * as vscode from 'vscode';
import type { AttemptDetail, ItemDetail } from '../../shared/api';
import { formatDuration } from '../../shared/format';
import { describeError, type EngineClient } from '../engineClient';
import { Disposable, toDisposable } from '../dispose';
import { FrameReader, noteLine, TerminalText } from './terminalText';

/** What the tests (and a reused terminal) can read back: the start and the end of what was written. */
const TRANSCRIPT_KEEP = 64 * 1024;
/** Ctrl+C in the terminal stops following (the terminal stays open with what it shows). */
const CTRL_C = '\x03';

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
  /** Fires once, when the output has been printed to its end (or could not be). */
  readonly onDidEnd = this.endEmitter.event;

  private readonly abort = new AbortController();
  private _state: OutputSessionState = 'opening';
  private _closed = false;
  private headText = '';
  private tailText = '';
  private written = 0;
  terminal: vscode.Terminal | undefined;

  constructor(
    private readonly client: EngineClient,
    readonly itemId: string,
    readonly attempt: number,
    /** The attempt as it was when the terminal opened (its startedAt tells runs of a retried item apart). */
    readonly startedAt: string,
    private readonly header: string,
  ) {}

  get state(): OutputSessionState {
    return this._state;
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
  }

  private write(text: string): void {
    if (!text || this._closed) return;
    this.written += text.length;
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
    this.write(noteLine(this.header));
    const text = new TerminalText();
    try {
      const res = await this.request();
      if (!res.ok || !res.body) {
        this.write(noteLine(await refusal(res)));
        return;
      }
      this._state = 'following';
      const frames = res.headers.get('content-type')?.startsWith('application/octet-stream') ? new FrameReader() : undefined;
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (frames) for (const run of frames.push(value)) this.write(text.push(run.stream, run.bytes));
        else this.write(text.push('stdout', value));
      }
      this.write(text.end());
      if (frames && !frames.complete) this.write('\r\n' + noteLine('the output ended in the middle of a frame'));
      await this.writeEnd();
    } catch (err) {
      this.write(text.end());
      if (this._closed) return;
      if (this.abort.signal.aborted) this.write('\r\n' + noteLine('stopped following (Ctrl+C); the attempt goes on'));
      else this.write('\r\n' + noteLine(`the output stopped: ${describeError(err)}`));
    } finally {
      this.finish();
    }
  }

  /**
   * The output, always followed: for an attempt that has ended the engine sends what it stored
   * and closes. Tagged with its streams (stderr in red) when the engine offers `format=tagged`;
   * an engine that does not (400 for the parameter) sends the combined text, uncoloured.
   */
  private async request(): Promise<Response> {
    const path = `${outputPath(this.itemId, this.attempt)}?follow=true`;
    const tagged = await this.client.open(`${path}&format=tagged`, { signal: this.abort.signal });
    if (tagged.status !== 400) return tagged;
    await tagged.body?.cancel();
    return this.client.open(path, { signal: this.abort.signal, headers: { Accept: 'text/plain' } });
  }

  /** After the output: how the attempt ended, from GET /items/{id}. */
  private async writeEnd(): Promise<void> {
    try {
      const detail = await this.client.get<ItemDetail>(itemPath(this.itemId));
      const attempt = detail.attempts.find((a) => a.attempt === this.attempt && a.startedAt === this.startedAt);
      if (attempt) this.write(endsWithNewline(this.tailText) ? noteLine(describeAttemptEnd(attempt)) : '\r\n' + noteLine(describeAttemptEnd(attempt)));
    } catch {
      // The output itself was printed; how the attempt ended is a courtesy.
    }
  }
}

function endsWithNewline(text: string): boolean {
  return text.length === 0 || text.endsWith('\n');
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
   * Shows `attempt` of the item in a terminal: the one already showing that very run, or a new
   * one that prints the output and follows it while the attempt runs.
   */
  show(detail: ItemDetail, attempt: AttemptDetail): OutputSession {
    const existing = [...this.sessions].find(
      (s) => !s.closed && s.itemId === detail.item.id && s.attempt === attempt.attempt && s.startedAt === attempt.startedAt,
    );
    if (existing?.terminal) {
      existing.terminal.show();
      return existing;
    }
    const header = `${detail.item.name} (${detail.item.id}) · attempt ${attempt.attempt} of ${detail.item.maxAttempts} · started ${attempt.startedAt}`;
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
