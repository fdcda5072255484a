import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchAttempt, OUTPUT_TAIL_BYTES } from '../../src/core/launching/attemptProcess';
import { isAlive } from '../../src/shared/processAlive';
import { escapees, escapingCommand, killEscapees, newTag, untilFileExists } from './support/escapees';
import { itemDefinition, waitFor } from './support/workspace';

describe('launcher: one attempt as a real process', () => {
  it('succeeds on exit code 0 and keeps the output tail', async () => {
    const r = await launchAttempt(itemDefinition({ args: ['-e', 'console.log("out"); console.error("err")'] }), 1).done;
    assert.equal(r.succeeded, true);
    assert.equal(r.exitCode, 0);
    assert.equal(r.signal, null);
    assert.equal(r.error, null);
    assert.equal(r.stdoutTail.trim(), 'out');
    assert.equal(r.stderrTail.trim(), 'err');
    assert.ok(r.finishedAt >= r.startedAt);
  });

  it('fails on a non-zero exit code', async () => {
    const r = await launchAttempt(itemDefinition({ args: ['-e', 'process.exit(7)'] }), 1).done;
    assert.equal(r.succeeded, false);
    assert.equal(r.exitCode, 7);
  });

  it('fails when the process is killed by a signal', async () => {
    const r = await launchAttempt(itemDefinition({ args: ['-e', 'process.kill(process.pid, "SIGKILL")'] }), 1).done;
    assert.equal(r.succeeded, false);
    assert.equal(r.signal, 'SIGKILL');
    assert.equal(r.exitCode, null);
  });

  it('fails with a clear error when the command does not exist (ENOENT)', async () => {
    const r = await launchAttempt(itemDefinition({ command: 'no-such-command-engine-monitor', args: [] }), 1).done;
    assert.equal(r.succeeded, false);
    assert.match(r.error ?? '', /ENOENT/);
    assert.match(r.error ?? '', /PATH/);
  });

  describe('the working folder, checked when the attempt starts', () => {
    let root: string;
    beforeEach(() => (root = mkdtempSync(path.join(os.tmpdir(), 'launcher-cwd-'))));
    afterEach(() => rmSync(root, { recursive: true, force: true }));

    it('names a missing cwd, not the command (Node reports both as ENOENT of the command)', async () => {
      const workspace = path.join(root, 'ws');
      mkdirSync(workspace);
      const r = await launchAttempt(itemDefinition({ command: 'pwd', args: [], cwd: path.join(workspace, 'build', 'out') }), 1, { workspaceFolders: [workspace] }).done;
      assert.equal(r.succeeded, false);
      assert.equal(r.pid, null, 'nothing was spawned');
      assert.equal(r.error, 'cwd "build/out" does not exist (create it, or fix "cwd" in the queue file)');
      // A command that is really missing, in a folder that exists, keeps its own message.
      const missing = await launchAttempt(itemDefinition({ command: 'no-such-command-engine-monitor', args: [], cwd: workspace }), 1, { workspaceFolders: [workspace] }).done;
      assert.match(missing.error ?? '', /^spawn no-such-command-engine-monitor ENOENT \(is "no-such-command-engine-monitor" installed and on PATH\?\)$/);
    });

    it('names a cwd that is a file, and a missing cwd without workspace folders by its full path', async () => {
      writeFileSync(path.join(root, 'file'), '');
      const file = await launchAttempt(itemDefinition({ command: 'pwd', args: [], cwd: path.join(root, 'file') }), 1, { workspaceFolders: [root] }).done;
      assert.equal(file.error, 'cwd "file" is not a folder (make it one, or fix "cwd" in the queue file)');
      const gone = path.join(root, 'gone');
      const r = await launchAttempt(itemDefinition({ command: 'pwd', args: [], cwd: gone }), 1).done;
      assert.equal(r.error, `cwd "${gone}" does not exist (create it, or fix "cwd" in the queue file)`);
    });

    it('fails a cwd that leads outside the workspace through a link, by its real path, and runs nothing', async () => {
      const workspace = path.join(root, 'ws');
      const outside = path.join(root, 'outside');
      mkdirSync(path.join(workspace, 'real'), { recursive: true });
      mkdirSync(outside);
      symlinkSync(outside, path.join(workspace, 'lnk'));
      symlinkSync(path.join(workspace, 'real'), path.join(workspace, 'inner'));
      const item = (cwd: string) => itemDefinition({ command: 'touch', args: ['ran'], cwd: path.join(workspace, cwd) });
      const out = await launchAttempt(item('lnk'), 1, { workspaceFolders: [workspace] }).done;
      assert.equal(out.succeeded, false);
      assert.equal(out.error, `cwd "lnk" leads outside the workspace folder (to ${realpathSync(outside)}); use a real folder inside it, or fix "cwd" in the queue file`);
      assert.equal(existsSync(path.join(outside, 'ran')), false, 'the command did not run there');
      // A link that stays inside is fine.
      const inner = await launchAttempt(item('inner'), 1, { workspaceFolders: [workspace] }).done;
      assert.equal(inner.succeeded, true, inner.error ?? inner.stderrTail);
      assert.equal(existsSync(path.join(workspace, 'real', 'ran')), true);
    });
  });

  it('passes the item env and the attempt number to the process', async () => {
    const r = await launchAttempt(
      itemDefinition({ args: ['-e', 'console.log(process.env.GREETING, process.env.ENGINE_ATTEMPT, process.env.ENGINE_ITEM_ID)'], env: { GREETING: 'hi' } }),
      2,
    ).done;
    assert.equal(r.stdoutTail.trim(), 'hi 2 x');
  });

  it('runs a shell command line when shell is true', async () => {
    const r = await launchAttempt(itemDefinition({ command: 'echo one && echo two', shell: true, args: [] }), 1).done;
    assert.equal(r.succeeded, true);
    assert.deepEqual(r.stdoutTail.trim().split(/\r?\n/), ['one', 'two']);
  });

  it('finishes as soon as the process exits when its output closed earlier', async () => {
    // Output closed long before the exit: the attempt must not then wait for output still in
    // flight (a quick command often closes its pipes before 'exit' is emitted). That wait is
    // stretched to 15 s here, so a wrong wait cannot hide in a loaded machine's scheduling delay.
    const stamp = path.join(os.tmpdir(), `exit-stamp-${process.pid}`);
    const code = `const fs = require('fs'); fs.closeSync(1); fs.closeSync(2);
      setTimeout(() => { fs.writeFileSync(${JSON.stringify(stamp)}, String(Date.now())); process.exit(0); }, 300);`;
    const r = await launchAttempt(itemDefinition({ args: ['-e', code] }), 1, { exitDrain: { quietMs: 15_000, maxMs: 15_000 } }).done;
    const exitedAt = Number(readFileSync(stamp, 'utf8'));
    rmSync(stamp, { force: true });
    assert.equal(r.succeeded, true);
    assert.ok(r.finishedAt - exitedAt < 10_000, `finished ${r.finishedAt - exitedAt} ms after the exit: it waited for output from closed pipes`);
  });

  it('keeps only a bounded tail of a process that prints megabytes', async () => {
    const r = await launchAttempt(itemDefinition({ args: ['-e', 'const s = "x".repeat(1023) + "\\n"; for (let i = 0; i < 4096; i++) process.stdout.write(s); process.stdout.write("END\\n")'] }), 1).done;
    assert.equal(r.succeeded, true);
    assert.ok(Buffer.byteLength(r.stdoutTail) <= OUTPUT_TAIL_BYTES + 3, `tail is ${r.stdoutTail.length} bytes`);
    assert.ok(r.stdoutTail.startsWith('…'));
    assert.ok(r.stdoutTail.trimEnd().endsWith('END'));
  });

  it('on timeout kills the whole process tree, grandchildren included', async function () {
    // A shell starts a grandchild that would outlive it, prints its pid, then waits. A shell and
    // sleep start in a few milliseconds even on a loaded machine, where a second Node could still
    // be starting when the timeout fires and leave nothing to check.
    const timeoutMs = 2000;
    const started = Date.now();
    const r = await launchAttempt(itemDefinition({ command: 'sleep 301 & echo $!; sleep 302', shell: true, args: [], timeoutMs }), 1).done;
    assert.equal(r.succeeded, false);
    assert.equal(r.timedOut, true);
    assert.match(r.error ?? '', /timed out after 2000 ms/);
    assert.ok(Date.now() - started < timeoutMs + 4000, 'SIGTERM ended it well before the SIGKILL grace');
    const grandchild = Number(r.stdoutTail.trim());
    assert.ok(grandchild > 0, `grandchild pid printed: ${r.stdoutTail}`);
    await waitFor('the grandchild to die', () => !isAlive(grandchild), 3000);
  });

  it('escalates to SIGKILL when the process ignores SIGTERM', async function () {
    this.timeout(15_000);
    const code = `process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000);`;
    const started = Date.now();
    // The timeout leaves node time to start and install its handler, even on a loaded machine.
    const r = await launchAttempt(itemDefinition({ args: ['-e', code], timeoutMs: 2000 }), 1).done;
    assert.equal(r.timedOut, true);
    assert.equal(r.stdoutTail.trim(), 'ready');
    assert.equal(r.signal, 'SIGKILL');
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 7000 && elapsed < 11000, `killed after the 5 s grace (${elapsed} ms)`);
  });

  it('ends background processes the attempt leaves behind when it exits', async () => {
    const code = `
      const { spawn } = require('child_process');
      const g = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore', detached: false });
      g.unref();
      console.log(g.pid);
      process.exit(0);`;
    const r = await launchAttempt(itemDefinition({ args: ['-e', code] }), 1).done;
    assert.equal(r.succeeded, true);
    const grandchild = Number(r.stdoutTail.trim());
    await waitFor('the leftover grandchild to be ended', () => !isAlive(grandchild), 3000);
    // And nothing of ours is left in the process table.
    const ps = execFileSync('ps', ['-e', '-o', 'pid=']).toString();
    assert.ok(!ps.split('\n').map(Number).includes(grandchild));
  });

  describe('processes that leave the attempt\'s process group', function () {
    // Linux only: elsewhere only the process group is ended (README, How items run).
    before(function () {
      if (process.platform !== 'linux') this.skip();
    });
    let tag = '';
    beforeEach(() => (tag = newTag()));
    afterEach(() => killEscapees(tag));

    it('ends them once the attempt has ended: setsid, a double fork through setsid, setpgrp', async () => {
      const go = path.join(os.tmpdir(), `escapees-go-${tag}`);
      const run = launchAttempt(itemDefinition({ command: escapingCommand(tag, untilFileExists(go)), shell: true, args: [] }), 1);
      try {
        await waitFor('the escapees to leave the group', () => escapees(tag).length === 3);
        writeFileSync(go, '');
        const r = await run.done;
        assert.equal(r.succeeded, true, r.stderrTail);
        // The sweep runs at most once a second; sleep ends on the SIGTERM.
        await waitFor('the escapees to be ended', () => escapees(tag).length === 0, 5000);
      } finally {
        rmSync(go, { force: true });
      }
    });

    it('SIGKILLs one deaf to SIGTERM, the grace after its SIGTERM', async function () {
      this.timeout(30_000);
      // SIG_IGN survives exec: the sleep ignores SIGTERM.
      const command = `setsid sh -c "trap '' TERM; exec sleep 300.${tag}1" &
        until pgrep -x -f "sleep 300.${tag}1" >/dev/null; do sleep 0.02; done`;
      const r = await launchAttempt(itemDefinition({ command, shell: true, args: [] }), 1).done;
      assert.equal(r.succeeded, true, r.stderrTail);
      const endedAt = Date.now();
      assert.equal(escapees(tag).length, 1, 'it was out of the group and running when the attempt ended');
      await waitFor('the deaf escapee to be killed', () => escapees(tag).length === 0, 15_000);
      // Its SIGTERM came within a second of the end and did nothing; the SIGKILL comes 5 s after it.
      assert.ok(Date.now() - endedAt >= 4900, `ended ${Date.now() - endedAt} ms after the attempt: by SIGKILL after the grace`);
    });
  });
});
