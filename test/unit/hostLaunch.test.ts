// The engine host as the extension forks it (src/extension/hostLaunch.ts, used by HostProcess):
// the token from the settings reaches the host through its environment and appears in no command
// line. Plain Node: the same command line and environment, forked the same way, no VS Code.
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import type { EngineMonitorConfig } from '../../src/extension/config';
import { hostArgsFor, hostCommandLine, hostEnvironment, launchKeyFor, type HostLaunchSpec } from '../../src/extension/hostLaunch';
import { parseServeArgs } from '../../src/host/args';
import { ENGINE_HOST_NODE_OPTIONS, type FromHostMessage } from '../../src/shared/hostProtocol';
import { SETTINGS } from '../../src/shared/settings';
import { parseStoreUrl } from '../../src/shared/storeUrl';
import { assertBuilt, CLI } from './support/cli';
import { request } from './support/http';
import { TempWorkspace } from './support/workspace';

const TOKEN = 'settings-token-9c2d';

function config(token: string): EngineMonitorConfig {
  return {
    server: { port: 0, host: SETTINGS['server.host'].default, token },
    engine: {
      autoStart: true,
      keepAliveSeconds: SETTINGS['engine.keepAliveSeconds'].default,
      pollIntervalMs: SETTINGS['engine.pollIntervalMs'].default,
      concurrency: SETTINGS['engine.concurrency'].default,
      maxAttempts: SETTINGS['engine.maxAttempts'].default,
      timeoutMs: SETTINGS['engine.timeoutMs'].default,
    },
    queue: { directory: SETTINGS['queue.directory'].default },
    logs: { maxEntries: SETTINGS['logs.maxEntries'].default, maxAgeDays: SETTINGS['logs.maxAgeDays'].default },
    // Not the defaults, so the test below sees them arrive.
    output: { maxBytesPerAttempt: 131_072, maxTotalMB: 5 },
    remote: { url: '' },
    // Set, so the tests below see them arrive (trusted) or not (untrusted).
    hooks: { onItemFailed: 'echo failed >> hook.log', onHealthChange: 'echo health >> hook.log', notifyUrl: 'https://hooks.example.test/alert', timeoutMs: 2500 },
    // Empty: these hosts run on their embedded database (the store has tests of its own below).
    store: { url: '' },
  };
}

describe('Extension: the engine host gets its token through the environment', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  beforeEach(() => (ws = new TempWorkspace('engine-hostlaunch-')));
  afterEach(() => ws.dispose());

  const spec = (token: string): HostLaunchSpec => ({
    cliPath: CLI,
    storageDir: ws.storage,
    workspaces: [ws.folder],
    args: hostArgsFor(config(token), true),
    token,
    restricted: false,
    stopped: false,
  });

  it('the launch key windows compare changes with every input, and holds neither the token nor the password', () => {
    const args = hostArgsFor(config(TOKEN), true);
    const key = launchKeyFor(args, TOKEN, ['/ws'], 'pg-secret');
    assert.equal(key, launchKeyFor([...args], TOKEN, ['/ws'], 'pg-secret'));
    for (const other of [
      launchKeyFor(hostArgsFor(config(TOKEN), false), TOKEN, ['/ws'], 'pg-secret'),
      launchKeyFor(args, 'other-token', ['/ws'], 'pg-secret'),
      launchKeyFor(args, TOKEN, ['/ws', '/ws2'], 'pg-secret'),
      launchKeyFor(args, TOKEN, ['/ws'], 'other-secret'),
      launchKeyFor(args, TOKEN, ['/ws'], undefined),
    ]) assert.notEqual(other, key);
    assert.match(key, /^[0-9a-f]{64}$/);
    // The host keeps --keep-alive and the key apart from the settings: headless serve has neither.
    const s = { ...spec(''), keepAliveSeconds: 60, launchKey: key };
    assert.deepEqual(hostCommandLine(s).slice(-2), ['--keep-alive', '60']);
    assert.equal(hostEnvironment(s, {}).ENGINE_MONITOR_LAUNCH_KEY, key);
    assert.equal(hostEnvironment(spec(''), { ENGINE_MONITOR_LAUNCH_KEY: 'inherited' }).ENGINE_MONITOR_LAUNCH_KEY, undefined);
  });

  it('every setting that has a command-line flag reaches the host, except the token', () => {
    const args = hostArgsFor(config(TOKEN), true);
    // The token travels in the environment; an empty store URL means the embedded database (no flag).
    const flagged = (Object.keys(SETTINGS) as (keyof typeof SETTINGS)[]).filter((k) => 'flag' in SETTINGS[k] && k !== 'server.token' && k !== 'store.url');
    for (const key of flagged) {
      const flag = `--${(SETTINGS[key] as { flag: string }).flag}`;
      assert.ok(args.includes(flag), `${key} (${flag}) is not passed to the engine host: ${args.join(' ')}`);
    }
    assert.equal(args[args.indexOf('--output-max-bytes') + 1], '131072');
    assert.equal(args[args.indexOf('--output-max-total-mb') + 1], '5');
    assert.equal(args[args.indexOf('--on-item-failed') + 1], 'echo failed >> hook.log');
    assert.equal(args[args.indexOf('--notify-url') + 1], 'https://hooks.example.test/alert');
    // A URL with credentials would keep the host from starting (the CLI refuses it): left out.
    const withCredentials = config(TOKEN);
    withCredentials.hooks.notifyUrl = 'https://bot:pw@hooks.example.test/alert';
    assert.ok(!hostArgsFor(withCredentials, true).includes('--notify-url'));
  });

  it('hooks reach a trusted host only: an untrusted workspace cannot make the engine run a command or send data out', () => {
    const hostHooks = (trusted: boolean) => {
      const s: HostLaunchSpec = { ...spec(''), args: hostArgsFor(config(''), trusted), restricted: !trusted };
      // What the host itself would run with: its command line read by its own parser.
      return parseServeArgs(hostCommandLine(s), {}).hooks;
    };
    assert.deepEqual(hostHooks(true), {
      onItemFailed: 'echo failed >> hook.log',
      onHealthChange: 'echo health >> hook.log',
      notifyUrls: ['https://hooks.example.test/alert'],
      timeoutMs: 2500,
    });
    assert.deepEqual(hostHooks(false), { onItemFailed: undefined, onHealthChange: undefined, notifyUrls: [], timeoutMs: 2500 });
    const untrusted = hostArgsFor(config(''), false).join(' ');
    assert.doesNotMatch(untrusted, /hook\.log|example\.test|--on-|--notify-url/);
  });

  it('empty hook settings pass no flag; a notify URL the CLI would refuse is left out rather than stop the host', () => {
    const c = config('');
    const args = (hooks: Partial<EngineMonitorConfig['hooks']>) => hostArgsFor({ ...c, hooks: { ...c.hooks, ...hooks } }, true);
    assert.ok(!args({ onItemFailed: '', onHealthChange: '', notifyUrl: '' }).some((a) => /^--(on-|notify-url)/.test(a)));
    const bad = args({ notifyUrl: 'hooks.example.test/alert' });
    assert.ok(!bad.includes('--notify-url'), bad.join(' '));
    assert.equal(parseServeArgs(hostCommandLine({ ...spec(''), args: bad }), {}).hooks?.notifyUrls.length, 0);
  });

  it('no token in the arguments; the token, and only a configured one, in the environment', () => {
    const withToken = spec(TOKEN);
    assert.ok(!withToken.args.some((a) => a.includes(TOKEN) || a.startsWith('--token')), withToken.args.join(' '));
    assert.ok(!hostCommandLine(withToken).some((a) => a.includes(TOKEN) || a.startsWith('--token')));
    assert.equal(hostEnvironment(withToken, { PATH: '/bin' }).ENGINE_MONITOR_TOKEN, TOKEN);
    // One inherited from the shell VS Code was started from does not switch a token on.
    assert.equal(hostEnvironment(spec(''), { PATH: '/bin', ENGINE_MONITOR_TOKEN: 'from-the-shell' }).ENGINE_MONITOR_TOKEN, undefined);
  });

  it('a PostgreSQL store for a fleet reaches a trusted host only, its password through PGPASSWORD and never a flag', () => {
    const url = 'postgres://engine@db.example.test:5432/fleet';
    const withStore = (value: string, trusted: boolean) => hostArgsFor({ ...config(''), store: { url: value } }, trusted);
    const trusted = withStore(url, true);
    assert.equal(trusted[trusted.indexOf('--store') + 1], url);
    // What the host itself would run with: its command line read by its own parser.
    assert.equal(parseServeArgs(hostCommandLine({ ...spec(''), args: trusted }), {}).storeUrl, url);
    // An untrusted workspace's settings must not point the engine at a database whose items it would run.
    assert.ok(!withStore(url, false).includes('--store'));
    // A password in the setting (plain text, often committed) is refused rather than passed on.
    assert.ok(!withStore('postgres://engine:hunter2@db.example.test/fleet', true).join(' ').includes('hunter2'));
    assert.ok(!withStore('mysql://engine@db.example.test/fleet', true).includes('--store'));
    assert.equal(parseStoreUrl('postgres://engine:hunter2@db/fleet').error?.includes('hunter2'), false);
    assert.match(parseStoreUrl('postgres://engine:hunter2@db/fleet').error ?? '', /Set Store Password/);
    assert.match(parseStoreUrl('db.example.test').error ?? '', /not a URL/);
    assert.deepEqual(parseStoreUrl(''), {});
    const s: HostLaunchSpec = { ...spec(''), args: trusted, storePassword: 'hunter2' };
    assert.ok(!hostCommandLine(s).some((a) => a.includes('hunter2')));
    assert.equal(hostEnvironment(s, { PATH: '/bin' }).PGPASSWORD, 'hunter2');
    // Without a stored password, the user's own PGPASSWORD (or ~/.pgpass) applies, as for psql.
    assert.equal(hostEnvironment({ ...s, storePassword: undefined }, { PATH: '/bin', PGPASSWORD: 'mine' }).PGPASSWORD, 'mine');
  });

  it('forked as HostProcess forks it, the host requires the token and shows it in no command line', async () => {
    assertBuilt();
    const s = spec(TOKEN);
    mkdirSync(s.storageDir, { recursive: true }); // as EngineController does before it forks
    const child = fork(s.cliPath, hostCommandLine(s), {
      cwd: s.storageDir,
      execArgv: [...ENGINE_HOST_NODE_OPTIONS],
      env: hostEnvironment(s),
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const exited = new Promise<number | null>((resolve, reject) => {
      child.once('exit', (code) => resolve(code));
      child.once('error', reject);
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.on('message', (m: FromHostMessage) => (m.type === 'ready' ? resolve(m.url) : reject(new Error(JSON.stringify(m)))));
        void exited.then((code) => reject(new Error(`the host exited with ${code}: ${stderr}`)));
      });
      const cmdline = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0').join(' ');
      assert.doesNotMatch(cmdline, new RegExp(TOKEN));
      assert.doesNotMatch(cmdline, /--token/);
      assert.equal((await request(url, '/stats')).status, 401);
      assert.equal((await request(url, '/stats', { headers: { authorization: `Bearer ${TOKEN}` } })).status, 200);
      assert.doesNotMatch(stderr, /warning/);
    } finally {
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    }
  });
});
