// EngineClient: the HTTP API plus one /events stream, behind the EngineConnection interface that
// every view and the dashboard read through. It knows nothing about how the engine was started;
// EngineController tells it where the engine is (setEndpoint).
import * as vscode from 'vscode';
import type { ErrorBody, HealthResponse, LogEntry, StatsOverview } from '../shared/api';
import { Disposable, toDisposable } from './dispose';
import type { LiveEvent } from '../shared/webviewProtocol';
import type { EngineConnection, TextResponse } from './engineConnection';
import { nextLink } from './linkHeader';
import { getText } from './textRequest';
import { SseParser } from './sse';
import { headerOf, openRequest, readBody, requestText, type TextAnswer } from './httpRequest';

const REQUEST_TIMEOUT_MS = 10_000;
/**
 * How long after the stream connected an early read (see setFirstReads) may still answer a view's
 * first read: past it, or after any change on the stream, the view reads afresh.
 */
const EARLY_READ_MS = 3_000;
const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 10_000;

/** Why the /events stream is not connected (shown by the status bar and the views' welcome). */
export interface ConnectionProblem {
  kind: 'unauthorized' | 'forbidden' | 'unreachable' | 'http';
  /** A sentence for the user, e.g. "HTTP 401: missing or wrong bearer token". */
  message: string;
}

export class EngineClient extends Disposable implements EngineConnection {
  private _baseUrl: string | undefined;
  private _token: string | undefined;
  private _connected = false;
  private _problem: ConnectionProblem | undefined;
  private lastEventId: string | undefined;
  /** Bumped whenever the endpoint changes or the client is disposed: stale loops stop. */
  private generation = 0;
  private abort: AbortController | undefined;
  private wakeReconnect: (() => void) | undefined;
  /** The paths the views read first once connected (setFirstReads). */
  private firstReads: () => readonly string[] = () => [];
  /** Reads of firstReads sent with the stream's request, each taken by the first get() of its path. */
  private early = new Map<string, EarlyRead>();
  private earlyTimer: NodeJS.Timeout | undefined;

  private readonly _onDidReceiveEvent = this._register(new vscode.EventEmitter<LiveEvent>());
  readonly onDidReceiveEvent = this._onDidReceiveEvent.event;
  private readonly _onDidChangeConnection = this._register(new vscode.EventEmitter<boolean>());
  readonly onDidChangeConnection = this._onDidChangeConnection.event;
  private readonly _onDidChangeEndpoint = this._register(new vscode.EventEmitter<string | undefined>());
  /** Fires when the base URL changes (a new engine, or none). */
  readonly onDidChangeEndpoint = this._onDidChangeEndpoint.event;
  private readonly _onDidServeEarlyRead = this._register(new vscode.EventEmitter<void>());
  /**
   * A read was answered from a request sent before the stream connected: a change between that
   * answer and the stream's start would be missed, so the views read again (within their interval).
   */
  readonly onDidServeEarlyRead = this._onDidServeEarlyRead.event;
  private readonly _onDidChangeProblem = this._register(new vscode.EventEmitter<ConnectionProblem | undefined>());
  /** Fires when the reason the stream is down changes (undefined once it connects). */
  readonly onDidChangeProblem = this._onDidChangeProblem.event;

  constructor() {
    super();
    this._register(toDisposable(() => this.stopEvents()));
  }

  /**
   * The JSON paths the views read as soon as the stream connects (items, status, schedules). They
   * are requested together with the stream instead of one round trip after it, and the first read
   * of each path after the stream connected takes its answer. Not /stats and /health (the stream
   * starts with them) and not /logs (entries written before the stream started would be missing
   * from the view, with nothing to say so).
   */
  setFirstReads(paths: () => readonly string[]): void {
    this.firstReads = paths;
  }

  get baseUrl(): string | undefined {
    return this._baseUrl;
  }

  get connected(): boolean {
    return this._connected;
  }

  /** The bearer token requests carry (local setting or the remote engine's secret). */
  get token(): string | undefined {
    return this._token;
  }

  /** Why the last attempt to open /events failed, while it is not connected. */
  get problem(): ConnectionProblem | undefined {
    return this._problem;
  }

  /** Point the client at an engine (or at none). Restarts the /events stream. */
  setEndpoint(baseUrl: string | undefined, token: string | undefined): void {
    const url = baseUrl?.replace(/\/+$/, '');
    const tok = token || undefined;
    if (url === this._baseUrl && tok === this._token) {
      // Same engine: if the stream is down, retry now instead of waiting out the backoff.
      this.wakeReconnect?.();
      return;
    }
    if (url !== this._baseUrl) this.lastEventId = undefined; // log ids belong to one database
    this._baseUrl = url;
    this._token = tok;
    this.stopEvents();
    this._onDidChangeEndpoint.fire(url);
    if (url && !this.isDisposed) {
      void this.runEvents(++this.generation);
      this.startEarlyReads();
    }
  }

  /** Retry the /events stream at once (e.g. after the host was restarted on the same URL). */
  reconnectNow(): void {
    this.wakeReconnect?.();
  }

  async get<T>(pathAndQuery: string): Promise<T> {
    return (await this.request<T>(pathAndQuery)).body;
  }

  async getWithLink<T>(pathAndQuery: string): Promise<{ body: T; next: string | undefined }> {
    const { body, link } = await this.request<T>(pathAndQuery);
    return { body, next: nextLink(link ?? null) };
  }

  getText(pathAndQuery: string, range?: string): Promise<TextResponse> {
    const base = this._baseUrl;
    if (!base) return Promise.reject(new Error('The engine is not running.'));
    return getText(base, pathAndQuery, { range, token: this._token, timeoutMs: REQUEST_TIMEOUT_MS });
  }

  /**
   * A request whose body the caller reads itself (an attempt's output, streamed), with the token.
   * Rejects only when the engine cannot be reached; any HTTP status is the caller's to read.
   */
  async open(pathAndQuery: string, init: { signal?: AbortSignal; headers?: Record<string, string> } = {}): Promise<Response> {
    const base = this._baseUrl;
    if (!base) throw new Error('The engine is not running.');
    try {
      return await fetch(base + pathAndQuery, { headers: this.headers(init.headers ?? {}), signal: init.signal });
    } catch (err) {
      if (init.signal?.aborted) throw err;
      throw new Error(`The engine at ${base} is not reachable (${describeError(err)}).`);
    }
  }

  /**
   * POST a control request (remote mode: the engine's HTTP control endpoints, which need a token).
   * Not retried: a control request is not idempotent. Rejects with an HttpError for an error answer.
   */
  async post<T>(pathAndQuery: string, method: 'POST' | 'DELETE' = 'POST'): Promise<T> {
    const base = this._baseUrl;
    if (!base) throw new Error('The engine is not running.');
    let res: TextAnswer;
    try {
      res = await requestText(base + pathAndQuery, REQUEST_TIMEOUT_MS, { method, headers: this.headers({ Accept: 'application/json' }) });
    } catch (err) {
      throw new Error(`The engine at ${base} is not reachable (${describeError(err)}).`);
    }
    const text = res.text;
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    if (!ok(res.status)) {
      const message = (body as ErrorBody | undefined)?.error?.message ?? (text.slice(0, 200) || res.statusText);
      throw new HttpError(res.status, message, `The engine refused ${method} ${pathAndQuery}: HTTP ${res.status} ${message}`);
    }
    return body as T;
  }

  private startEarlyReads(): void {
    for (const p of this.firstReads()) {
      const read: EarlyRead = { answer: this.fetchJson(p), answeredAt: undefined };
      read.answer.then(
        () => (read.answeredAt = Date.now()),
        () => undefined, // the view's own read, made when it is taken, reports it
      );
      this.early.set(p, read);
    }
  }

  /** An early read of `pathAndQuery`, if one may answer now: the stream is live and nothing changed since it connected. */
  private takeEarly(pathAndQuery: string): EarlyRead | undefined {
    const read = this.early.get(pathAndQuery);
    if (!read || !this._connected) return undefined;
    this.early.delete(pathAndQuery);
    return read;
  }

  private dropEarlyReads(): void {
    clearTimeout(this.earlyTimer);
    this.earlyTimer = undefined;
    this.early.clear();
  }

  private async request<T>(pathAndQuery: string): Promise<JsonAnswer<T>> {
    const early = this.takeEarly(pathAndQuery);
    if (early) {
      let answer: JsonAnswer<T> | undefined;
      try {
        answer = (await early.answer) as JsonAnswer<T>;
      } catch {
        // Failed on its way (the engine was still starting its server?): read now instead.
      }
      if (answer) {
        // Answered before the stream started: a change in between would be missed; read again.
        if (early.answeredAt === undefined || this.connectedAt === undefined || early.answeredAt < this.connectedAt) this._onDidServeEarlyRead.fire();
        return answer;
      }
    }
    return this.fetchJson<T>(pathAndQuery);
  }

  private async fetchJson<T>(pathAndQuery: string): Promise<JsonAnswer<T>> {
    const base = this._baseUrl;
    if (!base) throw new Error('The engine is not running.');
    let res: TextAnswer | undefined;
    // One retry: after an engine restart on the same port, a pooled keep-alive socket to the old
    // process fails at once (ECONNRESET); GET is idempotent, a fresh socket works.
    for (let attempt = 1; !res; attempt++) {
      try {
        res = await requestText(base + pathAndQuery, REQUEST_TIMEOUT_MS, { headers: this.headers({ Accept: 'application/json' }) });
      } catch (err) {
        if (attempt >= 2) throw new Error(`The engine at ${base} is not reachable (${describeError(err)}).`);
      }
    }
    let body: unknown;
    try {
      body = res.text ? JSON.parse(res.text) : undefined;
    } catch {
      throw new Error(`The engine answered ${pathAndQuery} with something that is not JSON (HTTP ${res.status}).`);
    }
    // /health answers 503 with a normal body when unhealthy: that is data, not an error.
    if (!ok(res.status) && !(res.status === 503 && pathAndQuery.startsWith('/health'))) {
      const message = (body as ErrorBody | undefined)?.error?.message ?? res.statusText;
      throw new Error(`The engine refused ${pathAndQuery}: HTTP ${res.status} ${message}`);
    }
    return { body: body as T, link: headerOf(res.headers, 'link') };
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    return this._token ? { ...extra, Authorization: `Bearer ${this._token}` } : extra;
  }

  /** The opening events (stats, health) seen since the stream connected. */
  private readonly openingEvents = new Set<string>();
  /** When the stream last connected (Date.now()). */
  private connectedAt: number | undefined;

  private setConnected(value: boolean): void {
    if (this._connected === value) return;
    this._connected = value;
    if (value) {
      this.connectedAt = Date.now();
      this.earlyTimer = setTimeout(() => this.dropEarlyReads(), EARLY_READ_MS);
    } else {
      this.dropEarlyReads();
    }
    this._onDidChangeConnection.fire(value);
  }

  private setProblem(problem: ConnectionProblem | undefined): void {
    if (problem?.kind === this._problem?.kind && problem?.message === this._problem?.message) return;
    this._problem = problem;
    this._onDidChangeProblem.fire(problem);
  }

  private stopEvents(): void {
    this.dropEarlyReads();
    this.generation++;
    this.abort?.abort();
    this.abort = undefined;
    this.wakeReconnect?.();
    this.setConnected(false);
    this.setProblem(undefined);
  }

  private async runEvents(generation: number): Promise<void> {
    let delay = RECONNECT_MIN_MS;
    while (generation === this.generation && this._baseUrl) {
      const abort = new AbortController();
      this.abort = abort;
      const parser = new SseParser();
      try {
        const headers = this.headers({ Accept: 'text/event-stream' });
        if (this.lastEventId) headers['Last-Event-ID'] = this.lastEventId;
        const res = await openRequest(`${this._baseUrl}/events`, { headers, signal: abort.signal });
        if (generation !== this.generation) break;
        if (res.statusCode !== 200) {
          this.setProblem(problemOf(res.statusCode ?? 0, res.statusMessage ?? '', await readBody(res).catch(() => '')));
          throw new Error(`HTTP ${res.statusCode}`);
        }
        this.setProblem(undefined);
        this.openingEvents.clear();
        this.setConnected(true);
        delay = RECONNECT_MIN_MS;
        // setEncoding keeps a character split between two chunks whole.
        res.setEncoding('utf8');
        for await (const chunk of res as AsyncIterable<string>) {
          if (generation !== this.generation) break;
          for (const ev of parser.push(chunk)) {
            if (ev.id !== undefined) this.lastEventId = ev.id;
            this.dispatch(ev.event, ev.data);
          }
        }
      } catch (err) {
        // Connection refused, reset or aborted: fall through to the reconnect below.
        if (generation === this.generation && !this._connected && !(err instanceof Error && /^HTTP \d+$/.test(err.message))) {
          this.setProblem({ kind: 'unreachable', message: `not reachable (${describeError(err)})` });
        }
      } finally {
        abort.abort();
      }
      if (generation !== this.generation) break;
      this.setConnected(false);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, parser.retryMs ?? delay);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.wakeReconnect = done;
      });
      this.wakeReconnect = undefined;
      delay = Math.min(delay * 2, RECONNECT_MAX_MS);
    }
  }

  private dispatch(name: string, data: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return; // a malformed event must not break the stream
    }
    if (!parsed || typeof parsed !== 'object') return;
    // The stream opens with the engine's stats and health as they are; anything after those is a
    // change, which early reads answered before it would not show.
    if (this.early.size && (name === 'log' || this.openingEvents.has(name))) this.dropEarlyReads();
    if (name === 'stats' || name === 'health') this.openingEvents.add(name);
    switch (name) {
      case 'log':
        this._onDidReceiveEvent.fire({ name: 'log', data: parsed as LogEntry });
        break;
      case 'stats': {
        // A `stats` event carries the overview; accept a full /stats body too.
        const o = parsed as { overview?: StatsOverview } & StatsOverview;
        this._onDidReceiveEvent.fire({ name: 'stats', data: o.overview ?? o });
        break;
      }
      case 'health':
        this._onDidReceiveEvent.fire({ name: 'health', data: parsed as HealthResponse });
        break;
      default:
        break;
    }
  }
}

interface JsonAnswer<T> {
  body: T;
  /** The `Link` header (a paged answer's next page). */
  link: string | undefined;
}

interface EarlyRead {
  answer: Promise<JsonAnswer<unknown>>;
  /** When it was answered (Date.now()); undefined while on its way or when it failed. */
  answeredAt: number | undefined;
}

/** An error answer from the engine: its status and the message of its JSON error body. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly detail: string,
    message: string,
  ) {
    super(message);
  }
}

const ok = (status: number) => status >= 200 && status < 300;

/** What an /events answer other than 200 means for the user. */
function problemOf(status: number, statusText: string, text: string): ConnectionProblem {
  let detail = statusText;
  try {
    const body = JSON.parse(text) as ErrorBody;
    if (body?.error?.message) detail = body.error.message;
  } catch {
    // not our JSON error body: keep the status text
  }
  const kind = status === 401 ? 'unauthorized' : status === 403 ? 'forbidden' : 'http';
  const what = kind === 'unauthorized' ? 'the token was refused' : kind === 'forbidden' ? 'the request was forbidden' : 'unexpected answer';
  return { kind, message: `${what} (HTTP ${status}: ${detail})` };
}

export function describeError(err: unknown): string {
  if (err instanceof Error) {
    // node:http puts the code (ECONNREFUSED) on the error, fetch() on its cause.
    const code = (err as { code?: string }).code;
    if (code && code !== 'ABORT_ERR') return code;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ?? cause?.message ?? err.message;
  }
  return String(err);
}
