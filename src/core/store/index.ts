// The engine's store: what the rest of the engine imports as './store'.
export type { StoreNote } from './backend';
export { JOURNAL_FILE, JOURNAL_NEXT_FILE, SNAPSHOT_FILE, SNAPSHOT_SUM_FILE } from './files';
export { SCHEMA_VERSION, type MutationKey } from './schema';
export * from './store';
