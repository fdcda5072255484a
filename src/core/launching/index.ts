// Launching attempts: what the engine, the host and the benchmark import. AttemptLauncher is the
// facade; the modules behind it each do one part (see attemptLauncher.ts).
export { AttemptLauncher } from './attemptLauncher';
export { DEFAULT_LAUNCH_HELPERS, MAX_LAUNCH_HELPERS, type AttemptLauncherOptions, type LaunchHelperEntry } from './options';
export type { FromLaunchHelper, LaunchHelperPacket, ToLaunchHelper } from './protocol';
