// The reads in records.ts, logQuery.ts and itemSearch.ts still name the sql.js Store in their
// parameters, though records.ts and logQuery.ts call only what StoreBackend offers (the PostgreSQL
// store answers the same SQL, and they ask which store it is where the dialects differ). Until they
// take a StoreBackend, this is the one place the engine hands its store to them.
import type { Store } from '../store';
import type { StoreBackend } from '../store/backend';

export function readable(store: StoreBackend): Store {
  return store as Store;
}
