// The building blocks every part of the OpenAPI document uses: patterns, small schema helpers, the
// headers and error responses all operations share, and the path item's shape.

const ISO_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$';
/** RFC 3339's date-time, which `format: date-time` alone leaves loose (Ajv also takes `+01` and a space). */
export const RFC3339_PATTERN = '^\\d{4}-\\d{2}-\\d{2}[Tt]\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?([Zz]|[+-]\\d{2}:\\d{2})$';
/** A log entry id as Last-Event-ID carries it; empty means none. */
export const LOG_ID_PATTERN = '^(|0|[1-9][0-9]*)$';
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const count = (description: string) => ({ type: 'integer', minimum: 0, description });
export const time = (description: string) => ({ type: 'string', format: 'date-time', pattern: ISO_PATTERN, description });
export const nullableTime = (description: string) => ({ type: ['string', 'null'], format: 'date-time', pattern: ISO_PATTERN, description });

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

export const commonHeaders = {
  'Cache-Control': { $ref: '#/components/headers/CacheControl' },
  'X-Content-Type-Options': { $ref: '#/components/headers/NoSniff' },
};

export const json = (schema: object) => ({ 'application/json; charset=utf-8': { schema } });

export function ok(description: string, schema: object, extraHeaders: object = {}) {
  return { description, headers: { ...commonHeaders, ...extraHeaders }, content: json(schema) };
}

/** A 200 whose body is text of one media type rather than JSON (the event stream, the metrics). */
export function okText(description: string, mediaType: string) {
  return { description, headers: commonHeaders, content: { [mediaType]: { schema: { type: 'string' } } } };
}

/** Error responses every operation can give (404 and 405 concern the path and method as a whole). */
export const standardErrors = {
  '401': { $ref: '#/components/responses/Unauthorized' },
  '403': { $ref: '#/components/responses/Forbidden' },
  '500': { $ref: '#/components/responses/InternalError' },
};

/**
 * A HEAD operation: the same statuses and headers as GET, no body; its parameters are GET's
 * (copied in buildOpenApiDocument). Every operation answers 400 for an unknown parameter.
 */
export function head(summary: string, okHeaders: object = {}, extra: object = {}) {
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

export const noParams = {
  description: 'These endpoints take no query parameters; any parameter gives 400.',
};

export const linkHeader = {
  Link: {
    description: 'Present when more results match: `<URL of the next page>; rel="next"` (same filters, plus a cursor or offset).',
    schema: { type: 'string', pattern: '^<[^>]+>; rel="next"$' },
  },
};

export interface Operation {
  parameters?: object[];
  [key: string]: unknown;
}

export interface PathItem {
  /** Path parameters, shared by the operations. */
  parameters?: object[];
  get?: Operation;
  head?: Operation;
  post?: Operation;
  delete?: Operation;
}

export const itemIdParameter = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'The item id, percent-encoded (`encodeURIComponent`).',
  schema: { type: 'string', minLength: 1 },
};
