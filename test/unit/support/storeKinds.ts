// The stores the conformance suite (storeConformance.test.ts) runs its tests against, each behind
// one shape: a fresh store per test, and the same data opened again as a restarted engine opens it.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Store, type StoreBackend } from '../../../src/core/store';
import { PgStore } from '../../../src/core/store/pgStore';
import { PostgresServer, startPostgresOrSkip } from './postgres';

/** How a test gets a store of one kind: a fresh one, and the same data opened again after close(). */
export interface StoreKind {
  name: string;
  /** Attempts and log entries name the engine that wrote them (a store a fleet shares). */
  namesEngines: boolean;
  before(ctx: Mocha.Context): Promise<void>;
  after(): void;
  /** A new, empty store for one test. */
  fresh(): Promise<StoreBackend>;
  /** The store of the last fresh() opened again, as an engine that restarts opens it. */
  reopen(): Promise<StoreBackend>;
  /** Releases what fresh() made (its folder; the server keeps its databases until after()). */
  dispose(): void;
}

export function sqlJsKind(): StoreKind {
  let dir: string | undefined;
  return {
    name: 'sql.js on disk',
    namesEngines: false,
    async before() {},
    after() {},
    async fresh() {
      dir = mkdtempSync(path.join(os.tmpdir(), 'em-conformance-'));
      return (await Store.open({ storageDir: dir })).store;
    },
    async reopen() {
      return (await Store.open({ storageDir: dir! })).store;
    },
    dispose() {
      if (dir) rmSync(dir, { recursive: true, force: true });
      dir = undefined;
    },
  };
}

export function postgresKind(): StoreKind {
  let pg: PostgresServer | undefined;
  let url: string | undefined;
  let databases = 0;
  return {
    name: 'PostgreSQL',
    namesEngines: true,
    async before(ctx) {
      pg = await startPostgresOrSkip(ctx);
    },
    after() {
      pg?.stop();
    },
    async fresh() {
      url = pg!.createUtf8Database(`conformance_${++databases}`);
      return (await PgStore.open({ url, leaseMs: 10_000 })).store;
    },
    async reopen() {
      return (await PgStore.open({ url: url!, leaseMs: 10_000 })).store;
    },
    dispose() {
      url = undefined;
    },
  };
}
