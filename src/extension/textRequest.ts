// A plain-text GET of the engine's API (an attempt's output), optionally one byte range of it.
// No `vscode` here: EngineClient uses it, and the unit tests run it against a real engine.
import type { ErrorBody } from '../shared/api';
import type { TextResponse } from './engineConnection';
import { headerOf, requestText } from './httpRequest';

export interface TextRequestOptions {
  /** A `Range` header value, e.g. `bytes=0-65535` or `bytes=-49152`. */
  range?: string;
  token?: string;
  timeoutMs: number;
}

/**
 * Resolves with the text and, for a 206 or 416, the full size from `Content-Range`; rejects with
 * the engine's own message for an error answer (404 unknown item or attempt, 410 pruned).
 */
export async function getText(base: string, pathAndQuery: string, opts: TextRequestOptions): Promise<TextResponse> {
  const headers: Record<string, string> = { Accept: 'text/plain' };
  if (opts.range) headers.Range = opts.range;
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  const get = () => requestText(base + pathAndQuery, opts.timeoutMs, { headers });
  // One retry, as EngineClient's JSON reads do: a pooled keep-alive socket to an engine that was
  // just restarted on the same port fails once.
  const res = await get()
    .catch(get)
    .catch((err: unknown) => {
      throw new Error(`The engine at ${base} is not reachable (${err instanceof Error ? err.message : String(err)}).`);
    });
  const totalBytes = contentRangeTotal(headerOf(res.headers, 'content-range') ?? null);
  // 416: the range starts at or beyond the end, which for an attempt with no output yet is any range.
  if (res.status === 416) return { status: 416, text: '', totalBytes: totalBytes ?? 0 };
  const text = res.text;
  if (res.status < 200 || res.status >= 300) {
    let message = res.statusText;
    try {
      message = (JSON.parse(text) as ErrorBody).error.message || message;
    } catch {
      // not our JSON error body: keep the status text
    }
    throw new Error(`The engine refused ${pathAndQuery}: HTTP ${res.status} ${message}`);
  }
  return { status: res.status, text, totalBytes };
}

/** The size after the slash of a `Content-Range` (`bytes 0-99/1234`); undefined when absent or unknown. */
export function contentRangeTotal(header: string | null): number | undefined {
  const m = header ? /\/(\d+)\s*$/.exec(header) : null;
  return m ? Number(m[1]) : undefined;
}
