// Items whose processes leave their attempt's process group the ways daemons do, for the tests of
// the marker sweep (src/core/leftoverProcesses.ts). Each escapee is a `sleep 300.<tag><n>`, so a
// test finds its own by command line and never counts another run's.
import { execFileSync } from 'node:child_process';

let counter = 0;

/**
 * Digits no other item of this or another test run uses (they become a fraction of a second).
 * Fixed width, so that no tag is the beginning of another.
 */
export function newTag(): string {
  const pad = (n: number, width: number) => String(n).padStart(width, '0');
  return `${pad(process.pid, 7)}${pad(Date.now() % 1e8, 8)}${pad(++counter % 1000, 3)}`;
}

/** Whether `program` is on PATH. */
function installed(program: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A command that moves itself into a process group of its own (setpgid), then becomes `sleep 300.<tag>3`. */
function setpgrpThenSleep(tag: string): string {
  if (installed('perl')) return `perl -e 'setpgrp(0, 0); exec "sleep", "300.${tag}3"'`;
  if (installed('python3')) return `python3 -c 'import os; os.setpgrp(); os.execvp("sleep", ["sleep", "300.${tag}3"])'`;
  // Node's detached spawn goes further (a session of its own): still out of the group.
  return `"${process.execPath}" -e 'require("child_process").spawn("sleep", ["300.${tag}3"], { detached: true, stdio: "ignore" }).unref()'`;
}

/**
 * A shell command line that starts three processes outside its process group (`setsid`, a double
 * fork through `setsid`, setpgid) and returns only once all three have left the group (each is
 * `sleep` by then, which it becomes after leaving), so nothing in a test depends on timing.
 * `then`: what the command does afterwards (by default it exits 0).
 */
export function escapingCommand(tag: string, then = 'exit 0'): string {
  return [
    `setsid sleep 300.${tag}1 &`,
    `(setsid sleep 300.${tag}2 &) &`,
    `${setpgrpThenSleep(tag)} &`,
    `for n in 1 2 3; do until pgrep -x -f "sleep 300.${tag}$n" >/dev/null; do sleep 0.02; done; done`,
    then,
  ].join('\n');
}

/** A shell command that waits until `file` exists: a test's signal that it has seen what it needed. */
export function untilFileExists(file: string): string {
  return `until [ -e '${file}' ]; do sleep 0.02; done`;
}

/** Pids of the escapees started with `tag` that still run (zombies, which run nothing, excluded). */
export function escapees(tag: string): number[] {
  const out = execFileSync('ps', ['-e', '-o', 'pid=,stat=,args=']).toString();
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter(([, stat, cmd, arg]) => stat !== undefined && !stat.startsWith('Z') && cmd === 'sleep' && arg?.startsWith(`300.${tag}`))
    .map(([pid]) => Number(pid));
}

/** Ends what a failed test left behind (a run of the tests must not leave sleeps for 5 minutes). */
export function killEscapees(tag: string): void {
  for (const pid of escapees(tag)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}
