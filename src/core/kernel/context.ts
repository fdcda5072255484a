// What the kernel's parts and the features share: the store, the log, the events readers follow,
// the hooks features join, and the one writer of state. Built once by the engine.
import type { EngineState } from '../../shared/api';
import type { LogWriter } from '../intake/ingest';
import type { StoreBackend } from '../store/backend';
import type { EngineOptions } from './engineOptions';
import type { EngineEventBus } from './eventBus';
import type { EngineHooks } from './hooks';
import type { Transitions } from './transitions';

/** How a change ends: what it wrote is committed, readers hear of it, and what it freed may launch. */
export interface ChangeEnd {
  /**
   * `sync`: on disk before this returns (a control request is answered after); `background`:
   * written now, synced on the thread pool; `dispatch` (with `dispatch: true`): written by the
   * dispatch round this asks for, in this turn's immediate phase, so that what was taken and the
   * attempts launched from it share one fdatasync instead of waiting for two in a row.
   */
  commit: 'sync' | 'background' | 'dispatch';
  /** Judge the dependencies of what was discovered since the last time, first. */
  settle?: boolean;
  /** Look for due items at once (the change may have let one launch). */
  dispatch?: boolean;
}

export interface KernelContext {
  readonly store: StoreBackend;
  readonly options: EngineOptions;
  readonly events: EngineEventBus;
  readonly hooks: EngineHooks;
  readonly transitions: Transitions;
  readonly log: LogWriter;
  /** True once the engine has shut down: nothing more is recorded. */
  isClosed(): boolean;
  /** What /health and the fleet's heartbeat call the engine's state. */
  engineState(): EngineState;
  /** Runs a dispatch round soon (once per turn of the event loop however often asked). */
  scheduleDispatch(): void;
  /** settle → commit → tell readers → dispatch: the end of every change, in one place. */
  changed(how: ChangeEnd): void;
}
