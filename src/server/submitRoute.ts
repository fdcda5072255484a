// POST /items: submitting items over HTTP. The body is JSON (one item object or an array), judged
// by the engine's submission intake (src/core/intake/submit.ts) exactly as a queue file's entries:
// 201 with the items as GET /items/{id} reports them, once they are on disk; 400 or 409 with one
// reason per refused entry, nothing taken. protection() has let through only POSTs with a token.
import type { Router } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ItemDetail, ScheduleSummary } from '../shared/api';
import { isControllable, type MonitoredEngine } from '../core/kernel/monitoredEngine';
import { MAX_SUBMIT_BYTES, SubmitError } from '../core/intake/submit';
import { jsonErrorWithoutContent } from '../core/intake/queueSource';
import { badRequest, HttpError, sendJson } from './respond';

/** The 201 body: the items, and (only when some entries were scheduled) their templates as GET /schedules lists them. */
export interface SubmitResponse {
  items: ItemDetail[];
  schedules?: ScheduleSummary[];
}

export function addSubmitRoute(app: Router, engine: MonitoredEngine, rejectAnyParams: (url: string | undefined) => void): void {
  app.post('/items', async (req: IncomingMessage, res: ServerResponse) => {
    rejectAnyParams(req.url);
    if (!isControllable(engine)) throw new HttpError(403, 'control_disabled', 'This server was started read-only: its engine takes no items.');
    const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (type !== 'application/json') {
      throw new HttpError(415, 'unsupported_media_type', `POST /items takes JSON: send "Content-Type: application/json" with one item object or an array of items${type ? `, not ${type}` : ''}.`);
    }
    const text = await readBody(req);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (err) {
      throw badRequest(`The body is not valid JSON (${jsonErrorWithoutContent(err)}); send one item object or an array of items.`);
    }
    if (body === null || typeof body !== 'object') throw badRequest('The body must be one item object or an array of items.');
    let result;
    try {
      result = await engine.submitItems(body);
    } catch (err) {
      if (!(err instanceof SubmitError)) throw err;
      if (err.kind === 'unavailable') throw new HttpError(503, 'storage_unavailable', err.message);
      const refused = new HttpError(err.kind === 'invalid' ? 400 : 409, err.kind === 'invalid' ? 'bad_request' : 'conflict', err.message);
      refused.entries = err.entries;
      throw refused;
    }
    const body201: SubmitResponse = { items: result.itemIds.map((id) => engine.itemDetail(id)).filter((d): d is ItemDetail => d !== undefined) };
    if (result.templateIds.length > 0) {
      const templates = new Map((engine.listSchedules?.() ?? []).map((s) => [s.id, s]));
      body201.schedules = result.templateIds.flatMap((id) => templates.get(id) ?? []);
    }
    sendJson(res, 201, body201);
  });
}

/** The body as text, at most MAX_SUBMIT_BYTES (413 beyond, said before reading it when declared). */
function readBody(req: IncomingMessage): Promise<string> {
  const tooLarge = () =>
    new HttpError(413, 'body_too_large', `The body is over ${MAX_SUBMIT_BYTES} bytes (1 MiB), the limit of one submission; send the items in several requests.`, { Connection: 'close' });
  if (Number(req.headers['content-length'] ?? 0) > MAX_SUBMIT_BYTES) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > MAX_SUBMIT_BYTES) {
        req.removeAllListeners('data');
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => {
      try {
        resolve(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks)));
      } catch {
        reject(badRequest('The body is not UTF-8 text; send JSON.'));
      }
    });
    req.once('error', reject);
  });
}
