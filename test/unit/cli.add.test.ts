// `engine-monitor add`: the built CLI against a real engine (`serve`) over real HTTP, real processes.
import assert from 'node:assert/strict';
import path from 'node:path';
import type { ItemDetail } from '../../src/shared/api';
import { parseClientArgs } from '../../src/host/client/options';
import { runCli, serve, type ServeProcess } from './support/cli';
import { request } from './support/http';
import { TempWorkspace } from './support/workspace';

const TOKEN = 'add-token-77e0';

describe('CLI: add', function () {
  this.timeout(90_000);
  let ws: TempWorkspace;
  let run: ServeProcess;

  before(async () => {
    ws = new TempWorkspace('engine-cli-add-');
    run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '60000'], 20_000, { ENGINE_MONITOR_TOKEN: TOKEN });
  });
  after(async () => {
    run.child.kill('SIGTERM');
    await run.exited;
    ws.dispose();
  });

  async function add(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const cli = runCli(['add', ...args], { ENGINE_MONITOR_URL: run.url, ENGINE_MONITOR_TOKEN: TOKEN });
    const { code } = await cli.exited;
    return { code, stdout: cli.stdout(), stderr: cli.stderr() };
  }
  const detail = async (id: string): Promise<ItemDetail> => (await request(run.url, `/items/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json as ItemDetail;

  it('submits the item its options describe and prints the generated id', async () => {
    const sub = path.join(ws.folder, 'sub');
    const r = await add(
      '--name', 'Nightly export', '--cwd', sub, '--env', 'A=1', '--env', 'B=x=y', '--timeout', '5000', '--max-attempts', '2', '--priority=-7',
      '--depends-on', 'upstream', '--run-at', '2099-01-01T00:00:00Z', '--', process.execPath, '-e', 'console.log(1)', '--not-an-add-option',
    );
    assert.equal(r.code, 0, r.stderr);
    const id = r.stdout.trim();
    assert.match(id, /^cli-\d+-[0-9a-f]{8}$/);
    const d = await detail(id);
    assert.deepEqual(
      { ...d.item },
      {
        id,
        name: 'Nightly export',
        command: process.execPath,
        args: ['-e', 'console.log(1)', '--not-an-add-option'],
        shell: false,
        cwd: sub,
        env: { A: '1', B: 'x=y' },
        timeoutMs: 5000,
        maxAttempts: 2,
        runAt: '2099-01-01T00:00:00.000Z',
        schedule: null,
        dependsOn: ['upstream'],
        priority: -7,
        source: 'api',
      },
    );
    const shell = await add('--id', 'by-shell', '--run-at', '2099-01-01T00:00:00Z', '--shell', 'echo "$HOME" | wc -c');
    assert.equal(shell.code, 0, shell.stderr);
    assert.equal(shell.stdout, 'by-shell\n');
    assert.deepEqual([(await detail('by-shell')).item.command, (await detail('by-shell')).item.shell], ['echo "$HOME" | wc -c', true]);
  });

  it('--follow streams each attempt\'s output and exits 0 when the item launched, 1 when it failed', async () => {
    const ok = await add('--follow', '--id', 'follow-ok', '--', process.execPath, '-e', 'console.log("hello from the attempt")');
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, 'hello from the attempt\n');
    assert.match(ok.stderr, /added follow-ok/);

    const code = 'console.log("attempt " + (process.env.N ?? "")); process.exit(3)';
    const failing = await add('--follow', '--id', 'follow-fails', '--max-attempts', '2', '--env', 'N=x', '--', process.execPath, '-e', code);
    assert.equal(failing.code, 1, failing.stderr);
    assert.equal(failing.stdout, 'attempt x\nattempt x\n', 'both attempts, each once');
    assert.match(failing.stderr, /follow-fails attempt 1 failed, exit code 3/);
    assert.match(failing.stderr, /follow-fails attempt 2 failed, exit code 3/);
    assert.equal((await detail('follow-fails')).outcome, 'failed');
  });

  it('exit 2 for a usage mistake, 1 for an item the engine refuses, with its reason', async () => {
    const noDash = await add('echo', 'hi');
    assert.equal(noDash.code, 2);
    assert.match(noDash.stderr, /put the command after "--"/);
    assert.equal((await add('--id', 'x')).code, 2, 'no command');
    assert.equal((await add('--run-at', '2099-01-01T00:00:00Z', '--schedule', '0 2 * * *', '--', 'x')).code, 2);
    assert.equal((await add('--ready-port', '80', '--', 'x')).code, 2, '--ready-* without --service');
    const outside = await add('--cwd', path.dirname(ws.root), '--', 'x');
    assert.equal(outside.code, 1);
    assert.match(outside.stderr, /outside the workspace folder/);
    const taken = await add('--id', 'follow-ok', '--', 'another');
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /has already launched/);
  });

  it('passes --service and --ready-* through as the item fields service and ready', () => {
    const parsed = (args: string[]) => {
      const r = parseClientArgs(['add', ...args, '--', 'srv']);
      if (r.help || r.command !== 'add') throw new Error('not add');
      return r.item;
    };
    assert.deepEqual([parsed(['--service']).service, parsed(['--service']).ready], [true, undefined]);
    assert.deepEqual(parsed(['--service', '--ready-port', '8080']).ready, { port: 8080 });
    assert.deepEqual(parsed(['--service', '--ready-http', 'http://127.0.0.1:8080/health']).ready, { http: 'http://127.0.0.1:8080/health' });
    assert.deepEqual(parsed(['--service', '--ready-log', 'listening on \\d+']).ready, { logPattern: 'listening on \\d+' });
    assert.throws(() => parsed(['--service', '--ready-port', '1', '--ready-log', 'x']), /one of --ready-port/);
    assert.deepEqual(parsed(['--schedule', '0 2 * * *', '--timezone', 'UTC']).schedule, { cron: '0 2 * * *', timezone: 'UTC' });
  });
});
