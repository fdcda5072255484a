// The .vsix of `npm run package`: exactly the files that run (minified bundles, sql.js's wasm,
// codicons, the item schema, media, README, CHANGELOG, LICENSE, package.json), and, installed into
// code-server like a user installs it, an extension that activates, runs a queued item, shows its
// health in the status bar and opens the dashboard.
//
// Needs code-server and Chromium for the second part (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Frame, Page } from 'playwright-core';
import { DEFAULT_LAUNCH_HELPERS } from '../../src/core/launching';
import type { ItemDetail, StatsResponse } from '../../src/shared/api';
import {
  codeServerBinary,
  launchChromium,
  runCommand,
  screenshot,
  startCodeServer,
  waitForExtension,
  waitForWorkbench,
  workbenchUrl,
  type CodeServer,
} from '../vscode/codeServer';
import { EXTENSION_ID, MANIFEST, packageInStaging, readZip, run, type Staged, type ZipEntry } from './support';
import { getJson, readEndpoint, waitUntil } from '../vscode/engineProbe';
import { ENGINE_HOST_NODE_OPTIONS } from '../../src/shared/hostProtocol';


/**
 * The allow-list, as paths inside the .vsix. vsce adds the two manifest files at the root, stores
 * README and CHANGELOG under lower-case names and the license as LICENSE.txt.
 */
const REQUIRED = [
  '[Content_Types].xml',
  'extension.vsixmanifest',
  'extension/package.json',
  'extension/readme.md',
  'extension/changelog.md',
  'extension/LICENSE.txt',
  'extension/dist/extension.js',
  'extension/dist/cli.js',
  'extension/dist/cli-main.js',
  'extension/dist/launch-helper.js',
  'extension/dist/checkpoint-worker.js',
  'extension/dist/matcher-worker.js',
  'extension/dist/watch-worker.js',
  'extension/dist/pg-worker.js',
  'extension/dist/webview.js',
  'extension/dist/sql-wasm.wasm',
  'extension/dist/empty-database.sqlite',
  'extension/dist/codicons/codicon.css',
  'extension/dist/codicons/codicon.ttf',
  'extension/schemas/item.schema.json',
  'extension/media/icon.png',
  'extension/media/dashboard.css',
];
/**
 * Further files that may ship: icons and stylesheets in media/, the walkthrough's pages and
 * images, the docs the README links to (PERFORMANCE, RELIABILITY, FLEET), and the screenshots the README shows (VS Code renders the README from the installed
 * extension, so they must be in it).
 */
const ALSO_ALLOWED = [
  /^extension\/media\/[^/]+\.(svg|png|css)$/,
  /^extension\/media\/walkthrough\/[^/]+\.(md|svg|png)$/,
  /^extension\/media\/screenshots\/[^/]+\.png$/,
  /^extension\/docs\/(PERFORMANCE|RELIABILITY|FLEET)\.md$/,
];
const FORBIDDEN = [
  /\.map$/,
  /\.tsx?$/,
  /(^|\/)node_modules\//,
  /^extension\/(src|test|examples|bench|out|\.vscode|\.ci)\//,
  /^extension\/docs\/(?!(PERFORMANCE|RELIABILITY|FLEET)\.md$)/,
  /^extension\/dist\/test\//,
  /\.engine\//,
  // Engine state: any database but the empty one the build writes for a new engine.
  /^(?!(extension\/)?dist\/empty-database\.sqlite$).*\.sqlite/,
  /\.vsix$/,
  /(^|\/)(tsconfig\.json|build\.mjs|package-lock\.json|\.vscodeignore|\.gitignore|\.mocharc\.(json|cjs))$/,
];

/** The .vsix is built once, in a staging copy, and shared by both suites below. */
let staged: Promise<Staged> | undefined;
function stagedPackage(): Promise<Staged> {
  staged ??= packageInStaging();
  return staged;
}

after(async function () {
  if (staged) (await staged.catch(() => undefined))?.dispose();
});

describe('npm run package: the .vsix', function () {
  this.timeout(180_000);
  let pkg: Staged;
  let entries: ZipEntry[];
  let byName: Map<string, ZipEntry>;

  before(async function () {
    pkg = await stagedPackage();
    entries = readZip(pkg.vsix);
    byName = new Map(entries.map((e) => [e.name, e]));
  });

  it('holds the allow-listed files and nothing else', function () {
    const names = entries.map((e) => e.name).sort();
    const missing = REQUIRED.filter((f) => !byName.has(f));
    assert.deepEqual(missing, [], `missing from the .vsix: ${missing.join(', ')}`);
    const unexpected = names.filter((n) => !REQUIRED.includes(n) && !ALSO_ALLOWED.some((re) => re.test(n)));
    assert.deepEqual(unexpected, [], `not on the allow-list: ${unexpected.join(', ')}`);
    const forbidden = names.filter((n) => FORBIDDEN.some((re) => re.test(n)));
    assert.deepEqual(forbidden, [], `forbidden files: ${forbidden.join(', ')}`);
  });

  it('matches what `vsce ls` says the package holds', async function () {
    const listed = (await run('npx', ['--no-install', 'vsce', 'ls', '--no-dependencies'], { cwd: pkg.dir }))
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !/^npm (warn|notice)/i.test(l));
    // vsce ls prints the working-tree names; the .vsix stores three of them differently.
    const inVsix = (f: string) => `extension/${{ 'README.md': 'readme.md', 'CHANGELOG.md': 'changelog.md', LICENSE: 'LICENSE.txt' }[f] ?? f}`;
    assert.deepEqual(
      listed.map(inVsix).sort(),
      entries.map((e) => e.name).filter((n) => n.startsWith('extension/')).sort(),
    );
    for (const f of listed) assert.ok(!FORBIDDEN.some((re) => re.test(f)), `vsce ls lists the forbidden ${f}`);
  });

  it('ships production bundles: minified, without source maps', function () {
    for (const name of ['extension/dist/extension.js', 'extension/dist/cli.js', 'extension/dist/cli-main.js', 'extension/dist/launch-helper.js', 'extension/dist/checkpoint-worker.js', 'extension/dist/matcher-worker.js', 'extension/dist/webview.js']) {
      const text = byName.get(name)!.data().toString('utf8');
      assert.doesNotMatch(text, /sourceMappingURL/, `${name} points to a source map`);
      const lines = text.split('\n').length;
      // esbuild's minified output is a handful of very long lines; a development build of these
      // bundles has thousands.
      assert.ok(text.length / lines > 500, `${name} is not minified (${lines} lines for ${text.length} characters)`);
    }
    // The engine host is a CLI too (package.json "bin"), started with the host's Node options.
    assert.equal(byName.get('extension/dist/cli.js')!.data().toString('utf8', 0, 200).split('\n', 1)[0], `#!/usr/bin/env -S node ${ENGINE_HOST_NODE_OPTIONS.join(' ')}`);
  });

  it('holds every file its package.json and README point to', function () {
    const manifest = JSON.parse(byName.get('extension/package.json')!.data().toString('utf8')) as Record<string, any>;
    assert.equal(manifest.version, MANIFEST.version);
    const referenced = new Set<string>([manifest.main, manifest.icon, ...Object.values<string>(manifest.bin ?? {})]);
    // Every relative file path anywhere in contributes: view and command icons, schemas.
    const walk = (v: unknown): void => {
      if (typeof v === 'string') {
        if (/^\.?\/?(media|dist|schemas)\/[^\s]+\.\w+$/.test(v)) referenced.add(v);
      } else if (v && typeof v === 'object') {
        for (const x of Object.values(v)) walk(x);
      }
    };
    walk(manifest.contributes);
    assert.ok(referenced.has('./schemas/item.schema.json'), 'the item schema is contributed through jsonValidation');
    for (const ref of referenced) {
      assert.ok(byName.has(`extension/${path.posix.normalize(ref)}`), `package.json points to ${ref}, which is not in the .vsix`);
    }

    // README links stay relative (package script: --no-rewrite-relative-links, as the project has
    // no public repository to point them at), so VS Code resolves them inside the installed
    // extension: each must be a file in the package.
    const readme = byName.get('extension/readme.md')!.data().toString('utf8');
    const targets = [...readme.matchAll(/!?\[[^\]]*\]\(([^)\s]+)[^)]*\)|<img[^>]+src="([^"]+)"/g)].map((m) => m[1] ?? m[2]);
    assert.ok(targets.length > 0);
    for (const t of targets) {
      if (/^(#|https?:|mailto:)/.test(t)) continue;
      const file = path.posix.normalize(t.split('#')[0]);
      assert.ok(byName.has(`extension/${file}`), `README.md links to ${t}, which is not in the .vsix`);
    }
  });

  it('stays small', function () {
    const bytes = readFileSync(pkg.vsix).length;
    console.log(`      ${path.basename(pkg.vsix)}: ${(bytes / 1024).toFixed(0)} KiB, ${entries.length} files`);
    // 1.75 MiB: part three added services, submitting, watch triggers (their own worker bundle, with
    // chokidar), attempt insight and the Windows process-tree code to a package that was under 1.5.
    assert.ok(bytes < 1.75 * 1024 * 1024, `${bytes} bytes`);
  });
});

/** The dashboard webview's content frame, once its cards are rendered. */
async function dashboardFrame(page: Page): Promise<Frame> {
  return waitUntil('the dashboard webview', async () => {
    for (const f of page.frames()) {
      if (f.url().includes('webview') && (await f.locator('main#app .cards').count().catch(() => 0)) > 0) return f;
    }
    return undefined;
  }, 30_000);
}

describe('the .vsix installed into code-server', function () {
  this.timeout(240_000);
  let pkg: Staged;
  let tmp: string;
  let extensionsDir: string;
  let installed: string;
  let server: CodeServer | undefined;
  let browser: Browser | undefined;
  let page: Page;

  before(async function () {
    codeServerBinary(); // throws with the setup hint when code-server is missing
    pkg = await stagedPackage();
    tmp = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-installed-'));
    extensionsDir = path.join(tmp, 'extensions');
    const xdg = path.join(tmp, 'xdg');
    mkdirSync(xdg, { recursive: true });
    // As a user does: `code-server --install-extension engine-monitor-<version>.vsix`.
    const out = await run(process.execPath, [
      codeServerBinary(),
      '--user-data-dir', path.join(tmp, 'install-user-data'),
      '--extensions-dir', extensionsDir,
      '--install-extension', pkg.vsix,
    ], { env: { XDG_CONFIG_HOME: xdg, XDG_DATA_HOME: xdg, XDG_CACHE_HOME: xdg }, timeoutMs: 60_000 });
    assert.match(out, /successfully installed/i, out);
    installed = path.join(extensionsDir, `${EXTENSION_ID}-${MANIFEST.version}`);
  });

  after(async function () {
    await browser?.close().catch(() => undefined);
    await server?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('is installed from the .vsix, with only the packaged files', function () {
    assert.ok(existsSync(path.join(installed, 'package.json')), `${installed} has no package.json`);
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else files.push(path.relative(installed, p).split(path.sep).join('/'));
      }
    };
    walk(installed);
    // VS Code adds a marker file of its own (.vsixmanifest); the rest is exactly the package.
    const packaged = readZip(pkg.vsix).map((e) => e.name).filter((n) => n.startsWith('extension/')).map((n) => n.slice('extension/'.length));
    assert.deepEqual(files.filter((f) => !f.startsWith('.')).sort(), packaged.sort());
  });

  it('activates in a workspace with a queue, runs the item, shows health in the status bar and opens the dashboard', async function () {
    const folder = path.join(tmp, 'workspace');
    mkdirSync(path.join(folder, '.engine', 'queue'), { recursive: true });
    writeFileSync(
      path.join(folder, '.engine', 'queue', 'smoke.json'),
      JSON.stringify({ id: 'smoke', name: 'Smoke test', command: 'node', args: ['-e', "require('fs').writeFileSync('launched.txt', 'ok')"] }),
    );
    // An item with its own problem matcher: its regexp runs on the installed dist/matcher-worker.js.
    writeFileSync(
      path.join(folder, '.engine', 'queue', 'lint.json'),
      JSON.stringify({
        id: 'lint',
        command: 'node',
        args: ['-e', "console.log('src/a.js:3: unused variable')"],
        problemMatcher: { pattern: { regexp: '^([^:]+):(\\d+): (.*)$', file: 1, line: 2, message: 3 } },
      }),
    );

    // No extensionDevelopmentPath: the only Engine Monitor this code-server knows is the installed one.
    server = await startCodeServer({
      extensionsDir,
      userSettings: { 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': 500 },
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    await page.goto(workbenchUrl(server, { folder }), { waitUntil: 'domcontentloaded' });
    await waitForWorkbench(page);
    await waitForExtension(page, installed);

    // The engine host runs, forked from the installed extension's dist/cli.js.
    const endpoint = await waitUntil('the engine endpoint.json', async () => readEndpoint(server!.userDataDir), 60_000);
    const cmdline = readFileSync(`/proc/${endpoint.pid}/cmdline`, 'utf8').split('\0');
    assert.ok(cmdline.includes(path.join(installed, 'dist', 'cli.js')), `engine host: ${cmdline.join(' ')}`);

    const stats = await waitUntil('the item to be launched', async () => {
      const s = await getJson<StatsResponse>(`${endpoint.url}/stats`);
      return s.overview.launched === 2 && s.overview.pending === 0 && s.overview;
    }, 60_000);
    assert.deepEqual({ total: stats.total, failed: stats.failed }, { total: 2, failed: 0 });
    assert.equal(readFileSync(path.join(folder, 'launched.txt'), 'utf8'), 'ok');
    const lint = await getJson<ItemDetail>(`${endpoint.url}/items/lint`);
    assert.deepEqual(
      lint.attempts.map((a) => a.problems),
      [[{ file: path.join(folder, 'src', 'a.js'), line: 3, column: null, severity: 'error', message: 'unused variable', code: null }]],
    );
    // It was launched by the engine's launch helper, forked from the installed dist/launch-helper.js.
    const helpers = readdirSync('/proc')
      .filter((e) => /^\d+$/.test(e))
      .map((e) => {
        try {
          return readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
        } catch {
          return [];
        }
      })
      .filter((args) => args.includes(`--engine-pid=${endpoint.pid}`));
    // A pool of them, forked one after the other: the second may not be there yet.
    const poolSize = DEFAULT_LAUNCH_HELPERS;
    assert.ok(helpers.length >= 1 && helpers.length <= poolSize, `${helpers.length} launch helpers for the engine, pool of ${poolSize}`);
    for (const helper of helpers) assert.ok(helper.includes(path.join(installed, 'dist', 'launch-helper.js')), `launch helper: ${helper.join(' ')}`);

    // Status bar: "$(pulse) Engine healthy · 0 pending" (src/extension/statusBar.ts).
    const item = page.locator('.part.statusbar .statusbar-item', { hasText: /Engine healthy · 0 pending/ });
    await item.first().waitFor({ state: 'visible', timeout: 30_000 });

    await runCommand(page, 'Show Engine Status');
    const frame = await dashboardFrame(page);
    await frame.locator('.connection[data-connected="true"]').waitFor({ timeout: 30_000 });
    const launched = await waitUntil('the dashboard to count the launch', async () => {
      const v = await frame.locator('[data-stat="launched"] .card-value').getAttribute('data-value');
      return v === '2' && v;
    });
    assert.equal(launched, '2');
    assert.equal(await frame.locator('[data-health]').getAttribute('data-health'), 'healthy');
    // dist/webview.js drew all of this; the icon font comes from the packaged dist/codicons.
    await waitUntil('the codicon font', () => frame.evaluate(() => document.fonts.check('16px codicon')), 10_000);
    await page.mouse.move(800, 500);
    const shot = await screenshot(page, 'installed-vsix-dashboard');
    console.log(`      screenshot: ${path.relative(process.cwd(), shot)}`);
  });
});
