// The command line in a window's integrated terminals, without VS Code: the launcher the extension
// writes (src/extension/cliLauncher.ts) run through a real /bin/sh from PATH, and the token the
// engine host tells only the windows that attach with its private secret, which the extension
// hands to those terminals. With it `engine-monitor hold` controls the engine over HTTP; without
// it, or with a wrong one, HTTP control stays refused while reads stay open.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { attachToHost, type HostConnection } from '../../src/extension/hostConnection';
import { forwardingLauncherText, isOnPath, isOursOrMissing, writeLauncher, writeTerminalLauncher } from '../../src/extension/cliLauncher';
import type { ItemDetail } from '../../src/shared/api';
import { CLI, serve, type ServeProcess } from './support/cli';
import { request } from './support/http';
import { nodeItem, TempWorkspace } from './support/workspace';

/** Runs a line in /bin/sh with `env` over a clean environment (no inherited engine variables). */
function sh(line: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; err: string }> {
  const { ENGINE_MONITOR_TOKEN: _t, ENGINE_MONITOR_URL: _u, ...base } = process.env;
  const child = spawn('/bin/sh', ['-c', line], { env: { ...base, ...env }, cwd: os.tmpdir() });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out, err })));
}

describe('the engine-monitor command in integrated terminals: launcher on PATH, terminal token', function () {
  this.timeout(60_000);
  if (process.platform === 'win32') return;
  let ws: TempWorkspace;
  let run: ServeProcess | undefined;
  let connection: HostConnection | undefined;
  let bin: string;

  beforeEach(() => {
    ws = new TempWorkspace('engine-terminal-cli-');
    bin = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor bin '));
  });
  afterEach(async () => {
    connection?.close();
    connection = undefined;
    if (run && run.child.exitCode === null) {
      run.child.kill('SIGTERM');
      await run.exited;
    }
    run = undefined;
    ws.dispose();
    rmSync(bin, { recursive: true, force: true });
  });

  it('a launcher in a folder with spaces runs the client from PATH; the host token lets it control, nothing else does', async () => {
    ws.enqueue('items.json', [nodeItem('later', '0', { runAt: '2099-01-01T00:00:00.000Z' })]);
    run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '200']);
    const attached = await attachToHost(ws.storage, 'terminal test');
    assert.equal(attached.kind, 'attached', attached.kind === 'none' ? attached.why : '');
    connection = (attached as { connection: HostConnection }).connection;
    const token = connection.info.terminalToken;
    assert.match(token ?? '', /^[A-Za-z0-9_-]{40,}$/, 'an attached window learns the terminal token');

    const launcher = writeTerminalLauncher(bin, CLI);
    assert.equal(statSync(launcher).mode & 0o111, 0o111, 'executable');
    const env = { PATH: `${bin}${path.delimiter}${process.env.PATH}`, ENGINE_MONITOR_URL: run.url };

    const health = await sh('engine-monitor health', env);
    assert.equal(health.code, 0, health.err);
    assert.match(health.out, /healthy/);

    // Without the token (any shell but the window's terminals): refused, and nothing changed.
    const refused = await sh('engine-monitor hold later', env);
    assert.equal(refused.code, 1, refused.out);
    assert.match(refused.err, /Control over HTTP needs a token/);
    const wrong = await request(run.url, '/items/later/hold', { method: 'POST', headers: { authorization: 'Bearer not-the-token' } });
    assert.equal(wrong.status, 403);
    assert.equal(((await request(run.url, '/items/later')).json as ItemDetail).state, 'scheduled');

    const held = await sh('engine-monitor hold later', { ...env, ENGINE_MONITOR_TOKEN: token });
    assert.equal(held.code, 0, held.err);
    assert.equal(((await request(run.url, '/items/later')).json as ItemDetail).state, 'held');
    // Reads stay open to everyone, with or without it.
    assert.equal((await request(run.url, '/stats')).status, 200);
    assert.equal((await request(run.url, '/stats', { headers: { authorization: `Bearer ${token}` } })).status, 200);
  });

  it('the shell launcher forwards to the terminals\' launcher, and never replaces a file that is not ours', async () => {
    const inner = writeTerminalLauncher(path.join(bin, 'inner'), CLI);
    const outer = path.join(bin, 'home', '.local', 'bin', 'engine-monitor');
    assert.equal(isOursOrMissing(outer), true, 'missing');
    writeLauncher(outer, forwardingLauncherText(inner));
    assert.equal(isOursOrMissing(outer), true, 'ours');
    const help = await sh(`'${outer}' --help`, {});
    assert.equal(help.code, 0, help.err);
    assert.match(help.out, /engine-monitor <command>/);
    writeLauncher(outer, '#!/bin/sh\necho mine\n');
    assert.equal(isOursOrMissing(outer), false);
    assert.match(readFileSync(outer, 'utf8'), /mine/);
    assert.equal(isOnPath(path.dirname(outer), `/usr/bin:${path.dirname(outer)}/`), true);
    assert.equal(isOnPath(path.dirname(outer), '/usr/bin:/bin'), false);
  });
});
