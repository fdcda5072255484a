// The client's commands: each asks the engine over HTTP and prints the answer, as a human table
// or (--json) the API's JSON as it is, and returns the exit code (options.ts lists them).
import { once } from 'node:events';
import type {
  HealthResponse,
  ItemDetail,
  ItemState,
  ItemSummary,
  LogEntry,
  LogLevel,
  StatsOverview,
  StatsResponse,
  StatusResponse,
} from '../../shared/api';
import { formatDuration } from '../../shared/format';
import { logsPath, matchesLogFilter, type LogFilter } from '../../shared/logFilter';
import { RecentIds } from '../../shared/recentIds';
import { SseParser } from '../../shared/sse';
import { AnswerShapeError, EngineError, parseAnswer as parse, request, requestJson, unreachable, UnreachableError, type Endpoint } from './connection';
import { HEALTH, ITEM_DETAIL, ITEMS, LOG_ENTRIES, LOG_ENTRY, STATS, STATUS } from './shapes';
import { EXIT_ENGINE_ERROR, EXIT_OK, type ClientRequest, type ControlAction } from './options';
import { add } from './add';
import { cell, heading, pairs, paint, table, truncate, type Colour, type Terminal } from './render';
import { escapeControls } from '../../shared/format';

export interface Io {
  term: Terminal;
  out(text: string | Uint8Array): Promise<void>;
  err(text: string): void;
  /** Aborted on Ctrl+C (SIGINT) or SIGTERM: follow modes end there, with exit 0. */
  stop: AbortSignal;
}

const HEALTH_COLOUR: Record<string, Colour> = { healthy: 'green', degraded: 'yellow', unhealthy: 'red' };
const LEVEL_COLOUR: Partial<Record<LogLevel, Colour>> = { debug: 'dim', warn: 'yellow', error: 'red' };
const STATE_COLOUR: Partial<Record<ItemState, Colour>> = { running: 'cyan', launched: 'green', failed: 'red', held: 'yellow', backoff: 'yellow', blocked: 'yellow' };
const ENGINE_COLOUR: Record<string, Colour> = { running: 'green', stopped: 'yellow', restricted: 'yellow', stalled: 'red' };

export async function runCommand(req: ClientRequest, endpoint: Endpoint, io: Io): Promise<number> {
  switch (req.command) {
    case 'status':
      return status(endpoint, io, req.json);
    case 'stats':
      return stats(endpoint, io, req.json);
    case 'health':
      return health(endpoint, io, req.json);
    case 'logs':
      return req.follow ? followLogs(endpoint, io, req.json, req.filter, req.limit ?? 10) : logs(endpoint, io, req.json, req.filter, req.order, req.limit);
    case 'items':
      return items(endpoint, io, req.json, req.states, req.q, req.limit);
    case 'output':
      return output(endpoint, io, req.json, req.itemId, req.attempt, req.stream, req.follow);
    case 'add':
      return add(endpoint, io, req.json, req.item, req.follow, (id, attempt) => output(endpoint, io, false, id, attempt, undefined, true));
    default:
      return control(endpoint, io, req.json, req.command, req.itemId);
  }
}

/** --json: the body exactly as the engine sent it. */
async function getText(endpoint: Endpoint, path: string, okStatuses?: number[]): Promise<{ text: string; res: Response }> {
  const res = await request(endpoint, path, { okStatuses });
  try {
    return { text: await res.text(), res };
  } catch (err) {
    throw unreachable(endpoint, err);
  }
}

const json = (text: string) => (text.endsWith('\n') ? text : `${text}\n`);
const when = (iso: string | null) => iso ?? 'never';
const ago = (iso: string | null, now: string) => (iso ? `${iso} (${formatDuration(Math.max(0, Date.parse(now) - Date.parse(iso)))} ago)` : 'never');

function countsLine(s: StatsOverview): string {
  return `${s.total} total: ${s.launched} launched, ${s.pending} pending (${s.running} running, ${s.held} held), ${s.failed} failed`;
}

async function status(endpoint: Endpoint, io: Io, asJson: boolean): Promise<number> {
  const { text } = await getText(endpoint, '/status');
  if (asJson) return io.out(json(text)).then(() => EXIT_OK);
  const s = parse<StatusResponse>(endpoint, '/status', text, STATUS);
  const e = s.engine;
  const last = s.lastLaunch;
  let out = pairs(io.term, [
    ['engine', `${e.name} ${e.version}`],
    ['state', cell(e.state, ENGINE_COLOUR[e.state])],
    ['url', s.server.url],
    ['started', `${e.startedAt} (up ${formatDuration(e.uptimeMs)})`],
    ['polls', `${e.polls}, every ${formatDuration(e.pollIntervalMs)}; last ${ago(s.stats.lastPollAt, s.timestamp)}`],
    ['running', `${e.running} of ${e.concurrency}`],
    ['items', countsLine(s.stats)],
    ['launches', `${s.stats.totalLaunches}, ${s.stats.totalFailed} failed`],
    [
      'last launch',
      last
        ? cell(
            `${last.itemId}${last.name !== last.itemId ? ` (${last.name})` : ''} attempt ${last.attempt}: ${last.outcome}${outcomeDetail(last)}`,
            last.outcome === 'failed' ? 'red' : undefined,
          )
        : 'none',
    ],
    ['database', `${s.database.path} (${s.database.sizeBytes} bytes), last persisted ${when(s.database.lastPersistAt)}`],
    ...(s.database.lastError ? [['database error', cell(s.database.lastError, 'red')] as [string, ReturnType<typeof cell>]] : []),
    ['scans', `${s.scanner.scans} since start, last ${when(s.scanner.lastScanAt)}; ${s.scanner.itemsDiscovered} discovered, ${s.scanner.itemsRejected} rejected since start`],
  ]);
  if (s.scanner.sources.length > 0) {
    out += `\n${heading(io.term, 'Sources')}`;
    out += table(
      io.term,
      [{ header: 'KIND' }, { header: 'LOCATION', flexible: true }, { header: 'ITEMS', align: 'right' }, { header: 'LAST SCAN' }, { header: 'ERROR', flexible: true }],
      s.scanner.sources.map((src) => [src.kind, src.location, src.itemsKnown, src.lastScanAt, src.lastError ? cell(src.lastError, 'red') : '-']),
    );
  }
  await io.out(out);
  return EXIT_OK;
}

function outcomeDetail(a: { exitCode: number | null; signal: string | null; error: string | null; durationMs: number | null }): string {
  const parts: string[] = [];
  if (a.exitCode !== null) parts.push(`exit code ${a.exitCode}`);
  if (a.signal) parts.push(`signal ${a.signal}`);
  if (a.error) parts.push(a.error);
  if (a.durationMs !== null) parts.push(`after ${formatDuration(a.durationMs)}`);
  return parts.length ? `, ${parts.join(', ')}` : '';
}

async function stats(endpoint: Endpoint, io: Io, asJson: boolean): Promise<number> {
  const { text } = await getText(endpoint, '/stats');
  if (asJson) return io.out(json(text)).then(() => EXIT_OK);
  const s = parse<StatsResponse>(endpoint, '/stats', text, STATS).overview;
  await io.out(
    pairs(io.term, [
      ['total', s.total],
      ['launched', cell(String(s.launched), s.launched ? 'green' : undefined)],
      ['pending', s.pending],
      ['  running', s.running],
      ['  held', s.held],
      ['failed', cell(String(s.failed), s.failed ? 'red' : undefined)],
      ['launches', s.totalLaunches],
      ['launches failed', s.totalFailed],
      ['last poll', when(s.lastPollAt)],
    ]),
  );
  return EXIT_OK;
}

async function health(endpoint: Endpoint, io: Io, asJson: boolean): Promise<number> {
  // 503 is the answer "unhealthy", with the same body: printed, and exit 1.
  const { text } = await getText(endpoint, '/health', [503]);
  const h = parse<HealthResponse>(endpoint, '/health', text, HEALTH);
  if (asJson) await io.out(json(text));
  else {
    await io.out(
      pairs(io.term, [
        ['status', cell(h.status, HEALTH_COLOUR[h.status])],
        ['database', cell(h.checks.database, h.checks.database === 'ok' ? 'green' : 'red')],
        ['engine', cell(h.checks.engine, ENGINE_COLOUR[h.checks.engine])],
        ['version', `${h.engine} ${h.version}`],
      ]),
    );
  }
  return h.status === 'unhealthy' ? EXIT_ENGINE_ERROR : EXIT_OK;
}

const LOG_COLUMNS = [{ header: 'TIME' }, { header: 'LEVEL' }, { header: 'ACTION' }, { header: 'ITEM', flexible: true }, { header: 'MESSAGE', flexible: true }];

function logRow(e: LogEntry) {
  return [e.timestamp, cell(e.level, LEVEL_COLOUR[e.level]), e.action, e.itemId, e.message];
}

async function logs(endpoint: Endpoint, io: Io, asJson: boolean, filter: LogFilter, order: 'asc' | 'desc' | undefined, limit: number | undefined): Promise<number> {
  const path = logsPath(filter, { order, limit });
  const { text, res } = await getText(endpoint, path);
  if (asJson) return io.out(json(text)).then(() => EXIT_OK);
  const entries = parse<LogEntry[]>(endpoint, path, text, LOG_ENTRIES);
  await io.out(entries.length ? table(io.term, LOG_COLUMNS, entries.map(logRow)) : '');
  if (entries.length === 0) io.err('no log entries match\n');
  else if (res.headers.get('link')) io.err(`more entries match: raise --limit (at most 1000) or narrow with --since/--until\n`);
  return EXIT_OK;
}

/** One log entry on one line, for following (no table: rows come one by one). */
function logLine(term: Terminal, e: LogEntry): string {
  // Every field is the server's text: a hostile or broken server must not reach the terminal's
  // control sequences through any of them.
  const line = `${escapeControls(String(e.timestamp))} ${escapeControls(String(e.level)).padEnd(5)} ${escapeControls(String(e.action)).padEnd(18)} ${escapeControls(e.itemId ?? '-')} ${escapeControls(String(e.message))}`;
  const cut = term.columns !== undefined ? truncate(line, term.columns) : line;
  const colour = LEVEL_COLOUR[e.level];
  return `${paint(term, cut, colour)}\n`;
}

/**
 * The last `limit` matching entries, then new ones from /events until Ctrl+C. The newest id is
 * read first, so that history stops and the stream resumes (Last-Event-ID) at the same entry:
 * nothing is missed or printed twice. Filters apply to the stream here, with the engine's rules.
 */
async function followLogs(endpoint: Endpoint, io: Io, asJson: boolean, filter: LogFilter, limit: number): Promise<number> {
  const print = (e: LogEntry) => io.out(asJson ? `${JSON.stringify(e)}\n` : logLine(io.term, e));
  const newest = (await requestJson<LogEntry[]>(endpoint, logsPath({}, { limit: 1 }), LOG_ENTRIES)).body[0]?.id ?? 0;
  const history = (await requestJson<LogEntry[]>(endpoint, logsPath(filter, { limit }), LOG_ENTRIES)).body.filter((e) => e.id <= newest).reverse();
  for (const e of history) await print(e);
  let lastId = newest;
  // On a fleet an entry can come after one with a higher id (engines draw ids from one sequence and
  // commit in any order), so what was printed is told by id, not by "at most the last id".
  const printed = new RecentIds(history.map((e) => e.id));
  let failures = 0;
  while (!io.stop.aborted) {
    let connected = false;
    try {
      const res = await request(endpoint, '/events', { accept: 'text/event-stream', stream: true, headers: { 'Last-Event-ID': String(lastId) }, signal: io.stop });
      connected = true;
      failures = 0;
      const parser = new SseParser();
      const decoder = new TextDecoder();
      for await (const chunk of chunks(res)) {
        for (const ev of parser.push(decoder.decode(chunk, { stream: true }))) {
          if (ev.event !== 'log') continue;
          const entry = parse<LogEntry>(endpoint, '/events', ev.data, LOG_ENTRY);
          if (!printed.add(entry.id)) continue;
          lastId = Math.max(lastId, entry.id);
          if (matchesLogFilter(filter, entry)) await print(entry);
        }
      }
    } catch (err) {
      if (io.stop.aborted) break;
      // The engine said no (a token), or sent what this client cannot read: asking again will not change that.
      if (err instanceof EngineError || err instanceof AnswerShapeError) throw err;
      if (!connected) failures++;
      if (failures >= 5) throw err instanceof UnreachableError ? err : unreachable(endpoint, err);
    }
    if (io.stop.aborted) break;
    // The stream ended: the engine stopped or restarted. Ask again a few times, resuming after the last entry.
    failures += connected ? 1 : 0;
    if (failures >= 5) throw new UnreachableError(`the engine at ${endpoint.url} closed the event stream and does not answer again`);
    io.err(`connection to ${endpoint.url} lost; reconnecting\n`);
    await sleep(Math.min(1000 * 2 ** failures, 8000), io.stop);
  }
  return EXIT_OK;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}

async function items(endpoint: Endpoint, io: Io, asJson: boolean, states: ItemState[], q: string | undefined, limit: number | undefined): Promise<number> {
  const params = new URLSearchParams();
  if (states.length) params.set('state', states.join(','));
  if (q !== undefined) params.set('q', q);
  if (limit !== undefined) params.set('limit', String(limit));
  const path = `/items${params.size ? `?${params}` : ''}`;
  const { text } = await getText(endpoint, path);
  if (asJson) return io.out(json(text)).then(() => EXIT_OK);
  const body = parse<{ items: ItemSummary[]; total: number }>(endpoint, path, text, ITEMS);
  if (body.items.length === 0) {
    io.err('no items match\n');
    return EXIT_OK;
  }
  await io.out(
    table(
      io.term,
      [{ header: 'ID', flexible: true }, { header: 'NAME', flexible: true }, { header: 'STATE' }, { header: 'ATTEMPTS', align: 'right' }, { header: 'UPDATED' }, { header: 'LAST ERROR', flexible: true }],
      body.items.map((i) => [i.id, i.name, cell(i.state, STATE_COLOUR[i.state]), `${i.attempts}/${i.maxAttempts}`, i.updatedAt, i.lastError]),
    ),
  );
  if (body.total > body.items.length) io.err(`${body.total - body.items.length} more items match: raise --limit (at most 1000) or narrow with --state/--q\n`);
  return EXIT_OK;
}

/** How often `output --follow` asks whether a pending item's first attempt has started. */
const FIRST_ATTEMPT_POLL_MS = 250;

const itemPath = (id: string) => `/items/${encodeURIComponent(id)}`;

/**
 * An attempt's output, bytes as the program wrote them (like `kubectl logs`): the program's own
 * colours stay, and redirecting to a file gives exactly what it printed. With --follow it waits
 * for a pending item's first attempt, ends when the attempt ends and mirrors its outcome: exit 0
 * if it succeeded, 1 if it failed.
 */
async function output(endpoint: Endpoint, io: Io, asJson: boolean, itemId: string, wanted: number | undefined, stream: 'stdout' | 'stderr' | undefined, follow: boolean): Promise<number> {
  let detail = (await requestJson<ItemDetail>(endpoint, itemPath(itemId), ITEM_DETAIL)).body;
  if (follow && wanted === undefined && detail.attempts.length === 0 && detail.outcome === 'pending') {
    // Following an item that has not run yet (just enqueued, scheduled, held): wait for its
    // first attempt, so a script can enqueue and follow in two lines.
    io.err(`engine-monitor: waiting for the first attempt of ${escapeControls(itemId)} (state ${escapeControls(String(detail.state))})\n`);
    while (detail.attempts.length === 0 && detail.outcome === 'pending') {
      await sleep(FIRST_ATTEMPT_POLL_MS, io.stop);
      if (io.stop.aborted) return EXIT_OK;
      detail = (await requestJson<ItemDetail>(endpoint, itemPath(itemId), ITEM_DETAIL)).body;
    }
  }
  const numbers = detail.attempts.map((a) => a.attempt);
  const attempt = wanted ?? (numbers.length ? Math.max(...numbers) : undefined);
  if (attempt === undefined) throw new EngineError(`item ${JSON.stringify(itemId)} has no attempt yet (state ${escapeControls(String(detail.state))}); its output exists once it is launched`, 404);
  if (!numbers.includes(attempt)) throw new EngineError(`item ${JSON.stringify(itemId)} has no attempt ${attempt}; its attempts: ${numbers.join(', ') || 'none'}`, 404);
  const params = new URLSearchParams();
  if (stream) params.set('stream', stream);
  if (follow) params.set('follow', 'true');
  const path = `${itemPath(itemId)}/attempts/${attempt}/output${params.size ? `?${params}` : ''}`;
  const res = await request(endpoint, path, { accept: 'text/plain', stream: follow, pacedByReader: true, signal: io.stop });
  const kept: Uint8Array[] = [];
  try {
    for await (const chunk of chunks(res)) {
      if (asJson) kept.push(chunk);
      else await io.out(chunk);
    }
  } catch (err) {
    if (io.stop.aborted) return EXIT_OK;
    throw unreachable(endpoint, err);
  }
  if (io.stop.aborted) return EXIT_OK;
  const after = (await requestJson<ItemDetail>(endpoint, itemPath(itemId), ITEM_DETAIL)).body.attempts.find((a) => a.attempt === attempt);
  if (asJson) {
    const text = Buffer.concat(kept).toString('utf8');
    await io.out(`${JSON.stringify({ itemId, attempt, stream: stream ?? 'combined', detail: after ?? null, output: text })}\n`);
  }
  if (!follow) return EXIT_OK;
  if (!after || after.outcome === 'running') {
    throw new UnreachableError(`the engine at ${endpoint.url} closed the output of ${JSON.stringify(itemId)} attempt ${attempt} before the attempt ended`);
  }
  if (after.outcome === 'failed') {
    io.err(`engine-monitor: ${escapeControls(itemId)} attempt ${attempt} failed${escapeControls(outcomeDetail(after))}\n`);
    return EXIT_ENGINE_ERROR;
  }
  return EXIT_OK;
}

const DONE: Record<ControlAction, string> = { cancel: 'cancelled', retry: 'retried', hold: 'held', release: 'released', 'run-again': 'ran again', remove: 'removed' };

async function control(endpoint: Endpoint, io: Io, asJson: boolean, action: ControlAction, itemId: string): Promise<number> {
  if (action === 'remove') {
    // 204 once it is gone (a running item once its process has exited): nothing to show but the id.
    await request(endpoint, itemPath(itemId), { method: 'DELETE' });
    await io.out(asJson ? `${JSON.stringify({ removed: itemId })}\n` : `removed ${escapeControls(itemId)}\n`);
    return EXIT_OK;
  }
  const path = `${itemPath(itemId)}/${action}`;
  const res = await request(endpoint, path, { method: 'POST' });
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    throw unreachable(endpoint, err);
  }
  if (asJson) return io.out(json(text)).then(() => EXIT_OK);
  const d = parse<ItemDetail>(endpoint, path, text, ITEM_DETAIL);
  const name = d.item.name !== d.item.id ? ` (${d.item.name})` : '';
  await io.out(`${DONE[action]} ${escapeControls(d.item.id)}${escapeControls(name)}: now ${paint(io.term, escapeControls(String(d.state)), STATE_COLOUR[d.state])}\n`);
  return EXIT_OK;
}

/** Writes to a stream, waiting when it is full (a 10 MiB output into a slow pipe). */
export async function write(stream: NodeJS.WritableStream, data: string | Uint8Array): Promise<void> {
  if (!stream.write(data)) await once(stream, 'drain');
}

/** A response body chunk by chunk. */
async function* chunks(res: Response): AsyncGenerator<Uint8Array> {
  if (!res.body) return;
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}
