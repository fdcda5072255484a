// How the engine configures its launching: which helper to fork, how many, and where warnings and
// output errors go.
import os from 'node:os';

/** How to start the helper: the file to fork and the Node options it runs with. */
export interface LaunchHelperEntry {
  file: string;
  execArgv: string[];
}

export interface AttemptLauncherOptions {
  /**
   * The helper to fork; null: always launch in-process (by choice, without a warning);
   * undefined: none was found, so launch in-process after one warning.
   */
  entry?: LaunchHelperEntry | null;
  /**
   * How many helpers share the launches (EngineOptions.launchHelpers): default
   * DEFAULT_LAUNCH_HELPERS; 1 is a single helper.
   */
  helpers?: number;
  /** Warnings worth a log entry (the fallback to in-process launching). */
  warn?: (message: string, details: Record<string, unknown>) => void;
  /** The engine's workspace folders: an attempt's `cwd` must lead into one of them when it starts. */
  workspaceFolders?: readonly string[];
  /** Capturing an attempt's output failed (disk full…), wherever it runs; the attempt runs on. */
  onOutputError?: (attemptId: number, error: string) => void;
}

/**
 * Two helpers, or one on a single core: two bare spawner processes finish 2,000 launches 1.35 ×
 * faster than one on two cores, a third adds nothing there (docs/PERFORMANCE.md).
 */
export const DEFAULT_LAUNCH_HELPERS = Math.min(2, os.availableParallelism());
/** More helpers than this only cost memory (~40 MB each): each one's spawns already overlap. */
export const MAX_LAUNCH_HELPERS = 16;
