// The engine's HTTP API: read-only JSON endpoints plus /events, on loopback unless a token allows
// more. This file binds the server, sets its limits, answers malformed requests and closes it; the
// routes are in routes.ts, mounted as the server's request handler with no Express application
// around them (routes.ts says why).
import { healthBody as healthBodyOf } from '../shared/health';
import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { HealthResponse } from '../shared/api';
import { EventHub, DEFAULT_EVENT_HUB_OPTIONS, type EventHubOptions } from './events';
import type { HealthSnapshot, MonitoredEngine } from '../core/kernel/monitoredEngine';
import { buildOpenApiDocument } from './openapi';
import { createGuard, hostWithPort, isLoopbackHost } from './protection';
import { JSON_CONTENT_TYPE } from './respond';
import { createEngineMetrics, type EngineMetrics } from './metrics';
import { createRouter } from './routes';

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
  /**
   * Another token, accepted wherever `token` is and for control even when no `token` is set (reads
   * stay open then): the one the engine host hands to its windows' integrated terminals.
   */
  controlToken?: string;
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

export async function startHttpServer(engine: MonitoredEngine, options: HttpServerOptions): Promise<RunningHttpServer> {
  const { host, token } = checkBinding(options);
  const server = createNodeServer({ ...DEFAULT_TIMEOUTS, ...options.timeouts });
  const requestedPortInUse = await listenOrFallBack(server, host, options.port, options.fallbackToFreePort === true);
  // Errors after a successful listen must not crash the engine host.
  server.on('error', (error) => console.error('engine-monitor: HTTP server error', error));

  const port = (server.address() as AddressInfo).port;
  // A wildcard bind is reachable on loopback too; that is the URL local clients should use.
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const url = `http://${hostWithPort(urlHost, port)}`;

  const healthBody = (snapshot: HealthSnapshot): HealthResponse => healthBodyOf(snapshot, engine.version);
  const hub = new EventHub(engine, healthBody, { ...DEFAULT_EVENT_HUB_OPTIONS, ...options.events });
  const metrics = createEngineMetrics(engine);
  const route = createRouter(engine, {
    guard: createGuard({ boundHost: host, port, token, controlToken: options.controlToken, allowedHosts: options.allowedHosts }),
    url,
    hub,
    healthBody,
    openApiText: () => JSON.stringify(buildOpenApiDocument(engine.version, url)),
    metrics,
  });
  // Attached only now that the port (hence the Host allow-list) is known. Nothing can have
  // arrived yet: connections are accepted on a later turn of the event loop.
  server.on('request', route);
  return { url, port, requestedPortInUse, close: closer(server, hub, metrics) };
}

/** The address to bind and the token, refusing a bad port and a non-loopback address without a token. */
function checkBinding(options: HttpServerOptions): { host: string; token: string | undefined } {
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
  return { host, token };
}

/** A node:http server with the API's limits on headers, time and keep-alive. */
function createNodeServer(timeouts: ServerTimeouts): Server {
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
  return server;
}

/** Listens on `port`, or on a free port when it is taken and `fallBack` allows it; true in that case. */
async function listenOrFallBack(server: Server, host: string, port: number, fallBack: boolean): Promise<boolean> {
  try {
    await listen(server, port, host);
    return false;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE' && fallBack && port !== 0) {
      await listen(server, 0, host).catch((e: Error) => {
        throw new Error(`Cannot listen on ${host} (any free port): ${e.message}`);
      });
      return true;
    }
    const reason = (error as NodeJS.ErrnoException).code === 'EADDRINUSE' ? 'the port is already in use' : (error as Error).message;
    throw new Error(`Cannot listen on ${hostWithPort(host, port)}: ${reason}.`);
  }
}

/** RunningHttpServer.close: ends event streams, then idle sockets, then (after 1 s) every socket. */
function closer(server: Server, hub: EventHub, metrics: EngineMetrics): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
      hub.closeAll();
      metrics.close();
      server.closeIdleConnections();
      // Responses still being written get a moment to finish; then every socket goes.
      const force = setTimeout(() => server.closeAllConnections(), 1000);
      server.once('close', () => clearTimeout(force));
    });
    return closing;
  };
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
