// The engine's HTTP API: read-only JSON endpoints plus /events, on loopback.
//
// Performance: /stats must serve at least a quarter of what a bare node:http server manages with
// the same body. Requests are routed by Express's Router (express.Router, the `router` package),
// mounted directly as the server's request handler rather than inside an Express application:
// `app.handle` swaps the prototypes of every req and res (Object.setPrototypeOf) to add Express's
// helpers, which de-optimises Node's own IncomingMessage/ServerResponse code for the rest of the
// request, at a fraction of the throughput (docs/PERFORMANCE.md has the figures). None of
// those helpers is used: protection is one plain middleware doing Set lookups, handlers read
// req.url and req.headers, serialise with JSON.stringify and write with writeHead/end
// (respond.ts), and the handlers' parameter types are Node's, so the compiler refuses req.query,
// res.json and the like.
import express, { type NextFunction } from 'express';
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ENGINE_NAME, type HealthResponse, type StatsResponse, type StatusResponse } from '../shared/api';
import { EventHub, DEFAULT_EVENT_HUB_OPTIONS, SSE_HEADERS, type EventHubOptions } from './events';
import type { HealthSnapshot, MonitoredEngine } from '../core/monitoredEngine';
import { buildOpenApiDocument } from './openapi';
import {
  nextItemsQueryString,
  nextLogsQueryString,
  parseItemsQuery,
  parseLastEventId,
  parseLogsQuery,
  parseParams,
  queryStringOf,
} from './params';
import { createGuard, hostWithPort, isLoopbackHost, type Guard } from './protection';
import { HttpError, JSON_CONTENT_TYPE, sendError, sendJson, sendJsonText } from './respond';

export interface ServerTimeouts {
  /** Time allowed to receive the request headers; a client that dribbles them is cut off (408). */
  headersTimeoutMs: number;
  /** Time allowed to receive the whole request (not the response: event streams stay open). */
  requestTimeoutMs: number;
  /** Idle time before a keep-alive connection is closed. */
  keepAliveTimeoutMs: number;
  /** How often Node checks the two timeouts above (its default, 30 s, would let them overrun). */
  checkIntervalMs: number;
}

export const DEFAULT_TIMEOUTS: ServerTimeouts = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
};

/** Bound on the request head; the API needs no large headers (431 beyond it). */
export const MAX_HEADER_BYTES = 16 * 1024;

export interface HttpServerOptions {
  /** Address to bind; '' means 127.0.0.1. A non-loopback address requires a token. */
  host: string;
  /** 0 = any free port. */
  port: number;
  /** When set, every request needs `Authorization: Bearer <token>`. */
  token?: string;
  /** More Host names to answer to (a name DNS or a proxy gives this machine); needs a token like any non-loopback use. */
  allowedHosts?: readonly string[];
  /** If `port` is taken, listen on a free port instead (and report requestedPortInUse). */
  fallbackToFreePort?: boolean;
  /** Overrides, mainly so tests can use short timers. */
  timeouts?: Partial<ServerTimeouts>;
  events?: Partial<EventHubOptions>;
}

export interface RunningHttpServer {
  /** Base URL, no trailing slash, e.g. http://127.0.0.1:7411. */
  url: string;
  port: number;
  /** True when the requested port was taken and a free one is used instead. */
  requestedPortInUse: boolean;
  /** Ends event streams, closes keep-alive sockets and stops listening. Safe to call twice. */
  close(): Promise<void>;
}

const ALLOWED_METHODS = 'GET, HEAD';

export async function startHttpServer(engine: MonitoredEngine, options: HttpServerOptions): Promise<RunningHttpServer> {
  const host = options.host === '' ? '127.0.0.1' : options.host;
  const token = options.token === '' ? undefined : options.token;
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
    throw new Error(`Invalid port ${options.port}: use an integer from 0 (any free port) to 65535.`);
  }
  if (!isLoopbackHost(host) && token === undefined) {
    throw new Error(
      `Refusing to serve the engine API on non-loopback address ${host} without a token: anyone who can reach it could read it. ` +
        'Set a token (engineMonitor.server.token or --token) or bind to 127.0.0.1.',
    );
  }
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };

  const server = createServer({
    maxHeaderSize: MAX_HEADER_BYTES,
    headersTimeout: timeouts.headersTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    connectionsCheckingInterval: timeouts.checkIntervalMs,
    // Node would answer a missing Host with an empty 400; our guard answers it with a JSON 403.
    requireHostHeader: false,
  });
  server.maxHeadersCount = 100;
  server.on('clientError', answerClientError);

  let requestedPortInUse = false;
  try {
    await listen(server, options.port, host);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE' && options.fallbackToFreePort && options.port !== 0) {
      requestedPortInUse = true;
      await listen(server, 0, host).catch((e: Error) => {
        throw new Error(`Cannot listen on ${host} (any free port): ${e.message}`);
      });
    } else {
      const reason = (error as NodeJS.ErrnoException).code === 'EADDRINUSE' ? 'the port is already in use' : (error as Error).message;
      throw new Error(`Cannot listen on ${hostWithPort(host, options.port)}: ${reason}.`);
    }
  }
  // Errors after a successful listen must not crash the engine host.
  server.on('error', (error) => console.error('engine-monitor: HTTP server error', error));

  const port = (server.address() as AddressInfo).port;
  // A wildcard bind is reachable on loopback too; that is the URL local clients should use.
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const url = `http://${hostWithPort(urlHost, port)}`;

  const healthBody = (snapshot: HealthSnapshot): HealthResponse => ({
    status: snapshot.status,
    engine: ENGINE_NAME,
    version: engine.version,
    timestamp: new Date().toISOString(),
    checks: { database: snapshot.checks.database, engine: snapshot.checks.engine },
  });
  const hub = new EventHub(engine, healthBody, { ...DEFAULT_EVENT_HUB_OPTIONS, ...options.events });
  const route = createRouter(engine, {
    guard: createGuard({ boundHost: host, port, token, allowedHosts: options.allowedHosts }),
    url,
    hub,
    healthBody,
    openApiText: JSON.stringify(buildOpenApiDocument(engine.version, url)),
  });
  // Attached only now that the port (hence the Host allow-list) is known. Nothing can have
  // arrived yet: connections are accepted on a later turn of the event loop.
  server.on('request', route);

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    requestedPortInUse,
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        hub.closeAll();
        server.closeIdleConnections();
        // Responses still being written get a moment to finish; then every socket goes.
        const force = setTimeout(() => server.closeAllConnections(), 1000);
        server.once('close', () => clearTimeout(force));
      });
      return closing;
    },
  };
}

interface AppContext {
  guard: Guard;
  url: string;
  hub: EventHub;
  healthBody(snapshot: HealthSnapshot): HealthResponse;
  openApiText: string;
}

/**
 * The request handler: Express's Router with the API's routes. Paths are exact (/Stats and /stats/
 * are not /stats); query strings are parsed strictly per endpoint (params.ts), never by qs.
 */
function createRouter(engine: MonitoredEngine, ctx: AppContext): (req: IncomingMessage, res: ServerResponse) => void {
  const app = express.Router({ caseSensitive: true, strict: true });

  // Protection first, before routing, for every request (including unknown paths).
  app.use((req: IncomingMessage, res: ServerResponse, next: NextFunction) => {
    const refusal = ctx.guard.check(req);
    if (refusal) return sendError(res, refusal);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return sendError(
        res,
        new HttpError(405, 'method_not_allowed', `Method ${req.method} is not allowed; this API is read-only: use GET or HEAD.`, {
          Allow: ALLOWED_METHODS,
        }),
      );
    }
    next();
  });

  app.get('/stats', (req: IncomingMessage, res: ServerResponse) => {
    rejectAnyParams(req.url);
    const body: StatsResponse = { overview: engine.stats(), timestamp: new Date().toISOString() };
    sendJson(res, 200, body);
  });

  app.get('/health', (req: IncomingMessage, res: ServerResponse) => {
    rejectAnyParams(req.url);
    const body = ctx.healthBody(engine.health());
    sendJson(res, body.status === 'unhealthy' ? 503 : 200, body);
  });

  app.get('/status', (req: IncomingMessage, res: ServerResponse) => {
    rejectAnyParams(req.url);
    const body: StatusResponse = { ...engine.status(), timestamp: new Date().toISOString(), server: { url: ctx.url } };
    sendJson(res, 200, body);
  });

  // /logs and /items read pages from the database (0.1-2 ms each). They are answered one per
  // event-loop turn, in arrival order, so that 50 clients arriving together cannot hold the loop
  // for 50 pages while the engine's timers (launches, retries, snapshots) wait.
  const pages = new TurnQueue();

  app.get('/logs', (req: IncomingMessage, res: ServerResponse, next: NextFunction) => {
    const parsed = parseLogsQuery(queryStringOf(req.url));
    pages.run(res, next, () => {
      const page = engine.queryLogs(parsed.query);
      const lastId = page.lastId ?? page.entries[page.entries.length - 1]?.id;
      const headers =
        page.hasMore && lastId !== undefined ? { Link: `<http://${req.headers.host}/logs?${nextLogsQueryString(parsed, lastId)}>; rel="next"` } : undefined;
      sendJsonText(res, 200, page.json ? page.json() : JSON.stringify(page.entries), headers);
    });
  });

  app.get('/items', (req: IncomingMessage, res: ServerResponse, next: NextFunction) => {
    const query = parseItemsQuery(queryStringOf(req.url));
    pages.run(res, next, () => {
      const { items, total } = engine.listItems(query);
      const nextOffset = query.offset + items.length;
      const headers =
        items.length > 0 && nextOffset < total
          ? { Link: `<http://${req.headers.host}/items?${nextItemsQueryString(query, nextOffset)}>; rel="next"` }
          : undefined;
      sendJson(res, 200, { items, total, limit: query.limit, offset: query.offset }, headers);
    });
  });

  app.get('/events', (req: IncomingMessage, res: ServerResponse) => {
    const afterId = parseLastEventId(queryStringOf(req.url), req.headers['last-event-id']);
    if (req.method === 'HEAD') {
      res.writeHead(200, SSE_HEADERS);
      res.end();
      return;
    }
    ctx.hub.open(res, afterId);
  });

  app.get('/openapi.json', (req: IncomingMessage, res: ServerResponse) => {
    rejectAnyParams(req.url);
    res.writeHead(200, {
      'Content-Type': JSON_CONTENT_TYPE,
      'Content-Length': Buffer.byteLength(ctx.openApiText),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
    res.end(ctx.openApiText);
  });

  app.use((req: IncomingMessage, res: ServerResponse) => {
    sendError(
      res,
      new HttpError(404, 'not_found', `No such path ${JSON.stringify(pathOf(req.url))}; paths: /stats, /health, /status, /logs, /items, /events, /openapi.json.`),
    );
  });

  // The Router routes thrown errors (and rejected promises) here: the process never crashes.
  app.use((error: unknown, _req: IncomingMessage, res: ServerResponse, _next: NextFunction) => {
    if (!(error instanceof HttpError)) {
      console.error('engine-monitor: unexpected error while handling a request', error);
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendError(res, error instanceof HttpError ? error : new HttpError(500, 'internal_error', 'Internal error (a bug); details are in the engine log.'));
  });

  return (req, res) => {
    // Every request ends in the two handlers above; this final callback only runs if one of them
    // failed itself, and the socket is then the only thing left to release.
    app(req as express.Request, res as express.Response, () => {
      if (!res.headersSent) sendError(res, new HttpError(500, 'internal_error', 'Internal error (a bug); details are in the engine log.'));
      else res.destroy();
    });
  };
}

/**
 * Runs queued responses one per event-loop turn (setImmediate), in arrival order. Between two of
 * them the loop runs its timers and reads new requests, so its delay stays about one page long
 * however many clients wait. A response whose client has gone is skipped; an error thrown goes
 * to the router's error handler, as a synchronous one would.
 */
export class TurnQueue {
  private readonly jobs: { res: ServerResponse; next: NextFunction; answer: () => void }[] = [];
  private scheduled = false;

  run(res: ServerResponse, next: NextFunction, answer: () => void): void {
    this.jobs.push({ res, next, answer });
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.turn);
    }
  }

  private readonly turn = (): void => {
    const job = this.jobs.shift();
    if (job && !job.res.destroyed) {
      try {
        job.answer();
      } catch (error) {
        job.next(error);
      }
    }
    if (this.jobs.length > 0) setImmediate(this.turn);
    else this.scheduled = false;
  };
}

/** The path of a request target, without its query string. */
function pathOf(url: string | undefined): string {
  const target = url ?? '/';
  const q = target.indexOf('?');
  return q === -1 ? target : target.slice(0, q);
}

/** For endpoints without parameters: `/stats?x=1` is a mistake worth reporting. */
function rejectAnyParams(url: string | undefined): void {
  const query = queryStringOf(url);
  if (query !== '') parseParams(query, []);
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => {
      server.off('listening', onListening);
      reject(error);
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({ port, host });
  });
}

/**
 * Malformed requests, oversized headers and header timeouts never reach Express; Node would
 * answer them with an empty body. We answer with the API's JSON error body instead.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  const pending = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || pending?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'headers_too_large', `Request headers exceed ${MAX_HEADER_BYTES} bytes.`]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'The request was not received in time.']
        : [400, 'bad_request', 'Malformed HTTP request.'];
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      `Content-Type: ${JSON_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      'Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n' +
      body,
  );
}
