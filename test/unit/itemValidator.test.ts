// The queue item's validator as the bundles carry it, compiled at build time (Ajv's standalone
// code, itemSchema.ts), must judge every entry as the validator compiled at run time does: the
// same verdict and the same errors, which parseItem turns into the reasons users read. And the
// built engine host must really carry it compiled (no schema compiler left to run at start).
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';
import * as esbuild from 'esbuild';
import type { ValidateFunction } from 'ajv';
import { compileItemSchema, itemValidatorModule } from '../../src/core/intake/itemSchema';
import { assertBuilt, CLI } from './support/cli';

/** The ahead-compiled module, loaded the way the bundle does (its `require`s resolved from here). */
function precompiled(): ValidateFunction {
  const cjs = esbuild.transformSync(itemValidatorModule(), { format: 'cjs', loader: 'js' }).code;
  const mod = { exports: {} as { validateItem?: ValidateFunction } };
  const load = vm.runInThisContext(`(function (module, exports, require) {${cjs}\n})`, { filename: 'itemValidator.precompiled.js' }) as (m: typeof mod, e: typeof mod.exports, r: NodeRequire) => void;
  load(mod, mod.exports, createRequire(__filename));
  assert.equal(typeof mod.exports.validateItem, 'function');
  return mod.exports.validateItem!;
}

const ENTRIES: unknown[] = [
  { command: 'echo' },
  { id: 'deploy', name: 'Deploy', command: 'make', args: ['deploy', '--yes'], cwd: 'app', env: { A: '1' }, timeoutMs: 1000, maxAttempts: 2 },
  { command: 'echo', shell: true, runAt: '2099-01-01T00:00:00.000Z' },
  { command: 'echo', runAt: 'tomorrow' },
  { command: 'echo', runAt: '2099-13-01T00:00:00Z' },
  { command: 'echo', schedule: '*/5 * * * *', overlap: 'skip' },
  { command: 'echo', schedule: { cron: '0 3 * * *', timezone: 'Europe/Paris' } },
  { command: 'echo', schedule: { timezone: 'UTC' } },
  { command: 'echo', overlap: 'sometimes' },
  { command: 'echo', watch: { paths: ['src/**/*.ts'] } },
  { command: 'echo', watch: 'src' },
  { command: 'echo', dependsOn: ['a', 'b'], priority: 5 },
  { command: 'echo', dependsOn: 'a', priority: 'high' },
  { command: 'echo', problemMatcher: '$tsc' },
  { command: 'echo', problemMatcher: { pattern: { regexp: '^(.*):(\\d+)$', file: 1, line: 2 } } },
  { command: 'server', service: true, ready: { http: 'http://127.0.0.1:3000/health' }, readyTimeoutMs: 5000, restart: 'on-failure' },
  { command: 'server', service: true, ready: { port: 'x' }, restart: 'sometimes' },
  { command: 'echo', ready: { port: 3000 } },
  { name: 'no command' },
  { command: '' },
  { command: 42 },
  { command: 'echo', args: 'not an array' },
  { command: 'echo', args: [1, 2] },
  { command: 'echo', env: { A: 1 } },
  { command: 'echo', timeoutMs: -1, maxAttempts: 0 },
  { command: 'echo', id: 'has spaces and / slashes' },
  { command: 'echo', id: 'x'.repeat(129) },
  { command: 'echo', name: '😀'.repeat(300) },
  { command: 'echo', unknownField: true, another: null },
  { command: 'echo', shell: 'yes', cwd: 7 },
];

describe('the ahead-compiled item validator', () => {
  it('judges every entry as the validator compiled at run time does, with the same errors', () => {
    const runtime = compileItemSchema().validate;
    const ahead = precompiled();
    let rejected = 0;
    for (const entry of ENTRIES) {
      const verdict = runtime(entry);
      assert.equal(ahead(entry), verdict, `verdicts differ for ${JSON.stringify(entry)}`);
      assert.deepEqual(ahead.errors ?? null, runtime.errors ?? null, `errors differ for ${JSON.stringify(entry)}`);
      if (!verdict) rejected++;
    }
    // The list must exercise both answers, or the comparison proves little.
    assert.ok(rejected >= 10 && rejected < ENTRIES.length - 5, `${rejected} of ${ENTRIES.length} rejected`);
  });

  it('is what the built engine host carries: no schema compiler in dist/cli-main.js', () => {
    assertBuilt();
    // dist/cli.js is the small entry; the engine host is the bundle it loads.
    const cli = readFileSync(path.join(path.dirname(CLI), 'cli-main.js'), 'utf8');
    assert.match(cli, /validateItem = validate\d+/, 'dist/cli-main.js does not carry the ahead-compiled validator (build.mjs precompiledItemValidator)');
    assert.doesNotMatch(cli, /\bcompileSchema\b/, 'dist/cli-main.js still bundles Ajv\'s schema compiler');
  });
});
