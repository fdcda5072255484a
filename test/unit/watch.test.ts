// File triggers in the real engine: real files written and renamed in a temporary workspace, a
// real watcher, real processes, a real database on disk.
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { parseItem } from '../../src/core/intake/items';
import { globRegExp, watchGlob } from '../../src/core/features/triggers/globs';
import type { WatchTriggers } from '../../src/core/features/triggers/watchTriggers';
import { startHttpServer } from '../../src/server';
import { OpenApiChecker, request } from './support/http';
import { PostgresServer, startPostgresOrSkip } from './support/postgres';
import { allLogs, NODE, TempWorkspace, waitFor } from './support/workspace';

/** Runs until a file named `release` exists in its cwd, printing "started" first. */
const UNTIL_RELEASED = "console.log('started');const fs=require('fs');const t=setInterval(()=>{if(fs.existsSync('release'))clearInterval(t)},20)";

describe('file triggers (watch)', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let engine: Engine | undefined;

  beforeEach(() => {
    ws = new TempWorkspace('engine-watch-');
    mkdirSync(path.join(ws.folder, 'src', 'deep'), { recursive: true });
  });
  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    ws.dispose();
  });

  const triggers = (e: Engine) => (e as unknown as { triggers: WatchTriggers }).triggers;
  /** Starts the engine with one watched template and waits until its watcher has read its folders. */
  const open = async (item: Record<string, unknown>) => {
    ws.enqueue('watched.json', item);
    engine = await Engine.create(ws.options());
    await engine.start();
    const e = engine;
    await waitFor('the watcher to be set up', () => triggers(e).ready(item.id as string) !== undefined);
    await triggers(e).ready(item.id as string);
    return e;
  };
  const write = (rel: string, text = String(Math.random())) => {
    mkdirSync(path.dirname(path.join(ws.folder, rel)), { recursive: true });
    writeFileSync(path.join(ws.folder, rel), text);
  };
  /** As editors save: the new content under a temporary name, renamed over the file. */
  const saveByRename = (rel: string, text: string) => {
    const file = path.join(ws.folder, rel);
    writeFileSync(`${file}.tmp~`, text);
    renameSync(`${file}.tmp~`, file);
  };
  const fired = (e: Engine) => allLogs(e).filter((l) => l.action === 'watch_fired');
  const firedCount = (e: Engine, n: number) => waitFor(`${n} watch_fired entries`, () => fired(e).length >= n && fired(e));
  const occurrence = (e: Engine, n: number) => fired(e)[n - 1].itemId!;
  const running = (e: Engine, id: string) => waitFor(`"${id}" to run`, () => e.itemDetail(id)?.state === 'running');

  it('a burst of writes fires one occurrence <id>@<ISO ms>, naming up to 20 changed paths', async () => {
    // The writes take milliseconds; the quiet time is long enough that a loaded machine's late
    // notifications still land in the same burst.
    const e = await open({ id: 'tests', command: NODE, args: ['-e', '0'], watch: { paths: ['src/**/*.ts'], debounceMs: 1000 } });
    assert.deepEqual(e.listSchedules(), [{ id: 'tests', watch: { paths: ['src/**/*.ts'], debounceMs: 1000, onChange: 'restart' }, nextRunAt: null, lastRunAt: null, lastOutcome: null, enabled: true }]);
    assert.equal(e.stats().total, 0, 'a watched template is not an item');
    for (let i = 0; i < 25; i++) write(`src/deep/f${i}.ts`);
    write('src/a.ts');
    write('src/a.ts');
    write('src/readme.md'); // not named by the glob
    const [first] = await firedCount(e, 1);
    assert.match(first.itemId!, /^tests@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal((first.details!.paths as string[]).length, 20);
    assert.equal(first.details!.changed, 26);
    assert.ok((first.details!.paths as string[]).every((p) => /^src\/(deep\/f\d+|a)\.ts$/.test(p)), String(first.details!.paths));
    await waitFor('the occurrence to launch', () => e.itemDetail(first.itemId!)?.outcome === 'launched');
    // A later, separate change fires a second occurrence naming only itself: the first burst did not fire twice.
    write('src/later.ts');
    const all = await firedCount(e, 2);
    assert.deepEqual(all[1].details!.paths, ['src/later.ts']);
    assert.equal(triggers(e).settledBursts('tests'), 2);
    assert.equal(e.listItems({ limit: 10, offset: 0 }).total, 2);
    const [s] = e.listSchedules();
    assert.deepEqual([s.lastRunAt, s.lastOutcome === 'pending' || s.lastOutcome === 'launched'], [all[1].itemId!.slice('tests@'.length), true]);
  });

  it('hold stops watching and release watches again (over HTTP); GET /schedules lists the watched template as the OpenAPI document says', async () => {
    const e = await open({ id: 'docs', command: NODE, args: ['-e', '0'], watch: { paths: ['docs'], debounceMs: 50, onChange: 'skip' } });
    const token = 'watch-test-token';
    const auth = { headers: { Authorization: `Bearer ${token}` } };
    const server = await startHttpServer(e, { host: '127.0.0.1', port: 0, token });
    try {
      const api = new OpenApiChecker((await request(server.url, '/openapi.json', auth)).json as Record<string, any>);
      const listed = await request(server.url, '/schedules', auth);
      api.assertBody('/schedules', 200, listed.json);
      assert.deepEqual(listed.json, [{ id: 'docs', watch: { paths: ['docs'], debounceMs: 50, onChange: 'skip' }, nextRunAt: null, lastRunAt: null, lastOutcome: null, enabled: true }]);
      assert.equal((await request(server.url, '/items/docs/hold', { method: 'POST', ...auth })).status, 202);
      await waitFor('the held template to be unwatched', () => triggers(e).ready('docs') === undefined);
      write('docs/held.md');
      assert.equal((await request(server.url, '/items/docs/release', { method: 'POST', ...auth })).status, 202);
      await waitFor('the released template to be watched', () => triggers(e).ready('docs') !== undefined);
      await triggers(e).ready('docs');
      write('docs/guide/released.md');
      const [only] = await firedCount(e, 1);
      assert.deepEqual(only.details!.paths, ['docs/guide/released.md']);
      const after = await request(server.url, '/schedules', auth);
      api.assertBody('/schedules', 200, after.json);
      assert.equal((after.json as Array<{ lastRunAt: string }>)[0].lastRunAt, only.itemId!.slice('docs@'.length));
    } finally {
      await server.close();
    }
  });

  it('an edited template watches its new paths only; an id an item already has cannot become a watched template', async () => {
    const e = await open({ id: 'edit', command: NODE, args: ['-e', '0'], watch: { paths: ['old/*.ts'], debounceMs: 100 } });
    const before = triggers(e).ready('edit');
    ws.enqueue('watched.json', { id: 'edit', command: NODE, args: ['-e', '0'], watch: { paths: ['new/*.ts'], debounceMs: 100 } });
    await waitFor('the edited template to be watched anew', () => {
      const now = triggers(e).ready('edit');
      return now !== undefined && now !== before;
    });
    await triggers(e).ready('edit');
    const updated = allLogs(e).find((l) => l.action === 'item_updated' && l.itemId === 'edit');
    assert.deepEqual(updated?.details?.changed, ['watch']);
    write('old/a.ts');
    write('new/b.ts');
    const [only] = await firedCount(e, 1);
    assert.deepEqual(only.details!.paths, ['new/b.ts']);

    ws.enqueue('plain.json', { id: 'plain', command: NODE, args: ['-e', '0'] });
    await waitFor('the plain item', () => e.itemDetail('plain'));
    ws.enqueue('plain-watched.json', { id: 'plain', command: NODE, args: ['-e', '0'], watch: { paths: ['x'] } });
    const rejected = await waitFor('the rejection', () => allLogs(e).find((l) => l.action === 'item_rejected' && l.itemId === 'plain'));
    assert.match(rejected.message, /already an item; a watched item needs an id of its own/);
  });

  it('a folder that does not exist yet is watched once it is created', async () => {
    const e = await open({ id: 'gen', command: NODE, args: ['-e', '0'], watch: { paths: ['build/out/**/*.js'], debounceMs: 50 } });
    write('build/other/skip.js');
    write('build/out/x/y.js');
    const [only] = await firedCount(e, 1);
    assert.deepEqual(only.details!.paths, ['build/out/x/y.js']);
  });

  it('changes in .git, node_modules, the queue folder and the storage fire nothing', async () => {
    const e = await open({ id: 'all', command: NODE, args: ['-e', '0'], watch: { paths: ['**/*'], debounceMs: 100 } });
    write('.git/index');
    write('.git/refs/heads/main');
    write('node_modules/pkg/index.js');
    write('src/node_modules/x.js');
    write('.engine/queue/other.txt');
    writeFileSync(path.join(ws.storage, 'note.txt'), 'x');
    write('src/real.ts');
    const [only] = await firedCount(e, 1);
    assert.deepEqual(only.details!.paths, ['src/real.ts']);
    assert.equal(triggers(e).settledBursts('all'), 1, 'one burst only');
  });

  it('onChange restart (default): a save through a rename while an occurrence runs cancels it and starts a new one', async () => {
    const e = await open({ id: 'serve', command: NODE, args: ['-e', UNTIL_RELEASED], watch: { paths: ['src/*.ts'], debounceMs: 400 } });
    write('src/app.ts', 'one');
    await firedCount(e, 1);
    const first = occurrence(e, 1);
    await running(e, first);
    saveByRename('src/app.ts', 'two');
    const all = await firedCount(e, 2);
    const second = occurrence(e, 2);
    assert.deepEqual([all[1].details!.paths, all[1].details!.restarted], [['src/app.ts'], first]);
    const cancelled = e.itemDetail(first)!;
    assert.deepEqual([cancelled.outcome, cancelled.error], ['failed', 'cancelled']);
    await running(e, second);
    write('release');
    await waitFor('the new occurrence to launch', () => e.itemDetail(second)?.outcome === 'launched');
    assert.equal(fired(e).length, 2, 'the temporary file and the rename fired once');
  });

  it('onChange queue: while one runs, later bursts wait as one occurrence that starts when it ends', async () => {
    const e = await open({ id: 'build', command: NODE, args: ['-e', UNTIL_RELEASED], watch: { paths: ['src/*.ts'], debounceMs: 80, onChange: 'queue' } });
    write('src/a.ts');
    await firedCount(e, 1);
    const first = occurrence(e, 1);
    await running(e, first);
    write('src/b.ts');
    await waitFor('the second burst to settle', () => triggers(e).settledBursts('build') === 2);
    write('src/c.ts');
    await waitFor('the third burst to settle', () => triggers(e).settledBursts('build') === 3);
    assert.equal(fired(e).length, 1, 'nothing fires while the first runs');
    assert.equal(e.itemDetail(first)!.state, 'running', 'the running occurrence is not cancelled');
    write('release');
    const all = await firedCount(e, 2);
    assert.deepEqual(all[1].details!.paths, ['src/b.ts', 'src/c.ts']);
    await waitFor('the waiting occurrence to launch', () => e.itemDetail(all[1].itemId!)?.outcome === 'launched');
    assert.equal(e.itemDetail(first)!.outcome, 'launched');
    assert.equal(fired(e).length, 2, 'at most one waited');
  });

  it('onChange skip: a burst while an occurrence is pending logs watch_skipped and fires nothing', async () => {
    const e = await open({ id: 'lint', command: NODE, args: ['-e', UNTIL_RELEASED], watch: { paths: ['src/*.ts'], debounceMs: 80, onChange: 'skip' } });
    write('src/a.ts');
    await firedCount(e, 1);
    const first = occurrence(e, 1);
    await running(e, first);
    write('src/b.ts');
    const skipped = await waitFor('watch_skipped', () => allLogs(e).find((l) => l.action === 'watch_skipped'));
    assert.deepEqual([skipped.itemId, skipped.details!.previous, skipped.details!.paths], ['lint', first, ['src/b.ts']]);
    write('release');
    await waitFor('the first occurrence to launch', () => e.itemDetail(first)?.outcome === 'launched');
    assert.equal(fired(e).length, 1);
    assert.equal(e.listItems({ limit: 10, offset: 0 }).total, 1);
  });
});

describe('watch: validation and globs', () => {
  const ctx = { workspaceFolder: '/ws', relPath: '.engine/queue/a.json', index: 0, defaults: { timeoutMs: 1000, maxAttempts: 3 } };
  const reason = (entry: unknown) => {
    const r = parseItem(entry, ctx);
    return r.ok ? 'ok' : r.reason;
  };

  it('resolves the defaults and rejects watch with schedule or runAt, paths outside the workspace and bad shapes', () => {
    const r = parseItem({ id: 'w', command: 'x', watch: { paths: ['src/**/*.ts'] } }, ctx);
    assert.ok(r.ok);
    assert.deepEqual(r.item.watch, { paths: ['src/**/*.ts'], debounceMs: 300, onChange: 'restart' });
    assert.match(reason({ command: 'x', watch: { paths: ['a'] }, schedule: '* * * * *' }), /"watch" is not allowed with "schedule" or "runAt"/);
    assert.match(reason({ command: 'x', watch: { paths: ['a'] }, runAt: '2030-01-01T00:00:00Z' }), /"watch" is not allowed with "schedule" or "runAt"/);
    assert.match(reason({ command: 'x', watch: { paths: ['../other/*.ts'] } }), /leads outside the workspace folder/);
    assert.match(reason({ command: 'x', watch: { paths: ['/etc/*'] } }), /is absolute/);
    assert.match(reason({ command: 'x', watch: { paths: ['src/*/../../../x'] } }), /".." after a wildcard/);
    assert.match(reason({ command: 'x', watch: { paths: ['src/{a,b'] } }), /not a glob the engine can read/);
    assert.match(reason({ command: 'x', watch: { paths: [] } }), /"watch" must be \{ "paths"/);
    assert.match(reason({ command: 'x', watch: { paths: ['a'], onChange: 'later' } }), /"onChange"\?: "restart" \| "queue" \| "skip"/);
    assert.match(reason({ command: 'x', watch: { paths: ['a'] }, overlap: 'skip' }), /"overlap" applies to scheduled items only/);
  });

  it('matches * within a name, ** across folders, ?, {a,b} and [..]; descends only where a match can be', () => {
    const re = globRegExp('/w/src/**/*.{ts,tsx}');
    assert.deepEqual(['/w/src/a.ts', '/w/src/x/y/b.tsx', '/w/src/a.js', '/w/srcx/a.ts'].map((p) => re.test(p)), [true, true, false, false]);
    assert.deepEqual(['/w/a1.c', '/w/ab.c', '/w/a12.c'].map((p) => globRegExp('/w/a[0-9].c').test(p)), [true, false, false]);
    const g = watchGlob('lib/*/index.?s', '/w');
    assert.equal(g.base, '/w/lib');
    assert.deepEqual([g.test('/w/lib/x/index.js'), g.test('/w/lib/x/y/index.js'), g.descend('/w/lib/x'), g.descend('/w/lib/x/y')], [true, false, true, false]);
    const file = watchGlob('package.json', '/w');
    assert.deepEqual([file.base, file.test('/w/package.json'), file.test('/w/package.jsonx'), file.descend('/w'), file.descend('/w/src')], ['/w', true, false, true, false]);
    const folder = watchGlob('docs', '/w');
    assert.deepEqual([folder.test('/w/docs/a/b.md'), folder.descend('/w/docs/a')], [true, true]);
  });
});

describe('file triggers on a PostgreSQL store', function () {
  this.timeout(120_000);
  let pg: PostgresServer | undefined;
  let ws: TempWorkspace | undefined;
  let engine: Engine | undefined;

  before(async function () {
    pg = await startPostgresOrSkip(this);
  });
  after(async () => {
    await engine?.shutdown(0);
    ws?.dispose();
    pg?.stop();
  });

  it('a watched template kept in PostgreSQL fires on a change and its occurrence launches', async () => {
    ws = new TempWorkspace('engine-watch-pg-');
    ws.enqueue('watched.json', { id: 'pg-watch', command: NODE, args: ['-e', '0'], watch: { paths: ['src/*.ts'], debounceMs: 100 } });
    engine = await Engine.create(ws.options({ storeUrl: pg!.createDatabase('watch_1') }));
    await engine.start();
    const e = engine;
    const triggers = (e as unknown as { triggers: WatchTriggers }).triggers;
    await waitFor('the watcher to be set up', () => triggers.ready('pg-watch') !== undefined);
    await triggers.ready('pg-watch');
    assert.deepEqual(e.listSchedules().map((s) => [s.id, s.watch?.paths]), [['pg-watch', ['src/*.ts']]]);
    mkdirSync(path.join(ws.folder, 'src'), { recursive: true });
    writeFileSync(path.join(ws.folder, 'src', 'a.ts'), 'x');
    const fired = await waitFor('watch_fired', () => allLogs(e).find((l) => l.action === 'watch_fired'));
    await waitFor('the occurrence to launch', () => e.itemDetail(fired.itemId!)?.outcome === 'launched');
  });
});
