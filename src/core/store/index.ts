// The engine's store: what the rest of the engine imports as './store'.
export { SCHEMA_VERSION, type MutationKey } from './schema';
export * from './store';
