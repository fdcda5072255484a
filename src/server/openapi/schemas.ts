// The document's component schemas: the shape of every body the API answers with.

import { ENGINE_NAME, ITEM_STATES, LOG_ACTIONS, LOG_LEVELS } from '../../shared/api';
import { MAX_LIMIT } from '../params';
import { count, ERROR_CODES, nullableTime, ref, time } from './parts';

/** When and how an attempt ran: the same words in the launch record and in the attempt's detail. */
function attemptRun() {
  return {
    startedAt: time('When the attempt started.'),
    finishedAt: nullableTime('Null while running.'),
    durationMs: { type: ['integer', 'null'], minimum: 0 },
    outcome: { type: 'string', enum: ['running', 'succeeded', 'failed'] },
    exitCode: { type: ['integer', 'null'] },
    signal: { type: ['string', 'null'] },
  };
}

export function componentSchemas(): Record<string, unknown> {
  return {
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
        ...attemptRun(),
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
        ...attemptRun(),
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
  };
}
