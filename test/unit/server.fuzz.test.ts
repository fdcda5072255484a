// Schema-driven fuzzing: requests generated from the served OpenAPI document, sent to the real
// server over the real engine, and checked against the same document. A disagreement is any of:
// a 5xx; a status the operation does not declare; a body that does not match the declared schema;
// a request the document allows answered 400; a request the document forbids answered 2xx.
//
// Validity is decided by Ajv over each parameter's schema (as a validating proxy or a generated
// client would decide it), after OpenAPI's form deserialisation. Two parameters are semantic and
// not generated as valid: `cursor` (opaque, valid only as copied from a Link header and for the
// same order) and the pairing of `Last-Event-ID` with `lastEventId` (they must agree).
import assert from 'node:assert/strict';
import * as http from 'node:http';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { Engine } from '../../src/core/kernel/engine';
import { startHttpServer, type RunningHttpServer } from '../../src/server';
import { OpenApiChecker, request } from './support/http';
import { nodeItem, settled, TempWorkspace } from './support/workspace';
import { startPostgresOrSkip, type PostgresServer } from './support/postgres';

interface Parameter {
  name: string;
  in: 'query' | 'header' | 'path';
  explode?: boolean;
  schema: Record<string, any>;
}

/** One generated request: the raw query pairs, path parameters and headers, and whether the document allows it. */
interface Case {
  query: [string, string][];
  pathParams: Record<string, string>;
  headers: Record<string, string>;
  allowed: boolean;
  why: string;
}

const SEMANTIC = new Set(['cursor']);
/** Control (POST) is served only with a token: the fuzzed server has one, and every request sends it. */
const TOKEN = 'fuzz-token';
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const RUNS_PER_OPERATION = 250;

// Run on both stores (the one parameter): the PostgreSQL store must answer the same
// generated requests as sql.js, its own dialect (text search, paging) included.
for (const store of ['sql.js', 'postgres'] as const) describe(store === 'sql.js' ? 'server: schema-driven fuzzing against the OpenAPI document' : 'server: schema-driven fuzzing against the OpenAPI document (PostgreSQL store)', function () {
  this.timeout(store === 'sql.js' ? 120_000 : 240_000);
  let pg: PostgresServer | undefined;
  let ws: TempWorkspace;
  let engine: Engine;
  let server: RunningHttpServer;
  let api: OpenApiChecker;
  let document: Record<string, any>;
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  const validators = new Map<string, ValidateFunction>();

  before(async function () {
    if (store === 'postgres') pg = await startPostgresOrSkip(this);
    ws = new TempWorkspace('engine-fuzz-');
    ws.enqueue('mixed.json', [nodeItem('ok', '0', { name: 'Nightly Export' }), nodeItem('bad', 'process.exit(3)', { maxAttempts: 1 })]);
    engine = await Engine.create(ws.options(pg ? { storeUrl: pg.createDatabase('fuzz'), leaseMs: 10_000 } : {}));
    await engine.start();
    await settled(engine);
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0, token: TOKEN });
    document = (await request(server.url, '/openapi.json', { headers: AUTH })).json as Record<string, any>;
    api = new OpenApiChecker(document);
  });
  after(async () => {
    await server?.close();
    await engine?.shutdown(0);
    ws?.dispose();
    pg?.stop();
  });

  function conforms(schema: Record<string, any>, value: unknown): boolean {
    const key = JSON.stringify(schema);
    let validate = validators.get(key);
    if (!validate) validators.set(key, (validate = ajv.compile(schema)));
    return validate(value);
  }

  /** OpenAPI form deserialisation of one raw value, then the schema. */
  function valueConforms(p: Parameter, raw: string): boolean {
    const schema = p.schema;
    if (schema.type === 'array') {
      if (p.explode !== false) throw new Error(`${p.name}: the fuzzer deserialises only explode: false arrays`);
      return conforms(schema, raw.split(','));
    }
    if (schema.type === 'integer') return conforms(schema, /^-?(0|[1-9][0-9]*)$/.test(raw) ? Number(raw) : raw);
    return conforms(schema, raw);
  }

  function validValue(p: Parameter): fc.Arbitrary<string> {
    const s = p.schema;
    // An item id: the known ones, an unknown one (404), or anything (sent percent-encoded).
    if (p.in === 'path') return fc.oneof(fc.constantFrom('ok', 'bad', 'no-such-item'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }));
    if (s.type === 'array') return fc.uniqueArray(fc.constantFrom(...(s.items.enum as string[])), { minLength: 1, maxLength: 4 }).map((a) => a.join(','));
    if (s.enum) return fc.constantFrom(...(s.enum as string[]));
    if (s.type === 'integer') {
      const max = s.maximum ?? Number.MAX_SAFE_INTEGER;
      return fc.oneof(fc.integer({ min: s.minimum ?? 0, max: Math.min(max, 2 ** 31) }), fc.constantFrom(s.minimum ?? 0, max)).map(String);
    }
    if (s.format === 'date-time') return rfc3339();
    if (s.pattern === '^(|0|[1-9][0-9]*)$' && !s.format) return fc.oneof(fc.constant(''), fc.bigInt({ min: 0n, max: 10n ** 25n }).map(String));
    return fc.string({ unit: 'grapheme', minLength: s.minLength ?? 0, maxLength: s.maxLength ?? 50 });
  }

  function anyValue(p: Parameter): fc.Arbitrary<string> {
    const s = p.schema;
    const near: string[] = [];
    if (s.type === 'integer') near.push(String((s.minimum ?? 0) - 1), String((s.maximum ?? 2 ** 53) + 1), '1.5', '+1', '01', '1e3', ' 1', '0x10');
    if (s.enum) near.push(...(s.enum as string[]).map((e) => e.toUpperCase()), `${s.enum[0]} `);
    if (s.type === 'array') near.push(`${s.items.enum[0]},nope`, `${s.items.enum[0]},`);
    if (s.format === 'date-time') near.push('2024-02-30T00:00:00Z', '2024-05-01', '2024-05-01T24:00:00Z', '2024-05-01T12:00:00', '2024-05-01T12:00:61Z', 'yesterday');
    if (s.maxLength !== undefined) near.push('é'.repeat(s.maxLength), '😀'.repeat(s.maxLength), '😀'.repeat(s.maxLength + 1), 'x'.repeat(s.maxLength + 1));
    return fc.oneof(
      { weight: 3, arbitrary: validValue(p) },
      { weight: 2, arbitrary: fc.constantFrom(...(near.length > 0 ? near : [''])) },
      // Any Unicode in a query; a header can carry printable ASCII only.
      { weight: 1, arbitrary: fc.string({ unit: p.in === 'header' ? 'grapheme-ascii' : 'binary', maxLength: 20 }) },
    );
  }

  /** Half the cases use only values the document allows; the rest mix in anything. */
  function caseFor(parameters: Parameter[]): fc.Arbitrary<Case> {
    const valid = parameters.map((p) => (SEMANTIC.has(p.name) ? fc.constant(undefined) : fc.option(validValue(p), { nil: undefined })).map((v) => ({ p, v })));
    const mixed = parameters.map((p) =>
      fc.option(SEMANTIC.has(p.name) ? fc.string({ maxLength: 30 }) : anyValue(p), { nil: undefined, freq: 2 }).map((v) => ({ p, v })),
    );
    return fc
      .oneof(
        fc.tuple(fc.tuple(...valid), fc.constant(null), fc.constant(false)),
        fc.tuple(fc.tuple(...mixed), fc.option(fc.constantFrom('foo', 'levl', 'Limit', 'action[]'), { freq: 4 }), fc.boolean()),
      )
      .map(([values, unknown, duplicate]) => {
        const query: [string, string][] = [];
        const pathParams: Record<string, string> = {};
        const headers: Record<string, string> = {};
        let allowed = true;
        const why: string[] = [];
        for (const { p, v } of values) {
          if (v === undefined) continue;
          if (p.in === 'header') headers[p.name] = v;
          else if (p.in === 'path') pathParams[p.name] = v;
          else query.push([p.name, v]);
          // A semantic parameter is valid only by luck (a random cursor that decodes): never.
          const ok = !SEMANTIC.has(p.name) && valueConforms(p, v);
          if (!ok) {
            allowed = false;
            why.push(`${p.name} not allowed`);
          }
        }
        if (unknown) {
          query.push([unknown, '1']);
          allowed = false;
          why.push(`unknown ${unknown}`);
        }
        const single = query.find(([name]) => parameters.find((p) => p.name === name)?.schema.type !== 'array');
        if (duplicate && single) {
          query.push(single);
          allowed = false;
          why.push(`${single[0]} twice`);
        }
        const header = headers['Last-Event-ID'];
        const param = query.find(([n]) => n === 'lastEventId')?.[1];
        if (header !== undefined && param !== undefined && header !== param) {
          allowed = false;
          why.push('Last-Event-ID and lastEventId disagree');
        }
        // A path parameter is never left out: an absent one is a path of its own (another operation).
        for (const p of parameters) {
          if (p.in === 'path' && pathParams[p.name] === undefined) pathParams[p.name] = 'ok';
        }
        return { query, pathParams, headers, allowed, why: why.join('; ') };
      });
  }

  function send(method: string, template: string, c: Case): Promise<{ status: number; type: string; body: string }> {
    const qs = c.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(c.pathParams[name]));
    const url = new URL(server.url);
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: url.hostname, port: url.port, method, path: qs ? `${path}?${qs}` : path, headers: { ...c.headers, ...AUTH, Connection: 'close' } },
        (res) => {
          const type = String(res.headers['content-type'] ?? '');
          if (type.startsWith('text/event-stream')) {
            // A valid /events request opens a stream: the status and headers are the answer.
            res.destroy();
            resolve({ status: res.statusCode!, type, body: '' });
            return;
          }
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, type, body }));
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path}?${qs}: no answer in 10 s`)));
      req.on('error', reject);
      req.end();
    });
  }

  it('the document declares the same parameters and 400 for HEAD as for GET', () => {
    for (const [path, item] of Object.entries<any>(document.paths)) {
      if (!item.get) continue; // a control path: POST only
      assert.deepEqual(item.head?.parameters ?? [], item.get.parameters ?? [], `HEAD ${path} parameters`);
      assert.equal(Boolean(item.head?.responses['400']), Boolean(item.get.responses['400']), `HEAD ${path} 400`);
    }
  });

  it(`sends ${RUNS_PER_OPERATION} generated requests per operation and finds no disagreement`, async () => {
    const disagreements: string[] = [];
    let sent = 0;
    for (const [path, item] of Object.entries<any>(document.paths)) {
      for (const method of ['get', 'head', 'post'] as const) {
        const operation = item[method];
        if (!operation) continue;
        const parameters = (operation.parameters ?? []) as Parameter[];
        const cases = fc.sample(caseFor(parameters), { numRuns: RUNS_PER_OPERATION, seed: 20261123 });
        for (const c of cases) {
          const res = await send(method.toUpperCase(), path, c);
          sent++;
          const label = `${method.toUpperCase()} ${path} ${JSON.stringify(c.pathParams)} ${JSON.stringify(c.query)} ${JSON.stringify(c.headers)} → ${res.status}`;
          const declared = operation.responses[String(res.status)];
          if (res.status >= 500 && !(path === '/health' && res.status === 503)) disagreements.push(`${label}: server error ${res.body.slice(0, 200)}`);
          else if (!declared) disagreements.push(`${label}: status not declared`);
          else if (c.allowed && res.status === 400) disagreements.push(`${label}: the document allows it, the server said ${res.body.slice(0, 300)}`);
          else if (!c.allowed && res.status < 300) disagreements.push(`${label}: the document forbids it (${c.why}), the server answered ${res.status}`);
          else if (method !== 'head' && res.type.startsWith('application/json')) {
            try {
              api.assertBody(path, res.status, JSON.parse(res.body), method);
            } catch (err) {
              disagreements.push(`${label}: ${(err as Error).message.slice(0, 300)}`);
            }
          }
        }
      }
    }
    assert.ok(sent >= RUNS_PER_OPERATION * 10, `${sent} requests sent`);
    assert.deepEqual(disagreements.slice(0, 15), [], `${disagreements.length} of ${sent} requests disagree with the document`);
  });
});

/** RFC 3339 date-times, edge cases included: leap seconds, long fractions, years 0000 and 9999, offsets, lower case. */
function rfc3339(): fc.Arbitrary<string> {
  const two = (n: number) => String(n).padStart(2, '0');
  return fc
    .record({
      year: fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(0, 1, 1970, 2026, 9999)),
      month: fc.integer({ min: 1, max: 12 }),
      day: fc.integer({ min: 1, max: 28 }),
      hour: fc.integer({ min: 0, max: 23 }),
      minute: fc.integer({ min: 0, max: 59 }),
      second: fc.oneof(fc.integer({ min: 0, max: 59 }), fc.constant(60)),
      fraction: fc.option(fc.stringMatching(/^[0-9]{1,10}$/), { nil: undefined }),
      offset: fc.oneof(fc.constantFrom('Z', 'z', '+00:00', '-00:00'), fc.tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([s, h, m]) => `${s}${two(h)}:${two(m)}`)),
      t: fc.constantFrom('T', 't'),
    })
    .map((d) => {
      // A leap second is valid only at 23:59 UTC: move the local time there for the offset.
      let { hour, minute } = d;
      if (d.second === 60) {
        const sign = d.offset.startsWith('-') ? -1 : 1;
        const [oh, om] = /[zZ]/.test(d.offset) ? [0, 0] : d.offset.slice(1).split(':').map(Number);
        const local = (((23 * 60 + 59 + sign * (oh * 60 + om)) % 1440) + 1440) % 1440;
        hour = Math.floor(local / 60);
        minute = local % 60;
      }
      const year = String(d.year).padStart(4, '0');
      return `${year}-${two(d.month)}-${two(d.day)}${d.t}${two(hour)}:${two(minute)}:${two(d.second)}${d.fraction ? `.${d.fraction}` : ''}${d.offset}`;
    });
}
