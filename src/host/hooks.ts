// Hooks: when an item fails for good or /health changes, run the user's
// command (`--on-item-failed`, `--on-health-change`) with the event as JSON on stdin, and POST the
// same JSON to every `--notify-url`. They live in the engine host, beside the engine and outside
// it: the engine only logs; this module listens to its events and writes `hook_failed` entries
// back. Nothing here may hold up launching: every delivery is asynchronous, at most
// MAX_CONCURRENT run at once, the queue behind them is bounded, and a command that hangs is
// killed at its timeout. Hook commands are spawned from the engine host's own process (not the
// launch helper): a spawn forks this process, which costs a few milliseconds of its event loop,
// acceptable for events that are rare by nature (an item failing for good, health changing).
import { healthBody as healthBodyOf } from '../shared/health';
import { spawn, type ChildProcess } from 'node:child_process';
import { endAttemptTree } from '../core/launching/processGroup';
import type { EngineEvent, HealthSnapshot } from '../core/kernel/monitoredEngine';
import type { HealthResponse, HookEvent, HookEventName, ItemDetail, LogEntry } from '../shared/api';

export interface HookOptions {
  /** Shell command line run when an item fails for good. */
  onItemFailed?: string;
  /** Shell command line run when /health changes. */
  onHealthChange?: string;
  /** URLs every event is POSTed to. */
  notifyUrls: string[];
  /** How long a hook command may run before its process group is killed. */
  timeoutMs: number;
}

/** What the hooks need of the engine. */
export interface HookedEngine {
  readonly version: string;
  subscribe(listener: (event: EngineEvent) => void): () => void;
  itemDetail(itemId: string): ItemDetail | undefined;
  health(): HealthSnapshot;
  logHookFailure(message: string, itemId: string | null, details: Record<string, unknown>): void;
}

export interface HookRunner {
  /** Stops listening, drops what is queued, ends running commands (SIGTERM, then SIGKILL). */
  stop(): Promise<void>;
}

export const DEFAULT_HOOK_TIMEOUT_MS = 10_000;
/** Deliveries running at once: commands and POSTs together. */
export const MAX_CONCURRENT_HOOKS = 4;
/** Deliveries waiting behind them; beyond it the oldest are dropped (and that is logged once). */
export const MAX_QUEUED_HOOKS = 100;
const NOTIFY_TIMEOUT_MS = 5_000;
/** Waits before the second and third POST; each is jittered by ±20 %. */
const NOTIFY_RETRY_DELAYS_MS = [1_000, 2_000];
/** After SIGTERM at the timeout, the process group gets this long before SIGKILL. */
const KILL_GRACE_MS = 2_000;
/** The same when the engine stops: shorter, the host's whole shutdown must fit in a few seconds. */
const STOP_KILL_GRACE_MS = 500;
const STDERR_TAIL_BYTES = 2_048;
/** `stalled` comes from the passing of time, not from an event: health is also checked this often. */
const HEALTH_CHECK_INTERVAL_MS = 1_000;
/** Drops are reported at most this often, as one entry each time. */
const DROP_REPORT_MS = 1_000;

export type HookName = 'on-item-failed' | 'on-health-change' | 'notify-url';

type Delivery =
  | { kind: 'command'; hook: 'on-item-failed' | 'on-health-change'; command: string }
  | { kind: 'notify'; url: string };

interface Job {
  delivery: Delivery;
  event: HookEventName;
  itemId: string | null;
  json: string;
}

interface Running {
  job: Job;
  /** Ends a running delivery now (the engine stops). */
  abort(): void;
  done: Promise<void>;
}

export function hasHooks(options: HookOptions | undefined): options is HookOptions {
  return options !== undefined && (options.onItemFailed !== undefined || options.onHealthChange !== undefined || options.notifyUrls.length > 0);
}

/**
 * Starts listening to `engine`. `url` is the engine's API (ENGINE_MONITOR_URL for the commands,
 * `engine.url` in every event); `cwd` is where commands run (the first workspace folder).
 */
export function startHooks(engine: HookedEngine, url: string, cwd: string, options: HookOptions): HookRunner {
  const queue: Job[] = [];
  const running = new Set<Running>();
  let stopped = false;
  let dropped = 0;
  let dropTimer: NodeJS.Timeout | undefined;

  const engineRef = { url, version: engine.version };
  const healthBody = (snapshot: HealthSnapshot): HealthResponse => healthBodyOf(snapshot, engine.version);
  const keyOf = (h: HealthResponse) => `${h.status}/${h.checks.database}/${h.checks.engine}`;
  let health = healthBody(engine.health());
  let healthCheckQueued = false;

  const emit = (event: HookEvent, itemId: string | null) => {
    const deliveries: Delivery[] = options.notifyUrls.map((u) => ({ kind: 'notify', url: u }));
    const command = event.event === 'item_failed' ? options.onItemFailed : options.onHealthChange;
    if (command !== undefined) {
      deliveries.unshift({ kind: 'command', hook: event.event === 'item_failed' ? 'on-item-failed' : 'on-health-change', command });
    }
    if (deliveries.length === 0) return;
    const json = JSON.stringify(event);
    for (const delivery of deliveries) queue.push({ delivery, event: event.event, itemId, json });
    while (queue.length > MAX_QUEUED_HOOKS) {
      queue.shift();
      dropped++;
    }
    if (dropped > 0) dropTimer ??= setTimeout(reportDrops, DROP_REPORT_MS);
    pump();
  };

  const reportDrops = () => {
    dropTimer = undefined;
    if (dropped === 0 || stopped) return;
    const n = dropped;
    dropped = 0;
    engine.logHookFailure(
      `${n} hook deliveries were dropped: more than ${MAX_QUEUED_HOOKS} were waiting behind ${MAX_CONCURRENT_HOOKS} running ones (slow or hanging hooks?)`,
      null,
      { hook: null, event: null, dropped: n, maxQueued: MAX_QUEUED_HOOKS, maxConcurrent: MAX_CONCURRENT_HOOKS },
    );
  };

  const pump = () => {
    while (!stopped && running.size < MAX_CONCURRENT_HOOKS && queue.length > 0) {
      const job = queue.shift()!;
      const run = job.delivery.kind === 'command' ? runCommand(job, job.delivery) : runNotify(job, job.delivery);
      running.add(run);
      void run.done.then(() => {
        running.delete(run);
        pump();
      });
    }
  };

  const failed = (job: Job, message: string, details: Record<string, unknown>) => {
    if (stopped) return;
    engine.logHookFailure(message, job.itemId, { event: job.event, ...details });
  };

  const runCommand = (job: Job, d: Extract<Delivery, { kind: 'command' }>): Running => {
    let child: ChildProcess | undefined;
    let timedOut = false;
    let killTimer: NodeJS.Timeout | undefined;
    let endingTree: Promise<void> | undefined;
    const killGroup = (signal: NodeJS.Signals) => {
      if (child?.pid === undefined) return;
      try {
        // Its own process group (detached): whatever the command started goes with it.
        process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    };
    const terminate = (graceMs: number) => {
      // Windows: no process group and no SIGTERM; the shell's whole tree is ended at once.
      if (process.platform === 'win32') {
        if (child?.pid !== undefined) endingTree ??= endAttemptTree(child.pid, graceMs);
        return;
      }
      killGroup('SIGTERM');
      clearTimeout(killTimer);
      killTimer = setTimeout(() => killGroup('SIGKILL'), graceMs);
    };
    const done = new Promise<void>((resolve) => {
      const label = `${d.hook} hook ${JSON.stringify(clip(d.command, 200))}`;
      const base = { hook: d.hook, command: d.command };
      try {
        child = spawn(d.command, {
          shell: true,
          // On Windows a detached process has no console, and every console program its shell
          // starts would open a window of its own; its tree is ended without a group there.
          detached: process.platform !== 'win32',
          windowsHide: true,
          cwd,
          stdio: ['pipe', 'ignore', 'pipe'],
          env: { ...process.env, ENGINE_MONITOR_URL: url, ENGINE_HOOK_EVENT: job.event },
        });
      } catch (err) {
        failed(job, `${label} could not be started: ${(err as Error).message}`, { ...base, exitCode: null, signal: null, timedOut: false, error: (err as Error).message, stderr: '' });
        resolve();
        return;
      }
      let stderr = Buffer.alloc(0);
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr = chunk.length >= STDERR_TAIL_BYTES ? Buffer.from(chunk.subarray(-STDERR_TAIL_BYTES)) : Buffer.concat([stderr, chunk]).subarray(-STDERR_TAIL_BYTES);
      });
      // A hook that does not read its stdin closes it early: EPIPE is not the hook's failure.
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(job.json);
      const timer = setTimeout(() => {
        timedOut = true;
        terminate(KILL_GRACE_MS);
      }, options.timeoutMs);
      let spawnError: Error | undefined;
      child.once('error', (err) => {
        spawnError = err;
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        clearTimeout(killTimer);
        const tail = stderr.toString('utf8').replace(/^\uFFFD+/, '');
        const details = { ...base, exitCode: spawnError ? null : code, signal, timedOut, error: spawnError?.message ?? null, stderr: tail };
        if (timedOut) {
          failed(job, `${label} did not finish within ${options.timeoutMs} ms and was killed (${job.event} event)`, details);
        } else if (spawnError) {
          // ENOENT here is the shell or the folder it runs in (the workspace folder, gone?).
          failed(job, `${label} could not be started in ${cwd}: ${spawnError.message}`, details);
        } else if (code !== 0) {
          const how = code === null ? `was ended by ${signal}` : `exited with code ${code}`;
          failed(job, `${label} ${how} (${job.event} event)${tail.trim() ? `: ${clip(lastLine(tail), 200)}` : ''}`, details);
        }
        // Windows: once its tree is ended too, so that the engine's shutdown does not exit first.
        void Promise.resolve(endingTree).then(() => resolve());
      });
    });
    return { job, abort: () => terminate(STOP_KILL_GRACE_MS), done };
  };

  const runNotify = (job: Job, d: Extract<Delivery, { kind: 'notify' }>): Running => {
    const abort = new AbortController();
    // The URL may carry a secret (a chat webhook's path, a token in the query): the log gets its origin only.
    const shown = safeOrigin(d.url);
    const done = (async () => {
      const errors: string[] = [];
      let status: number | null = null;
      for (let attempt = 1; attempt <= NOTIFY_RETRY_DELAYS_MS.length + 1; attempt++) {
        if (attempt > 1) {
          const base = NOTIFY_RETRY_DELAYS_MS[attempt - 2];
          const waited = await sleep(base * (0.8 + 0.4 * Math.random()), abort.signal);
          if (!waited) return;
        }
        // One controller per try, aborted by a timer this code owns: on Node 20 a signal from
        // AbortSignal.timeout() combined through AbortSignal.any() can be garbage-collected before
        // it fires, and a POST to a server that never answers then holds its slot for ever.
        const attemptAbort = new AbortController();
        let timedOut = false;
        const timer = setTimeout(() => {
          timedOut = true;
          attemptAbort.abort();
        }, NOTIFY_TIMEOUT_MS);
        const stop = () => attemptAbort.abort();
        abort.signal.addEventListener('abort', stop);
        try {
          const res = await fetch(d.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'user-agent': `engine-monitor/${engine.version}` },
            body: job.json,
            redirect: 'manual',
            signal: attemptAbort.signal,
          });
          status = res.status;
          await res.body?.cancel().catch(() => undefined);
          if (res.status >= 200 && res.status < 300) return;
          errors.push(`HTTP ${res.status}`);
        } catch (err) {
          if (abort.signal.aborted) return;
          const e = err as Error & { cause?: Error };
          status = null;
          errors.push(timedOut ? `no answer within ${NOTIFY_TIMEOUT_MS} ms` : (e.cause?.message ?? e.message));
        } finally {
          clearTimeout(timer);
          abort.signal.removeEventListener('abort', stop);
        }
      }
      failed(job, `notify-url ${shown} failed ${errors.length} times (${job.event} event): ${errors[errors.length - 1]}`, {
        hook: 'notify-url',
        url: shown,
        attempts: errors.length,
        status,
        errors,
      });
    })();
    return { job, abort: () => abort.abort(), done };
  };

  const checkHealth = () => {
    healthCheckQueued = false;
    if (stopped) return;
    const now = healthBody(engine.health());
    if (keyOf(now) === keyOf(health)) return;
    const from = health;
    health = now;
    emit({ event: 'health_changed', from, to: now, engine: engineRef, timestamp: now.timestamp }, null);
  };

  const onItemFailed = (entry: LogEntry) => {
    if (entry.itemId === null) return;
    const item = engine.itemDetail(entry.itemId);
    if (!item) return;
    emit({ event: 'item_failed', item, entry, engine: engineRef, timestamp: new Date().toISOString() }, entry.itemId);
  };

  // Events arrive synchronously from inside the engine's updates: read it back on a later turn.
  // Only the entries of an item failing for good start a hook (item_failed; dependency_failed, when
  // a dependency or a cycle fails it without an attempt), so a hook_failed entry can never start
  // another.
  const unsubscribe = engine.subscribe((e) => {
    if (e.type === 'log' && (e.entry.action === 'item_failed' || (e.entry.action === 'dependency_failed' && e.entry.itemId !== null))) {
      const entry = e.entry;
      setImmediate(() => !stopped && onItemFailed(entry));
    }
    if (!healthCheckQueued) {
      healthCheckQueued = true;
      setImmediate(checkHealth);
    }
  });
  const healthTimer = setInterval(checkHealth, HEALTH_CHECK_INTERVAL_MS);
  healthTimer.unref();

  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      clearInterval(healthTimer);
      clearTimeout(dropTimer);
      queue.length = 0;
      const ending = [...running];
      for (const r of ending) r.abort();
      await Promise.all(ending.map((r) => r.done));
    },
  };
}

/** Resolves true after `ms`, or false at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => resolve(true), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve(false);
    }, { once: true });
  });
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function lastLine(text: string): string {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  return lines[lines.length - 1] ?? '';
}
