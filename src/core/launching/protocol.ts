// Messages between the engine and its launch helper (src/host/launchHelperMain.ts) over the IPC
// channel of child_process.fork. Types only: the helper's bundle must stay small.
//
// What one side has to say in one turn of its event loop travels as one packet (an array of
// messages, in the order they were said): Node's IPC costs a stringify, a pipe write and, on the
// other side, a read and a parse per packet, and the engine host's main thread paid that for each
// launch and twice more for its `started` and `done` (docs/PERFORMANCE.md).
import type { ItemDefinition } from '../intake/items';
import type { AttemptResult } from './attemptProcess';
import type { CheckpointMessage } from '../store';
import type { OutputTarget } from '../features/output/outputFiles';

/** Engine → helper. */
export type ToLaunchHelper =
  /**
   * `marker`: the attempt's ENGINE_MONITOR_ATTEMPT token, chosen by the engine so that it can still
   * find the attempt's processes if this helper dies; `workspaceFolders`: where `cwd` must lead.
   */
  | { type: 'launch'; attemptId: number; item: ItemDefinition; attempt: number; marker: string; workspaceFolders?: string[]; output?: OutputTarget }
  | { type: 'terminate'; attemptId: number; graceMs: number }
  /** End every running attempt (SIGTERM, SIGKILL after `graceMs`) and exit: the engine is shutting down. */
  | { type: 'close'; graceMs: number }
  /** Start a checkpoint process: `node <args…>` (Store.checkpointProcessArgs). */
  | { type: 'checkpoint'; checkpointId: number; args: string[] }
  /** Kill that checkpoint process (abandoned: the engine snapshotted synchronously since). */
  | { type: 'checkpoint_cancel'; checkpointId: number }
  /** Are you still there? Answered with 'pong' (a stopped or hung helper cannot enforce timeouts). */
  | { type: 'ping' };

/** Helper → engine. */
export type FromLaunchHelper =
  /** The helper is listening; launches sent before this are queued by the engine. */
  | { type: 'ready'; pid: number }
  /**
   * The attempt's process exists (pid null: the spawn failed, `done` follows). `spawnMs` is how
   * long the helper's thread was blocked in spawn() for it, so benchmarks can see where that cost went.
   * Sent up to 20 ms late, with the attempt's `done` if it ends by then (launchHelperMain.ts).
   */
  | { type: 'started'; attemptId: number; pid: number | null; spawnMs: number }
  | { type: 'done'; attemptId: number; result: AttemptResult }
  /** Capturing the attempt's output failed (disk full…); the attempt runs on. Sent once, when it happens. */
  | { type: 'output_error'; attemptId: number; error: string }
  /** The checkpoint process answered, or ended without answering (ok: false, with why). */
  | { type: 'checkpointed'; checkpointId: number; pid: number | null; message: CheckpointMessage }
  | { type: 'pong' };

/**
 * What goes over the channel: the messages of one turn, in order. A lone message is read the same,
 * so that a packet of one need not be wrapped.
 */
export type LaunchHelperPacket<M> = M | M[];

