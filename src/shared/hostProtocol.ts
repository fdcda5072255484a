// Messages between VS Code windows and the engine host. Reads go over the HTTP API like any
// script's; control (start, stop, retry, cancel, hold…) goes over a private channel, token or not:
// HTTP takes control only when a token is configured. That channel is the host's control
// connection (controlServer.ts), which any window of the same user can open, since the host
// outlives the window that started it; a process forked with an IPC channel (tests, tools) may
// also use the IPC channel, with the same messages.

export type ControlCommand =
  | { command: 'start' }
  | { command: 'stop' }
  | { command: 'pollNow' }
  | { command: 'retryItem'; itemId: string }
  | { command: 'restartItem'; itemId: string }
  | { command: 'retryAllFailed' }
  /** End a running attempt (or a pending item) and fail the item; no retry. */
  | { command: 'cancelItem'; itemId: string }
  | { command: 'holdItem'; itemId: string }
  | { command: 'releaseItem'; itemId: string }
  /** Remove an item (a running one is cancelled and removed once its process has exited). */
  | { command: 'removeItem'; itemId: string }
  /** Remove every launched and failed item; answers with how many. */
  | { command: 'clearFinished' }
  /** Make a launched item pending again, its attempts reset. */
  | { command: 'runAgain'; itemId: string }
  /** Workspace Trust was granted: leave the restricted state and start launching. */
  | { command: 'grantTrust' }
  /**
   * The queue files (absolute paths) window `client` is editing as drafts: scans pass over them
   * for `forMs` (default 30 s) unless sent again; an empty list lets them go (src/core/draftHolds.ts).
   */
  | { command: 'holdDrafts'; client: string; paths: string[]; forMs?: number }
  /** A draft was saved on purpose: read that queue file now, held or not; answers after the poll. */
  | { command: 'ingestDraft'; path: string }
  /**
   * Judge one queue-file entry as the engine would, taking nothing: answers `{ ok: true, id }` or
   * `{ ok: false, reason, field? }` (Add Item… checks each field as it is typed).
   */
  | { command: 'checkItem'; entry: unknown; workspaceFolder: string };

/** Extension → host. */
export type ToHostMessage = { type: 'control'; requestId: number } & ControlCommand;

/** Host → extension. */
export type FromHostMessage =
  /** Listening. `requestedPort` is set when that port was taken and a free one was used instead. */
  | { type: 'ready'; url: string; pid: number; requestedPort?: number }
  /** Another live engine owns this storage folder; this host exits (code 3) and the caller attaches to `lock.url`. */
  | { type: 'locked'; lock: EngineLock }
  | { type: 'controlResult'; requestId: number; ok: true; result?: unknown }
  | { type: 'controlResult'; requestId: number; ok: false; error: string }
  /** The host could not start (port refused, storage locked by another engine…). */
  | { type: 'fatal'; message: string };

/**
 * `<storage>/control.json`, private to the user (mode 0600): where the host's control connection
 * listens (loopback) and the secret a window proves it may control the engine with.
 */
export interface ControlFile {
  pid: number;
  port: number;
  token: string;
}

export const CONTROL_FILE = 'control.json';

/** A window → host message on the control connection, one JSON object a line. */
export type ToControlMessage =
  /** First line: the secret from control.json. The connection held open is the window's attachment. */
  | { type: 'attach'; token: string; who?: string }
  | ({ type: 'control'; requestId: number } & ControlCommand)
  /** Stop the host (Stop/Restart a fresh process); `restart`: tell the other windows one follows. */
  | { type: 'shutdown'; requestId: number; restart: boolean };

/** Host → window on the control connection. */
export type FromControlMessage =
  | { type: 'welcome'; info: HostInfo }
  | { type: 'refused'; error: string }
  | { type: 'controlResult'; requestId: number; ok: true; result?: unknown }
  | { type: 'controlResult'; requestId: number; ok: false; error: string }
  /** The host is ending; `restart`: a window asked for a fresh one, which is on its way. */
  | { type: 'stopping'; reason: string; restart: boolean };

/** What an attaching window learns about the host: enough to decide whether it needs a restart. */
export interface HostInfo {
  pid: number;
  url: string;
  startedAt: string;
  /** The launch key its starter gave it (ENGINE_MONITOR_LAUNCH_KEY): a digest of its settings. */
  launchKey: string;
  /** It was started with --restricted (trust not granted yet) and has not been granted trust since. */
  restricted: boolean;
  /** --keep-alive in seconds; undefined: it never stops by itself (headless). */
  keepAliveSeconds?: number;
  /** Windows attached now, this one included. */
  attached: number;
  /**
   * The token the host accepts for HTTP control (besides a configured one), for the window's
   * integrated terminals only: `engine-monitor retry x` typed there works without any setting.
   */
  terminalToken?: string;
}

/** The variable the launching window passes its settings' digest in (never a secret itself). */
export const LAUNCH_KEY_ENV = 'ENGINE_MONITOR_LAUNCH_KEY';

/** Exit code of `serve` when another live engine holds the storage folder's lock. */
export const EXIT_LOCKED = 3;
/** Exit code for bad command-line arguments. */
export const EXIT_USAGE = 2;

/** `<storage>/engine.lock`: one engine per storage folder. */
export interface EngineLock {
  pid: number;
  url: string;
  startedAt: string;
}

/**
 * `<storage>/draft-holds.json`: window (client id) → the queue files it holds as drafts, as
 * `{ "<client>": ["/abs/path.json"] }`. The engine keeps it for its next start; a window with no
 * engine to tell writes its own entry, so the engine it starts does not read a draft at once.
 */
export const DRAFT_HOLDS_FILE = 'draft-holds.json';

/** `<storage>/endpoint.json`, written when the host is ready, so scripts can find the API. */
export interface EndpointFile {
  url: string;
  pid: number;
  startedAt: string;
}

/**
 * Node.js options for the engine host process (the extension's fork, `npm run demo`, the benchmark).
 * A 2 MB young generation instead of Node's 16 MB: under API load the larger one's scavenges paused
 * the event loop long enough to set the p99 latency of every endpoint. (V8 reads it only at
 * startup, so it cannot be set later.) One V8 background thread instead of four: their freed
 * compile memory stayed in glibc's per-thread arenas and raised the host's resident memory, and on
 * a 2-core machine four compile threads took the main thread's core while they ran. An old
 * generation capped at 1 GB: V8 lets the heap grow by up to 4 times what survived the last full
 * collection when the cap is 2 GB or more (Node's default is 4 GB on a machine with 16 GB), and by
 * 1.6 times at 1 GB. The host keeps about 13 MB alive at 100,000 items, but the garbage of log
 * pruning and of API requests piled up to 50-90 MB before a collection, a third of its resident
 * memory; 1 GB is still 70 times what it keeps.
 * docs/PERFORMANCE.md has the measurements.
 */
export const ENGINE_HOST_NODE_OPTIONS: readonly string[] = ['--max-semi-space-size=2', '--v8-pool-size=1', '--max-old-space-size=1024'];
