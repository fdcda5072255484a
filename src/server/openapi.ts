// The OpenAPI 3.1 document served at /openapi.json. Written as a plain object (not generated) so
// it reads like the promise it documents; the server's tests validate every response against it,
// so the two cannot drift apart silently.
//
// Objects leave additionalProperties open on purpose: the API may add fields to
// responses, and a client validating with this document must not break when that happens.
import { ENGINE_NAME, ITEM_STATES, LOG_ACTIONS, LOG_LEVELS } from '../shared/api';
import { MAX_Q_WORDS, Q_PATTERN } from '../shared/logFilter';
import { DEFAULT_LIMIT, MAX_CONTROL_BODY_BYTES, MAX_ITEM_LENGTH, MAX_LIMIT, MAX_OFFSET, MAX_Q_LENGTH, MAX_SOURCE_LENGTH } from './params';
import { ITEM_ORDERS } from '../shared/itemFilter';

const ISO_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$';
/** RFC 3339's date-time, which `format: date-time` alone leaves loose (Ajv also takes `+01` and a space). */
const RFC3339_PATTERN = '^\\d{4}-\\d{2}-\\d{2}[Tt]\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?([Zz]|[+-]\\d{2}:\\d{2})$';
/** A log entry id as Last-Event-ID carries it; empty means none. */
const LOG_ID_PATTERN = '^(|0|[1-9][0-9]*)$';
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const count = (description: string) => ({ type: 'integer', minimum: 0, description });
const time = (description: string) => ({ type: 'string', format: 'date-time', pattern: ISO_PATTERN, description });
const nullableTime = (description: string) => ({ type: ['string', 'null'], format: 'date-time', pattern: ISO_PATTERN, description });

export const ERROR_CODES = [
  'bad_request',
  'unauthorized',
  'forbidden_host',
  'forbidden_origin',
  'control_disabled',
  'not_found',
  'output_pruned',
  'range_not_satisfiable',
  'method_not_allowed',
  'conflict',
  'body_too_large',
  'unsupported_media_type',
  'storage_unavailable',
  'internal_error',
  'request_timeout',
  'headers_too_large',
  'too_many_readers',
] as const;

const commonHeaders = {
  'Cache-Control': { $ref: '#/components/headers/CacheControl' },
  'X-Content-Type-Options': { $ref: '#/components/headers/NoSniff' },
};

const json = (schema: object) => ({ 'application/json; charset=utf-8': { schema } });

function ok(description: string, schema: object, extraHeaders: object = {}) {
  return { description, headers: { ...commonHeaders, ...extraHeaders }, content: json(schema) };
}

/** Error responses every operation can give (404 and 405 concern the path and method as a whole). */
const standardErrors = {
  '401': { $ref: '#/components/responses/Unauthorized' },
  '403': { $ref: '#/components/responses/Forbidden' },
  '500': { $ref: '#/components/responses/InternalError' },
};

/**
 * A HEAD operation: the same statuses and headers as GET, no body; its parameters are GET's
 * (copied in buildOpenApiDocument). Every operation answers 400 for an unknown parameter.
 */
function head(summary: string, okHeaders: object = {}, extra: object = {}) {
  return {
    summary,
    responses: {
      '200': { description: 'As GET, without a body.', headers: { ...commonHeaders, ...okHeaders } },
      ...extra,
      '400': { description: 'As GET, without a body.', headers: commonHeaders },
      ...standardErrors,
    },
  };
}

const noParams = {
  description: 'These endpoints take no query parameters; any parameter gives 400.',
};

const linkHeader = {
  Link: {
    description: 'Present when more results match: `<URL of the next page>; rel="next"` (same filters, plus a cursor or offset).',
    schema: { type: 'string', pattern: '^<[^>]+>; rel="next"$' },
  },
};

export function buildOpenApiDocument(version: string, serverUrl: string): Record<string, unknown> {
  const paths = pathItems();
  // HEAD takes exactly GET's parameters: one list, so the two cannot differ.
  for (const item of Object.values(paths)) if (item.get?.parameters && item.head) item.head.parameters = item.get.parameters;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Engine Monitor API',
      version,
      description: [
        'Monitoring API of the Engine Monitor launch engine (the engine is named `' + ENGINE_NAME + '`), and its control over HTTP.',
        '',
        'Reads (GET, HEAD) need no token unless one is configured. Control (POST on `/items/{id}/cancel`, `/retry`, `/hold`, `/release`,',
        '`/engine/start`, `/stop`, `/poll`) is served only when a token is configured, or to a request carrying the terminal token the engine',
        'host tells only the VS Code windows attached to it (they hand it to their integrated terminals as `ENGINE_MONITOR_TOKEN`): without',
        'either every POST answers 403 (code `control_disabled`); with a configured token, a POST without the right',
        '`Authorization: Bearer <token>` answers 401. A POST needs no body;',
        `one of at most ${MAX_CONTROL_BODY_BYTES} bytes is ignored, a larger one answers 413.`,
        '',
        'All times are ISO 8601 UTC with milliseconds, exactly as `Date.prototype.toISOString()` writes them.',
        'Every response (event streams, attempt output and `/metrics` aside) is `application/json; charset=utf-8` and carries',
        '`Cache-Control: no-store` and `X-Content-Type-Options: nosniff`. No CORS headers are sent.',
        '',
        'Protection: the `Host` header must be `127.0.0.1:<port>`, `localhost:<port>` or `[::1]:<port>`',
        '(or `<bound host>:<port>` when bound to another address), else 403; an `Origin` header other than',
        "the server's own origin gives 403; when a token is configured every request needs",
        '`Authorization: Bearer <token>`, else 401.',
        '',
        'Errors share one body, `{ "error": { "code", "message" } }`. Any path not listed here answers 404',
        '(`components.responses.NotFound`); a method a path does not take answers 405 with an `Allow` header:',
        '`GET, HEAD` on reading paths, `POST` on control paths (`components.responses.MethodNotAllowed`). A 500 is a bug.',
        'Endpoints reject unknown query parameters with 400. Below HTTP (malformed requests, headers over 16 KiB,',
        'a request not received within 10 s / 30 s) the server answers 400, 431 or 408 with the same error body and closes the connection.',
      ].join('\n'),
    },
    servers: [{ url: serverUrl }],
    security: [{}, { bearerToken: [] }],
    paths,
    components: {
      securitySchemes: {
        bearerToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'Only when a token is configured (setting `engineMonitor.server.token` or `--token`); then required on every request.',
        },
      },
      headers: {
        CacheControl: { description: 'Always `no-store`.', schema: { type: 'string', const: 'no-store' } },
        NoSniff: { description: 'Always `nosniff`.', schema: { type: 'string', const: 'nosniff' } },
      },
      responses: {
        BadRequest: {
          description: 'A query parameter (or Last-Event-ID) is unknown, repeated, or has a bad value; the message says what is allowed.',
          headers: commonHeaders,
          content: json(ref('Error')),
        },
        Unauthorized: {
          description: 'A token is configured and the request has no `Authorization: Bearer <token>` header or a wrong token.',
          headers: {
            ...commonHeaders,
            'WWW-Authenticate': { description: 'Always `Bearer realm="engine-monitor"`.', schema: { type: 'string', const: 'Bearer realm="engine-monitor"' } },
          },
          content: json(ref('Error')),
        },
        Forbidden: {
          description: 'The `Host` header is not one the server answers to (DNS rebinding protection, code `forbidden_host`), or the `Origin` header is not the server\'s own origin (code `forbidden_origin`).',
          headers: commonHeaders,
          content: json(ref('Error')),
        },
        NotFound: { description: 'No such path (code `not_found`).', headers: commonHeaders, content: json(ref('Error')) },
        MethodNotAllowed: {
          description: 'The path does not take this method (code `method_not_allowed`).',
          headers: {
            ...commonHeaders,
            Allow: { description: '`GET, HEAD` on reading paths, `POST` on control paths, `GET, HEAD, POST` on `/items`.', schema: { type: 'string', enum: ['GET, HEAD', 'POST', 'GET, HEAD, POST'] } },
          },
          content: json(ref('Error')),
        },
        ControlForbidden: {
          description:
            'As `Forbidden`, or (code `control_disabled`) no token is configured and the request did not carry the terminal token: control over HTTP needs one (`--token`, `--token-file`, `ENGINE_MONITOR_TOKEN`, or the setting `engineMonitor.server.token`; VS Code\'s integrated terminals have the terminal token).',
          headers: commonHeaders,
          content: json(ref('Error')),
        },
        ItemNotFound: { description: 'No item with this id (code `not_found`).', headers: commonHeaders, content: json(ref('Error')) },
        Conflict: {
          description: 'The item (or the engine) is not in a state that allows this (code `conflict`): e.g. cancelling a launched item, retrying a pending one, starting an engine whose workspace is not trusted. The message says why.',
          headers: commonHeaders,
          content: json(ref('Error')),
        },
        BodyTooLarge: {
          description: `The request body is over ${MAX_CONTROL_BODY_BYTES} bytes (code \`body_too_large\`); a control request needs none.`,
          headers: commonHeaders,
          content: json(ref('Error')),
        },
        InternalError: { description: 'A bug (code `internal_error`); the details are logged by the engine host.', headers: commonHeaders, content: json(ref('Error')) },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: {
                code: { type: 'string', enum: [...ERROR_CODES] },
                message: { type: 'string', minLength: 1, description: 'What was wrong and what is allowed.' },
                entries: {
                  type: 'array',
                  description: '`POST /items` only (400, 409): each refused entry, by its index in the submitted array (0 for a single object), with the reason.',
                  items: {
                    type: 'object',
                    required: ['index', 'reason'],
                    properties: { index: { type: 'integer', minimum: 0 }, reason: { type: 'string', minLength: 1 } },
                  },
                },
              },
            },
          },
        },
        StatsOverview: {
          type: 'object',
          required: ['total', 'launched', 'pending', 'failed', 'totalLaunches', 'totalFailed', 'lastPollAt', 'held', 'running'],
          properties: {
            total: count('Known items; always launched + pending + failed.'),
            launched: count('Items whose attempt succeeded.'),
            pending: count('Items with no outcome yet: waiting, scheduled by runAt, backing off, blocked by a dependency, held or running.'),
            failed: count('Items whose attempts are exhausted.'),
            totalLaunches: count('Attempts ever started (only grows, survives restarts).'),
            totalFailed: count('Attempts ever failed (only grows, survives restarts).'),
            lastPollAt: nullableTime('Start of the last poll; null only for a database that was never polled.'),
            held: count('Pending items held by the user: never launched until released. Also counted in `pending`.'),
            running: count('Pending items with an attempt running now. Also counted in `pending`.'),
          },
        },
        StatsResponse: {
          type: 'object',
          required: ['overview', 'timestamp'],
          properties: { overview: ref('StatsOverview'), timestamp: time('When the response was produced.') },
        },
        HealthResponse: {
          type: 'object',
          required: ['status', 'engine', 'version', 'timestamp', 'checks'],
          properties: {
            status: { type: 'string', enum: ['healthy', 'degraded', 'unhealthy'] },
            engine: { type: 'string', const: ENGINE_NAME },
            version: { type: 'string', description: "The engine's package.json version." },
            timestamp: time('When the health was evaluated.'),
            checks: {
              type: 'object',
              required: ['database', 'engine'],
              properties: {
                database: { type: 'string', enum: ['ok', 'error'], description: '`error`: the last persist, journal write or query failed.' },
                engine: {
                  type: 'string',
                  enum: ['running', 'stopped', 'restricted', 'stalled'],
                  description: '`stopped` by the user or settings; `restricted`: workspace not trusted; `stalled`: the last poll started more than 3 poll intervals ago.',
                },
              },
            },
          },
        },
        SourceStatus: {
          type: 'object',
          required: ['kind', 'location', 'lastScanAt', 'lastError', 'itemsDiscovered', 'itemsKnown'],
          properties: {
            kind: { type: 'string', enum: ['queue-directory'] },
            location: { type: 'string' },
            lastScanAt: nullableTime('End of the last scan of this source.'),
            lastError: { type: ['string', 'null'] },
            itemsDiscovered: count('Items ingested from this source since the engine started (0 after a restart).'),
            itemsKnown: count('Items known from this source (its files\' items and their schedule occurrences), read from the store, so a restart keeps them.'),
          },
        },
        LaunchRecord: {
          type: 'object',
          required: ['itemId', 'name', 'attempt', 'startedAt', 'finishedAt', 'durationMs', 'outcome', 'exitCode', 'signal', 'error'],
          properties: {
            itemId: { type: 'string' },
            name: { type: 'string' },
            attempt: { type: 'integer', minimum: 1 },
            startedAt: time('When the attempt started.'),
            finishedAt: nullableTime('Null while running.'),
            durationMs: { type: ['integer', 'null'], minimum: 0 },
            outcome: { type: 'string', enum: ['running', 'succeeded', 'failed'] },
            exitCode: { type: ['integer', 'null'] },
            signal: { type: ['string', 'null'] },
            error: { type: ['string', 'null'], description: 'e.g. timeout, ENOENT, interrupted.' },
          },
        },
        StatusResponse: {
          type: 'object',
          required: ['engine', 'scanner', 'stats', 'lastLaunch', 'timestamp', 'database', 'server'],
          properties: {
            engine: {
              type: 'object',
              required: ['name', 'version', 'state', 'startedAt', 'uptimeMs', 'pollIntervalMs', 'concurrency', 'running', 'polls'],
              properties: {
                name: { type: 'string', const: ENGINE_NAME },
                version: { type: 'string' },
                state: { type: 'string', enum: ['running', 'stopped', 'restricted', 'stalled'] },
                startedAt: time('When the engine started.'),
                uptimeMs: count('Milliseconds since startedAt.'),
                pollIntervalMs: { type: 'integer', minimum: 1 },
                concurrency: { type: 'integer', minimum: 1 },
                running: count('Attempts running now.'),
                polls: count('Polls since start.'),
                engineId: { type: 'string', description: 'On a PostgreSQL store (`--store`): this engine\'s id in `fleet`.' },
              },
            },
            fleet: {
              type: 'array',
              description: 'On a PostgreSQL store (`--store`): every engine sharing it, in the order they started. Absent on the sql.js store.',
              items: {
                type: 'object',
                required: ['engineId', 'host', 'pid', 'state', 'startedAt', 'lastHeartbeatAt', 'running', 'workspaces'],
                properties: {
                  engineId: { type: 'string' },
                  host: { type: 'string', description: 'Host name of the machine it runs on.' },
                  pid: { type: 'integer', minimum: 1 },
                  state: {
                    type: 'string',
                    enum: ['running', 'stopped', 'restricted', 'stalled', 'lost'],
                    description: 'As `checks.engine` of its /health, or `lost` once its lease has expired (its running attempts are then interrupted and retried by another engine).',
                  },
                  startedAt: time('When it joined the fleet.'),
                  lastHeartbeatAt: time('When it last renewed its lease (database clock).'),
                  running: count('Attempts it runs now.'),
                  workspaces: {
                    type: 'array',
                    items: { type: 'string' },
                    description: 'Its workspace folders, recorded when it joined: it claims only items whose `cwd` is inside one (empty for an engine of an older version).',
                  },
                },
              },
            },
            scanner: {
              type: 'object',
              required: ['sources', 'lastScanAt', 'lastScanDurationMs', 'scans', 'itemsDiscovered', 'itemsRejected'],
              properties: {
                sources: { type: 'array', items: ref('SourceStatus') },
                lastScanAt: nullableTime('End of the last scan.'),
                lastScanDurationMs: { type: ['integer', 'null'], minimum: 0 },
                scans: count('Scans since start.'),
                itemsDiscovered: count('Items ingested since the engine started.'),
                itemsRejected: count('Files or entries rejected since the engine started.'),
              },
            },
            stats: ref('StatsOverview'),
            lastLaunch: { oneOf: [{ type: 'null' }, ref('LaunchRecord')] },
            services: {
              type: 'array',
              description: 'Every service (`service: true`), by discovery order: starting, ready, or stopped (any other state).',
              items: {
                type: 'object',
                required: ['id', 'name', 'state', 'pid', 'readyAt', 'restarts'],
                properties: {
                  id: { type: 'string' },
                  name: { type: 'string' },
                  state: { type: 'string', enum: [...ITEM_STATES] },
                  pid: { type: ['integer', 'null'], description: 'Its running process on this engine; null when it runs nowhere here.' },
                  readyAt: nullableTime('When its running attempt became ready; null while starting or stopped.'),
                  restarts: count('Times it was started again since it was started (by the engine, or by the user\'s Retry).'),
                },
              },
            },
            timestamp: time('When the response was produced.'),
            database: {
              type: 'object',
              required: ['path', 'sizeBytes', 'lastPersistAt'],
              properties: {
                path: { type: 'string' },
                sizeBytes: count('Size of the last snapshot.'),
                lastPersistAt: nullableTime('When the database was last persisted.'),
                lastError: { type: ['string', 'null'], description: 'The last persist, journal or query error, if any.' },
                recovery: {
                  description:
                    'What the last start had to repair (a corrupt or newer snapshot moved aside, a torn or unreadable journal record), or null when it opened cleanly. The same message is in the log as `database_recovered`.',
                  oneOf: [
                    { type: 'null' },
                    {
                      type: 'object',
                      required: ['at', 'message'],
                      properties: { at: time('When the repair happened.'), message: { type: 'string' } },
                    },
                  ],
                },
              },
            },
            server: {
              type: 'object',
              required: ['url'],
              properties: { url: { type: 'string', format: 'uri', description: 'Base URL of this API.' } },
            },
          },
        },
        LogEntry: {
          type: 'object',
          required: ['id', 'timestamp', 'action', 'level', 'message', 'itemId', 'details'],
          properties: {
            id: { type: 'integer', minimum: 0, description: 'Increasing; also the SSE event id on /events.' },
            timestamp: time('When the entry was written.'),
            action: { type: 'string', enum: [...LOG_ACTIONS] },
            level: { type: 'string', enum: [...LOG_LEVELS] },
            message: { type: 'string' },
            itemId: { type: ['string', 'null'] },
            details: { type: ['object', 'null'], description: 'Action-specific data.' },
            engineId: { type: ['string', 'null'], description: 'On a PostgreSQL store (`--store`): the engine that wrote it.' },
          },
        },
        ItemSummary: {
          type: 'object',
          required: ['id', 'name', 'outcome', 'phase', 'attempts', 'maxAttempts', 'nextAttemptAt', 'source', 'updatedAt', 'lastError', 'state'],
          properties: {
            id: { type: 'string' },
            name: { type: 'string' },
            outcome: { type: 'string', enum: ['launched', 'pending', 'failed'] },
            phase: { type: 'string', enum: ['waiting', 'scheduled', 'backoff', 'running', 'done'], description: 'Finer state within pending; `done` for launched and failed.' },
            attempts: count('Attempts started (since the last manual retry).'),
            maxAttempts: { type: 'integer', minimum: 1 },
            nextAttemptAt: nullableTime('When the next attempt may start (runAt or backoff), if scheduled.'),
            source: { type: 'string', description: 'Where the item came from.' },
            updatedAt: time('Last change of the item.'),
            lastError: { type: ['string', 'null'] },
            lastFinishedAt: nullableTime('When the latest finished attempt finished; null when none has (the queue file\'s CodeLens shows it).'),
            priority: { type: 'integer', minimum: -100, maximum: 100, description: 'Among due items, the higher launches first (default 0).' },
            lastResources: {
              oneOf: [ref('AttemptResources'), { type: 'null' }],
              description: 'What the latest finished attempt cost (as its `resources` in `GET /items/{id}`); null when none finished or it was not measured.',
            },
            state: {
              type: 'string',
              enum: [...ITEM_STATES],
              description: 'The item\'s state: pending ones are waiting, scheduled, running, backoff, held or blocked; a service\'s running attempt is starting, then ready.',
            },
            waitingFor: {
              type: 'array',
              items: { type: 'string' },
              description: 'Only on a blocked item: the ids it still waits for, not launched yet or unknown, in `dependsOn` order.',
            },
            service: {
              type: 'object',
              description: 'Only on a service.',
              required: ['readyAt', 'restarts'],
              properties: {
                readyAt: nullableTime('When its running attempt became ready; null while starting or stopped.'),
                restarts: count('Times it was started again since it was started (by the engine, or by the user\'s Retry).'),
              },
            },
          },
        },
        ItemsResponse: {
          type: 'object',
          required: ['items', 'total', 'limit', 'offset'],
          properties: {
            items: { type: 'array', items: ref('ItemSummary') },
            total: count('Items matching the filters, across all pages.'),
            limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT },
            offset: count('Items skipped.'),
          },
        },
        Schedule: {
          type: 'object',
          description:
            'A template: not an item and not counted. A scheduled one (`schedule`, `timezone`, `overlap`) makes each occurrence an item `<id>@<ISO minute>Z`; a watched one (`watch` instead) makes each settled burst of file changes an item `<id>@<ISO 8601 UTC ms>`.',
          required: ['id', 'nextRunAt', 'lastRunAt', 'lastOutcome', 'enabled'],
          properties: {
            id: { type: 'string', description: 'The template\'s id; hold and release it with `POST /items/{id}/hold|release`.' },
            schedule: { type: 'string', description: 'A scheduled template\'s 5-field cron expression.' },
            timezone: { type: 'string', description: 'The IANA zone it is read in (scheduled templates).' },
            overlap: { type: 'string', enum: ['skip', 'allow'], description: '`skip`: an occurrence due while the previous one is pending is skipped (`schedule_skipped`).' },
            watch: {
              type: 'object',
              description: 'A watched template\'s trigger: the globs (relative to its cwd), the quiet time that settles a burst, and what a burst does while the previous occurrence is pending (`restart`, `queue`, `skip`: `watch_skipped`).',
              required: ['paths', 'debounceMs', 'onChange'],
              properties: {
                paths: { type: 'array', items: { type: 'string' } },
                debounceMs: { type: 'integer', minimum: 0 },
                onChange: { type: 'string', enum: ['restart', 'queue', 'skip'] },
              },
            },
            nextRunAt: nullableTime('The next occurrence; null while the template is held (disabled), and always for a watched template.'),
            lastRunAt: nullableTime('The last occurrence that became an item; null before the first.'),
            lastOutcome: { type: ['string', 'null'], enum: ['launched', 'pending', 'failed', null], description: 'That occurrence\'s outcome so far; null before the first.' },
            enabled: { type: 'boolean', description: 'False while held: no occurrence fires.' },
          },
        },
        ItemDefinition: {
          type: 'object',
          required: ['id', 'name', 'command', 'args', 'shell', 'cwd', 'env', 'timeoutMs', 'maxAttempts', 'runAt', 'schedule', 'dependsOn', 'priority', 'source'],
          properties: {
            id: { type: 'string' },
            name: { type: 'string' },
            command: { type: 'string' },
            args: { type: 'array', items: { type: 'string' } },
            shell: { type: 'boolean' },
            cwd: { type: ['string', 'null'], description: 'The absolute working folder the item launches in.' },
            env: { type: 'object', additionalProperties: { type: 'string' } },
            timeoutMs: { type: 'integer', minimum: 0, description: 'Per-attempt limit; 0 for a service that set none (it runs until it exits or is stopped).' },
            maxAttempts: { type: 'integer', minimum: 1 },
            runAt: nullableTime('Not launched before this time; null: as soon as possible.'),
            schedule: {
              description: 'A schedule template\'s cron expression and zone; null for an item (an occurrence has none: it is an item).',
              oneOf: [
                { type: 'null' },
                {
                  type: 'object',
                  required: ['cron', 'timezone'],
                  properties: { cron: { type: 'string', description: '5-field cron expression.' }, timezone: { type: 'string', description: 'IANA time zone.' } },
                },
              ],
            },
            dependsOn: { type: 'array', items: { type: 'string' }, maxItems: 100, description: 'Ids that must have launched before this item starts; empty: none.' },
            priority: { type: 'integer', minimum: -100, maximum: 100, description: 'Among due items, higher launches first, then discovery order; default 0.' },
            problemMatcher: {
              description:
                'Only when the item has one: its problem matcher as the queue file wrote it: a built-in name ($tsc, $eslint-stylish, $eslint-compact, $gcc, $go, $python), a single-line matcher object, or an array of them.',
            },
            service: { type: 'boolean', enum: [true], description: 'Only on a service.' },
            ready: {
              description: 'Only on a service: its ready probe as the queue file wrote it (`{ port, host? }`, `{ http }`, `{ logPattern }` or `{ command }`); null: ready once it has run 1 s.',
              oneOf: [{ type: 'null' }, { type: 'object' }],
            },
            readyTimeoutMs: { type: 'integer', minimum: 100, maximum: 3_600_000, description: 'Only on a service.' },
            restart: { type: 'string', enum: ['on-failure', 'always', 'never'], description: 'Only on a service.' },
            source: { type: 'string', description: 'The queue file the definition came from, relative to the workspace folder.' },
          },
        },
        AttemptProblem: {
          type: 'object',
          description:
            "A problem the item's problem matcher found in the attempt's output. The engine reads at most 1 MiB of each finished attempt's output (all of it when smaller, else its first 256 KiB and last 768 KiB) and keeps at most 1000 problems.",
          required: ['file', 'line', 'column', 'severity', 'message', 'code'],
          properties: {
            file: { type: 'string', description: "Absolute path: a relative file name in the output resolved against the item's cwd (or the matcher's fileLocation folder)." },
            line: { type: 'integer', minimum: 1 },
            column: { type: ['integer', 'null'], minimum: 1, description: 'Null when the output gives none.' },
            severity: { type: 'string', enum: ['error', 'warning', 'info'] },
            message: { type: 'string' },
            code: { type: ['string', 'null'], description: 'e.g. `2322` for tsc, `no-unused-vars` for eslint, the exception class for $python.' },
          },
        },
        AttemptDetail: {
          type: 'object',
          required: ['attempt', 'startedAt', 'finishedAt', 'durationMs', 'outcome', 'exitCode', 'signal', 'error', 'outputBytes', 'problems', 'resources', 'firstOutputMs', 'slow'],
          properties: {
            attempt: { type: 'integer', minimum: 1, description: 'Its number: 1, 2, …, counted again from 1 after a retry by hand.' },
            startedAt: time('When the attempt started.'),
            finishedAt: nullableTime('Null while running.'),
            durationMs: { type: ['integer', 'null'], minimum: 0 },
            outcome: { type: 'string', enum: ['running', 'succeeded', 'failed'] },
            exitCode: { type: ['integer', 'null'] },
            signal: { type: ['string', 'null'] },
            error: { type: ['string', 'null'], description: 'e.g. `timed out after 1000 ms`, `interrupted`, `cancelled`, `not ready within 60000 ms`.' },
            outputBytes: { type: ['integer', 'null'], minimum: 0, description: 'Bytes of output kept, recorded when the attempt ends; null while it runs (HEAD its output for the size so far) and when none was captured.' },
            problems: { type: 'array', items: ref('AttemptProblem'), description: "What the item's problem matcher found once the attempt finished; empty while it runs and when the item has no matcher." },
            readyAt: nullableTime("Only on a service's attempt: when it became ready (`service_ready`); null while it starts and when it never did."),
            resources: {
              oneOf: [ref('AttemptResources'), { type: 'null' }],
              description: 'What its processes cost, its whole session and process group (children included); null while it runs, where the platform cannot tell (not Linux, no /proc), and for attempts recorded before this was measured.',
            },
            firstOutputMs: { type: ['integer', 'null'], minimum: 0, description: 'From its spawn to its first byte of output (stdout or stderr); null if it printed nothing, and while it runs.' },
            slow: { type: 'boolean', description: 'It took more than twice the median duration of the item\'s attempts before it (the 10 newest, at least 3); logged as `attempt_slow` (warn).' },
            engineId: { type: ['string', 'null'], description: 'On a PostgreSQL store (`--store`): the engine that ran it.' },
          },
        },
        AttemptResources: {
          type: 'object',
          required: ['cpuMs', 'peakRssBytes', 'sampledEveryMs'],
          description: 'Read from Linux\'s /proc where the attempt ran, at least every `sampledEveryMs`; the method and its error are in the README ("Attempt insight").',
          properties: {
            cpuMs: { type: ['integer', 'null'], minimum: 0, description: 'CPU time, user and system, of every process of the group; null when nothing could be measured.' },
            peakRssBytes: { type: ['integer', 'null'], minimum: 0, description: 'The largest resident memory of the group any sample saw; null when the attempt ended before its first sample.' },
            sampledEveryMs: { type: 'integer', minimum: 1, description: 'The longest time between two samples: a shorter peak may be missed.' },
          },
        },
        DurationSummary: {
          type: 'object',
          required: ['count', 'medianMs', 'p90Ms'],
          properties: {
            count: { type: 'integer', minimum: 0, maximum: 100, description: 'Finished attempts counted: the item\'s newest 100 at most.' },
            medianMs: { type: ['integer', 'null'], minimum: 0, description: 'Their median duration; null when there are none.' },
            p90Ms: { type: ['integer', 'null'], minimum: 0, description: 'Their 90th percentile (nearest rank: a duration one of them took); null when there are none.' },
          },
        },
        ItemDetail: {
          type: 'object',
          required: ['item', 'outcome', 'state', 'error', 'attempts', 'durations'],
          properties: {
            item: ref('ItemDefinition'),
            outcome: { type: 'string', enum: ['launched', 'pending', 'failed'] },
            state: { type: 'string', enum: [...ITEM_STATES] },
            error: { type: ['string', 'null'], description: 'Why a failed item failed for good (e.g. `cancelled`, `exited with code 3`); null otherwise.' },
            attempts: { type: 'array', items: ref('AttemptDetail'), description: 'Every attempt, oldest first (those before a retry by hand included).' },
            durations: ref('DurationSummary'),
            waitingFor: {
              type: 'array',
              items: { type: 'string' },
              description: 'On a blocked item: the ids it still waits for, not launched yet or unknown, in `dependsOn` order. On a fleet, on a due item the answering engine cannot start (its `cwd` is outside that engine\'s workspace folders): one sentence saying which engines can, or that none of the live ones can.',
            },
          },
        },
      },
    },
  };
}

interface Operation {
  parameters?: object[];
  [key: string]: unknown;
}

interface PathItem {
  /** Path parameters, shared by the operations. */
  parameters?: object[];
  get?: Operation;
  head?: Operation;
  post?: Operation;
  delete?: Operation;
}

const itemIdParameter = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'The item id, percent-encoded (`encodeURIComponent`).',
  schema: { type: 'string', minLength: 1 },
};

/** A control operation: POST, token required, 202 with `answer`. */
function control(operationId: string, summary: string, description: string, answer: object, itemPath: boolean): Operation {
  return {
    operationId,
    summary,
    description: `${description} Only when a token is configured; the request takes no parameters and needs no body.`,
    security: [{ bearerToken: [] }],
    ...(itemPath ? { parameters: [itemIdParameter] } : {}),
    responses: {
      '202': ok(itemPath ? 'Done; the item as `GET /items/{id}` reports it now.' : 'Done; the `/status` body.', answer),
      '400': { $ref: '#/components/responses/BadRequest' },
      '401': { $ref: '#/components/responses/Unauthorized' },
      '403': { $ref: '#/components/responses/ControlForbidden' },
      ...(itemPath ? { '404': { $ref: '#/components/responses/ItemNotFound' } } : {}),
      '409': { $ref: '#/components/responses/Conflict' },
      '413': { $ref: '#/components/responses/BodyTooLarge' },
      '500': { $ref: '#/components/responses/InternalError' },
    },
  };
}

/** POST /items: items submitted as a queue file's entries, all or none. */
function submitOperation(): Operation {
  const refused = (description: string) => ({ description, headers: commonHeaders, content: json(ref('Error')) });
  return {
    operationId: 'submitItems',
    summary: 'Submit items to launch',
    description:
      'The body (`Content-Type: application/json`, at most 1 MiB) is one item object or an array of 1 to 1000, each written and judged exactly as an entry of a queue file (`schemas/item.schema.json`); an entry without `id` gets one, `api-<ms>-<random>`. ' +
      'The items\' `source` is `api`. An id already known follows the rules of a queue file edited: the same definition changes nothing; another one replaces a pending item that is not running (it starts over) or a failed one (it stays failed until retried); a running or launched item keeps its definition (409). ' +
      'All or none: one refused entry and nothing is taken. The answer comes once the items are on disk; they are launched at once when due. Only when a token is configured; no query parameters.',
    security: [{ bearerToken: [] }],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: { oneOf: [{ type: 'object' }, { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'object' } }] },
        },
      },
    },
    responses: {
      '201': ok('Taken and on disk: the items as `GET /items/{id}` reports them, in the order submitted; entries with `schedule` are templates, listed in `schedules` as `GET /schedules` does.', {
        type: 'object',
        required: ['items'],
        properties: { items: { type: 'array', items: ref('ItemDetail') }, schedules: { type: 'array', items: ref('Schedule') } },
      }),
      '400': refused('The body is not JSON, not items, or an entry is not a valid item (code `bad_request`; `entries` says which and why). Nothing was taken.'),
      '401': { $ref: '#/components/responses/Unauthorized' },
      '403': { $ref: '#/components/responses/ControlForbidden' },
      '409': refused('An entry names an item that is running or launched with another definition, or mixes an item and a schedule template under one id (code `conflict`; `entries` says which and why). Nothing was taken.'),
      '413': refused('The body is over 1 MiB (code `body_too_large`); send the items in several requests.'),
      '415': refused('The body is not `application/json` (code `unsupported_media_type`).'),
      '503': refused('The store cannot be read or written now (code `storage_unavailable`): a fleet\'s database that cannot be reached (nothing taken), or a disk that refuses the journal (taken, kept in memory, written once storage works again). `/health` says when it is back.'),
      '500': { $ref: '#/components/responses/InternalError' },
    },
  };
}

function controlPaths(): Record<string, PathItem> {
  return {
    '/items/{id}/cancel': {
      post: control(
        'cancelItem',
        'Cancel a pending item',
        'A running attempt gets SIGTERM (SIGKILL after 5 s) and is recorded failed with error `cancelled` (`launch_cancelled`); the item fails at once, with no retry, whatever attempts it had left. An attempt recorded but not spawned yet is never spawned. 409 for a launched or failed item.',
        ref('ItemDetail'),
        true,
      ),
    },
    '/items/{id}/retry': {
      post: control('retryItem', 'Retry a failed item', 'Its attempts reset and it is pending again (`item_retried`); 409 for an item that is not failed.', ref('ItemDetail'), true),
    },
    '/items/{id}/restart': {
      post: control(
        'restartItem',
        'Restart a service',
        'A running service\'s processes get SIGTERM (SIGKILL after 5 s) and it starts again at once (`service_restarted`, `byUser`); a failed service is retried, one that exited 0 starts again. 409 for an item that is not a service, or a service that is still waiting to start.',
        ref('ItemDetail'),
        true,
      ),
    },
    '/items/{id}/hold': {
      post: control(
        'holdItem',
        'Hold a pending item',
        'It is not launched until released (state `held`, whatever its runAt); a running attempt goes on. Holding a held item changes nothing (202). 409 for a launched or failed item. On a schedule template: it is disabled (no occurrence fires) and the answer is its `Schedule`.',
        { oneOf: [ref('ItemDetail'), ref('Schedule')] },
        true,
      ),
    },
    '/items/{id}/release': {
      post: control(
        'releaseItem',
        'Release a held item',
        'It launches when due (at once if it already is). Releasing an item that is not held changes nothing (202). 409 for a launched or failed item. On a schedule template: it is enabled again from now (occurrences it was held through are not caught up) and the answer is its `Schedule`.',
        { oneOf: [ref('ItemDetail'), ref('Schedule')] },
        true,
      ),
    },
    '/items/{id}/run-again': {
      post: control(
        'runItemAgain',
        'Run a launched item again',
        'Its attempts reset and it is pending again (`item_retried`, with `previousOutcome: "launched"`); its earlier attempts stay listed. 409 for an item that is not launched (a failed one is retried).',
        ref('ItemDetail'),
        true,
      ),
    },
    '/engine/clear-finished': {
      post: control(
        'clearFinished',
        'Remove every launched and failed item',
        'As `DELETE /items/{id}` for each finished item (an `item_removed` entry each); pending and running items stay. `total`, `launched` and `failed` drop; `totalLaunches`, `totalFailed` and the log keep the history.',
        ref('StatusResponse'),
        false,
      ),
    },
    '/engine/start': {
      post: control('startEngine', 'Start (or resume) launching', '409 while the workspace is not trusted.', ref('StatusResponse'), false),
    },
    '/engine/stop': {
      post: control('stopEngine', 'Stop launching', 'Running attempts finish and are recorded; services are stopped (in reverse dependency order) and start again when the engine does.', ref('StatusResponse'), false),
    },
    '/engine/poll': {
      post: control('pollEngine', 'Poll the item sources now', 'Answers once the poll is done.', ref('StatusResponse'), false),
    },
  };
}

function pathItems(): Record<string, PathItem> {
  const read = readPaths();
  return {
    ...read,
    '/items/{id}': { ...read['/items/{id}'], delete: removeOperation() },
    ...controlPaths(),
  };
}

/** DELETE /items/{id}: the one control request that is not a POST. */
function removeOperation(): Operation {
  const { responses, ...rest } = control(
    'removeItem',
    'Remove an item',
    'Whatever its state: a running item is cancelled first (its process gets SIGTERM, SIGKILL after 5 s) and the answer comes once its process has exited. The item and its attempts (with their output) are gone: `GET /items/{id}` answers 404, `total` and its outcome\'s counter drop, and an `item_removed` entry is logged; `totalLaunches`, `totalFailed` and its log entries keep its history. A queue file that names the id again (a new or changed file) brings it back as a new item. 409 for a schedule template (remove its entry from its queue file) and for an item another engine of a fleet is running.',
    ref('ItemDetail'),
    true,
  );
  const { '202': _accepted, ...errors } = responses as Record<string, unknown>;
  return { ...rest, responses: { '204': { description: 'Removed; no body.' }, ...errors } };
}

function readPaths(): Record<string, PathItem> {
  return {
    '/stats': {
      get: {
        operationId: 'getStats',
        summary: 'Item and launch counters',
        description: 'Served from counters kept up to date, never from a scan of the items. ' + noParams.description,
        responses: { '200': ok('Counters.', ref('StatsResponse')), '400': { $ref: '#/components/responses/BadRequest' }, ...standardErrors },
      },
      head: head('Counters, headers only'),
    },
    '/health': {
      get: {
        operationId: 'getHealth',
        summary: 'Liveness and readiness',
        description:
          '`unhealthy` (HTTP 503) if the database check is `error` or the engine is `stalled`; else `degraded` if the engine is `stopped` or `restricted`; else `healthy`. ' +
          noParams.description,
        responses: {
          '200': ok('Healthy or degraded.', ref('HealthResponse')),
          '503': ok('Unhealthy: the same body, with status `unhealthy`.', ref('HealthResponse')),
          '400': { $ref: '#/components/responses/BadRequest' },
          ...standardErrors,
        },
      },
      head: head('Health, headers only', {}, { '503': { description: 'Unhealthy.', headers: commonHeaders } }),
    },
    '/status': {
      get: {
        operationId: 'getStatus',
        summary: 'Detailed engine, scanner, database and server status',
        description: noParams.description,
        responses: { '200': ok('Status.', ref('StatusResponse')), '400': { $ref: '#/components/responses/BadRequest' }, ...standardErrors },
      },
      head: head('Status, headers only'),
    },
    '/logs': {
      get: {
        operationId: 'getLogs',
        summary: 'Log entries, newest first by default, with keyset pagination',
        description:
          'Filters combine with AND. When more entries match than `limit`, the response has a `Link: <…>; rel="next"` header whose URL repeats the (normalised) filters and adds a `cursor`. ' +
          'Unknown parameters, unknown actions or levels, bad dates, a `limit` out of range, a bad cursor, or a single-valued parameter given twice give 400.',
        parameters: [
          {
            name: 'action',
            in: 'query',
            description:
              'Only these actions, comma-separated (`action=a,b`), the form the `Link` URLs use. The server also accepts the parameter repeated (`action=a&action=b`), which OpenAPI cannot describe beside the comma form.',
            style: 'form',
            explode: false,
            schema: { type: 'array', items: { type: 'string', enum: [...LOG_ACTIONS] } },
          },
          { name: 'level', in: 'query', description: 'Minimum level (debug < info < warn < error).', schema: { type: 'string', enum: [...LOG_LEVELS] } },
          { name: 'item', in: 'query', description: 'Only entries of this item id.', schema: { type: 'string', minLength: 1, maxLength: MAX_ITEM_LENGTH } },
          {
            name: 'since',
            in: 'query',
            description:
              'Inclusive lower bound on `timestamp`: an RFC 3339 date-time with a time zone (`Z` or `±hh:mm`; encode `+` as `%2B`). ' +
              'Fraction digits beyond milliseconds are dropped; a leap second (`23:59:60` UTC) is the last millisecond of its minute; an instant before 0000-01-01 or after 9999-12-31 is taken as the first or last one. ' +
              'The server also accepts the ISO 8601 forms `hh:mm` (no seconds), a `,` fraction and `±hhmm`.',
            schema: { type: 'string', format: 'date-time', pattern: RFC3339_PATTERN },
          },
          { name: 'until', in: 'query', description: 'Exclusive upper bound on `timestamp`, same format as `since`.', schema: { type: 'string', format: 'date-time', pattern: RFC3339_PATTERN } },
          {
            name: 'q',
            in: 'query',
            description:
              'Text search: split into words (runs of letters and digits) and lower-cased; every word must start a word of `message`, case-insensitive (`q=exit code` matches "exited with code 3"). ' +
              `At most ${MAX_Q_WORDS} words. Empty or without letters and digits: no filter.`,
            schema: { type: 'string', maxLength: MAX_Q_LENGTH, pattern: Q_PATTERN },
          },
          { name: 'order', in: 'query', description: 'By id: `desc` (newest first) or `asc`.', schema: { type: 'string', enum: ['desc', 'asc'], default: 'desc' } },
          { name: 'limit', in: 'query', description: 'Page size.', schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT } },
          {
            name: 'cursor',
            in: 'query',
            description: 'Opaque; copy it from the previous page\'s `Link` header. It is tied to the `order` it was issued for.',
            schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,200}$' },
          },
        ],
        responses: {
          '200': ok('Matching entries in the requested order (at most `limit`).', { type: 'array', items: ref('LogEntry') }, linkHeader),
          '400': { $ref: '#/components/responses/BadRequest' },
          ...standardErrors,
        },
      },
      head: head('Logs, headers only', linkHeader),
    },
    '/schedules': {
      get: {
        operationId: 'getSchedules',
        summary: 'Scheduled and watched templates with their next and last run',
        description: 'Takes no query parameters. In id order.',
        responses: {
          '200': ok('Every template, scheduled or watched.', { type: 'array', items: ref('Schedule') }),
          '400': { $ref: '#/components/responses/BadRequest' },
          ...standardErrors,
        },
      },
      head: head('Schedules, headers only'),
    },
    '/items': {
      get: {
        operationId: 'getItems',
        summary: 'Known items with their outcome (beside the four monitoring endpoints, for the UI)',
        description: 'In discovery order (or `order`), paged with `limit` and `offset`; a `Link: <…>; rel="next"` header is present when more items follow. Filters combine with AND.',
        parameters: [
          { name: 'outcome', in: 'query', description: 'Only items with this outcome.', schema: { type: 'string', enum: ['launched', 'pending', 'failed'] } },
          {
            name: 'state',
            in: 'query',
            description:
              'Only items in one of these states, comma-separated (`state=running,held`); the server also accepts the parameter repeated. `blocked`: waiting for a dependency to launch (or a service to be ready); `starting`, `ready`: services.',
            style: 'form',
            explode: false,
            schema: { type: 'array', items: { type: 'string', enum: [...ITEM_STATES] } },
          },
          {
            name: 'q',
            in: 'query',
            description:
              'Text search: split into words (runs of letters and digits) and lower-cased; every word must start a word of the item\'s id, name, command or args, case-insensitive (`q=build 42` finds `build-42`). ' +
              `At most ${MAX_Q_WORDS} words. Empty or without letters and digits: no filter.`,
            schema: { type: 'string', maxLength: MAX_Q_LENGTH, pattern: Q_PATTERN },
          },
          {
            name: 'source',
            in: 'query',
            description: 'Only items read from this queue file: its path relative to its workspace folder, `/`-separated, exactly as items\' `source` gives it (`.engine/queue/jobs.jsonl`). The editor\'s CodeLens reads a file\'s items this way.',
            schema: { type: 'string', minLength: 1, maxLength: MAX_SOURCE_LENGTH },
          },
          {
            name: 'order',
            in: 'query',
            description:
              '`discovery` (default); `launch`: the order the engine will launch pending items in (those due now as dispatch takes them: higher `priority` first, then the longest due, then discovery; then the others by when they become due); ' +
              '`recent`: the latest change first (a launched item by the end of its last attempt).',
            schema: { type: 'string', enum: [...ITEM_ORDERS], default: 'discovery' },
          },
          { name: 'limit', in: 'query', description: 'Page size.', schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT } },
          { name: 'offset', in: 'query', description: 'Items to skip.', schema: { type: 'integer', minimum: 0, maximum: MAX_OFFSET, default: 0 } },
        ],
        responses: {
          '200': ok('One page of items.', ref('ItemsResponse'), linkHeader),
          '400': { $ref: '#/components/responses/BadRequest' },
          ...standardErrors,
        },
      },
      head: head('Items, headers only', linkHeader),
      post: submitOperation(),
    },
    '/items/{id}': {
      get: {
        operationId: 'getItem',
        summary: 'One item: its definition with defaults filled in, its state and every attempt',
        description: 'Takes no query parameters.',
        parameters: [itemIdParameter],
        responses: {
          '200': ok('The item.', ref('ItemDetail')),
          '400': { $ref: '#/components/responses/BadRequest' },
          '404': { $ref: '#/components/responses/ItemNotFound' },
          ...standardErrors,
        },
      },
      head: head('Item, headers only', {}, { '404': { description: 'No item with this id.', headers: commonHeaders } }),
    },
    '/events': {
      get: {
        operationId: 'getEvents',
        summary: 'Server-sent events for live UIs',
        description: [
          'A `text/event-stream`. On connect: one `stats` and one `health` event. Then:',
          '- `log` (data: a LogEntry, SSE `id`: the entry id) for every new log entry;',
          '- `stats` (data: StatsOverview) when counters change, at most 4 per second, the last change always sent;',
          '- `health` (data: HealthResponse) when the health status or a check changes;',
          '- a comment line (`: heartbeat`) every 15 s.',
          'With `Last-Event-ID` (or the `lastEventId` parameter), every log entry after that id is sent first, oldest first, then live ones, without gaps or duplicates.',
          'A client that falls behind by more than 1 MiB gets no new log events queued; it catches up (same order, no gaps) once it reads again. A client that does not read for 30 s is disconnected; it can resume with Last-Event-ID.',
          'The event data schemas are listed in `x-sse-events`.',
        ].join('\n'),
        parameters: [
          { name: 'Last-Event-ID', in: 'header', description: 'Resume log events after this id (sent by EventSource on reconnect; empty: start live). Any size: an id past every entry resumes live.', schema: { type: 'string', pattern: LOG_ID_PATTERN } },
          { name: 'lastEventId', in: 'query', description: 'The same, for clients that cannot set headers (empty: start live).', schema: { type: 'string', pattern: LOG_ID_PATTERN } },
        ],
        'x-sse-events': {
          log: ref('LogEntry'),
          stats: ref('StatsOverview'),
          health: ref('HealthResponse'),
        },
        responses: {
          '200': {
            description: 'The event stream; it stays open until the client or the server closes it.',
            headers: commonHeaders,
            content: { 'text/event-stream; charset=utf-8': { schema: { type: 'string' } } },
          },
          '400': { $ref: '#/components/responses/BadRequest' },
          ...standardErrors,
        },
      },
      head: head('Event stream headers only (no stream is opened)'),
    },
    '/items/{id}/attempts/{n}/output': {
      parameters: [
        { name: 'id', in: 'path', required: true, description: 'The item id, percent-encoded.', schema: { type: 'string', minLength: 1 } },
        {
          name: 'n',
          in: 'path',
          required: true,
          description: 'The attempt number, from 1 (after a retry by hand, the latest attempt with that number). Anything but a positive integer is no attempt (404).',
          schema: { type: 'string' },
        },
      ],
      get: {
        operationId: 'getAttemptOutput',
        summary: "An attempt's captured output (stdout and stderr in arrival order)",
        description: [
          'The bytes exactly as the process wrote them (invalid UTF-8 included), as far as they exist: a running attempt gives what it printed so far.',
          'Per attempt at most `engineMonitor.output.maxBytesPerAttempt` (`--output-max-bytes`) is kept: beyond it the first quarter and the last three quarters, joined by one line',
          '`[engine-monitor: <n> bytes of output dropped here]` (with a newline before and after). A capture cut short (disk full) ends with a line `[engine-monitor: output cut here, …]`.',
          '',
          '`Range: bytes=a-b`, `bytes=a-` or `bytes=-n` (one range) answers 206 with `Content-Range`; a range that starts past the end answers 416; a Range header in another form (several ranges, other units) is ignored (200).',
          '`follow=true` keeps the response open (chunked) and sends new output as it arrives, until the attempt ends; Range is ignored then. A follower that falls more than the kept tail behind gets a dropped-output line where bytes were skipped.',
          'The 404 error covers an unknown item, an attempt number it never reached, and an attempt that never started a process; 410: retention deleted the output (the log entries may remain).',
        ].join('\n'),
        parameters: [
          { name: 'stream', in: 'query', description: "Only this stream (with the engine's own marker lines).", schema: { type: 'string', enum: ['stdout', 'stderr'] } },
          { name: 'follow', in: 'query', description: '`true`: stream new output until the attempt ends.', schema: { type: 'string', enum: ['true', 'false'], default: 'false' } },
          {
            name: 'format',
            in: 'query',
            description:
              '`text` (default): the bytes as printed. `runs`: the same bytes framed by stream, for clients that colour stderr: each run of one stream is a line `<stdout|stderr|engine> <length>` (ending in `\\n`) followed by exactly `<length>` bytes, as `application/octet-stream`; `engine` runs are the marker lines. Range is ignored with `runs`; `follow` and `stream` work.',
            schema: { type: 'string', enum: ['text', 'runs'], default: 'text' },
          },
        ],
        responses: {
          '200': {
            description: 'The output (all of it, or as far as it exists now).',
            headers: {
              ...commonHeaders,
              'Accept-Ranges': { description: 'Always `bytes` (absent when following).', schema: { type: 'string', const: 'bytes' } },
            },
            content: { 'text/plain; charset=utf-8': { schema: { type: 'string' } }, 'application/octet-stream': { schema: { type: 'string' } } },
          },
          '206': {
            description: 'The requested range of the output.',
            headers: { ...commonHeaders, 'Content-Range': { description: '`bytes <first>-<last>/<length>`.', schema: { type: 'string', pattern: '^bytes \\d+-\\d+/\\d+$' } } },
            content: { 'text/plain; charset=utf-8': { schema: { type: 'string' } } },
          },
          '400': { $ref: '#/components/responses/BadRequest' },
          '404': { description: 'No such item, attempt, or the attempt never started a process (code `not_found`).', headers: commonHeaders, content: json(ref('Error')) },
          '410': { description: 'The output was deleted by retention (code `output_pruned`).', headers: commonHeaders, content: json(ref('Error')) },
          '503': {
            description:
              'As many output reads and follows are open as the engine serves at once (code `too_many_readers`); try again after `Retry-After` seconds.',
            headers: { ...commonHeaders, 'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'string', pattern: '^\\d+$' } } },
            content: json(ref('Error')),
          },
          '416': {
            description: 'The range starts past the end of the output (code `range_not_satisfiable`).',
            headers: { ...commonHeaders, 'Content-Range': { description: '`bytes */<length>`.', schema: { type: 'string', pattern: '^bytes \\*/\\d+$' } } },
            content: json(ref('Error')),
          },
          ...standardErrors,
        },
      },
      head: head('Output headers only', {}, {
        '206': { description: 'As GET, without a body.', headers: commonHeaders },
        '404': { description: 'As GET, without a body.', headers: commonHeaders },
        '410': { description: 'As GET, without a body.', headers: commonHeaders },
        '416': { description: 'As GET, without a body.', headers: commonHeaders },
        '503': { description: 'As GET, without a body.', headers: commonHeaders },
      }),
    },
    '/metrics': {
      get: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        description: [
          'The Prometheus text exposition format 0.0.4, for a Prometheus scrape job (send the token with the job\'s `authorization` setting when one is configured).',
          'Read from the same counters as `/stats` and `/health` at the instant of the scrape, never from the database:',
          '`engine_monitor_items{outcome="launched|pending|failed"}`, `engine_monitor_launches_total` and `engine_monitor_launch_failures_total` (totalLaunches and totalFailed: kept across restarts),',
          '`engine_monitor_running`, `engine_monitor_held`, `engine_monitor_health_status{status="healthy|degraded|unhealthy"}` (1 for the current status, 0 for the others),',
          '`engine_monitor_last_poll_timestamp_seconds` (0 if never polled), and the histogram `engine_monitor_attempt_duration_seconds` (buckets from 10 ms to 1 h, every attempt that got its outcome since the engine process started),',
          'and the histograms of what attempts cost, `engine_monitor_attempt_peak_rss_bytes` (1 MiB to 16 GiB) and `engine_monitor_attempt_cpu_seconds` (10 ms to 1 h), for the attempts that were measured;',
          "then the process's metrics (`process_*`, `nodejs_*`).",
          noParams.description,
        ].join('\n'),
        responses: {
          '200': {
            description: 'The metrics.',
            headers: commonHeaders,
            content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: { type: 'string' } } },
          },
          '400': { $ref: '#/components/responses/BadRequest' },
          ...standardErrors,
        },
      },
      head: head('Metrics, headers only'),
    },
    '/openapi.json': {
      get: {
        operationId: 'getOpenApi',
        summary: 'This document',
        responses: { '200': ok('The OpenAPI 3.1 document.', { type: 'object' }), '400': { $ref: '#/components/responses/BadRequest' }, ...standardErrors },
      },
      head: head('This document, headers only'),
    },
  };
}
