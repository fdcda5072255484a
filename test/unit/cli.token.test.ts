// The API token stays out of the process table: `serve` takes it from a private file
// (--token-file) or from ENGINE_MONITOR_TOKEN, and --token still works but warns that every user
// of the machine can read it in ps.
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { EXIT_USAGE } from '../../src/shared/hostProtocol';
import { request } from './support/http';
import { runCli, serve, type ServeProcess } from './support/cli';
import { nodeItem, TempWorkspace, waitFor } from './support/workspace';

const TOKEN = 'tok-5b1e-not-in-ps';

/** What `ps` shows for a process: its command line, arguments joined by spaces. */
function commandLine(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
}

async function assertRequiresToken(run: ServeProcess): Promise<void> {
  assert.equal((await request(run.url, '/stats')).status, 401, 'refused without the token');
  assert.equal((await request(run.url, '/stats', { headers: { authorization: 'Bearer wrong' } })).status, 401);
  assert.equal((await request(run.url, '/stats', { headers: { authorization: `Bearer ${TOKEN}` } })).status, 200);
}

async function stop(run: ServeProcess): Promise<void> {
  run.child.kill('SIGTERM');
  assert.deepEqual(await run.exited, { code: 0, signal: null });
}

describe('CLI: the token kept out of ps', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let tokenFile: string;
  beforeEach(() => {
    ws = new TempWorkspace('engine-token-');
    tokenFile = path.join(ws.root, 'token');
    writeFileSync(tokenFile, `${TOKEN}\nthe first line is the token; the rest is ignored\n`, { mode: 0o600 });
    chmodSync(tokenFile, 0o600);
  });
  afterEach(() => ws.dispose());

  it('--token-file: requires the token from a private file, and its command line does not show it', async () => {
    const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--token-file', tokenFile]);
    try {
      assert.doesNotMatch(commandLine(run.child.pid!), new RegExp(TOKEN));
      await assertRequiresToken(run);
    } finally {
      await stop(run);
    }
    assert.doesNotMatch(run.stderr(), /warning/);
  });

  it('refuses a token file other users can read, saying chmod 600', async () => {
    chmodSync(tokenFile, 0o644);
    const run = runCli(['serve', '--workspace', ws.folder, '--storage', ws.storage, '--token-file', tokenFile]);
    assert.equal((await run.exited).code, EXIT_USAGE);
    assert.match(run.stderr(), new RegExp(`--token-file ${tokenFile} is open to other users \\(mode 644\\): make it private with "chmod 600 ${tokenFile}"`));
  });

  for (const [what, args, message] of [
    ['an empty token file', (f: string) => (writeFileSync(f, '\n'), ['--token-file', f]), /--token-file .* is empty: put the token on its first line/],
    ['a missing token file', (f: string) => ['--token-file', `${f}.missing`], /--token-file .*\.missing cannot be read: ENOENT/],
    ['--token with --token-file', (f: string) => ['--token-file', f, '--token', TOKEN], /give the token once/],
  ] as const) {
    it(`refuses ${what} with exit 2`, async () => {
      const run = runCli(['serve', '--workspace', ws.folder, '--storage', ws.storage, ...args(tokenFile)]);
      assert.equal((await run.exited).code, EXIT_USAGE);
      assert.match(run.stderr(), message);
    });
  }

  it('ENGINE_MONITOR_TOKEN: requires that token, shows it in no command line and passes it to no launched item', async () => {
    const seen = path.join(ws.root, 'seen-by-item');
    ws.enqueue('env.json', nodeItem('env', `require('fs').writeFileSync(${JSON.stringify(seen)}, String(process.env.ENGINE_MONITOR_TOKEN))`));
    const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '100'], 20_000, { ENGINE_MONITOR_TOKEN: TOKEN });
    try {
      assert.doesNotMatch(commandLine(run.child.pid!), new RegExp(TOKEN));
      await assertRequiresToken(run);
      const written = await waitFor('the item to run', () => {
        try {
          return readFileSync(seen, 'utf8');
        } catch {
          return undefined;
        }
      });
      assert.equal(written, 'undefined', 'the item did not inherit the token');
    } finally {
      await stop(run);
    }
  });

  it('--token still works, with a warning that ps shows it', async () => {
    const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--token', TOKEN]);
    try {
      await assertRequiresToken(run);
    } finally {
      await stop(run);
    }
    assert.match(run.stderr(), /warning: --token is visible to every user of this machine \(ps, .*\); use --token-file <path> or ENGINE_MONITOR_TOKEN instead/);
  });

  it('a non-loopback bind is allowed with --token-file or ENGINE_MONITOR_TOKEN, and refused without a token', async () => {
    const refused = runCli(['serve', '--workspace', ws.folder, '--storage', ws.storage, '--host', '0.0.0.0']);
    assert.equal((await refused.exited).code, EXIT_USAGE);
    assert.match(refused.stderr(), /not a loopback address.*--token-file <path> \(or ENGINE_MONITOR_TOKEN\)/);
    const fromFile = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--host', '0.0.0.0', '--token-file', tokenFile]);
    await assertRequiresToken(fromFile);
    await stop(fromFile);
    const fromEnv = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--host', '0.0.0.0'], 20_000, { ENGINE_MONITOR_TOKEN: TOKEN });
    await assertRequiresToken(fromEnv);
    await stop(fromEnv);
  });
});
