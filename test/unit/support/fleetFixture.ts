// What every fleet test file sets up: one real PostgreSQL server for the file, and the engines
// (`serve` processes) and workspaces each test starts, stopped and removed after it.
import type { ServeProcess } from './cli';
import { type PostgresServer, startPostgresOrSkip } from './postgres';
import type { TempWorkspace } from './workspace';

export interface FleetFixture {
  /** The file's server; only while its tests run. */
  readonly pg: PostgresServer;
  /** Engines a test started: each is sent SIGTERM and waited for after the test. */
  readonly engines: ServeProcess[];
  /** Workspaces a test made: removed after the test, once its engines have stopped. */
  readonly workspaces: TempWorkspace[];
}

/** Registers the hooks; call it first thing in the describe. */
export function fleetFixture(): FleetFixture {
  let pg: PostgresServer | undefined;
  const engines: ServeProcess[] = [];
  const workspaces: TempWorkspace[] = [];
  before(async function () {
    pg = await startPostgresOrSkip(this);
  });
  after(() => pg?.stop());
  afterEach(async () => {
    for (const e of engines.splice(0)) await stopEngine(e);
    for (const w of workspaces.splice(0)) w.dispose();
  });
  return {
    get pg() {
      if (!pg) throw new Error('fleetFixture(): the PostgreSQL server runs only while the suite does');
      return pg;
    },
    engines,
    workspaces,
  };
}

/** SIGTERM, and waits for the exit; an engine that has already ended is left as it is. */
export async function stopEngine(e: ServeProcess): Promise<void> {
  if (e.child.exitCode === null && e.child.signalCode === null) {
    e.child.kill('SIGTERM');
    await e.exited;
  }
}
