// The engine's store: what the rest of the engine imports as './store'.
export * from './store';
