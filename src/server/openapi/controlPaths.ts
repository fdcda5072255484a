// The control operations: POSTs that need a token and answer 202, submitting items, and DELETE.

import { commonHeaders, itemIdParameter, json, ok, ref, type Operation, type PathItem } from './parts';

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
export function submitOperation(): Operation {
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

export function controlPaths(): Record<string, PathItem> {
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

/** DELETE /items/{id}: the one control request that is not a POST. */
export function removeOperation(): Operation {
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
