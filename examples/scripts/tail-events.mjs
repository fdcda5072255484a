#!/usr/bin/env node
// tail-events.mjs: follow an Engine Monitor engine's log live, one line per entry, like `tail -f`.
// Reads the server-sent events of GET /events and reconnects after a lost connection, resuming
// with Last-Event-ID so that no entry is skipped or printed twice. Node 20+, no dependencies.
//
//   node examples/scripts/tail-events.mjs [options] [URL]
//
// Run with --help for the options.
import { parseArgs } from 'node:util';

const LEVELS = ['debug', 'info', 'warn', 'error'];
const ACTIONS = [
  'engine_started', 'engine_stopped', 'item_discovered', 'item_rejected', 'launch_started',
  'launch_succeeded', 'launch_failed', 'launch_interrupted', 'retry_scheduled', 'item_failed',
  'item_retried', 'source_error', 'database_error', 'database_recovered',
];
const PROG = 'tail-events.mjs';
const USAGE = `Usage: node ${PROG} [options] [URL]

Prints the engine's log entries as they happen, one line each:
  <timestamp> <level> <action> <item id or -> <message>

  URL                  the engine's base URL, e.g. http://127.0.0.1:7411
                       (default: $ENGINE_MONITOR_URL, which VS Code's integrated terminals have)
  -a, --action LIST    only these actions (comma-separated, or repeat the option)
  -l, --level LEVEL    only this level and above: debug, info, warn, error
  -f, --from ID        first print the entries after log id ID (0: the whole log kept), then follow
  -j, --json           print each entry as one line of JSON (for jq) instead of text
  -h, --help           this text

Environment: ENGINE_MONITOR_URL, ENGINE_MONITOR_TOKEN (sent as "Authorization: Bearer <token>").
Stops on Ctrl+C (exit 0). Exit code 2 for bad arguments, 3 when the engine refuses the request
(wrong token, not an Engine Monitor engine); a lost connection is retried forever.
`;

/** A stream with nothing at all (the server sends a heartbeat comment every 15 s) is dead. */
const SILENCE_LIMIT_MS = 45_000;
const MAX_RECONNECT_DELAY_MS = 30_000;

class UsageError extends Error {}
class FatalError extends Error {}

function parseOptions(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        action: { type: 'string', short: 'a', multiple: true },
        level: { type: 'string', short: 'l' },
        from: { type: 'string', short: 'f' },
        json: { type: 'boolean', short: 'j' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError(err.message);
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: true };
  if (positionals.length > 1) throw new UsageError(`more than one URL: ${positionals.join(' ')}`);
  const raw = positionals[0] ?? process.env.ENGINE_MONITOR_URL;
  if (!raw) throw new UsageError('no engine URL: give one, or set ENGINE_MONITOR_URL');
  let url;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`not a URL: ${raw}`);
  }
  if (!/^https?:$/.test(url.protocol) || (url.pathname !== '/' && url.pathname !== '') || url.search) {
    throw new UsageError(`not an engine base URL (http://host:port): ${raw}`);
  }
  const actions = (values.action ?? []).flatMap((a) => a.split(',')).map((a) => a.trim()).filter(Boolean);
  const unknown = actions.filter((a) => !ACTIONS.includes(a));
  if (unknown.length) throw new UsageError(`unknown action ${unknown.join(', ')}; actions: ${ACTIONS.join(', ')}`);
  if (values.level !== undefined && !LEVELS.includes(values.level)) {
    throw new UsageError(`unknown level ${values.level}; levels: ${LEVELS.join(', ')}`);
  }
  if (values.from !== undefined && !/^\d+$/.test(values.from)) throw new UsageError(`--from needs a log id (0, 1, …), got ${values.from}`);
  return {
    base: url.origin,
    actions: actions.length ? new Set(actions) : undefined,
    minLevel: values.level ? LEVELS.indexOf(values.level) : 0,
    from: values.from,
    json: values.json ?? false,
    token: process.env.ENGINE_MONITOR_TOKEN || undefined,
  };
}

function formatEntry(e) {
  return `${e.timestamp} ${e.level.padEnd(5)} ${e.action.padEnd(18)} ${e.itemId ?? '-'} ${e.message}`;
}

/**
 * Splits an event stream into events (https://html.spec.whatwg.org/multipage/server-sent-events.html):
 * lines end in CRLF, LF or CR; `field: value`; a blank line dispatches; `:` lines are comments.
 */
async function* readEvents(body, onActivity) {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = { type: 'message', data: [], id: undefined, retry: undefined };
  for await (const chunk of body) {
    onActivity();
    buffer += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (;;) {
      const m = /\r\n|\r|\n/g;
      m.lastIndex = start;
      const hit = m.exec(buffer);
      // A CR at the very end may be the first half of a CRLF still on its way.
      if (!hit || (hit[0] === '\r' && hit.index === buffer.length - 1)) break;
      const line = buffer.slice(start, hit.index);
      start = hit.index + hit[0].length;
      if (line === '') {
        if (event.data.length || event.retry !== undefined) yield { ...event, data: event.data.join('\n') };
        event = { type: 'message', data: [], id: undefined, retry: undefined };
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event.type = value;
      else if (field === 'data') event.data.push(value);
      else if (field === 'id' && !value.includes('\0')) event.id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) event.retry = Number(value);
    }
    buffer = buffer.slice(start);
  }
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

async function tail(opts, stop) {
  let lastId = opts.from; // undefined: start live
  let retryMs = 2000;
  let failures = 0;
  const out = (line) => process.stdout.write(`${line}\n`);
  const note = (line) => process.stderr.write(`${PROG}: ${line}\n`);

  while (!stop.aborted) {
    const attempt = new AbortController();
    const onStop = () => attempt.abort();
    stop.addEventListener('abort', onStop, { once: true });
    let silence;
    const resetSilence = () => {
      clearTimeout(silence);
      silence = setTimeout(() => attempt.abort(new Error(`nothing received for ${SILENCE_LIMIT_MS / 1000} s`)), SILENCE_LIMIT_MS);
    };
    let connected = false;
    try {
      const headers = { Accept: 'text/event-stream' };
      if (lastId !== undefined) headers['Last-Event-ID'] = lastId;
      if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
      resetSilence();
      const res = await fetch(`${opts.base}/events`, { headers, signal: attempt.signal });
      if (!res.ok) {
        let why = '';
        try {
          why = (await res.json()).error?.message ?? '';
        } catch {
          // not our JSON error body
        }
        const msg = `GET ${opts.base}/events answered HTTP ${res.status}${why ? `: ${why}` : ''}`;
        if (res.status === 401) throw new FatalError(`${msg} (set ENGINE_MONITOR_TOKEN)`);
        if (res.status < 500) throw new FatalError(msg);
        throw new Error(msg);
      }
      if (!/^text\/event-stream/.test(res.headers.get('content-type') ?? '')) {
        throw new FatalError(`GET ${opts.base}/events is not an event stream: is this an Engine Monitor engine?`);
      }
      connected = true;
      if (failures > 0) note(`reconnected${lastId !== undefined ? `, resuming after log entry ${lastId}` : ''}`);
      failures = 0;
      for await (const ev of readEvents(res.body, resetSilence)) {
        if (ev.retry !== undefined) retryMs = ev.retry;
        if (ev.type !== 'log') continue;
        if (ev.id !== undefined) lastId = ev.id;
        let entry;
        try {
          entry = JSON.parse(ev.data);
        } catch {
          note(`skipped an event that is not JSON: ${ev.data.slice(0, 80)}`);
          continue;
        }
        if (opts.actions && !opts.actions.has(entry.action)) continue;
        if (LEVELS.indexOf(entry.level) < opts.minLevel) continue;
        out(opts.json ? JSON.stringify(entry) : formatEntry(entry));
      }
      if (!stop.aborted) throw new Error('the engine closed the stream');
    } catch (err) {
      if (stop.aborted) break;
      if (err instanceof FatalError) throw err;
      const reason = attempt.signal.aborted && attempt.signal.reason instanceof Error ? attempt.signal.reason : err;
      failures++;
      // Back off while the engine stays away, from the server's retry hint up to 30 s.
      const delay = Math.min(retryMs * 2 ** Math.max(0, failures - 2), MAX_RECONNECT_DELAY_MS);
      const cause = reason?.cause?.code ?? reason?.cause?.message ?? reason?.message ?? String(reason);
      note(`${connected ? 'connection lost' : `cannot reach ${opts.base}`} (${cause}); reconnecting in ${(delay / 1000).toFixed(1)} s`);
      await sleep(delay, stop);
    } finally {
      clearTimeout(silence);
      stop.removeEventListener('abort', onStop);
      attempt.abort();
    }
  }
}

async function main() {
  let opts;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${PROG}: ${err.message}\nTry 'node ${PROG} --help'.\n`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const stop = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => stop.abort());
  // A closed pipe (`… | head`) ends the tail quietly.
  process.stdout.on('error', (err) => {
    if (err.code === 'EPIPE') stop.abort();
  });
  try {
    await tail(opts, stop.signal);
    return 0;
  } catch (err) {
    if (!(err instanceof FatalError)) throw err;
    process.stderr.write(`${PROG}: ${err.message}\n`);
    return 3;
  }
}

process.exitCode = await main();
