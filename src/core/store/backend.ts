// What the engine needs from its store, apart from how the store keeps its data.

/** Something the store did on its own that the engine should log: a recovery, a fallback. */
export interface StoreNote {
  level: 'info' | 'warn' | 'error';
  action: 'database_recovered' | 'database_error';
  message: string;
  details?: Record<string, unknown>;
}
