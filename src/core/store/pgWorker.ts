// The worker thread that owns the PostgreSQL connections of a fleet engine (pgStore.ts). The
// engine's store seam is synchronous (sql.js), so the main thread posts each statement here and
// blocks on Atomics.wait for the answer, with a bounded timeout: a dead database makes a call fail
// fast instead of hanging the engine. Three connections:
// - `main`: the engine's statements and transactions, in the order the main thread sends them;
// - `side`: the lease heartbeat, on its own timer, so a long transaction on `main` or a busy main
//   thread never lets this engine's lease lapse while it is alive;
// - `listen`: LISTEN for other engines' log entries and for items that became due (NOTIFY from
//   triggers), forwarded to the main thread as ordinary messages: for /events, and to claim at once.
// Lost connections are reopened with backoff (250 ms doubling to 5 s); meanwhile every request is
// answered at once with a connection error, which the engine treats as "database unavailable".
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { Client, types } from 'pg';

// Counts, ids and times in milliseconds are bigint in PostgreSQL; the engine reads them as numbers
// as it does from sql.js (all stay below 2^53).
types.setTypeParser(20, (v) => Number(v));
types.setTypeParser(1700, (v) => Number(v));

export interface PgWorkerData {
  url: string;
  port: MessagePort;
  /** Int32 [0]: answer flag; Float64 at byte 8: epoch ms of the last successful heartbeat. */
  shared: SharedArrayBuffer;
  engineId: string;
  leaseMs: number;
}

export interface PgRequest {
  id: number;
  sql: string;
  params: unknown[];
  rowMode?: 'array';
}

export type PgAnswer = { id: number; ok: true; rows: unknown[] } | { id: number; ok: false; error: string; connection: boolean; code?: string };

/** Messages posted to the main thread on parentPort (asynchronous, unlike the answers). */
export type PgNotice = { type: 'connected' } | { type: 'disconnected'; error: string } | { type: 'log'; id: number } | { type: 'due' } | { type: 'heartbeat-failed'; error: string };

const data = workerData as PgWorkerData;
const flag = new Int32Array(data.shared, 0, 1);
const heartbeatAt = new Float64Array(data.shared, 8, 1);

let main: Client | null = null;
let side: Client | null = null;
let listen: Client | null = null;
let lastError = 'not connected yet';
let backoffMs = 250;
let reconnectTimer: NodeJS.Timeout | undefined;
let status = { state: 'running', running: 0 };
let closing = false;

function answer(a: PgAnswer): void {
  data.port.postMessage(a);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
}

/** Errors that say the connection (not the statement) failed: class 08, shutdown, or no code at all. */
function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  if (code === undefined) return true;
  return code.startsWith('08') || code.startsWith('57P') || code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE' || code === 'ETIMEDOUT';
}

async function connectAll(): Promise<void> {
  const open = async (): Promise<Client> => {
    const c = new Client({ connectionString: data.url, application_name: `engine-monitor ${data.engineId}` });
    c.on('error', (err) => lose(err));
    await c.connect();
    return c;
  };
  try {
    const m = await open();
    const s = await open();
    const l = await open();
    l.on('notification', (n) => {
      if (n.channel === 'engine_monitor_log' && n.payload) parentPort?.postMessage({ type: 'log', id: Number(n.payload) } satisfies PgNotice);
      else if (n.channel === 'engine_monitor_due') parentPort?.postMessage({ type: 'due' } satisfies PgNotice);
    });
    await l.query('LISTEN engine_monitor_log');
    await l.query('LISTEN engine_monitor_due');
    main = m;
    side = s;
    listen = l;
    backoffMs = 250;
    parentPort?.postMessage({ type: 'connected' } satisfies PgNotice);
    void heartbeat();
  } catch (err) {
    lose(err);
  }
}

/** A connection failed: drop all three (a half-connected engine would hold leases it cannot use) and retry. */
function lose(err: unknown): void {
  const wasConnected = main !== null;
  for (const c of [main, side, listen]) c?.end().catch(() => undefined);
  main = side = listen = null;
  lastError = describe(err);
  if (wasConnected) parentPort?.postMessage({ type: 'disconnected', error: lastError } satisfies PgNotice);
  if (closing || reconnectTimer) return;
  reconnectTimer = setTimeout(() => {
    reconnectTimer = undefined;
    void connectAll();
  }, backoffMs);
  backoffMs = Math.min(backoffMs * 2, 5000);
}

/** Never the connection string: pg's messages name host and port at most, and we say no more. */
function describe(err: unknown): string {
  return (err as Error).message || String(err);
}

async function heartbeat(): Promise<void> {
  const c = side;
  if (!c) return;
  try {
    await c.query(
      `UPDATE engines SET last_heartbeat_at = em_now(), lease_until = em_now() + $2, state = $3, running = $4 WHERE engine_id = $1`,
      [data.engineId, data.leaseMs, status.state, status.running],
    );
    heartbeatAt[0] = Date.now();
  } catch (err) {
    parentPort?.postMessage({ type: 'heartbeat-failed', error: describe(err) } satisfies PgNotice);
  }
}

// Three renewals per lease: a lease survives two missed heartbeats.
const heartbeatTimer = setInterval(() => void heartbeat(), Math.max(50, Math.floor(data.leaseMs / 3)));

data.port.on('message', (req: PgRequest | { close: true }) => {
  if ('close' in req) {
    closing = true;
    clearInterval(heartbeatTimer);
    clearTimeout(reconnectTimer);
    void Promise.all([main, side, listen].map((c) => (c ? c.end().catch(() => undefined) : Promise.resolve()))).then(() => {
      answer({ id: -1, ok: true, rows: [] });
      process.exit(0);
    });
    return;
  }
  const c = main;
  if (!c) {
    answer({ id: req.id, ok: false, error: `database unavailable: ${lastError}`, connection: true });
    return;
  }
  const run = req.rowMode === 'array' ? c.query({ text: req.sql, values: req.params, rowMode: 'array' }) : c.query({ text: req.sql, values: req.params });
  run.then(
    (r: { rows: unknown[] }) => answer({ id: req.id, ok: true, rows: r.rows }),
    (err: unknown) => {
      const connection = isConnectionError(err);
      answer({ id: req.id, ok: false, error: describe(err), connection, code: (err as { code?: string }).code });
      if (connection && c === main) lose(err);
    },
  );
});

parentPort?.on('message', (m: { type: 'status'; state: string; running: number }) => {
  if (m.type === 'status') status = { state: m.state, running: m.running };
});

void connectAll();
