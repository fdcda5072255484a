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
import type { HealthResponse, ItemDetail, StatsResponse, StatusResponse } from '../shared/api';
import { ControlError, isControllable, type ControllableEngine, type HealthSnapshot, type MonitoredEngine } from '../core/kernel/monitoredEngine';
import { httpControlCommand, httpControlNames, httpDeleteCommand } from '../core/features/control/commands';
import { SSE_HEADERS, type EventHub } from './events';
import {
  MAX_CONTROL_BODY_BYTES,
  nextItemsQueryString,
  nextLogsQueryString,
  parseItemsQuery,
  parseLastEventId,
  parseLogsQuery,
  parseParams,
  queryStringOf,
} from './params';
import type { Guard } from './protection';
import { badRequest, HttpError, JSON_CONTENT_TYPE, sendError, sendJson, sendJsonParts, sendJsonText } from './respond';
import { TurnQueue } from './turnQueue';
import { jsonArrayParts } from '../shared/jsonParts';
import { addOutputRoute } from './outputRoute';
import { addMetricsRoute, type EngineMetrics } from './metrics';
import { addSchedulesRoute } from './schedulesRoute';
import { addSubmitRoute } from './submitRoute';

export interface RouteContext {
  guard: Guard;
  url: string;
  hub: EventHub;
  healthBody(snapshot: HealthSnapshot): HealthResponse;
  /** The API's description as JSON text; asked for on the first /openapi.json request. */
  openApiText: () => string;
  metrics: EngineMetrics;
}

const READ_METHODS = 'GET, HEAD';
/** The methods that change something: refused before routing unless the request may control. */
function isControlMethod(method: string | undefined): boolean {
  return method === 'POST' || method === 'DELETE';
}
const CONTROL_METHODS = 'POST';
/** Control paths, from the control-command table: POST only, and only with a token configured. */
const ITEM_CONTROL = new RegExp(`^/items/[^/]*/(?:${httpControlNames('item').join('|')})$`);
const ENGINE_CONTROL = new RegExp(`^/engine/(?:${httpControlNames('engine').join('|')})$`);
/** An item's own path: read with GET, removed with DELETE (a control request, like a POST). */
const ITEM_PATH = /^\/items\/[^/]+$/;
const ITEM_METHODS = 'GET, HEAD, DELETE';

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
  addControlRoutes(app, engine, ctx);
  addEventsRoute(app, ctx.hub);
  addOpenApiRoute(app, ctx.openApiText);
  addOutputRoute(app, engine);
  addMetricsRoute(app, ctx.metrics);
  addSchedulesRoute(app, engine);
  addSubmitRoute(app, engine, rejectAnyParams);
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

/**
 * The guard's refusal (Host, Origin, token…); then the method: GET and HEAD on every path but the
 * control paths, which take POST, and DELETE on an item's path; a POST or that DELETE only with a
 * configured token or the control token.
 */
function protection(guard: Guard): (req: IncomingMessage, res: ServerResponse, next: NextFunction) => void {
  return (req, res, next) => {
    const refusal = guard.check(req);
    if (refusal) return sendError(res, refusal);
    const path = pathOf(req.url);
    const control = ITEM_CONTROL.test(path) || ENGINE_CONTROL.test(path);
    const item = !control && ITEM_PATH.test(path);
    const read = req.method === 'GET' || req.method === 'HEAD';
    // Before the method check for POST (any POST needs control), after it for DELETE (on an item only).
    if (isControlMethod(req.method) && (req.method === 'POST' || item) && !guard.mayControl(req)) {
      return sendError(
        res,
        new HttpError(
          403,
          'control_disabled',
          'Control over HTTP needs a token, and none is configured: start the engine with --token (or --token-file, or ENGINE_MONITOR_TOKEN), or set engineMonitor.server.token, then send "Authorization: Bearer <token>". Without one the API is read-only. (In a VS Code window\'s integrated terminal ENGINE_MONITOR_TOKEN is set for its own engine: open a new terminal if this one predates it.)',
        ),
      );
    }
    // /items is read, and takes POST to submit items.
    const submit = path === '/items' && req.method === 'POST';
    const allowed = control ? req.method === 'POST' : submit || read || (item && req.method === 'DELETE');
    if (!allowed) {
      const message = control
        ? `Method ${req.method} is not allowed on ${pathOf(req.url)}, a control path: use POST.`
        : item
          ? `Method ${req.method} is not allowed on ${pathOf(req.url)}: use GET or HEAD to read the item, DELETE to remove it (control paths such as /items/{id}/cancel take POST).`
          : `Method ${req.method} is not allowed on ${pathOf(req.url)}: use GET or HEAD (control paths such as /items/{id}/cancel take POST).`;
      const allow = control ? CONTROL_METHODS : item ? ITEM_METHODS : path === '/items' ? `${READ_METHODS}, POST` : READ_METHODS;
      return sendError(res, new HttpError(405, 'method_not_allowed', message, { Allow: allow }));
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
      if (page.jsonParts) sendJsonParts(res, 200, page.jsonParts(), headers);
      else sendJsonText(res, 200, page.json ? page.json() : JSON.stringify(page.entries), headers);
    });
  });

  // /items/{id}: the id is one path segment, percent-encoded. Read by hand rather than as a route
  // parameter, so a bad encoding is a 400 that says so; deeper paths (an attempt's output) go on.
  app.get(/^\/items\/[^/]+$/, (req: IncomingMessage, res: ServerResponse, next: NextFunction) => {
    const itemId = itemIdOf(req.url);
    rejectAnyParams(req.url);
    pages.run(res, next, () => sendJson(res, 200, requireItem(engine, itemId)));
  });

  app.get('/items', (req: IncomingMessage, res: ServerResponse, next: NextFunction) => {
    const query = parseItemsQuery(queryStringOf(req.url));
    // A word search waits (not holding the loop) while the items' word index is built; checked
    // again in the page's own turn, as items may have been redefined since.
    const answer = (): void => {
      const building = engine.itemSearchReady?.(query);
      if (building) {
        building.then(() => pages.run(res, next, answer), next);
        return;
      }
      const { items, total } = engine.listItems(query);
      const nextOffset = query.offset + items.length;
      const headers =
        items.length > 0 && nextOffset < total
          ? { Link: `<http://${req.headers.host}/items?${nextItemsQueryString(query, nextOffset)}>; rel="next"` }
          : undefined;
      // JSON.stringify of { items, total, limit, offset }, written in parts (src/shared/jsonParts.ts).
      const texts = items.map((item) => JSON.stringify(item));
      sendJsonParts(res, 200, jsonArrayParts(texts, '{"items":', `,"total":${total},"limit":${query.limit},"offset":${query.offset}}`), headers);
    };
    pages.run(res, next, answer);
  });
}

/**
 * POST /items/{id}/cancel|retry|hold|release and /engine/start|stop|poll: 202 with the item (as
 * GET /items/{id}) or the /status body. protection() has let through only POSTs with a token.
 */
function addControlRoutes(app: Router, engine: MonitoredEngine, ctx: RouteContext): void {
  // One table for the HTTP routes and the extension's channel (features/control/commands.ts).
  app.post(ITEM_CONTROL, async (req: IncomingMessage, res: ServerResponse) => {
    const path = pathOf(req.url);
    const command = httpControlCommand('item', path.slice(path.lastIndexOf('/') + 1))!;
    const itemId = itemIdOf(path.slice(0, path.lastIndexOf('/')));
    const control = await controlRequest(engine, req);
    await runControl(() => command.run(control, itemId));
    // Hold and release also apply to a schedule template, which is not an item.
    const template = engine.itemDetail(itemId) ? undefined : engine.listSchedules?.().find((s) => s.id === itemId);
    sendJson(res, 202, template ?? requireItem(engine, itemId));
  });
  // DELETE /items/{id}: 204 once it is gone (a running item once its process has exited).
  app.delete(ITEM_PATH, async (req: IncomingMessage, res: ServerResponse) => {
    const itemId = itemIdOf(req.url);
    const control = await controlRequest(engine, req);
    await runControl(() => httpDeleteCommand().run(control, itemId));
    res.writeHead(204, { 'Cache-Control': 'no-store' });
    res.end();
  });
  app.post(ENGINE_CONTROL, async (req: IncomingMessage, res: ServerResponse) => {
    const path = pathOf(req.url);
    const command = httpControlCommand('engine', path.slice('/engine/'.length))!;
    const control = await controlRequest(engine, req);
    await runControl(() => command.run(control, ''));
    const body: StatusResponse = { ...engine.status(), timestamp: new Date().toISOString(), server: { url: ctx.url } };
    sendJson(res, 202, body);
  });
}

/** Checks a control request (no parameters, a body of at most MAX_CONTROL_BODY_BYTES, ignored) and the engine's ability to take it. */
async function controlRequest(engine: MonitoredEngine, req: IncomingMessage): Promise<ControllableEngine> {
  rejectAnyParams(req.url);
  await readIgnoredBody(req);
  if (!isControllable(engine)) throw new HttpError(403, 'control_disabled', 'This server was started read-only: its engine takes no control requests.');
  return engine;
}

/** Runs a control action, turning the engine's refusals into 404 and 409 (with its message). */
async function runControl(action: () => unknown): Promise<void> {
  try {
    await action();
  } catch (err) {
    if (err instanceof ControlError) throw new HttpError(err.reason === 'not_found' ? 404 : 409, err.reason, err.message);
    throw err;
  }
}

/** Reads a request body that carries nothing the API uses; 413 beyond the limit. */
function readIgnoredBody(req: IncomingMessage): Promise<void> {
  const declared = Number(req.headers['content-length'] ?? 0);
  const tooLarge = () =>
    new HttpError(413, 'body_too_large', `A control request needs no body; one of at most ${MAX_CONTROL_BODY_BYTES} bytes is ignored, and this one is larger.`, {
      Connection: 'close',
    });
  if (declared > MAX_CONTROL_BODY_BYTES) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > MAX_CONTROL_BODY_BYTES) {
        req.removeAllListeners('data');
        req.pause();
        reject(tooLarge());
      }
    });
    req.once('end', () => resolve());
    req.once('error', reject);
  });
}

/** The item of an /items/{id}… path, percent-decoded; 400 when the encoding is broken. */
function itemIdOf(url: string | undefined): string {
  const segment = pathOf(url).split('/')[2] ?? '';
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`The item id in the path, ${JSON.stringify(segment)}, is not valid percent-encoding; encode the id with encodeURIComponent.`);
  }
}

/** The item as GET /items/{id} reports it, or 404. */
function requireItem(engine: MonitoredEngine, itemId: string): ItemDetail {
  const detail = engine.itemDetail(itemId);
  if (!detail && engine.listSchedules?.().some((s) => s.id === itemId)) {
    throw new HttpError(404, 'not_found', `${JSON.stringify(itemId)} is a schedule template, not an item; GET /schedules lists it, and its occurrences are items "${itemId}@<time>Z".`);
  }
  if (!detail) throw new HttpError(404, 'not_found', `No item with id ${JSON.stringify(itemId)}; GET /items lists the known items.`);
  return detail;
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

/**
 * /openapi.json: the API's description, serialised on the first request and kept. Not at start:
 * building it is some milliseconds of a start a window waits for, and few clients ever ask.
 */
function addOpenApiRoute(app: Router, describe: () => string): void {
  let openApiText: string | undefined;
  app.get('/openapi.json', (req: IncomingMessage, res: ServerResponse) => {
    rejectAnyParams(req.url);
    openApiText ??= describe();
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
      new HttpError(404, 'not_found', `No such path ${JSON.stringify(pathOf(req.url))}; paths: /stats, /health, /status, /logs, /items, /items/{id}, /schedules, /events, /metrics, /openapi.json (and with a token, POST /items, /items/{id}/cancel|retry|hold|release, /engine/start|stop|poll).`),
    );
  });

  // The Router routes thrown errors (and rejected promises) here: the process never crashes.
  app.use((error: unknown, _req: IncomingMessage, res: ServerResponse, _next: NextFunction) => {
    // Express's router throws a URIError (status 400) for a path parameter it cannot decode: that
    // is the client's mistake, not a bug to log with a stack trace.
    if (error instanceof URIError && (error as URIError & { status?: number }).status === 400) {
      error = badRequest('The path is not valid percent-encoding; encode each path segment with encodeURIComponent.');
    }
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
