// The engine host's life apart from the window that started it: it is started detached (its own
// session, its output in the storage folder), outlives its launcher, lets windows attach and
// control it over its private control connection, and with --keep-alive stops by itself only when
// no window is attached and nothing runs. Real processes: the built CLI, a launcher process killed
// with SIGKILL, real sockets and HTTP on loopback.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { attachToHost, readControlFile, waitForExit, type HostConnection } from '../../src/extension/hostConnection';
import { hostCommandLine, launchDetachedHost, type HostLaunchSpec } from '../../src/extension/hostLaunch';
import type { ItemDetail } from '../../src/shared/api';
import { CONTROL_FILE } from '../../src/shared/hostProtocol';
import { assertBuilt, CLI } from './support/cli';
import { request } from './support/http';
import { nodeItem, processAlive, TempWorkspace, waitFor } from './support/workspace';

describe('engine host: detached from its window, attached to over its control connection', function () {
  this.timeout(90_000);
  let ws: TempWorkspace;
  const pids: number[] = [];
  const connections: HostConnection[] = [];

  beforeEach(() => {
    assertBuilt();
    ws = new TempWorkspace('engine-host-life-');
  });
  afterEach(async () => {
    for (const c of connections.splice(0)) c.close();
    // A detached host outlives the test unless it is ended here: by the pids it wrote.
    for (const pid of pids.splice(0)) {
      if (!processAlive(pid)) continue;
      process.kill(pid, 'SIGTERM');
      if (!(await waitForExit(pid, 10_000))) process.kill(pid, 'SIGKILL');
    }
    ws.dispose();
  });

  const spec = (extra: Partial<HostLaunchSpec> = {}): HostLaunchSpec => ({
    cliPath: CLI,
    storageDir: ws.storage,
    workspaces: [ws.folder],
    args: ['--port', '0', '--poll-interval', '100'],
    restricted: false,
    stopped: false,
    launchKey: 'key-1',
    ...extra,
  });

  /** Starts the host detached, as the extension does, and attaches once its control.json is there. */
  async function startAndAttach(extra: Partial<HostLaunchSpec> = {}): Promise<HostConnection> {
    mkdirSync(ws.storage, { recursive: true });
    const { child } = launchDetachedHost(spec(extra));
    pids.push(child.pid!);
    const connection = await waitFor('the host to accept a window', async () => {
      if (readControlFile(ws.storage)?.pid !== child.pid) return undefined;
      const r = await attachToHost(ws.storage, 'test');
      return r.kind === 'attached' ? r.connection : undefined;
    }, 30_000);
    connections.push(connection);
    return connection;
  }

  async function item(url: string, id: string): Promise<ItemDetail> {
    return (await request(url, `/items/${id}`)).json as ItemDetail;
  }

  it('outlives the process that started it: killed with SIGKILL, its running attempt still finishes, once', async () => {
    mkdirSync(ws.storage, { recursive: true });
    ws.enqueue('deploy.json', [nodeItem('deploy', "setTimeout(() => console.log('deployed'), 2500)")]);
    // The launcher is to the host what a VS Code extension host is: killed, it takes nothing with it.
    const launcher = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, 'support', 'detachedLauncher.ts'), JSON.stringify(spec())], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const hostPid = await new Promise<number>((resolve, reject) => {
      let out = '';
      launcher.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('\n')) resolve(Number(out.trim()));
      });
      launcher.once('exit', (code) => reject(new Error(`the launcher exited with ${code}`)));
    });
    pids.push(hostPid);
    const url = await waitFor('the host to write control.json', () => readControlFile(ws.storage)?.pid === hostPid && readEndpoint(), 30_000);
    await waitFor('the attempt to run', async () => (await item(url, 'deploy'))?.state === 'running');

    const launcherGone = new Promise((r) => launcher.once('exit', r));
    launcher.kill('SIGKILL');
    await launcherGone;

    assert.equal(processAlive(hostPid), true, 'the host died with its launcher');
    // It answers (503 is an answer too: a loaded machine can make its health check say "stalled").
    assert.ok([200, 503].includes((await request(url, '/health')).status));
    assert.equal((await request(url, '/stats')).status, 200);
    const done = await waitFor('the attempt to finish', async () => {
      const d = await item(url, 'deploy');
      return d.outcome !== 'pending' && d;
    }, 30_000);
    assert.equal(done.outcome, 'launched');
    assert.equal(done.attempts.length, 1, 'the attempt was interrupted and run again');
    const logs = (await request(url, '/logs?limit=500')).json as { action: string }[];
    assert.ok(logs.length > 0 && !logs.some((e) => e.action === 'launch_interrupted'), 'an attempt was recorded interrupted');
    // Its output went to the log file in the storage folder, not to the dead launcher.
    assert.ok(statSync(path.join(ws.storage, 'engine.log')).size > 0);
  });

  it('refuses a caller without the secret, and control.json is readable by the user alone', async () => {
    ws.enqueue('later.json', [nodeItem('later', '0', { runAt: '2099-01-01T00:00:00.000Z' })]);
    const window = await startAndAttach();
    const file = readControlFile(ws.storage)!;
    if (process.platform !== 'win32') assert.equal(statSync(path.join(ws.storage, CONTROL_FILE)).mode & 0o777, 0o600);

    // The right secret: control works, as from any window.
    const held = (await window.control({ command: 'holdItem', itemId: 'later' })) as ItemDetail;
    assert.equal(held.state, 'held');

    // A wrong secret, then none at all, then an HTTP request to the control port: refused and cut off.
    for (const first of [JSON.stringify({ type: 'attach', token: 'guess' }), JSON.stringify({ type: 'control', requestId: 1, command: 'releaseItem', itemId: 'later' }), 'POST /control HTTP/1.1']) {
      const answer = await rawExchange(file.port, [first, JSON.stringify({ type: 'control', requestId: 2, command: 'releaseItem', itemId: 'later' })]);
      assert.match(answer, /"type":"refused"/, `not refused after ${first}`);
      assert.doesNotMatch(answer, /controlResult|welcome/);
    }
    const url = readEndpoint();
    assert.equal((await item(url, 'later')).state, 'held', 'a refused caller changed the item');
    // HTTP control stays closed without a configured token, exactly as before.
    assert.equal((await request(url, '/items/later/release', { method: 'POST' })).status >= 400, true);
  });

  it('with --keep-alive, stops only once no window is attached and nothing runs', async () => {
    ws.enqueue('work.json', [nodeItem('work', "setTimeout(() => {}, 3000)")]);
    const window = await startAndAttach({ keepAliveSeconds: 1 });
    const pid = window.info.pid;
    assert.equal(window.info.keepAliveSeconds, 1);
    assert.equal(window.info.launchKey, 'key-1');
    const url = readEndpoint();
    await waitFor('the attempt to run', async () => (await item(url, 'work'))?.state === 'running');
    // Detached while the attempt runs, for longer than the keep-alive: alive until the attempt ends.
    const detachedAt = Date.now();
    window.close();
    // The host answering with the finished attempt is the proof it was not stopped while it ran.
    const done = await waitFor('the attempt to finish', async () => {
      const d = await item(url, 'work');
      return d.outcome !== 'pending' && d;
    }, 30_000);
    assert.ok(Date.now() - detachedAt > 1500, 'the attempt ended before the keep-alive passed: the test proves nothing');
    assert.deepEqual([done.outcome, done.attempts.length], ['launched', 1]);
    assert.equal(await waitForExit(pid, 15_000), true, 'the host did not stop after its keep-alive');
    // It cleaned up after itself: nothing left for a window to attach to.
    assert.equal(readControlFile(ws.storage), undefined);
  });

  it('with --keep-alive, a running service does not keep it alive: it stops, and so does the service', async () => {
    const pidFile = path.join(ws.root, 'service.pid');
    ws.enqueue('svc.json', [nodeItem('svc', `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000)`, { service: true })]);
    const window = await startAndAttach({ keepAliveSeconds: 1 });
    const pid = window.info.pid;
    const url = readEndpoint();
    await waitFor('the service to be ready', async () => (await item(url, 'svc'))?.state === 'ready');
    // Ready means it ran 1 s (it has no probe); a loaded machine can take longer to boot its Node.
    const service = await waitFor('the service to write its pid', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')), 30_000);
    window.close();
    assert.equal(await waitForExit(pid, 15_000), true, 'the host did not stop after its keep-alive');
    await waitFor(`the service (pid ${service}) to be gone`, () => !processAlive(service));
  });

  it('attached windows keep it alive past the keep-alive; a headless engine has none', async () => {
    const window = await startAndAttach({ keepAliveSeconds: 1 });
    const second = await attachToHost(ws.storage, 'second');
    assert.equal(second.kind, 'attached');
    if (second.kind === 'attached') connections.push(second.connection);
    window.close();
    // Three keep-alives with one window still attached.
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(processAlive(window.info.pid), true, 'stopped while a window was attached');
    // The command line a headless `serve` gets has no --keep-alive: it never stops by itself.
    assert.ok(!hostCommandLine(spec()).includes('--keep-alive'));
  });

  it('a restart asked from one window tells the others a fresh host follows, and the host exits cleanly', async () => {
    const first = await startAndAttach();
    const second = await attachToHost(ws.storage, 'second');
    assert.equal(second.kind, 'attached');
    if (second.kind !== 'attached') return;
    connections.push(second.connection);
    assert.equal(second.connection.info.attached, 2);
    await first.shutdown(true);
    const heard = await second.connection.closed;
    assert.deepEqual(heard.stopping, { reason: 'a window asked for a fresh engine host', restart: true });
    assert.equal(await waitForExit(first.info.pid, 15_000), true);
    // Nothing left that a window could attach to.
    assert.equal(readControlFile(ws.storage), undefined);
    assert.equal((await attachToHost(ws.storage)).kind, 'none');
  });

  function readEndpoint(): string {
    try {
      return (JSON.parse(readFileSync(path.join(ws.storage, 'endpoint.json'), 'utf8')) as { url: string }).url;
    } catch {
      return '';
    }
  }
});

/** Writes raw lines to the control port and gives back whatever came before it closed. */
function rawExchange(port: number, lines: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (answer += c));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(answer));
    socket.on('connect', () => socket.write(lines.map((l) => l + '\n').join('')));
    setTimeout(() => reject(new Error(`the control port kept an unproven caller connected: ${answer}`)), 10_000).unref();
  });
}
