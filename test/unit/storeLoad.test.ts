import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import path from 'node:path';
import { DATABASE_ROOM_BYTES } from '../../src/core/store/snapshotFiles';
import { JOURNAL_FILE, SNAPSHOT_FILE, Store } from '../../src/core/store';
import { TempWorkspace } from './support/workspace';
import { copyAsCrashed } from './support/storeTesting';

describe('store: loading sql.js and a snapshot, in a fresh process', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  beforeEach(() => (ws = new TempWorkspace('engine-load-')));
  afterEach(() => ws.dispose());

  const storeModule = path.join(__dirname, '..', '..', 'src', 'core', 'store', 'index.ts');
  /** Runs `body` in a new Node process with the store's sources loaded; returns what it prints last as JSON. */
  function inFreshProcess<T>(body: string): T {
    const script = `const { Store } = require(${JSON.stringify(storeModule)});\n${body}`;
    const out = execFileSync(process.execPath, ['--require', require.resolve('tsx/cjs'), '-e', script], { encoding: 'utf8', timeout: 50_000 });
    return JSON.parse(out.trim().split('\n').pop()!) as T;
  }

  it('keeps the event loop alive while sql.js compiles, and lets it go afterwards', () => {
    // With nothing holding the loop while the WebAssembly compiles, Node continues startup inside
    // NodePlatform::DrainTasks and then waits there for V8's background compile jobs: timers and I/O
    // stood still for 110-220 ms after each engine start (docs/PERFORMANCE.md, fix 21).
    const seen = inFreshProcess<{ during: string[]; after: string[] }>(`
      const opening = Store.open({ storageDir: null });
      const during = process.getActiveResourcesInfo();
      opening.then(({ store }) => {
        store.close();
        setImmediate(() => console.log(JSON.stringify({ during, after: process.getActiveResourcesInfo() })));
      });`);
    assert.ok(seen.during.includes('Timeout'), `a referenced timer holds the loop while sql.js loads (active: ${seen.during.join(', ')})`);
    assert.ok(!seen.after.includes('Timeout'), `and is gone once it has loaded (active: ${seen.after.join(', ')})`);
    // execFileSync returned: the process exited by itself, so nothing was left holding the loop.
  });

  it('refuses an sql.js that other code initialised first (it drops a leading U+FEFF), and takes its own', () => {
    const sqlJsModule = path.join(__dirname, '..', '..', 'src', 'core', 'store', 'sqlJs.ts');
    const seen = inFreshProcess<{ first: string }>(`
      const { loadSqlJs } = require(${JSON.stringify(sqlJsModule)});
      const outcome = (p) => p.then(() => 'loaded', (e) => e.message);
      (async () => {
        // Another caller of sql.js's own initialiser, before loadSqlJs(): its module has the default decoder.
        await require('sql.js')();
        const first = await outcome(loadSqlJs());
        console.log(JSON.stringify({ first }));
      })();`);
    assert.match(seen.first, /sql\.js was initialised before loadSqlJs\(\) and drops a leading U\+FEFF/);
    // Initialised by loadSqlJs() alone, text keeps its byte order mark (the check is not needed then).
    const own = inFreshProcess<{ text: string }>(`
      const { loadSqlJs } = require(${JSON.stringify(sqlJsModule)});
      loadSqlJs().then((SQL) => {
        const db = new SQL.Database();
        console.log(JSON.stringify({ text: db.exec("SELECT char(65279) || 'x'")[0].values[0][0] }));
      });`);
    assert.equal(own.text, '\uFEFFx');
  });

  it('loads a snapshot and replays its journal in one buffer, without a second copy of the file', async () => {
    const { store } = await Store.open({ storageDir: ws.storage });
    const addLogs = (from: number, count: number) =>
      store.batch(() => {
        for (let id = from; id < from + count; id++) {
          const message = `entry ${id} exit code ${id % 7} ${'x'.repeat(id % 50)}`;
          store.mutate('log_insert', [id, 1_700_000_000_000 + id, 'launch_failed', 3, message, `item-${id % 13}`, JSON.stringify({ n: id })]);
          store.mutate('log_fts_insert', [id, message]);
        }
      });
    addLogs(1, 40_000);
    assert.equal(store.snapshot(), true);
    // A journal after it, left unreplayed the way a crash leaves it (a copy of the folder taken now).
    addLogs(40_001, 2_000);
    assert.equal(store.commit(), true);
    const crashed = path.join(ws.root, 'crashed');
    copyAsCrashed(ws.storage, crashed);
    store.close();
    const size = statSync(path.join(crashed, SNAPSHOT_FILE)).size;
    const journal = statSync(path.join(crashed, JOURNAL_FILE)).size;
    assert.ok(journal > 0 && journal < size / 10, `a journal much smaller than the snapshot (${journal} vs ${size} bytes)`);

    const loaded = inFreshProcess<{ bytes: number; logs: number; matches: number }>(`
      Store.open({ storageDir: null }).then(({ store: warm }) => {
        warm.close();
        const before = process.memoryUsage().arrayBuffers;
        return Store.open({ storageDir: ${JSON.stringify(crashed)} }).then(({ store }) => {
          const bytes = process.memoryUsage().arrayBuffers - before;
          const logs = store.get('SELECT COUNT(*) AS n FROM logs').n;
          const matches = store.get("SELECT COUNT(*) AS n FROM logs_fts WHERE logs_fts MATCH 'exit'").n;
          console.log(JSON.stringify({ bytes, logs, matches }));
        });
      });`);
    assert.equal(loaded.logs, 42_000, 'every entry of the snapshot and of the journal');
    assert.equal(loaded.matches, 42_000, 'and the text index with them');
    // One buffer: the file plus the room reserved for replay (a quarter of it, twice the journal,
    // and at least DATABASE_ROOM_BYTES in all, untouched pages: address space, not memory).
    // A copy made when replay outgrew the file would add the file's size again until V8 collects it.
    assert.ok(size > 2 * 1024 * 1024, `a file larger than the slack below (${size} bytes)`);
    const oneBuffer = Math.max(DATABASE_ROOM_BYTES, size + Math.ceil(size / 4) + 2 * journal);
    assert.ok(loaded.bytes <= oneBuffer + 1024 * 1024, `ArrayBuffer memory after loading: ${loaded.bytes} bytes; one buffer is ${oneBuffer}, the file ${size}`);
  });
});
