// The reading operations: GET and HEAD on every endpoint, with their filters and pages.

import { ITEM_STATES, LOG_ACTIONS, LOG_LEVELS } from '../../shared/api';
import { ITEM_ORDERS } from '../../shared/itemFilter';
import { MAX_Q_WORDS, Q_PATTERN } from '../../shared/logFilter';
import { DEFAULT_LIMIT, MAX_ITEM_LENGTH, MAX_LIMIT, MAX_OFFSET, MAX_Q_LENGTH, MAX_SOURCE_LENGTH } from '../params';
import { submitOperation } from './controlPaths';
import { commonHeaders, head, itemIdParameter, json, linkHeader, LOG_ID_PATTERN, noParams, ok, okText, ref, RFC3339_PATTERN, standardErrors, type PathItem } from './parts';

export function readPaths(): Record<string, PathItem> {
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
          '200': okText('The event stream; it stays open until the client or the server closes it.', 'text/event-stream; charset=utf-8'),
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
          '200': okText('The metrics.', 'text/plain; version=0.0.4; charset=utf-8'),
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