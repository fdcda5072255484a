// The launch helpers as the engine runs them (src/host/launchHelperMain.ts forked by the engine's
// pool in src/core/launching/): a helper killed or stopped under running attempts, engine shutdown,
// and an engine killed with SIGKILL while an attempt runs. The client and the helper over IPC on
// their own are in launchHelper.test.ts.
import assert from 'node:assert/strict';
import { execFileSync, fork } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { locateLaunchHelper } from '../../src/host/launchHelperEntry';
import { serve } from './support/cli';
import { escapees, escapingCommand, killEscapees, newTag } from './support/escapees';
import { allLogs, nodeItem, processAlive, settled, TempWorkspace, waitFor } from './support/workspace';

/** Pids of launch helpers forked by the engine process `enginePid` (their command line names it). */
function helpersOf(enginePid: number): number[] {
  const out = execFileSync('ps', ['-e', '-o', 'pid=,args=']).toString();
  return out
    .split('\n')
    .filter((l) => l.includes(`--engine-pid=${enginePid}`))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

/** The parent of process `pid`: the launch helper that spawned an attempt. */
function parentOf(pid: number): number {
  return Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(pid)]).toString().trim());
}

describe('launch helper: attempts spawned by a helper process', function () {
  this.timeout(60_000);

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
      engine = await Engine.create(ws.options({ launchHelpers: 2 }));
      await engine.start();
      const first = await waitFor('attempt 1 to run', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')));
      const helper = parentOf(first);
      assert.ok(helpersOf(process.pid).includes(helper), 'attempt 1 runs in one of the engine\'s launch helpers');
      process.kill(helper, 'SIGKILL');
      await settled(engine);
      assert.deepEqual(engine.listItems({ limit: 10, offset: 0 }).items.map((i) => [i.id, i.outcome, i.attempts]), [['hangs-once', 'launched', 2]]);
      const failed = allLogs(engine).find((e) => e.action === 'launch_failed')!;
      assert.match(failed.message, /attempt 1 of 2 launch helper exited unexpectedly \(signal SIGKILL\); the attempt's processes were ended/);
      assert.ok(allLogs(engine).some((e) => e.action === 'retry_scheduled' && e.itemId === 'hangs-once'));
      await waitFor('the first attempt’s process to be ended', () => !processAlive(first), 3000);
      const now = helpersOf(process.pid);
      assert.equal(now.length, 2, 'the other helper and a fresh one');
      assert.ok(!now.includes(helper));
      // At a 100 ms poll interval a loaded machine can let one poll slip past 3 intervals ("stalled"
      // for a moment); what matters is that the engine runs on, healthy.
      await waitFor('the engine healthy', () => engine!.health().status === 'healthy', 5000);
    });

    it('one helper of two killed -9 mid-burst: its attempts are retried and succeed, the other helper\'s are untouched, a replacement starts', async () => {
      // Each attempt leaves `<item>-<attempt>` holding its helper's pid (the parent of its shell),
      // then sleeps long enough to be caught running.
      const ran = path.join(ws.root, 'ran');
      mkdirSync(ran);
      const items = Array.from({ length: 16 }, (_, i) => ({
        id: `burst-${i}`,
        command: 'sh',
        args: ['-c', `echo $PPID > "${ran}/$ENGINE_ITEM_ID-$ENGINE_ATTEMPT"; sleep 2`],
        maxAttempts: 2,
      }));
      engine = await Engine.create(ws.options({ launchHelpers: 2, concurrency: 8, backoffBaseMs: 50 }));
      await engine.start();
      // Both helpers started (as the engine host does after its ready line) and ready before the
      // burst: launches go to the helpers that are ready, and on a loaded machine the second one
      // can boot after a whole burst went to the first. (The engine does not show its helpers; the
      // test reads its launcher.)
      const launcher = (engine as unknown as { launcher: { helperPids: number[] } }).launcher;
      engine.prepareLaunching();
      await waitFor('both helpers to be ready', () => launcher.helperPids.length === 2, 60_000);
      ws.enqueue('burst.json', items);
      // 0: no such file, the attempt never started (or not yet).
      const helperOf = (file: string) => (existsSync(path.join(ran, file)) ? Number(readFileSync(path.join(ran, file), 'utf8')) : 0);
      // Mid-burst: attempts are running in both helpers and most items have not started yet.
      const pool = await waitFor('attempts started in both helpers', () => {
        // 0: a file being written (the shell truncates it first).
        const parents = new Set(readdirSync(ran).map(helperOf).filter((p) => p > 1));
        return parents.size === 2 && [...parents];
      });
      // The victim: the helper of the attempt started last, so it surely has one running.
      const newest = readdirSync(ran)
        .map((f) => ({ f, at: statSync(path.join(ran, f)).mtimeMs, helper: helperOf(f) }))
        .filter((e) => e.helper > 1)
        .sort((a, b) => b.at - a.at)[0];
      const victim = newest.helper;
      const survivor = pool.find((p) => p !== victim)!;
      process.kill(victim, 'SIGKILL');
      await settled(engine);
      const outcomes = engine.listItems({ limit: 100, offset: 0 }).items;
      assert.ok(outcomes.every((i) => i.outcome === 'launched'), 'every item succeeded in the end');
      const retried = outcomes.filter((i) => i.attempts === 2).map((i) => i.id);
      assert.ok(retried.length > 0, 'the killed helper had attempts running');
      // An attempt sent to the victim may never have started (no file), and a shell it spawned just
      // before it died may have seen itself orphaned already ($PPID 1, or a subreaper): what
      // matters is that no attempt of a live helper failed.
      const now = helpersOf(process.pid);
      for (const id of retried) {
        const parent = helperOf(`${id}-1`);
        assert.ok(parent === victim || (parent !== survivor && !now.includes(parent)), `${id}: only the killed helper's attempts failed (its attempt 1 ran under ${parent})`);
      }
      const failed = allLogs(engine).filter((e) => e.action === 'launch_failed');
      assert.equal(failed.length, retried.length);
      assert.ok(failed.every((e) => /launch helper exited unexpectedly \(signal SIGKILL\)/.test(e.message)));
      // Attempts after the kill ran in the survivor or in a replacement, never in the killed one.
      const later = outcomes.filter((i) => !retried.includes(i.id)).map((i) => helperOf(`${i.id}-1`));
      assert.ok(later.some((p) => p === survivor), 'the surviving helper kept launching');
      assert.equal(now.length, 2, 'the pool is back to two: a replacement started');
      assert.ok(now.includes(survivor) && !now.includes(victim), `helpers now ${now}`);
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
      assert.ok(helpersOf(process.pid).length > 0, 'launched through the helpers');
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

    it('start() forks no launch helper while nothing is due; prepareLaunching() forks the pool', async () => {
      // A window that starts the engine waits for its host's start: two Node processes booting
      // beside the first poll made that start slower, for helpers nothing needed yet.
      ws.enqueue('later.json', nodeItem('later', '0', { runAt: '2099-01-01T00:00:00.000Z' }));
      engine = await Engine.create(ws.options({ launchHelpers: 2 }));
      await engine.start();
      assert.equal(engine.listItems({ limit: 10, offset: 0 }).items.length, 1, 'the first poll found the item');
      assert.deepEqual(helpersOf(process.pid), [], 'no helper forked by start()');
      engine.prepareLaunching();
      await waitFor('the pool of two helpers', () => helpersOf(process.pid).length === 2);
    });

    it('shutdown ends running attempts and the helper: no process is left', async () => {
      const pidFile = path.join(ws.root, 'pid');
      // Deaf to SIGTERM: only the SIGKILL after the shutdown's grace ends it.
      ws.enqueue('a.json', nodeItem('deaf', `process.on('SIGTERM', () => {}); require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000)`));
      engine = await Engine.create(ws.options({ launchHelpers: 2 }));
      await engine.start();
      const pid = await waitFor('the attempt to run', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')));
      const helpers = helpersOf(process.pid);
      assert.equal(helpers.length, 2);
      await engine.shutdown(0);
      engine = undefined;
      assert.ok(helpers.every((h) => !processAlive(h)), 'both helpers exited before shutdown() resolved');
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

    it('the engine host forks its helpers once it is ready, with nothing due', async () => {
      ws.enqueue('later.json', nodeItem('later', '0', { runAt: '2099-01-01T00:00:00.000Z' }));
      const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--launch-helpers', '2']);
      try {
        // Ready for the first launch or snapshot without waiting for either.
        await waitFor('the pool of two helpers', () => helpersOf(run.child.pid!).length === 2);
      } finally {
        run.child.kill('SIGTERM');
        await run.exited;
      }
    });

    it('kill -9 of the engine host: the helper ends the running attempt and what left its group, and exits', async () => {
      const pidFile = path.join(ws.root, 'pid');
      const tag = newTag();
      try {
        ws.enqueue('a.json', nodeItem('long', `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000)`));
        if (process.platform === 'linux') ws.enqueue('b.json', { id: 'escapes', command: escapingCommand(tag, 'sleep 300'), shell: true });
        const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '100', '--launch-helpers', '2']);
        const pid = await waitFor('the attempt to run', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')));
        if (process.platform === 'linux') await waitFor('the escapees to leave the group', () => escapees(tag).length === 3);
        const helpers = helpersOf(run.child.pid!);
        assert.equal(helpers.length, 2, 'the engine host forked a pool of two launch helpers');
        run.child.kill('SIGKILL');
        await run.exited;
        await waitFor('the attempt to be ended', () => !processAlive(pid), 5000);
        await waitFor('the escapees to be ended', () => escapees(tag).length === 0, 5000);
        await waitFor('both helpers to exit', () => helpers.every((h) => !processAlive(h)), 5000);
      } finally {
        killEscapees(tag);
      }
    });
  });
});
