// The OpenAPI 3.1 document served at /openapi.json. Written as a plain object (not generated) so
// it reads like the promise it documents; the server's tests validate every response against it,
// so the two cannot drift apart silently.
//
// Objects leave additionalProperties open on purpose: the API may add fields to
// responses, and a client validating with this document must not break when that happens.

import { ENGINE_NAME } from '../../shared/api';
import { MAX_CONTROL_BODY_BYTES } from '../params';
import { controlPaths, removeOperation } from './controlPaths';
import { commonHeaders, json, ref, type PathItem } from './parts';
import { readPaths } from './readPaths';
import { componentSchemas } from './schemas';

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
      schemas: componentSchemas(),
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
