// The extension's requests to the engine, on node:http(s) rather than fetch(). A window's start and
// every reload wait for the /events stream and the views' first reads: in the extension host the
// first fetch() loads Node's bundled undici (~30 ms of CPU on a quiet 2-core machine, several times
// that while the workbench loads beside it) and every later one costs ~3 ms against ~1 ms for
// node:http. No `vscode` here: the unit tests run it against a real engine.
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';

/**
 * Keep-alive: the views read the same engine every few seconds, a socket each time is waste. An
 * idle socket is closed after 4 s, before the engine's own 5 s: a request sent on a socket the
 * server is closing at that instant fails, and a control POST is not retried.
 */
const agentOptions = { keepAlive: true, maxSockets: 8, timeout: 4_000 };
const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'DELETE';
  headers?: Record<string, string>;
  /** Aborts the request and, for a stream, the reading of its body. */
  signal?: AbortSignal;
}

export interface TextAnswer {
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  text: string;
}

/** Opens a request and resolves with the response once its head arrived; the body is the caller's to read. */
export function openRequest(url: string, opts: RequestOptions = {}): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      reject(new Error(`not a URL: ${url}`));
      return;
    }
    const secure = target.protocol === 'https:';
    const req = (secure ? https : http).request(target, {
      method: opts.method ?? 'GET',
      headers: opts.headers,
      agent: secure ? agents.https : agents.http,
      signal: opts.signal,
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end();
  });
}

/** Reads a whole response body as UTF-8. */
export function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.once('error', reject);
    // A connection closed mid-answer (after 'end', complete is set and this does nothing).
    res.once('close', () => {
      if (!res.complete) reject(new Error('the engine closed the connection before the answer was complete'));
    });
  });
}

/**
 * A request whose whole answer is read as text, within `timeoutMs` from sending it to the body's
 * last byte (an engine that accepts the connection and never answers must not hold a view).
 */
export async function requestText(url: string, timeoutMs: number, opts: Omit<RequestOptions, 'signal'> = {}): Promise<TextAnswer> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  try {
    const res = await openRequest(url, { ...opts, signal: abort.signal });
    const text = await readBody(res);
    return { status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', headers: res.headers, text };
  } catch (err) {
    // An abort's own error says only "The operation was aborted": say why.
    if (abort.signal.aborted && abort.signal.reason instanceof Error) throw abort.signal.reason;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** A header's value, the first one when it was sent more than once. */
export function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}
