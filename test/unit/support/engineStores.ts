// The stores an engine test runs on: the same tests against an engine whose store is sql.js on
// disk, and one whose store is a real PostgreSQL database (`storeUrl`, as `--store postgres://…`
// gives it), so a behaviour that differs between the stores fails a test. A file starts one
// PostgreSQL server (in its suite's before, see postgres.ts: missing, it skips, or fails under
// CI=true) and gives each test a fresh database of it.
//
//   for (const store of engineStores()) {
//     describe(`control (${store.name})`, function () {
//       store.setUp();
//       it('…', async () => { engine = await store.engine(ws, { concurrency: 2 }); … });
//     });
//   }
import { Engine, type EngineOptions } from '../../../src/core/kernel/engine';
import { type PostgresServer, startPostgresOrSkip } from './postgres';
import type { TempWorkspace } from './workspace';

export interface EngineStore {
  /** For test titles: "sql.js" or "PostgreSQL". */
  readonly name: string;
  /** True for sql.js: the store is the files in the storage folder, which a test may read or copy. */
  readonly onDisk: boolean;
  /**
   * Registers the suite's hooks: the server before its tests (PostgreSQL), a fresh database
   * before each test. Call it first thing in the describe.
   */
  setUp(): void;
  /** The engine options of `ws` on this store: ws.options(overrides), with this test's database for PostgreSQL. */
  options(ws: TempWorkspace, overrides?: Partial<EngineOptions>): EngineOptions;
  /** A new engine (not started) on this store: the same database each time within one test, as a restart finds it. */
  engine(ws: TempWorkspace, overrides?: Partial<EngineOptions>): Promise<Engine>;
  /** The `serve` flags that put dist/cli.js on this store: none, or `--store <url>`. */
  serveArgs(): string[];
}

/** sql.js first, then PostgreSQL: one describe each, in the order the file defines them. */
export function engineStores(): EngineStore[] {
  return [sqlJsStore(), postgresStore()];
}

function sqlJsStore(): EngineStore {
  const store: EngineStore = {
    name: 'sql.js',
    onDisk: true,
    setUp() {},
    options: (ws, overrides = {}) => ws.options(overrides),
    engine: (ws, overrides) => Engine.create(store.options(ws, overrides)),
    serveArgs: () => [],
  };
  return store;
}

function postgresStore(): EngineStore {
  let pg: PostgresServer | undefined;
  let url: string | undefined;
  let databases = 0;
  const current = (): string => {
    if (!url) throw new Error('no PostgreSQL database for this test: call store.setUp() in the describe');
    return url;
  };
  const store: EngineStore = {
    name: 'PostgreSQL',
    onDisk: false,
    setUp() {
      before(async function () {
        pg = await startPostgresOrSkip(this);
      });
      after(() => pg?.stop());
      beforeEach(() => {
        // The previous test's engines have shut down in its afterEach; a database of each test
        // keeps one test's items and counters out of the next.
        url = pg!.createUtf8Database(`engine_${++databases}`);
      });
    },
    options: (ws, overrides = {}) => ws.options({ ...overrides, storeUrl: current() }),
    engine: (ws, overrides) => Engine.create(store.options(ws, overrides)),
    serveArgs: () => ['--store', current()],
  };
  return store;
}
