// The launch helper (src/host/launchHelperMain.ts) and the engine's client of its pool
// (src/core/launching/), with real processes and the real IPC channel: launches spread over a pool
// of two helpers, one helper killed or stopped under running attempts while the other runs on, a
// helper that cannot start, and what leaves an attempt's process group. The helpers inside an
// engine, and an engine that dies under them, are in launchHelperEngine.test.ts.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunningAttempt } from '../../src/core/launching/attemptProcess';
import { AttemptLauncher } from '../../src/core/launching';
import { LAUNCH_HELPER_NODE_OPTIONS, locateLaunchHelper } from '../../src/host/launchHelperEntry';
import { escapees, escapingCommand, killEscapees, newTag, untilFileExists } from './support/escapees';
import { itemDefinition, processAlive, waitFor } from './support/workspace';

/** A node process that prints its pid and then runs until killed. */
const HANG = `console.log(process.pid); setInterval(() => {}, 1000)`;

/** A launcher whose pool of two helpers is ready, so that launches spread over both as they come. */
async function readyPool(options: Partial<ConstructorParameters<typeof AttemptLauncher>[0]> = {}): Promise<AttemptLauncher> {
  const launcher = new AttemptLauncher({ entry: locateLaunchHelper(), helpers: 2, ...options });
  launcher.prepare();
  await waitFor('both helpers to be ready', () => launcher.helperPids.length === 2);
  return launcher;
}

describe('launch helper: attempts spawned by a helper process', function () {
  this.timeout(60_000);

  describe('the client and the helper over IPC', () => {
    let launcher: AttemptLauncher | undefined;
    afterEach(async () => {
      await launcher?.close(500);
      launcher = undefined;
    });

    it('runs attempts in the helpers with the launcher semantics: output, exit codes, env, ENOENT', async () => {
      launcher = new AttemptLauncher({ entry: locateLaunchHelper(), helpers: 2 });
      const first = launcher.launch(1, itemDefinition({ args: ['-e', 'console.log(process.ppid, process.env.ENGINE_ATTEMPT, process.env.ENGINE_ITEM_ID); console.error("err")'] }), 2);
      const ok = await first.done;
      assert.equal(launcher.mode, 'helper');
      const helper = launcher.helperPidOf(first)!;
      assert.ok(helper > 0 && helper !== process.pid);
      assert.equal(ok.succeeded, true);
      assert.equal(ok.stdoutTail.trim(), `${helper} 2 x`, 'the attempt is a child of its helper, not of the engine');
      assert.equal(ok.stderrTail.trim(), 'err');
      await waitFor('both helpers to be ready', () => launcher!.helperPids.length === 2);
      const pool = launcher.helperPids;
      const runs = [
        launcher.launch(2, itemDefinition({ args: ['-e', 'process.exit(7)'] }), 1),
        launcher.launch(3, itemDefinition({ command: 'no-such-command-engine-monitor', args: [] }), 1),
        launcher.launch(4, itemDefinition({ args: ['-e', 'process.kill(process.pid, "SIGKILL")'] }), 1),
        launcher.launch(5, itemDefinition({ args: ['-e', 'console.log(process.ppid)'] }), 1),
      ];
      const [exit7, missing, killed, parent] = await Promise.all(runs.map((r) => r.done));
      assert.deepEqual([exit7.succeeded, exit7.exitCode], [false, 7]);
      assert.match(missing.error ?? '', /ENOENT.*PATH/);
      assert.equal(killed.signal, 'SIGKILL');
      assert.equal(Number(parent.stdoutTail.trim()), launcher.helperPidOf(runs[3]));
      // Four launches at once, none finished yet when the next is sent: two to each helper.
      assert.deepEqual(runs.map((r) => launcher!.helperPidOf(r)).sort(), [...pool, ...pool].sort(), 'spread over the pool');
      assert.deepEqual(launcher.helperPids, pool, 'the same long-lived helpers serve every launch');
      assert.equal(launcher.helperSpawnStats().spawns, 5);
    });

    it('gives each attempt the helper\'s environment, the item\'s own variables over it, and the engine\'s variables over both', async () => {
      // Read by the helper once, when it starts (it inherits this process's environment).
      process.env.ENGINE_MONITOR_TEST_INHERITED = 'from the engine';
      process.env.ENGINE_MONITOR_TEST_SHADOWED = 'from the engine';
      try {
        launcher = new AttemptLauncher({ entry: locateLaunchHelper(), helpers: 1 });
        const print = `const e = process.env; console.log(JSON.stringify([e.ENGINE_MONITOR_TEST_INHERITED, e.ENGINE_MONITOR_TEST_SHADOWED, e.ITEM_ONLY, e.__proto__, e.ENGINE_ITEM_ID, e.ENGINE_ATTEMPT, e.ENGINE_MAX_ATTEMPTS, e.ENGINE_MONITOR_ATTEMPT, e.PATH === ${JSON.stringify(process.env.PATH)}]))`;
        const env = JSON.parse('{"ENGINE_MONITOR_TEST_SHADOWED": "from the item", "ITEM_ONLY": "1", "__proto__": "a name like any other", "ENGINE_ITEM_ID": "not the id", "ENGINE_MONITOR_ATTEMPT": "not the marker"}') as Record<string, string>;
        const runs = [1, 2].map((n) => launcher!.launch(n, itemDefinition({ id: `env-${n}`, args: ['-e', print], env, maxAttempts: 3 }), n));
        const [first, second] = await Promise.all(runs.map((r) => r.done));
        assert.equal(launcher.mode, 'helper');
        const seen = [first, second].map((r) => JSON.parse(r.stdoutTail) as unknown[]);
        for (const [i, s] of seen.entries()) {
          assert.deepEqual(s.slice(0, 7), ['from the engine', 'from the item', '1', 'a name like any other', `env-${i + 1}`, String(i + 1), '3']);
          assert.match(String(s[7]), /^[0-9a-f]+-[0-9a-z]+$/, 'the attempt\'s own marker, whatever the item says');
          assert.equal(s[8], true);
        }
        assert.notEqual(seen[0][7], seen[1][7], 'each attempt its own marker');
      } finally {
        delete process.env.ENGINE_MONITOR_TEST_INHERITED;
        delete process.env.ENGINE_MONITOR_TEST_SHADOWED;
      }
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
      // A shell prints at once, even on a loaded machine where a second Node could still be
      // starting when the timeout fires and leave no output to check.
      const r = await launcher.launch(1, itemDefinition({ command: 'echo $$; exec sleep 300', shell: true, args: [], timeoutMs: 2000 }), 1).done;
      assert.equal(r.timedOut, true);
      assert.match(r.error ?? '', /timed out after 2000 ms/);
      assert.ok(Number(r.stdoutTail.trim()) > 0, `the output kept: ${r.stdoutTail}`);
      // From its spawn in the helper: the helpers' own start is not the timeout's business.
      assert.ok(r.finishedAt - r.startedAt < 6000, `ended ${r.finishedAt - r.startedAt} ms after its start`);
    });

    it('one helper of two killed under running attempts: its attempts fail with a clear error and their processes are ended, the other helper\'s run on, a replacement starts', async () => {
      launcher = await readyPool();
      const runs = [1, 2, 3, 4].map((id) => launcher!.launch(id, itemDefinition({ args: ['-e', HANG] }), 1));
      await waitFor('every pid', () => runs.every((r) => r.pid !== null));
      const [victim, survivor] = launcher.helperPids;
      const killed = runs.filter((r) => launcher!.helperPidOf(r) === victim);
      const spared = runs.filter((r) => launcher!.helperPidOf(r) === survivor);
      assert.deepEqual([killed.length, spared.length], [2, 2], 'two attempts in each helper');
      process.kill(victim, 'SIGKILL');
      const results = await Promise.all(killed.map((r) => r.done));
      for (const r of results) {
        assert.equal(r.succeeded, false);
        assert.equal(r.error, "launch helper exited unexpectedly (signal SIGKILL); the attempt's processes were ended");
      }
      assert.deepEqual(results.map((r) => r.pid), killed.map((r) => r.pid));
      await waitFor('the orphaned attempts to be ended', () => killed.every((r) => !processAlive(r.pid!)), 3000);
      assert.ok(spared.every((r) => processAlive(r.pid!)), 'the other helper\'s attempts still run');
      assert.deepEqual(launcher.helperPids, [survivor]);

      // The next launch goes to the helper that is ready and starts a replacement for the other.
      const again = launcher.launch(5, itemDefinition({ args: ['-e', 'console.log(process.ppid)'] }), 1);
      const r = await again.done;
      assert.equal(r.succeeded, true);
      assert.equal(Number(r.stdoutTail.trim()), survivor, 'launched by the helper that was ready');
      const pool = await waitFor('a replacement to be ready', () => launcher!.helperPids.length === 2 && launcher!.helperPids);
      assert.ok(pool.includes(survivor) && !pool.includes(victim), `pool ${pool}`);
      for (const s of spared) s.terminate(1000);
      assert.deepEqual((await Promise.all(spared.map((s) => s.done))).map((s) => s.signal), ['SIGTERM', 'SIGTERM'], 'ended by their own helper');
      assert.equal(launcher.mode, 'helper');
    });

    it('terminate() reaches the helper that runs the attempt: one on the second helper, the first helper\'s untouched', async () => {
      launcher = await readyPool();
      const runs = [1, 2].map((id) => launcher!.launch(id, itemDefinition({ args: ['-e', HANG] }), 1));
      await waitFor('both pids', () => runs.every((r) => r.pid !== null));
      const [first, second] = launcher.helperPids;
      const onSecond = runs.find((r) => launcher!.helperPidOf(r) === second)!;
      const onFirst = runs.find((r) => launcher!.helperPidOf(r) === first)!;
      assert.ok(onSecond && onFirst, 'one attempt in each helper');
      onSecond.terminate(2000);
      const r = await onSecond.done;
      assert.equal(r.signal, 'SIGTERM');
      assert.equal(processAlive(onSecond.pid!), false);
      assert.equal(processAlive(onFirst.pid!), true, 'the other attempt runs on');
      onFirst.terminate(2000);
      assert.equal((await onFirst.done).signal, 'SIGTERM');
    });

    // The channel carries what one side says in one turn of its event loop as one packet (the
    // launches of a turn; the started/done reports of a turn, a `started` held back a little to
    // ride with its `done`): these prove nothing is lost, reordered or crossed between attempts.
    it('bursts launched in one turn, with output, one helper killed right after the second: every attempt ends once, with its own result or its helper\'s death', async function () {
      this.timeout(120_000);
      launcher = await readyPool();
      const dir = mkdtempSync(path.join(os.tmpdir(), 'burst-'));
      const gate = path.join(dir, 'gate');
      // Half the attempts print and exit at once (exit code id % 3); the others print, leave their
      // pid, and wait for the gate, so the kill finds them running. (Launches of one turn alternate
      // between the two helpers: ids 1, 2 | 3, 4 | … wait, quick, so each helper gets some of both.)
      const waits = (id: number) => id % 4 < 2;
      const command = (id: number) =>
        waits(id)
          ? `echo out-${id}; echo $$ > "${dir}/${id}"; while [ ! -e "${gate}" ]; do sleep 0.2; done`
          : `echo out-${id}; echo err-${id} >&2; exit ${id % 3}`;
      const launchAll = (ids: number[]) => ids.map((id) => ({ id, run: launcher!.launch(id, itemDefinition({ command: 'sh', args: ['-c', command(id)] }), 1) }));
      const ends = new Map<number, number>();
      const watch = (runs: { id: number; run: RunningAttempt }[]) => runs.map(({ id, run }) => run.done.then((r) => (ends.set(id, (ends.get(id) ?? 0) + 1), r)));
      const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
      try {
        // The first burst: 40 launches in one turn, two packets, one to each helper.
        const first = launchAll(range(1, 40));
        const firstResults = watch(first);
        const waiting = first.filter(({ id }) => waits(id));
        const pidOf = (id: number) => (existsSync(path.join(dir, String(id))) ? Number(readFileSync(path.join(dir, String(id)), 'utf8')) : 0);
        // Forty shells started at once, twenty of them polling the gate: slow on a loaded machine.
        await waitFor('every waiting attempt to run', () => waiting.every(({ id }) => pidOf(id) > 0), 45_000);
        const pids = new Map(waiting.map(({ id }) => [id, pidOf(id)]));
        const [victim, survivor] = launcher.helperPids;
        // The second burst, and in the same turn the kill: its launches to the victim are still in
        // this turn's outbox when it dies.
        const second = launchAll(range(41, 60));
        const secondResults = watch(second);
        const helperOf = new Map([...first, ...second].map(({ id, run }) => [id, launcher!.helperPidOf(run)]));
        process.kill(victim, 'SIGKILL');
        assert.deepEqual(new Set(helperOf.values()), new Set([victim, survivor]), 'both bursts spread over both helpers');

        const died = "launch helper exited unexpectedly (signal SIGKILL); the attempt's processes were ended";
        // The victim's waiting attempts fail with its death, and their processes are ended even if
        // their `started` (the pid) had not reached the engine yet: their markers find them.
        const victimWaiting = waiting.filter(({ id }) => helperOf.get(id) === victim);
        assert.ok(victimWaiting.length > 0, 'the victim had attempts running');
        for (const { id } of victimWaiting) {
          const r = await first[id - 1].run.done;
          assert.equal(r.error, died, `attempt ${id}`);
        }
        await waitFor('the victim\'s waiting attempts to be ended', () => victimWaiting.every(({ id }) => !processAlive(pids.get(id)!)), 5000);
        // The survivor's run on until the gate opens.
        const survivorWaiting = waiting.filter(({ id }) => helperOf.get(id) === survivor);
        assert.ok(survivorWaiting.length > 0 && survivorWaiting.every(({ id }) => processAlive(pids.get(id)!)), 'the survivor\'s waiting attempts still run');
        writeFileSync(gate, '');
        const results = new Map([...first.map(({ id }, i) => [id, firstResults[i]] as const), ...second.map(({ id }, i) => [id, secondResults[i]] as const)]);
        for (const [id, pending] of results) {
          const r = await pending;
          const own = r.error === undefined || r.error === null || !r.error.startsWith('launch helper exited');
          if (helperOf.get(id) === survivor) assert.ok(own, `attempt ${id} on the surviving helper: ${r.error}`);
          if (own) {
            // Its own output and exit code, not another attempt's. (The whole result in the message:
            // one run beside a second suite got an attempt with no output, and nothing else to go on.)
            const seen = `attempt ${id} on the ${helperOf.get(id) === victim ? 'killed' : 'surviving'} helper: ${JSON.stringify({ ...r, stdoutTail: undefined, stderrTail: r.stderrTail })}`;
            assert.equal(r.stdoutTail.trim(), `out-${id}`, seen);
            const code = waits(id) ? 0 : id % 3;
            assert.deepEqual([r.exitCode, r.succeeded], [code, code === 0], seen);
            if (!waits(id)) assert.equal(r.stderrTail.trim(), `err-${id}`, seen);
          } else {
            assert.equal(helperOf.get(id), victim);
            assert.equal(r.error, died, `attempt ${id}`);
          }
        }
        // The second burst's launches to the victim were sent to a dead helper (or never): they fail.
        const lost = second.filter(({ id }) => helperOf.get(id) === victim);
        for (const { id } of lost) assert.equal((await results.get(id)!).error, died, `attempt ${id}`);
        // Once each: a report that came twice, or late, would have been counted here.
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.deepEqual([...ends.keys()].sort((a, b) => a - b), range(1, 60), 'every attempt ended');
        assert.ok([...ends.values()].every((n) => n === 1), 'each attempt ended once');
        assert.ok(launcher.helperSpawnStats().spawns <= 60, 'no attempt was spawned twice');
      } finally {
        writeFileSync(gate, '');
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('terminate() in the same turn as the launch reaches the helper after the launch, and ends only that attempt', async () => {
      launcher = await readyPool();
      const runs = [1, 2, 3, 4].map((id) => launcher!.launch(id, itemDefinition({ command: 'sleep', args: ['30'] }), 1));
      // Before this turn ends, so before either packet is sent: each helper gets a launch, then a terminate.
      runs[0].terminate(2000);
      runs[1].terminate(2000);
      assert.notEqual(launcher.helperPidOf(runs[0]), launcher.helperPidOf(runs[1]), 'one in each helper');
      for (const run of runs.slice(0, 2)) {
        const r = await run.done;
        assert.equal(r.signal, 'SIGTERM', 'it was launched, then terminated');
        assert.ok(r.pid !== null && r.pid > 0);
        assert.equal(processAlive(r.pid), false);
      }
      const others = await waitFor('the other two to run', () => runs.slice(2).every((r) => r.pid !== null) && runs.slice(2).map((r) => r.pid!));
      assert.ok(others.every((p) => processAlive(p)), 'the attempts launched beside them run on');
      for (const run of runs.slice(2)) run.terminate(1000);
      assert.deepEqual((await Promise.all(runs.slice(2).map((r) => r.done))).map((r) => r.signal), ['SIGTERM', 'SIGTERM']);
    });

    it('close() with both helpers busy ends every attempt in both and both helpers', async () => {
      launcher = await readyPool();
      const pool = launcher.helperPids;
      // Two deaf to SIGTERM (only the SIGKILL after the grace ends them), each leaving a file once it is.
      const deafFile = (id: number) => path.join(os.tmpdir(), `deaf-${process.pid}-${Date.now()}-${id}`);
      const files = [1, 3].map(deafFile);
      const deaf = (file: string) => `process.on('SIGTERM', () => {}); require('fs').writeFileSync(${JSON.stringify(file)}, ''); ${HANG}`;
      const runs = [1, 2, 3, 4].map((id) => launcher!.launch(id, itemDefinition({ args: ['-e', id % 2 ? deaf(files[(id - 1) / 2]) : HANG] }), 1));
      await waitFor('every attempt to run, the deaf ones deaf', () => runs.every((r) => r.pid !== null) && files.every((f) => existsSync(f)));
      for (const f of files) rmSync(f);
      assert.deepEqual(new Set(runs.map((r) => launcher!.helperPidOf(r))), new Set(pool), 'both helpers busy');
      const pids = runs.map((r) => r.pid!);
      const l = launcher;
      launcher = undefined;
      await l.close(500);
      assert.ok(pool.every((p) => !processAlive(p)), 'both helpers exited before close() resolved');
      const results = await Promise.all(runs.map((r) => r.done));
      assert.ok(results.every((r) => !r.succeeded), 'every attempt ended');
      await waitFor('every attempt\'s process to be ended', () => pids.every((p) => !processAlive(p)), 3000);
      assert.equal(l.launch(5, itemDefinition({}), 1).pid, null, 'nothing launches after close');
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
        process.kill(launcher.helperPidOf(run)!, 'SIGKILL');
        assert.match((await run.done).error ?? '', /launch helper exited unexpectedly/);
        await waitFor('the escapees to be ended', () => escapees(tag).length === 0, 5000);
      });
    });

    it('a stopped helper (SIGSTOP) is noticed by its silence, killed and replaced; its attempts fail and their processes are ended, the other helper\'s run on', async function () {
      this.timeout(30_000);
      const warnings: string[] = [];
      launcher = await readyPool({ warn: (m) => warnings.push(m) });
      // Its 1 s timeout is the stopped helper's to enforce.
      const run = launcher.launch(1, itemDefinition({ args: ['-e', HANG], timeoutMs: 1000 }), 1);
      const other = launcher.launch(2, itemDefinition({ args: ['-e', HANG] }), 1);
      const pid = await waitFor('the pid', () => run.pid ?? undefined);
      const otherPid = await waitFor('the other pid', () => other.pid ?? undefined);
      const helper = launcher.helperPidOf(run)!;
      const otherHelper = launcher.helperPidOf(other)!;
      assert.notEqual(helper, otherHelper, 'one attempt in each helper');
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
      assert.ok(processAlive(otherPid), 'the other helper\'s attempt runs on');
      assert.ok(processAlive(otherHelper), 'and so does the other helper');
      const again = launcher.launch(3, itemDefinition({ args: ['-e', 'console.log(process.ppid)'] }), 1);
      assert.equal((await again.done).succeeded, true);
      const pool = await waitFor('a replacement to be ready', () => launcher!.helperPids.length === 2 && launcher!.helperPids);
      assert.ok(pool.includes(otherHelper) && !pool.includes(helper), `pool ${pool}`);
      other.terminate(1000);
      assert.equal((await other.done).signal, 'SIGTERM');
      assert.equal(warnings.length, 1, 'one warning, for the stopped helper');
    });

    it('restarts helpers that keep dying later and later', async () => {
      launcher = new AttemptLauncher({ entry: locateLaunchHelper(), helpers: 2 });
      const gaps: number[] = [];
      for (let i = 0; i < 4; i++) {
        const t = Date.now();
        const run = launcher.launch(i, itemDefinition({ args: ['-e', HANG] }), 1);
        await waitFor('the attempt to start', () => run.pid ?? undefined);
        gaps.push(Date.now() - t);
        // Both: with one left, the launch would simply go to the other.
        const pool = await waitFor('both helpers to be ready', () => launcher!.helperPids.length === 2 && launcher!.helperPids);
        for (const helper of pool) process.kill(helper, 'SIGKILL');
        assert.match((await run.done).error ?? '', /launch helper exited unexpectedly/);
        await waitFor('both helpers to be gone', () => pool.every((p) => !processAlive(p)) && launcher!.helperPid === undefined);
      }
      // gaps[0] is the first helpers' start. After one death a new helper is forked at once;
      // after a second quick death, 500 ms later; after a third, 1 s.
      assert.ok(gaps[2] >= 450, `third helpers after ${gaps[2]} ms`);
      assert.ok(gaps[3] >= 950, `fourth helpers after ${gaps[3]} ms`);
    });

    it('falls back to in-process launching when the helper file is missing, and says so once', async () => {
      const warnings: string[] = [];
      launcher = new AttemptLauncher({ entry: { file: path.join(os.tmpdir(), 'no-such-launch-helper.js'), execArgv: [] }, helpers: 2, warn: (m) => warnings.push(m) });
      const results = await Promise.all([1, 2, 3].map((id) => launcher!.launch(id, itemDefinition({ args: ['-e', 'console.log(process.ppid)'] }), 1).done));
      assert.ok(results.every((r) => r.succeeded && Number(r.stdoutTail.trim()) === process.pid), 'children of this process');
      assert.equal(launcher.mode, 'in-process');
      assert.equal(warnings.length, 1);
      assert.match(warnings[0], /launch helper unavailable: .*no-such-launch-helper\.js is missing; launching in the engine's own process/);
    });

    it('a helper that hangs before it is ready is killed after the ready timeout and counts as a failed start; the next helper of the pool starts and runs the launch', async function () {
      this.timeout(40_000);
      const real = locateLaunchHelper()!;
      // The first helper forked hangs before its ready message (and says its pid); the others are the real helper.
      const marker = path.join(os.tmpdir(), `hung-launch-helper-${process.pid}.pid`);
      const entry = path.join(os.tmpdir(), `hung-launch-helper-${process.pid}.js`);
      rmSync(marker, { force: true });
      writeFileSync(
        entry,
        `try { require('node:fs').writeFileSync(${JSON.stringify(marker)}, String(process.pid), { flag: 'wx' }); } catch { require(${JSON.stringify(real.file)}); return; }\nsetInterval(() => {}, 1000);`,
      );
      const warnings: string[] = [];
      launcher = new AttemptLauncher({ entry: { file: entry, execArgv: real.execArgv }, helpers: 2, warn: (m) => warnings.push(m) });
      let hung: number | undefined;
      try {
        const run = launcher.launch(1, itemDefinition({ args: ['-e', 'console.log(process.ppid)'] }), 1);
        hung = await waitFor('the first helper to hang', () => (existsSync(marker) ? Number(readFileSync(marker, 'utf8')) || undefined : undefined));
        const r = await Promise.race([run.done, new Promise<undefined>((resolve) => setTimeout(resolve, 25_000))]);
        assert.ok(r, 'the launch ran although the first helper never became ready');
        assert.equal(r.succeeded, true, r.error ?? undefined);
        const ranIn = Number(r.stdoutTail.trim());
        assert.notEqual(ranIn, process.pid, 'in a helper, not in-process');
        assert.notEqual(ranIn, hung, 'not in the hung helper');
        assert.equal(launcher.mode, 'helper');
        await waitFor('the hung helper to be killed', () => !processAlive(hung!), 3000);
        // Its place in the pool starts again after its backoff, now with a helper that gets ready.
        const pool = await waitFor('two helpers ready', () => launcher!.helperPids.length === 2 && launcher!.helperPids, 10_000);
        assert.ok(!pool.includes(hung), `pool ${pool}`);
        assert.deepEqual(warnings, [], 'one failed start is no reason to warn');
      } finally {
        if (hung !== undefined && processAlive(hung)) process.kill(hung, 'SIGKILL');
        rmSync(marker, { force: true });
        rmSync(entry, { force: true });
      }
    });

    it('falls back to in-process launching when the helper crashes before it is ready', async function () {
      this.timeout(20_000);
      const dir = mkdtempSync(path.join(os.tmpdir(), 'broken-launch-helper-'));
      const broken = path.join(dir, 'helper.js');
      writeFileSync(broken, 'process.exit(3)');
      try {
        const warnings: string[] = [];
        // Neither helper of the pool can start: one warning, for the fallback.
        launcher = new AttemptLauncher({ entry: { file: broken, execArgv: LAUNCH_HELPER_NODE_OPTIONS }, helpers: 2, warn: (m) => warnings.push(m) });
        const r = await launcher.launch(1, itemDefinition({ args: ['-e', 'console.log(process.ppid)'] }), 1).done;
        assert.equal(r.succeeded, true, 'the launch waited for a working way to run, it did not fail');
        assert.equal(Number(r.stdoutTail.trim()), process.pid);
        assert.equal(warnings.length, 1);
        assert.match(warnings[0], /exited before it was ready \(exit code 3\)/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
