// HTTP helpers for the server tests: plain node:http requests with full control of headers (Host,
// Origin, Authorization...), a tiny server-sent-events reader, and response validation against
// the served OpenAPI document.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';

export interface HttpResult {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** Parsed body when it is JSON, else undefined. */
  json: unknown;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  /** Send no Host header at all (node:http adds one otherwise). */
  omitHost?: boolean;
  /** A request body, sent as is. */
  body?: string | Buffer;
}

/** One request to `base` + `path` (path may include a query string; sent as is). */
export function request(base: string, path: string, options: RequestOptions = {}): Promise<HttpResult> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port,
        method: options.method ?? 'GET',
        path,
        headers: options.headers,
        setHost: !options.omitHost,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text === '' ? undefined : JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/** A server-sent-events reader with just enough of the spec for these tests. */
export class SseClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  status = 0;
  headers: IncomingHttpHeaders = {};
  closed = false;
  private buffer = '';
  private waiters: (() => void)[] = [];
  private req!: ReturnType<typeof httpRequest>;

  static open(base: string, path = '/events', headers: Record<string, string> = {}): Promise<SseClient> {
    const client = new SseClient();
    const url = new URL(base);
    return new Promise((resolve, reject) => {
      client.req = httpRequest({ host: url.hostname, port: url.port, path, headers, agent: false }, (res) => {
        client.status = res.statusCode ?? 0;
        client.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => client.feed(chunk));
        res.on('close', () => {
          client.closed = true;
          client.notify();
        });
        resolve(client);
      });
      client.req.on('error', (error) => {
        client.closed = true;
        client.notify();
        reject(error);
      });
      client.req.end();
    });
  }

  private feed(chunk: string): void {
    // Search only the new part for the blank line ending an event (big events arrive in many chunks).
    const from = Math.max(0, this.buffer.length - 1);
    this.buffer += chunk;
    let start = 0;
    let end = this.buffer.indexOf('\n\n', from);
    for (; end >= 0; end = this.buffer.indexOf('\n\n', start)) {
      const block = this.buffer.slice(start, end);
      start = end + 2;
      const event: SseEvent = { event: 'message', data: '' };
      const data: string[] = [];
      let isEvent = false;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          this.comments.push(line.slice(1).trim());
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event.event = value;
        else if (field === 'data') data.push(value);
        else if (field === 'id') event.id = value;
        else continue;
        isEvent = true;
      }
      if (isEvent && data.length > 0) {
        event.data = data.join('\n');
        this.events.push(event);
      }
    }
    this.buffer = this.buffer.slice(start);
    this.notify();
  }

  private notify(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves when `predicate` holds for the events received so far; rejects after `timeoutMs`. */
  async waitFor(predicate: (events: SseEvent[]) => boolean, timeoutMs = 3000, what = 'events'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.events)) {
      if (this.closed) throw new Error(`stream closed while waiting for ${what}; got ${JSON.stringify(this.events.map((e) => e.event))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.events.map((e) => e.event))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async waitClosed(timeoutMs = 3000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error('stream did not close');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  named(name: string): SseEvent[] {
    return this.events.filter((e) => e.event === name);
  }

  close(): void {
    this.req.destroy();
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Validates values against the served OpenAPI document with Ajv (JSON Schema 2020-12, as OpenAPI
 * 3.1 uses). `strict` additionally forbids properties the document does not describe, so a field
 * the server sends undocumented fails the tests (the served document itself stays open to
 * additions, so clients must ignore fields they do not know).
 */
export class OpenApiChecker {
  private readonly ajv: InstanceType<typeof Ajv2020>;
  private readonly cache = new Map<string, ValidateFunction>();

  constructor(readonly document: Record<string, any>) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(this.ajv);
    const tightened = structuredClone(document);
    forbidExtraProperties(tightened.components.schemas);
    this.ajv.addSchema({ $id: 'api', components: tightened.components, paths: tightened.paths });
  }

  /** The operation's response object for a status, with a components.responses $ref resolved. */
  response(path: string, status: number, method = 'get'): Record<string, any> {
    const operation = this.document.paths[path]?.[method];
    if (!operation) throw new Error(`OpenAPI document has no ${method} ${path}`);
    let response = operation.responses[String(status)];
    if (!response) throw new Error(`OpenAPI document has no ${status} response for ${method} ${path}`);
    if (response.$ref) response = this.resolve(response.$ref);
    return response;
  }

  resolve(ref: string): any {
    return ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((node: any, key) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], this.document);
  }

  /** Validates a body against the JSON schema the document gives for that path and status. */
  assertBody(path: string, status: number, body: unknown, method = 'get'): void {
    const response = this.response(path, status, method);
    const content = response.content?.['application/json; charset=utf-8'];
    if (!content) throw new Error(`no JSON content documented for ${status} ${path}`);
    this.assertSchema(content.schema, body, `${status} ${path}`);
  }

  /** Validates an error body against a components.responses entry, e.g. 'NotFound'. */
  assertSchemaOf(responseName: string, body: unknown): void {
    const response = this.document.components.responses[responseName];
    this.assertSchema(response.content['application/json; charset=utf-8'].schema, body, responseName);
  }

  /** Validates against a component schema, e.g. 'LogEntry'. */
  assertComponent(name: string, value: unknown): void {
    this.assertSchema({ $ref: `#/components/schemas/${name}` }, value, name);
  }

  private assertSchema(schema: Record<string, any>, value: unknown, label: string): void {
    const key = JSON.stringify(schema);
    let validate = this.cache.get(key);
    if (!validate) {
      // Rewrite local refs to point into the document added under $id 'api'.
      const rooted = JSON.parse(key.replace(/"\$ref":"#\//g, '"$ref":"api#/'));
      validate = this.ajv.compile(rooted);
      this.cache.set(key, validate);
    }
    if (!validate(value)) {
      throw new Error(`${label} does not match the OpenAPI document: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 2000)}`);
    }
  }
}

function forbidExtraProperties(node: unknown): void {
  if (Array.isArray(node)) {
    node.forEach(forbidExtraProperties);
  } else if (node && typeof node === 'object') {
    const record = node as Record<string, unknown>;
    if (record.properties && typeof record.properties === 'object' && record.additionalProperties === undefined) {
      record.additionalProperties = false;
    }
    Object.values(record).forEach(forbidExtraProperties);
  }
}
