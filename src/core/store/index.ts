// The engine's store: what the rest of the engine imports as './store'.
export type { StoreBackend, StoreNote, StoreValue } from './backend';
export { checkpointProcessArgs, startCheckpointThread, type CheckpointBuilt, type CheckpointJob, type CheckpointMessage, type CheckpointRun, type CheckpointRunner } from './checkpoint';
export { JOURNAL_FILE, JOURNAL_NEXT_FILE, SNAPSHOT_FILE, SNAPSHOT_SUM_FILE } from './files';
export { SCHEMA_VERSION, type MutationKey } from './schema';
export { Store, type SnapshotInfo, type StoreOptions } from './store';
