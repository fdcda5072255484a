// The engine host's bundle through V8's code cache: each start in its own Node process (the cache
// is for the next process, and V8 keeps compiled code within one anyway), against real files.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { getJson, serve } from './support/cli';
import { TempWorkspace, waitFor } from './support/workspace';

const CODE_CACHE = path.resolve(__dirname, '../../src/host/codeCache.ts');
const TSX = createRequire(__filename).resolve('tsx/cjs');

/** A module with functions that run when it loads, and one answer that shows its wrapper's arguments worked. */
function fixtureSource(variant: string): string {
  const fns = Array.from({ length: 200 }, (_, i) => `function f${i}(x) { return x * ${i + 1} + ${JSON.stringify(variant)}.length; }`).join('\n');
  const calls = Array.from({ length: 200 }, (_, i) => `f${i}(1)`).join(' + ');
  return `${fns}\nconst path = require('node:path');\nglobalThis.__fixture = { sum: ${calls}, file: path.basename(__filename), dir: __dirname, variant: ${JSON.stringify(variant)}, exportsIsThis: this === module.exports };\n`;
}

interface Start {
  state: string;
  saved: boolean;
  fixture: { sum: number; file: string; dir: string; variant: string; exportsIsThis: boolean };
}

/** One start of `file` in a fresh Node process, saving the cache afterwards as the engine host does. */
function start(file: string, dir: string | undefined): Start {
  const code = `const { runWithCodeCache } = require(${JSON.stringify(CODE_CACHE)});
const run = runWithCodeCache(${JSON.stringify(file)}, ${JSON.stringify(dir)});
process.stdout.write(JSON.stringify({ state: run.state, saved: run.save(), fixture: globalThis.__fixture }));`;
  return JSON.parse(execFileSync(process.execPath, ['--require', TSX, '-e', code], { encoding: 'utf8' })) as Start;
}

describe('code cache: a bundle loaded through V8\'s code cache', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let bundle: string;
  let dir: string;
  beforeEach(() => {
    ws = new TempWorkspace('engine-codecache-');
    bundle = path.join(ws.root, 'bundle.js');
    dir = path.join(ws.root, 'cache');
    writeFileSync(bundle, fixtureSource('one'));
  });
  afterEach(() => ws.dispose());

  it('writes the cache on the first start and runs from it on the next, the module the same either way', () => {
    const first = start(bundle, dir);
    assert.equal(first.state, 'absent');
    assert.equal(first.saved, true);
    const files = readdirSync(dir);
    assert.equal(files.length, 1, files.join(', '));
    assert.equal(readdirSync(dir).filter((f) => f.endsWith('.tmp')).length, 0);
    // Only this user may write where cached code is read from.
    assert.equal(statSync(dir).mode & 0o077, 0);

    const second = start(bundle, dir);
    assert.equal(second.state, 'accepted');
    assert.equal(second.saved, false, 'an accepted cache is not written again');
    assert.deepEqual(second.fixture, first.fixture);
    assert.equal(first.fixture.file, 'bundle.js');
    assert.equal(first.fixture.dir, ws.root);
    assert.equal(first.fixture.exportsIsThis, true);
  });

  it('a bundle with text beyond ASCII keeps it, from its source and from the cache (only an ASCII bundle is read as Latin-1)', () => {
    const text = 'µs → 5 … ¥ 😀';
    writeFileSync(bundle, `// a comment: ${text}\n${fixtureSource(text)}`);
    const first = start(bundle, dir);
    assert.equal(first.state, 'absent');
    assert.equal(first.fixture.variant, text);
    const second = start(bundle, dir);
    assert.equal(second.state, 'accepted');
    assert.deepEqual(second.fixture, first.fixture);
  });

  it('never runs the cached code of another build: a bundle of the same length is "stale", run from its source and cached again', () => {
    start(bundle, dir);
    // Same length as 'one' (V8 itself compares only the source's length).
    writeFileSync(bundle, fixtureSource('two'));
    const changed = start(bundle, dir);
    assert.equal(changed.state, 'stale');
    assert.equal(changed.fixture.variant, 'two');
    assert.equal(changed.saved, true);
    assert.equal(start(bundle, dir).state, 'accepted');
  });

  it('a damaged cache file is refused by V8, the module runs from its source, and the file is written again', () => {
    start(bundle, dir);
    const [name] = readdirSync(dir);
    const file = path.join(dir, name);
    const good = readFileSync(file);
    // The right digest of the source, then garbage where V8's data was.
    writeFileSync(file, Buffer.concat([good.subarray(0, 32), Buffer.alloc(good.length - 32, 0x5a)]));
    const damaged = start(bundle, dir);
    assert.equal(damaged.state, 'rejected');
    assert.equal(damaged.fixture.sum, start(bundle, undefined).fixture.sum);
    assert.equal(damaged.saved, true);
    assert.equal(start(bundle, dir).state, 'accepted');
    // Cut short (a disk that filled): refused too.
    writeFileSync(file, readFileSync(file).subarray(0, 100));
    assert.equal(start(bundle, dir).state, 'rejected');
  });

  it('a cache folder others can write to is not used (cached code runs as code)', () => {
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    const run = start(bundle, dir);
    assert.equal(run.state, 'off');
    assert.equal(run.saved, false);
    assert.equal(run.fixture.variant, 'one');
    assert.deepEqual(readdirSync(dir), []);
  });

  it('dist/cli.js serve writes its cache once started, and starts from it (a damaged one is repaired)', async () => {
    writeFileSync(path.join(ws.queue, 'a.json'), JSON.stringify({ id: 'a', command: process.execPath, args: ['-e', 'process.exit(0)'] }));
    const env = { ENGINE_MONITOR_CODE_CACHE: dir };
    const once = await serve(['--workspace', ws.folder, '--storage', ws.storage], 30_000, env);
    let cacheFile: string;
    try {
      await waitFor('the item launched', async () => (await getJson<{ overview: { launched: number } }>(`${once.url}/stats`)).overview.launched === 1, 30_000);
      cacheFile = await waitFor('the cache file', () => existsSync(dir) && readdirSync(dir).find((f) => f.endsWith('.bin')), 30_000);
    } finally {
      once.child.kill('SIGTERM');
      await once.exited;
    }
    const written = readFileSync(path.join(dir, cacheFile));
    writeFileSync(path.join(dir, cacheFile), Buffer.concat([written.subarray(0, 32), Buffer.alloc(written.length - 32, 0x5a)]));
    const again = await serve(['--workspace', ws.folder, '--storage', ws.storage], 30_000, env);
    try {
      // The item the first engine ran, from the database this one loaded.
      const stats = await getJson<{ overview: { total: number; launched: number } }>(`${again.url}/stats`);
      assert.deepEqual([stats.overview.total, stats.overview.launched], [1, 1]);
      await waitFor('the cache written again', () => !readFileSync(path.join(dir, cacheFile)).subarray(32, 64).equals(Buffer.alloc(32, 0x5a)), 30_000);
    } finally {
      again.child.kill('SIGTERM');
      assert.equal((await again.exited).code, 0);
    }
    assert.deepEqual(readdirSync(dir), [cacheFile]);
  });

  it('the client commands load the bundle as Node does: no cache folder made, none read', async () => {
    const engine = await serve(['--workspace', ws.folder, '--storage', ws.storage], 30_000, { ENGINE_MONITOR_CODE_CACHE: dir });
    try {
      const xdg = path.join(ws.root, 'xdg');
      const out = execFileSync(process.execPath, [path.resolve(__dirname, '../../dist/cli.js'), 'health', '--url', engine.url], {
        env: { ...process.env, ENGINE_MONITOR_CODE_CACHE: '', XDG_CACHE_HOME: xdg },
        encoding: 'utf8',
      });
      assert.match(out, /healthy|running/i);
      assert.equal(existsSync(xdg), false);
    } finally {
      engine.child.kill('SIGTERM');
      assert.equal((await engine.exited).code, 0);
    }
  });
});
