// Finding the engine and talking to it. The URL comes from --url, else ENGINE_MONITOR_URL (VS
// Code's integrated terminals have it), else the nearest `.engine/state/endpoint.json` from the
// current folder upwards (what `serve` writes into its default storage). Every failure is one of
// two kinds the exit code tells apart: the engine answered no (EngineError, exit 1) or it could
// not be asked (UnreachableError, exit 3), each saying which URL and where it came from.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ErrorBody } from '../../shared/api';
import { ENDPOINT_FILE } from '../engineHost';
import { TOKEN_ENV } from '../args';
import { ClientUsageError } from './options';
import { shapeMismatch, type Shape } from './shapes';

export const URL_ENV = 'ENGINE_MONITOR_URL';
/** A request that is not a stream gets this long for its whole answer. */
const REQUEST_TIMEOUT_MS = 15_000;

export interface Endpoint {
  /** The base URL, without a trailing slash. */
  url: string;
  token?: string;
  /** Where the URL came from, for messages: "--url", "ENGINE_MONITOR_URL", or the endpoint.json path. */
  source: string;
}

/** The engine said no: an HTTP error status, with the message of its error body. */
export class EngineError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** The engine could not be asked at all. */
export class UnreachableError extends Error {}

/** JSON of another shape than the client reads: not an engine of this version (exit 3, as unreachable). */
export class AnswerShapeError extends UnreachableError {}

/**
 * The answer's JSON, checked to have the fields the client reads (shapes.ts), or a clear error:
 * not JSON, or JSON of another shape.
 */
export function parseAnswer<T>(endpoint: Endpoint, pathAndQuery: string, text: string, shape: Shape): T {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new UnreachableError(`${endpoint.url}${pathAndQuery} (${from(endpoint)}) did not answer JSON: is it an Engine Monitor engine?`);
  }
  const mismatch = shapeMismatch(body, shape);
  if (mismatch) {
    throw new AnswerShapeError(
      `the engine's answer is not what this client understands (${pathAndQuery.split('?')[0]}: ${mismatch}); is ${endpoint.url} an Engine Monitor engine of this version?`,
    );
  }
  return body as T;
}

export function findEndpoint(given: { url?: string; token?: string }, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Endpoint {
  const token = given.token ?? (env[TOKEN_ENV] || undefined);
  if (given.url !== undefined) return { url: baseUrl(given.url, '--url'), token, source: '--url' };
  if (env[URL_ENV]) return { url: baseUrl(env[URL_ENV], URL_ENV), token, source: URL_ENV };
  const file = nearestEndpointFile(cwd);
  if (!file) {
    throw new UnreachableError(
      `no engine to ask: give --url <url>, set ${URL_ENV}, or run this inside a workspace whose engine runs (engine-monitor serve --workspace <dir> writes .engine/state/${ENDPOINT_FILE}); none was found from ${cwd} upwards`,
    );
  }
  let url: unknown;
  try {
    url = (JSON.parse(readFileSync(file, 'utf8')) as { url?: unknown }).url;
  } catch (err) {
    throw new UnreachableError(`cannot read the engine's address from ${file}: ${(err as Error).message}; give --url <url> or set ${URL_ENV}`);
  }
  if (typeof url !== 'string') throw new UnreachableError(`${file} has no "url": give --url <url> or set ${URL_ENV}`);
  return { url: baseUrl(url, file), token, source: file };
}

/** `.engine/state/endpoint.json` in `from` or the closest folder above it that has one. */
function nearestEndpointFile(from: string): string | undefined {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    const file = path.join(dir, '.engine', 'state', ENDPOINT_FILE);
    if (existsSync(file)) return file;
    if (path.dirname(dir) === dir) return undefined;
  }
}

function baseUrl(raw: string, source: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ClientUsageError(`${source}: "${raw}" is not a URL; give the engine's base URL, e.g. http://127.0.0.1:7411`);
  }
  if (!/^https?:$/.test(url.protocol) || (url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) {
    throw new ClientUsageError(`${source}: "${raw}" is not an engine base URL; give http://host:port`);
  }
  return url.origin;
}

/** Where the URL came from, as a message's tail. */
function from(endpoint: Endpoint): string {
  return endpoint.source === '--url' ? 'given by --url' : endpoint.source === URL_ENV ? `from ${URL_ENV}` : `found in ${endpoint.source}`;
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'DELETE';
  accept?: string;
  /** Streams (follow) have no overall timeout: they end when the engine closes them, or on Ctrl+C. */
  stream?: boolean;
  /**
   * The body is read as fast as its reader takes it (output into `less` or a slow pipe): the
   * timeout covers the engine's answer, not how long the reader takes to read it all.
   */
  pacedByReader?: boolean;
  /** Statuses that are answers, not errors (health's 503). */
  okStatuses?: number[];
  headers?: Record<string, string>;
  /** A JSON body (POST /items). */
  json?: string;
  signal?: AbortSignal;
}

/** A request to the engine; an HTTP error becomes an EngineError, a network failure an UnreachableError. */
export async function request(endpoint: Endpoint, pathAndQuery: string, options: RequestOptions = {}): Promise<Response> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { Accept: options.accept ?? 'application/json', ...options.headers };
  if (endpoint.token) headers.Authorization = `Bearer ${endpoint.token}`;
  if (options.json !== undefined) headers['Content-Type'] = 'application/json';
  // A timer this code owns rather than AbortSignal.timeout() inside AbortSignal.any(), which Node
  // 20 can garbage-collect before it fires. unref: a finished request never holds the exit.
  const abort = new AbortController();
  const outer = options.signal;
  const forward = () => abort.abort(outer?.reason);
  if (outer?.aborted) forward();
  else outer?.addEventListener('abort', forward, { once: true });
  const timer = options.stream ? undefined : setTimeout(() => abort.abort(new DOMException(`no answer within ${REQUEST_TIMEOUT_MS} ms`, 'TimeoutError')), REQUEST_TIMEOUT_MS);
  timer?.unref();
  let res: Response;
  try {
    res = await fetch(`${endpoint.url}${pathAndQuery}`, { method, headers, body: options.json, signal: abort.signal });
  } catch (err) {
    clearTimeout(timer);
    throw unreachable(endpoint, err);
  }
  if (options.pacedByReader) clearTimeout(timer);
  if (res.ok || options.okStatuses?.includes(res.status)) return res;
  throw await engineError(endpoint, method, pathAndQuery, res);
}

/** GET (or POST) and read JSON. */
export async function requestJson<T>(endpoint: Endpoint, pathAndQuery: string, shape: Shape, options: RequestOptions = {}): Promise<{ body: T; res: Response }> {
  const res = await request(endpoint, pathAndQuery, options);
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    throw unreachable(endpoint, err);
  }
  return { body: parseAnswer<T>(endpoint, pathAndQuery, text, shape), res };
}

export function unreachable(endpoint: Endpoint, err: unknown): UnreachableError {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  const why =
    e.name === 'TimeoutError'
      ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`
      : (e.cause?.code ?? e.cause?.message ?? e.message);
  const stale = endpoint.source.endsWith(ENDPOINT_FILE) ? '; that engine may have stopped: start it (engine-monitor serve) or give --url' : '';
  return new UnreachableError(`cannot reach the engine at ${endpoint.url} (${from(endpoint)}): ${why}${stale}`);
}

async function engineError(endpoint: Endpoint, method: string, pathAndQuery: string, res: Response): Promise<EngineError> {
  let message = '';
  try {
    message = ((await res.json()) as ErrorBody).error?.message ?? '';
  } catch {
    // not our error body
  }
  if (!message) message = `${method} ${endpoint.url}${pathAndQuery} answered HTTP ${res.status} ${res.statusText}`;
  const hint =
    res.status === 401
      ? ` (give the engine's token with --token or ${TOKEN_ENV})`
      : res.status === 403 && method !== 'GET'
        ? ` (with a token on the engine, give the same one here: --token or ${TOKEN_ENV})`
        : '';
  return new EngineError(`${message}${hint}`, res.status);
}
