// Problem matchers in the engine: the headless CLI runs the project's own tsc on a
// broken file and GET /items/{id} carries the problem at its absolute file, line and column; a
// queue file's own matcher; a bad matcher rejected with the field named; output cut at the
// per-attempt cap matched as far as it is kept; and a database written by schema version 3.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadSqlJs } from '../../src/core/store/sqlJs';
import { Engine } from '../../src/core/kernel/engine';
import { migrate, SCHEMA_V1 } from '../../src/core/store/schema';
import type { ItemDetail } from '../../src/shared/api';
import { allLogs as cliLogs, getJson, serve, type ServeProcess } from './support/cli';
import { OpenApiChecker } from './support/http';
import { allLogs, NODE, settled, TempWorkspace, waitFor } from './support/workspace';

const TSC = path.resolve(__dirname, '../../node_modules/typescript/bin/tsc');
const BROKEN_TS = readFileSync(path.resolve(__dirname, 'fixtures/matchers/broken.ts.txt'), 'utf8');

describe('problem matchers: the engine over HTTP (real CLI, real tsc)', function () {
  this.timeout(120_000);
  let ws: TempWorkspace;
  let engine: ServeProcess | undefined;

  beforeEach(() => {
    ws = new TempWorkspace('engine-matchers-');
  });
  afterEach(async () => {
    if (engine) {
      engine.child.kill('SIGTERM');
      await engine.exited;
      engine = undefined;
    }
    ws.dispose();
  });

  it('stores tsc problems, a custom matcher\'s problems, and rejects an invalid matcher naming the field', async () => {
    mkdirSync(path.join(ws.folder, 'proj/src'), { recursive: true });
    writeFileSync(path.join(ws.folder, 'proj/src/broken.ts'), BROKEN_TS);
    ws.enqueue('jobs.json', [
      {
        id: 'typecheck',
        command: NODE,
        args: [TSC, '--noEmit', '--strict', '--target', 'ES2022', 'src/broken.ts'],
        cwd: 'proj',
        maxAttempts: 1,
        problemMatcher: '$tsc',
      },
      {
        id: 'lint',
        command: NODE,
        args: ['-e', "console.log('checking 2 files'); console.error('lib/notes.md@3:7 [warning] trailing space (MD009)'); process.exit(1)"],
        maxAttempts: 1,
        problemMatcher: {
          owner: 'mdlint',
          fileLocation: ['relative', 'docs'],
          pattern: { regexp: '^(\\S+)@(\\d+):(\\d+) \\[(\\w+)\\] (.*?) \\((\\w+)\\)$', file: 1, line: 2, column: 3, severity: 4, message: 5, code: 6 },
        },
      },
      { id: 'bad-matcher', command: NODE, args: ['-e', ''], problemMatcher: { pattern: { regexp: '^(unclosed', line: 1 } } },
      { id: 'no-matcher', command: NODE, args: ['-e', "console.error('x.ts(1,1): error TS1: looks like tsc'); process.exit(1)"], maxAttempts: 1 },
    ]);
    engine = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '200']);
    const openapi = new OpenApiChecker(await getJson(`${engine.url}/openapi.json`));
    const detail = async (id: string): Promise<ItemDetail> => {
      const body = await getJson<ItemDetail>(`${engine!.url}/items/${encodeURIComponent(id)}`);
      openapi.assertBody('/items/{id}', 200, body);
      return body;
    };
    const failed = async (id: string): Promise<ItemDetail> =>
      waitFor(`${id} failed`, async () => {
        const d = await detail(id);
        return d.outcome === 'failed' ? d : undefined;
      }, 90_000);

    const typecheck = await failed('typecheck');
    assert.equal(typecheck.item.problemMatcher, '$tsc');
    const file = path.join(ws.folder, 'proj/src/broken.ts');
    assert.deepEqual(typecheck.attempts[0].problems, [
      { file, line: 4, column: 9, severity: 'error', message: "Type 'number' is not assignable to type 'string'.", code: '2322' },
      { file, line: 5, column: 25, severity: 'error', message: "Cannot find name 'missing'.", code: '2304' },
    ]);

    const lint = await failed('lint');
    assert.deepEqual(lint.attempts[0].problems, [
      { file: path.join(ws.folder, 'docs/lib/notes.md'), line: 3, column: 7, severity: 'warning', message: 'trailing space', code: 'MD009' },
    ]);
    assert.deepEqual((await failed('no-matcher')).attempts[0].problems, [], 'no matcher: no problems, whatever the output');

    const logs = await cliLogs(engine.url);
    const rejected = logs.filter((e) => e.action === 'item_rejected');
    assert.equal(rejected.length, 1, JSON.stringify(rejected));
    assert.match(rejected[0].message, /entry 2: "problemMatcher"\.pattern\.regexp is not a valid regular expression/);
    assert.equal((rejected[0].details as { field?: string }).field, 'problemMatcher');
    // The attempt's log entry says how many problems were found (the extension fetches on that).
    const typecheckFailed = logs.find((e) => e.action === 'launch_failed' && e.itemId === 'typecheck');
    assert.equal((typecheckFailed?.details as { problems?: number }).problems, 2);
    const res = await fetch(`${engine.url}/items/bad-matcher`);
    assert.equal(res.status, 404);
  });
});

describe('problem matchers: the engine in process', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let engine: Engine | undefined;

  beforeEach(() => {
    ws = new TempWorkspace('engine-matchers-core-');
  });
  afterEach(async () => {
    await engine?.shutdown(2000);
    engine = undefined;
    ws.dispose();
  });

  it('matches output cut at the per-attempt cap as far as it is kept (head and tail)', async () => {
    // 64 KiB cap: 16 KiB head, 48 KiB tail; a problem in each, and 200 KiB of noise between.
    const code = [
      "process.stdout.write('a.ts(1,2): error TS1001: first\\n');",
      "for (let i = 0; i < 2000; i++) process.stdout.write('x'.repeat(99) + '\\n');",
      "process.stdout.write('b.ts(3,4): error TS1002: last\\n'); process.exitCode = 2;",
    ].join(' ');
    ws.enqueue('cut.json', { id: 'cut', command: NODE, args: ['-e', code], maxAttempts: 1, problemMatcher: '$tsc' });
    engine = await Engine.create(ws.options({ outputMaxBytes: 64 * 1024 }));
    await engine.start();
    await settled(engine);
    const d = engine.itemDetail('cut')!;
    assert.ok(d.attempts[0].outputBytes! < 70 * 1024, 'the output was cut');
    assert.deepEqual(
      d.attempts[0].problems.map((p) => [path.basename(p.file), p.line, p.column, p.code]),
      [
        ['a.ts', 1, 2, '1001'],
        ['b.ts', 3, 4, '1002'],
      ],
    );
    // The problems are in the database: a restart reads them back.
    await engine.shutdown(2000);
    engine = await Engine.create(ws.options());
    await engine.start();
    assert.equal(engine.itemDetail('cut')!.attempts[0].problems.length, 2, 'problems survive a restart');
  });

  it('opens a database written by schema version 3, migrates it, and matches new attempts', async () => {
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    db.run(SCHEMA_V1);
    db.run('PRAGMA user_version = 1');
    migrate(db, 3);
    const now = Date.now();
    const def = (id: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({ id, name: id, command: NODE, args: ['-e', "console.log('m.ts(2,3): error TS5: old'); process.exit(1)"], shell: false, cwd: ws.folder, env: {}, timeoutMs: 30_000, maxAttempts: 1, runAt: null, ...extra });
    db.run(
      "INSERT INTO items (id, name, source, definition, def_hash, outcome, attempts, max_attempts, run_at, due_at, running, last_error, created_at, updated_at, held) VALUES ('old', 'old', '.engine/queue/old.json', ?, 'h1', 'failed', 1, 1, NULL, NULL, 0, 'exited with code 1', ?, ?, 0)",
      [def('old'), now, now],
    );
    db.run("INSERT INTO attempts (id, item_id, attempt, started_at, finished_at, outcome, exit_code, output_bytes) VALUES (1, 'old', 1, ?, ?, 'failed', 1, 0)", [now - 10, now]);
    db.run("INSERT INTO meta (key, value) VALUES ('total_launches', '1'), ('total_failed', '1'), ('journal_seq', '0')");
    mkdirSync(ws.storage, { recursive: true });
    writeFileSync(path.join(ws.storage, 'engine.sqlite'), db.export());
    db.close();
    // A v3 journal record after the snapshot: an item with a matcher (item_insert keeps its parameters in v4).
    const record = [1, 'item_insert', ['new', 'new', '.engine/queue/new.json', def('new', { problemMatcher: '$tsc' }), 'h2', 1, null, 0, now, now]];
    writeFileSync(path.join(ws.storage, 'engine.journal'), `${JSON.stringify(record)}\n`);

    engine = await Engine.create(ws.options());
    await engine.start();
    assert.equal(allLogs(engine).filter((e) => e.action === 'database_recovered').length, 0, 'nothing needed repair');
    assert.deepEqual(engine.itemDetail('old')!.attempts[0].problems, [], 'an attempt from before v4 has none');
    await waitFor('new failed', () => engine!.itemDetail('new')?.outcome === 'failed');
    assert.deepEqual(engine.itemDetail('new')!.attempts[0].problems, [
      { file: path.join(ws.folder, 'm.ts'), line: 2, column: 3, severity: 'error', message: 'old', code: '5' },
    ]);
  });
  it("stops a queue file's regexp that backtracks without end once its budget is spent, and matches the next attempt on a fresh thread", async () => {
    // `^(a+)+$` against 40 a's and a "!" backtracks about 2^40 times: on the engine's main thread
    // this test would never end, and neither would any launch, /health or API request.
    ws.enqueue('redos.json', {
      id: 'redos',
      command: NODE,
      args: ['-e', "console.log('a'.repeat(40) + '!'); process.exit(1)"],
      maxAttempts: 1,
      problemMatcher: { pattern: { regexp: '^(a+)+$', file: 1, line: 1 } },
    });
    engine = await Engine.create(ws.options({ matcherBudgetMs: 1500 }));
    await engine.start();
    await waitFor('redos failed', () => engine!.itemDetail('redos')?.outcome === 'failed', 30_000);
    assert.deepEqual(engine.itemDetail('redos')!.attempts[0].problems, [], 'stopped: no problems recorded');
    const why = allLogs(engine).filter((e) => e.itemId === 'redos' && e.action === 'database_error');
    assert.equal(why.length, 1, JSON.stringify(why));
    assert.match(why[0].message, /problem matcher of "redos" to attempt 1: it ran for more than 1\.5 s .*nested repetition/);

    ws.enqueue('after.json', {
      id: 'after',
      command: NODE,
      args: ['-e', "console.log('src/b.js:7: boom'); process.exit(1)"],
      maxAttempts: 1,
      problemMatcher: { pattern: { regexp: '^([^:]+):(\\d+): (.*)$', file: 1, line: 2, message: 3 } },
    });
    await engine.pollNow();
    await waitFor('after failed', () => engine!.itemDetail('after')?.outcome === 'failed', 30_000);
    assert.deepEqual(engine.itemDetail('after')!.attempts[0].problems, [
      { file: path.join(ws.folder, 'src/b.js'), line: 7, column: null, severity: 'error', message: 'boom', code: null },
    ]);
  });
});
