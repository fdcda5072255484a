// Response helpers shared by every handler. They write with writeHead + end instead of Express's
// res.json/res.send: those compute ETags, sniff types and re-set headers on every call, which is
// most of the cost of a small response (see the /stats throughput requirement in server.ts).
import type { ServerResponse } from 'node:http';
import type { ErrorBody } from '../shared/api';

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** Headers every response carries (no caching, no sniffing). Frozen: shared by all requests. */
export const COMMON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
});

/** Error codes in `{ error: { code } }`; the OpenAPI document lists them too. */
export type ErrorCode =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden_host'
  | 'forbidden_origin'
  | 'control_disabled'
  | 'not_found'
  | 'output_pruned'
  | 'range_not_satisfiable'
  | 'method_not_allowed'
  | 'conflict'
  | 'body_too_large'
  | 'unsupported_media_type'
  | 'storage_unavailable'
  | 'internal_error'
  | 'request_timeout'
  | 'headers_too_large'
  | 'too_many_readers';

/** An error a handler throws to answer with a specific status; anything else becomes a 500. */
export class HttpError extends Error {
  /** POST /items: the refused entries, each with its reason (in the body beside the message). */
  entries?: { index: number; reason: string }[];

  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** 400 with a message that says what was wrong and what is allowed. */
export function badRequest(message: string): HttpError {
  return new HttpError(400, 'bad_request', message);
}

/** Serialise once and end: the single place a JSON response is written. */
export function sendJson(res: ServerResponse, status: number, body: unknown, extraHeaders?: Record<string, string>): void {
  sendJsonText(res, status, JSON.stringify(body), extraHeaders);
}

/** For a body already serialised (a /logs page). */
export function sendJsonText(res: ServerResponse, status: number, text: string, extraHeaders?: Record<string, string>): void {
  // writeHead with a literal object is the cheapest way to set headers (no per-header setHeader calls).
  const headers: Record<string, string | number> = {
    'Content-Type': JSON_CONTENT_TYPE,
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  };
  if (extraHeaders) Object.assign(headers, extraHeaders);
  res.writeHead(status, headers);
  res.end(text);
}

/**
 * For a large body already serialised in parts (a /logs page): written part by part under one
 * Content-Length, the same bytes as sendJsonText of their concatenation, without the one large
 * string that the concatenation is (see JSON_PART_CHARS in src/core/logQuery.ts).
 */
export function sendJsonParts(res: ServerResponse, status: number, parts: string[], extraHeaders?: Record<string, string>): void {
  let length = 0;
  for (const part of parts) length += Buffer.byteLength(part);
  const headers: Record<string, string | number> = {
    'Content-Type': JSON_CONTENT_TYPE,
    'Content-Length': length,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  };
  if (extraHeaders) Object.assign(headers, extraHeaders);
  res.writeHead(status, headers);
  // One write to the socket for the headers and every part (as res.end(text) makes one).
  res.cork();
  for (const part of parts) res.write(part);
  res.end();
  res.uncork();
}

export function sendError(res: ServerResponse, error: HttpError): void {
  const body: ErrorBody = { error: error.entries ? { code: error.code, message: error.message, entries: error.entries } : { code: error.code, message: error.message } };
  sendJson(res, error.status, body, error.headers);
}
