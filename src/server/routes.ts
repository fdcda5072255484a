// The API's request handler: protection, then one route per endpoint, then the 404 and the error
// handler.
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
import express, { type NextFunction, type Router } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HealthResponse, StatsResponse, StatusResponse } from '../shared/api';
import type { HealthSnapshot, MonitoredEngine } from '../core/monitoredEngine';
import { SSE_HEADERS, type EventHub } from './events';
import {
  nextItemsQueryString,
  nextLogsQueryString,
  parseItemsQuery,
  parseLastEventId,
  parseLogsQuery,
  parseParams,
  queryStringOf,
} from './params';
import type { Guard } from './protection';
import { HttpError, JSON_CONTENT_TYPE, sendError, sendJson, sendJsonText } from './respond';
import { TurnQueue } from './turnQueue';
import { addOutputRoute } from './outputRoute';

export interface RouteContext {
  guard: Guard;
  url: string;
  hub: EventHub;
  healthBody(snapshot: HealthSnapshot): HealthResponse;
  openApiText: string;
}

const ALLOWED_METHODS = 'GET, HEAD';

/**
 * The request handler: Express's Router with the API's routes. Paths are exact (/Stats and /stats/
 * are not /stats); query strings are parsed strictly per endpoint (params.ts), never by qs.
 */
export function createRouter(engine: MonitoredEngine, ctx: RouteContext): (req: IncomingMessage, res: ServerResponse) => void {
  const app = express.Router({ caseSensitive: true, strict: true });
  // Protection first, before routing, for every request (including unknown paths).
  app.use(protection(ctx.guard));
  addMonitoringRoutes(app, engine, ctx);
  addPageRoutes(app, engine);
  addEventsRoute(app, ctx.hub);
  addOpenApiRoute(app, ctx.openApiText);
  addOutputRoute(app, engine);
  addNotFoundAndErrors(app);
  return (req, res) => {
    // Every request ends in the two handlers addNotFoundAndErrors adds; this final callback only
    // runs if one of them failed itself, and the socket is then the only thing left to release.
    app(req as express.Request, res as express.Response, () => {
      if (!res.headersSent) sendError(res, new HttpError(500, 'internal_error', 'Internal error (a bug); details are in the engine log.'));
      else res.destroy();
    });
  };
}

/** The guard's refusal (Host, Origin, token…), or 405 for anything but GET and HEAD. */
function protection(guard: Guard): (req: IncomingMessage, res: ServerResponse, next: NextFunction) => void {
  return (req, res, next) => {
    const refusal = guard.check(req);
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
  };
}

/** /stats, /health and /status: answered from the engine's counters and state, no database read. */
function addMonitoringRoutes(app: Router, engine: MonitoredEngine, ctx: RouteContext): void {
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
}

/** /logs and /items: pages read from the database, with a Link header to the next page. */
function addPageRoutes(app: Router, engine: MonitoredEngine): void {
  // Each page costs 0.1-2 ms. They are answered one per event-loop turn, in arrival order, so
  // that 50 clients arriving together cannot hold the loop for 50 pages while the engine's timers
  // (launches, retries, snapshots) wait.
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
}

/** /events: the server-sent event stream (events.ts); HEAD answers with its headers only. */
function addEventsRoute(app: Router, hub: EventHub): void {
  app.get('/events', (req: IncomingMessage, res: ServerResponse) => {
    const afterId = parseLastEventId(queryStringOf(req.url), req.headers['last-event-id']);
    if (req.method === 'HEAD') {
      res.writeHead(200, SSE_HEADERS);
      res.end();
      return;
    }
    hub.open(res, afterId);
  });
}

/** /openapi.json: the API's description, serialised once when the server starts. */
function addOpenApiRoute(app: Router, openApiText: string): void {
  app.get('/openapi.json', (req: IncomingMessage, res: ServerResponse) => {
    rejectAnyParams(req.url);
    res.writeHead(200, {
      'Content-Type': JSON_CONTENT_TYPE,
      'Content-Length': Buffer.byteLength(openApiText),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
    res.end(openApiText);
  });
}

/** Last in line: 404 for a path no route took, and the handler every thrown error reaches. */
function addNotFoundAndErrors(app: Router): void {
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
