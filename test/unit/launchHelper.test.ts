// The launch helper (src/host/launchHelperMain.ts) and the engine's client of it
// (src/core/launchHelperClient.ts), with real processes and the real IPC channel: launches, the helper
// killed under running attempts, a helper that cannot start, engine shutdown, and an engine
// killed with SIGKILL while an attempt runs.
import assert from 'node:assert/strict';
import { execFileSync, fork } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Engine } from '../../src/core/engine';
import { AttemptLauncher } from '../../src/core/launchHelperClient';
import { LAUNCH_HELPER_NODE_OPTIONS, locateLaunchHelper } from '../../src/host/launchHelperEntry';
import { serve } from './support/cli';
import { escapees, escapingCommand, killEscapees, newTag, untilFileExists } from './support/escapees';
import { allLogs, itemDefinition, nodeItem, processAlive, settled, TempWorkspace, waitFor } from './support/workspace';

/** Pids of launch helpers forked by the engine process `enginePid` (their command line names it). */
function helpersOf(enginePid: number): number[] {
  const out = execFileSync('ps', ['-e', '-o', 'pid=,args=']).toString();
  return out
    .split('\n')
    .filter((l) => l.includes(`--engine-pid=${enginePid}`))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

/** A node process that prints its pid and then runs until killed. */
const HANG = `console.log(process.pid); setInterval(() => {}, 1000)`;

describe('launch helper: attempts spawned by a helper process', function () {
  this.timeout(60_000);

  describe('the client and the helper over IPC', () => {
    let launcher: AttemptLauncher | undefined;
    afterEach(async () => {
      await launcher?.close(500);
      launcher = undefined;
    });

    it('runs attempts in the helper with the launcher semantics: output, exit codes, env, ENOENT', async () => {
      launcher = new AttemptLauncher({ entry: locateLaunchHelper() });
      const ok = await launcher.launch(1, itemDefinition({ args: ['-e', 'console.log(process.ppid, process.env.ENGINE_ATTEMPT, process.env.ENGINE_ITEM_ID); console.error("err")'] }), 2).done;
      assert.equal(launcher.mode, 'helper');
      const helper = launcher.helperPid!;
      assert.ok(helper > 0 && helper !== process.pid);
      assert.equal(ok.succeeded, true);
      assert.equal(ok.stdoutTail.trim(), `${helper} 2 x`, 'the attempt is a child of the helper, not of the engine');
      assert.equal(ok.stderrTail.trim(), 'err');
      const [exit7, missing, killed] = await Promise.all([
        launcher.launch(2, itemDefinition({ args: ['-e', 'process.exit(7)'] }), 1).done,
        launcher.launch(3, itemDefinition({ command: 'no-such-command-engine-monitor', args: [] }), 1).done,
        launcher.launch(4, itemDefinition({ args: ['-e', 'process.kill(process.pid, "SIGKILL")'] }), 1).done,
      ]);
      assert.deepEqual([exit7.succeeded, exit7.exitCode], [false, 7]);
      assert.match(missing.error ?? '', /ENOENT.*PATH/);
      assert.equal(killed.signal, 'SIGKILL');
      assert.equal(launcher.helperPid, helper, 'one long-lived helper serves every launch');
      assert.equal(launcher.helperSpawnStats().spawns, 4);
    });

    it('reports the pid once the helper started the process, and terminate() ends its group', async () => {
      launcher = new AttemptLauncher({ entry: locateLaunchHelper() });
      const run = launcher.launch(1, itemDefinition({ args: ['-e', HANG] }), 1);
      const pid = await waitFor('the pid', () => run.pid ?? undefined);
      await waitFor('the process to run', () => processAlive(pid));
      run.terminate(2000);
      const r = await run.done;
      assert.equal(r.signal, 'SIGTERM');
      assert.equal(r.pid, pid);
      assert.equal(processAlive(pid), false);
    });

    it('times out an attempt in the helper (SIGTERM to the group, the output kept)', async () => {
      launcher = new AttemptLauncher({ entry: locateLaunchHelper() });
      const started = Date.now();
      const r = await launcher.launch(1, itemDefinition({ args: ['-e', HANG], timeoutMs: 500 }), 1).done;
      assert.equal(r.timedOut, true);
      assert.match(r.error ?? '', /timed out after 500 ms/);
      assert.ok(Number(r.stdoutTail.trim()) > 0);
      assert.ok(Date.now() - started < 4000);
    });

    it('when the helper is killed: its attempts fail with a clear error, their processes are ended, the next launch gets a new helper', async () => {
      launcher = new AttemptLauncher({ entry: locateLaunchHelper() });
      const runs = [1, 2].map((id) => launcher!.launch(id, itemDefinition({ args: ['-e', HANG] }), 1));
      const pids = await waitFor('both pids', () => runs.every((r) => r.pid !== null) && runs.map((r) => r.pid!));
      const helper = launcher.helperPid!;
      process.kill(helper, 'SIGKILL');
      const results = await Promise.all(runs.map((r) => r.done));
      for (const r of results) {
        assert.equal(r.succeeded, false);
        assert.equal(r.error, "launch helper exited unexpectedly (signal SIGKILL); the attempt's processes were ended");
      }
      assert.deepEqual(results.map((r) => r.pid), pids);
      await waitFor('the orphaned attempts to be ended', () => pids.every((p) => !processAlive(p)), 3000);

      const again = await launcher.launch(3, itemDefinition({ args: ['-e', 'console.log(process.ppid)'] }), 1).done;
      assert.equal(again.succeeded, true);
      assert.notEqual(launcher.helperPid, helper);
      assert.equal(Number(again.stdoutTail.trim()), launcher.helperPid, 'launched by the new helper');
      assert.equal(launcher.mode, 'helper');
    });

    describe('processes that leave an attempt\'s process group', function () {
      before(function () {
        if (process.platform !== 'linux') this.skip();
      });
      let tag = '';
      beforeEach(() => (tag = newTag()));
      afterEach(() => killEscapees(tag));

      it('the helper ends them once the attempt has ended: setsid, a double fork through setsid, setpgrp', async () => {
        launcher = new AttemptLauncher({ entry: locateLaunchHelper() });
        const go = path.join(os.tmpdir(), `escapees-go-${tag}`);
        const run = launcher.launch(1, itemDefinition({ command: escapingCommand(tag, untilFileExists(go)), shell: true, args: [] }), 1);
        try {
          await waitFor('the escapees to leave the group', () => escapees(tag).length === 3);
          writeFileSync(go, '');
          const r = await run.done;
          assert.equal(r.succeeded, true, r.stderrTail);
          assert.equal(launcher.mode, 'helper');
          await waitFor('the escapees to be ended', () => escapees(tag).length === 0, 5000);
        } finally {
          rmSync(go, { force: true });
        }
      });

      it('when the helper is killed, the engine ends them by the attempt\'s marker', async () => {
        launcher = new AttemptLauncher({ entry: locateLaunchHelper() });
        const run = launcher.launch(1, itemDefinition({ command: escapingCommand(tag, 'echo ready; sleep 300'), shell: true, args: [] }), 1);
        await waitFor('the escapees to leave the group', () => escapees(tag).length === 3);
        process.kill(launcher.helperPid!, 'SIGKILL');
        assert.match((await run.done).error ?? '', /launch helper exited unexpectedly/);
        await waitFor('the escapees to be ended', () => escapees(tag).length === 0, 5000);
      });
    });

    it('a stopped helper (SIGSTOP) is noticed by its silence, killed and replaced; its attempts fail and their processes are ended', async function () {
      this.timeout(30_000);
      const warnings: string[] = [];
      launcher = new AttemptLauncher({ entry: locateLaunchHelper(), warn: (m) => warnings.push(m) });
      // Its 1 s timeout is the stopped helper's to enforce.
      const run = launcher.launch(1, itemDefinition({ args: ['-e', HANG], timeoutMs: 1000 }), 1);
      const pid = await waitFor('the pid', () => run.pid ?? undefined);
      const helper = launcher.helperPid!;
      process.kill(helper, 'SIGSTOP');
      try {
        const r = await Promise.race([run.done, new Promise<undefined>((resolve) => setTimeout(resolve, 15_000))]);
        assert.ok(r, 'the attempt ended while its helper was stopped');
        assert.equal(r.succeeded, false);
        assert.match(r.error ?? '', /^launch helper exited unexpectedly \(killed after it did not answer for \d+ s\); the attempt's processes were ended$/);
        assert.equal(warnings.length, 1);
        assert.match(warnings[0], new RegExp(`^launch helper ${helper} did not answer for \\d+ s \\(stopped or hung\\) and was killed`));
        await waitFor('the attempt’s process to be ended', () => !processAlive(pid), 3000);
        await waitFor('the stopped helper to be gone', () => !processAlive(helper), 3000);
      } finally {
        if (processAlive(helper)) process.kill(helper, 'SIGKILL');
      }
      const again = await launcher.launch(2, itemDefinition({ args: ['-e', 'console.log(process.ppid)'] }), 1).done;
      assert.equal(again.succeeded, true);
      assert.equal(Number(again.stdoutTail.trim()), launcher.helperPid, 'launched by a new helper');
      assert.notEqual(launcher.helperPid, helper);
    });

    it('restarts a helper that keeps dying later and later', async () => {
      launcher = new AttemptLauncher({ entry: locateLaunchHelper() });
      const gaps: number[] = [];
      for (let i = 0; i < 4; i++) {
        const t = Date.now();
        const run = launcher.launch(i, itemDefinition({ args: ['-e', HANG] }), 1);
        await waitFor('the attempt to start', () => run.pid ?? undefined);
        gaps.push(Date.now() - t);
        process.kill(launcher.helperPid!, 'SIGKILL');
        assert.match((await run.done).error ?? '', /launch helper exited unexpectedly/);
      }
      // gaps[0] is the first helper's start. After one death a new helper is forked at once;
      // after a second quick death, 500 ms later; after a third, 1 s.
      assert.ok(gaps[2] >= 450, `third helper after ${gaps[2]} ms`);
      assert.ok(gaps[3] >= 950, `fourth helper after ${gaps[3]} ms`);
    });

    it('falls back to in-process launching when the helper file is missing, and says so once', async () => {
      const warnings: string[] = [];
      launcher = new AttemptLauncher({ entry: { file: path.join(os.tmpdir(), 'no-such-launch-helper.js'), execArgv: [] }, warn: (m) => warnings.push(m) });
      const results = await Promise.all([1, 2, 3].map((id) => launcher!.launch(id, itemDefinition({ args: ['-e', 'console.log(process.ppid)'] }), 1).done));
      assert.ok(results.every((r) => r.succeeded && Number(r.stdoutTail.trim()) === process.pid), 'children of this process');
      assert.equal(launcher.mode, 'in-process');
      assert.equal(warnings.length, 1);
      assert.match(warnings[0], /launch helper unavailable: .*no-such-launch-helper\.js is missing; launching in the engine's own process/);
    });

    it('falls back to in-process launching when the helper crashes before it is ready', async function () {
      this.timeout(20_000);
      const broken = path.join(os.tmpdir(), `broken-launch-helper-${process.pid}.js`);
      writeFileSync(broken, 'process.exit(3)');
      const warnings: string[] = [];
      launcher = new AttemptLauncher({ entry: { file: broken, execArgv: LAUNCH_HELPER_NODE_OPTIONS }, warn: (m) => warnings.push(m) });
      const r = await launcher.launch(1, itemDefinition({ args: ['-e', 'console.log(process.ppid)'] }), 1).done;
      assert.equal(r.succeeded, true, 'the launch waited for a working way to run, it did not fail');
      assert.equal(Number(r.stdoutTail.trim()), process.pid);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0], /exited before it was ready \(exit code 3\)/);
    });
  });

  describe('in the engine', () => {
    let ws: TempWorkspace;
    let engine: Engine | undefined;
    beforeEach(() => (ws = new TempWorkspace('engine-helper-')));
    afterEach(async () => {
      await engine?.shutdown(0);
      engine = undefined;
      ws.dispose();
    });

    it('a killed helper fails its attempts, which are retried with backoff and succeed; the engine keeps running', async () => {
      const pidFile = path.join(ws.root, 'first-pid');
      // Attempt 1 hangs (and leaves its pid); attempt 2 succeeds.
      const code = `if (process.env.ENGINE_ATTEMPT === '1') { require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000) }`;
      ws.enqueue('a.json', nodeItem('hangs-once', code, { maxAttempts: 2 }));
      engine = await Engine.create(ws.options());
      await engine.start();
      const first = await waitFor('attempt 1 to run', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')));
      const [helper] = helpersOf(process.pid);
      assert.ok(helper, 'the engine forked a launch helper');
      process.kill(helper, 'SIGKILL');
      await settled(engine);
      assert.deepEqual(engine.listItems({ limit: 10, offset: 0 }).items.map((i) => [i.id, i.outcome, i.attempts]), [['hangs-once', 'launched', 2]]);
      const failed = allLogs(engine).find((e) => e.action === 'launch_failed')!;
      assert.match(failed.message, /attempt 1 of 2 launch helper exited unexpectedly \(signal SIGKILL\); the attempt's processes were ended/);
      assert.ok(allLogs(engine).some((e) => e.action === 'retry_scheduled' && e.itemId === 'hangs-once'));
      await waitFor('the first attempt’s process to be ended', () => !processAlive(first), 3000);
      const now = helpersOf(process.pid);
      assert.equal(now.length, 1, 'a fresh helper');
      assert.notEqual(now[0], helper);
      // At a 100 ms poll interval a loaded machine can let one poll slip past 3 intervals ("stalled"
      // for a moment); what matters is that the engine runs on, healthy.
      await waitFor('the engine healthy', () => engine!.health().status === 'healthy', 5000);
    });

    it('launches in-process with one warn entry when the helper cannot be started', async () => {
      ws.enqueue('a.json', [nodeItem('a', '0'), nodeItem('b', '0'), nodeItem('c', 'process.exit(1)', { maxAttempts: 2 })]);
      engine = await Engine.create(ws.options({ launchHelper: { file: path.join(ws.root, 'missing', 'launch-helper.js'), execArgv: [] } }));
      await engine.start();
      await settled(engine);
      const s = engine.stats();
      assert.deepEqual([s.launched, s.failed, s.totalLaunches], [2, 1, 4]);
      const warnings = allLogs(engine).filter((e) => e.level === 'warn' && /launch helper unavailable/.test(e.message));
      assert.equal(warnings.length, 1);
      assert.deepEqual(helpersOf(process.pid), []);
    });

    it('checks cwd again when an attempt starts: a link made after ingest that leads outside, a folder still missing', async () => {
      const outside = path.join(ws.root, 'outside');
      mkdirSync(outside);
      ws.enqueue('a.json', [
        { id: 'via-link', command: 'touch', args: ['ran'], cwd: 'lnk', maxAttempts: 1 },
        { id: 'missing', command: 'pwd', cwd: 'later/out', maxAttempts: 1 },
      ]);
      // Restricted: the items are ingested (neither folder exists yet, so both pass) and wait.
      engine = await Engine.create(ws.options({ initialMode: 'restricted' }));
      await engine.start();
      assert.equal(engine.stats().total, 2);
      symlinkSync(outside, path.join(ws.folder, 'lnk'));
      engine.grantTrust();
      await settled(engine);
      const items = Object.fromEntries(engine.listItems({ limit: 10, offset: 0 }).items.map((i) => [i.id, i]));
      assert.equal(items['via-link'].outcome, 'failed');
      assert.equal(items['via-link'].lastError, `cwd "lnk" leads outside the workspace folder (to ${realpathSync(outside)}); use a real folder inside it, or fix "cwd" in the queue file`);
      assert.equal(existsSync(path.join(outside, 'ran')), false, 'nothing ran outside the workspace');
      assert.equal(items.missing.outcome, 'failed');
      assert.equal(items.missing.lastError, 'cwd "later/out" does not exist (create it, or fix "cwd" in the queue file)');
      assert.deepEqual(helpersOf(process.pid).length, 1, 'launched through the helper');
    });

    for (const how of ['through the helper', 'in-process'] as const) {
      it(`shutdown ends what left a running attempt's process group (launched ${how})`, async function () {
        if (process.platform !== 'linux') this.skip();
        const tag = newTag();
        try {
          ws.enqueue('a.json', { id: 'escapes', command: escapingCommand(tag, 'sleep 300'), shell: true });
          engine = await Engine.create(ws.options(how === 'in-process' ? { launchHelper: null } : {}));
          await engine.start();
          await waitFor('the escapees to leave the group', () => escapees(tag).length === 3);
          await engine.shutdown(0);
          engine = undefined;
          await waitFor('the escapees to be ended', () => escapees(tag).length === 0, 3000);
        } finally {
          killEscapees(tag);
        }
      });
    }

    it('shutdown ends running attempts and the helper: no process is left', async () => {
      const pidFile = path.join(ws.root, 'pid');
      // Deaf to SIGTERM: only the SIGKILL after the shutdown's grace ends it.
      ws.enqueue('a.json', nodeItem('deaf', `process.on('SIGTERM', () => {}); require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000)`));
      engine = await Engine.create(ws.options());
      await engine.start();
      const pid = await waitFor('the attempt to run', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')));
      const helpers = helpersOf(process.pid);
      assert.equal(helpers.length, 1);
      await engine.shutdown(0);
      engine = undefined;
      assert.equal(processAlive(helpers[0]), false, 'the helper exited before shutdown() resolved');
      await waitFor('the attempt to be ended', () => !processAlive(pid), 3000);
    });
  });

  describe('when the engine dies', () => {
    let ws: TempWorkspace;
    beforeEach(() => (ws = new TempWorkspace('engine-helper-cli-')));
    afterEach(() => ws.dispose());

    it('an engine gone before the helper reports: the helper exits cleanly instead of crashing on EPIPE', async () => {
      // A message to an engine that has just died fails with EPIPE. Without a callback Node throws
      // that as an 'error' event on process, which would kill the helper before its 'disconnect'
      // handler ends the attempts it runs.
      const entry = locateLaunchHelper()!;
      const helper = fork(entry.file, [`--engine-pid=${process.pid}`], { execArgv: entry.execArgv, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
      let stderr = '';
      helper.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      // The engine's end of the channel closes before the helper has said it is ready.
      helper.disconnect();
      const code = await new Promise<number | null>((resolve) => helper.on('exit', (c) => resolve(c)));
      assert.equal(stderr, '', 'nothing thrown');
      assert.equal(code, 0, 'it ended the way an orphaned helper ends');
    });

    it('kill -9 of the engine host: the helper ends the running attempt and what left its group, and exits', async () => {
      const pidFile = path.join(ws.root, 'pid');
      const tag = newTag();
      try {
        ws.enqueue('a.json', nodeItem('long', `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000)`));
        if (process.platform === 'linux') ws.enqueue('b.json', { id: 'escapes', command: escapingCommand(tag, 'sleep 300'), shell: true });
        const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '100']);
        const pid = await waitFor('the attempt to run', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')));
        if (process.platform === 'linux') await waitFor('the escapees to leave the group', () => escapees(tag).length === 3);
        const helpers = helpersOf(run.child.pid!);
        assert.equal(helpers.length, 1, 'the engine host forked one launch helper');
        run.child.kill('SIGKILL');
        await run.exited;
        await waitFor('the attempt to be ended', () => !processAlive(pid), 5000);
        await waitFor('the escapees to be ended', () => escapees(tag).length === 0, 5000);
        await waitFor('the helper to exit', () => !processAlive(helpers[0]), 5000);
      } finally {
        killEscapees(tag);
      }
    });
  });
});
