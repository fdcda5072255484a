// One esbuild config for every bundle: the headless CLI / engine host, the VS Code extension
// and the webview. Type checking is separate (`npm run typecheck`), as esbuild only strips types.
import * as esbuild from 'esbuild';
import { chmodSync, copyFileSync, mkdirSync, existsSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

mkdirSync('dist', { recursive: true });
// sql.js loads its WebAssembly at run time through locateFile; it must sit beside the bundles.
copyFileSync(path.join(path.dirname(require.resolve('sql.js')), 'sql-wasm.wasm'), 'dist/sql-wasm.wasm');

// Codicons for the webview: copied so the packaged extension needs no node_modules.
mkdirSync('dist/codicons', { recursive: true });
const codiconsDir = path.join(path.dirname(require.resolve('@vscode/codicons/package.json')), 'dist');
for (const f of ['codicon.css', 'codicon.ttf']) copyFileSync(path.join(codiconsDir, f), path.join('dist/codicons', f));

// The same list as ENGINE_HOST_NODE_OPTIONS in src/shared/hostProtocol.ts (a unit test compares them).
const hostNodeOptions = ['--max-semi-space-size=2', '--v8-pool-size=1', '--max-old-space-size=1024'];

/**
 * Bundles `contents` (TypeScript importing from src/) and runs it here, at build time; returns its
 * exports. `dirname` is the module's __dirname.
 */
async function runAtBuildTime(contents, dirname = process.cwd()) {
  const generator = await esbuild.build({
    stdin: { contents, resolveDir: process.cwd(), loader: 'ts' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    write: false,
    logLevel: 'warning',
  });
  const mod = { exports: {} };
  new Function('module', 'exports', 'require', '__dirname', generator.outputFiles[0].text)(mod, mod.exports, require, dirname);
  return mod.exports;
}

/**
 * The queue item's validator compiled at build time (src/core/intake/itemSchema.ts), put in place
 * of src/core/intake/itemValidator.ts in every bundle: the engine host starts without compiling a
 * schema. itemSchema.ts is bundled on its own here to run it.
 */
async function precompiledItemValidator() {
  const { itemValidatorModule } = await runAtBuildTime("export { itemValidatorModule } from './src/core/intake/itemSchema';\n");
  return itemValidatorModule();
}
const itemValidatorSource = await precompiledItemValidator();
const precompiledValidator = {
  name: 'precompiled-item-validator',
  setup(build) {
    build.onLoad({ filter: /[\\/]src[\\/]core[\\/]intake[\\/]itemValidator\.ts$/ }, (args) => ({
      contents: itemValidatorSource,
      loader: 'js',
      resolveDir: path.dirname(args.path),
    }));
  },
};

/**
 * dist/empty-database.sqlite: a new engine's database, this version's schema applied by sql.js
 * (src/core/store/emptyDatabase.ts), so an engine's first start loads it instead of running the
 * schema. Written on every build, as the schema is part of the sources.
 */
async function writeEmptyDatabase() {
  // __dirname is dist/: sql.js finds the sql-wasm.wasm copied there above.
  const { buildEmptyDatabase, loadSqlJs } = await runAtBuildTime(
    "export { buildEmptyDatabase } from './src/core/store/emptyDatabase';\nexport { loadSqlJs } from './src/core/store/sqlJs';\n",
    path.resolve('dist'),
  );
  writeFileSync('dist/empty-database.sqlite', buildEmptyDatabase(await loadSqlJs()));
}
const emptyDatabaseOnRebuild = {
  name: 'empty-database',
  setup(build) {
    build.onEnd(async (result) => {
      if (result.errors.length === 0) await writeEmptyDatabase();
    });
  },
};

/**
 * Express 5 loads, as it loads, body-parser's four parsers (`exports.json = bodyParser.json`, and so
 * on) and mime-types with its database of 2,500 types: about 7 % of the engine host's CPU to its
 * ready line. The engine calls none of them: it reads its few request bodies itself and writes
 * its responses with Node's own methods, never res.json(), res.type() or res.sendFile(). In the
 * bundles, express gets functions (body-parser, whose properties it reads at once) or an object
 * (mime-types) that load the real module when first used.
 */
const lazyExpressParts = {
  name: 'lazy-express-parts',
  setup(build) {
    const shims = {
      'body-parser': ['json', 'raw', 'text', 'urlencoded'].map((name) => `exports.${name} = (...args) => require('body-parser/${name}')(...args);`).join('\n'),
      'mime-types': "module.exports = new Proxy({}, { get: (_, key) => require('mime-types/index.js')[key] });",
    };
    build.onResolve({ filter: /^(body-parser|mime-types)$/ }, (args) => ({ path: args.path, namespace: 'lazy-express-parts' }));
    build.onLoad({ filter: /.*/, namespace: 'lazy-express-parts' }, (args) => ({ contents: shims[args.path], resolveDir: process.cwd(), loader: 'js' }));
  },
};

const common = {
  bundle: true,
  plugins: [precompiledValidator, lazyExpressParts],
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
};

const builds = [
  {
    ...common,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // The program users run: a small file that loads cli-main.js (through V8's code cache for
    // `serve`, src/host/codeCache.ts).
    entryPoints: { cli: 'src/host/cliEntry.ts' },
    outdir: 'dist',
    // The engine's Node settings for the bin (`engine-monitor serve`), so a user gets the fast engine
    // without reading the performance notes (ENGINE_HOST_NODE_OPTIONS; `env -S` splits them):
    // `node [own flags] dist/cli.js` overrides them.
    banner: { js: `#!/usr/bin/env -S node ${hostNodeOptions.join(' ')}` },
  },
  {
    ...common,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // The command line and the engine host (src/host/cli.ts), loaded by dist/cli.js.
    entryPoints: { 'cli-main': 'src/host/cli.ts' },
    outdir: 'dist',
    plugins: [...common.plugins, emptyDatabaseOnRebuild],
  },
  {
    ...common,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // The engine host's snapshot worker thread (src/core/store/), found beside dist/cli.js.
    entryPoints: { 'checkpoint-worker': 'src/core/store/checkpointWorker.ts' },
    outdir: 'dist',
  },
  {
    ...common,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // The thread that runs queue files' own problem-matcher regexps (src/core/features/problems/matcherThread.ts),
    // found beside dist/cli.js.
    entryPoints: { 'matcher-worker': 'src/core/features/problems/matcherWorker.ts' },
    outdir: 'dist',
  },
  {
    ...common,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // The file-watching thread of watched items (src/core/features/triggers/watchThread.ts), found beside dist/cli.js.
    entryPoints: { 'watch-worker': 'src/core/features/triggers/watchWorker.ts' },
    outdir: 'dist',
  },
  {
    ...common,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // The fleet store's connection thread (src/core/store/pgStore.ts), found beside dist/cli.js.
    // pg's optional native binding is not shipped: pg falls back to its JavaScript client.
    entryPoints: { 'pg-worker': 'src/core/store/pgWorker.ts' },
    outdir: 'dist',
    external: ['pg-native'],
  },
  {
    ...common,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // The launch helper the engine forks to spawn attempts (src/core/launching/), found
    // beside dist/cli.js. Its own bundle, so it loads only src/core/launching/attemptProcess.ts: fork cost
    // grows with memory.
    entryPoints: { 'launch-helper': 'src/host/launchHelperMain.ts' },
    outdir: 'dist',
  },
];
if (existsSync('src/extension/extension.ts')) {
  builds.push({
    ...common,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    entryPoints: { extension: 'src/extension/extension.ts' },
    outdir: 'dist',
    external: ['vscode'],
  });
}
if (existsSync('test/extension/index.ts')) {
  // The extension-host test suite, run inside VS Code by test/vscode runners. A bundle defeats
  // mocha's globbing, so test/extension/index.ts lists its files explicitly.
  builds.push({
    ...common,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    entryPoints: { 'test/extension/index': 'test/extension/index.ts' },
    outdir: 'dist',
    external: ['vscode'],
    // mocha's parallel mode resolves worker files at run time; the bundled suite runs serially,
    // so those lookups never happen and esbuild's warning about them is noise in every build.
    logOverride: { 'require-resolve-not-external': 'silent' },
  });
}
if (existsSync('media/src/main.ts')) {
  builds.push({
    ...common,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    entryPoints: { webview: 'media/src/main.ts' },
    outdir: 'dist',
  });
}

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  // Runnable as it is (`./dist/cli.js serve`), as npm makes the installed bin.
  chmodSync('dist/cli.js', 0o755);
}
