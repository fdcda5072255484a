// Ending a process tree on Windows. Windows has no process groups and no signals: Node's
// child.kill() ends only the process it spawned (TerminateProcess), so what that process started
// (the command `shell: true` runs through cmd.exe, and whatever a command starts in turn) would run
// on. Windows' own tool for a tree is `taskkill /T /F /PID <pid>`, which VS Code also uses: it
// finds the children by their parent's pid, so it is called while the attempt's first process
// still runs (when a timeout, a cancel or the shutdown ends the attempt).
//
// Where taskkill cannot (Wine before 9 knows no /T; the first process exited in the meantime and
// taskkill no longer finds it), the tree is read from WMIC (every process with its parent's pid)
// and each process is ended by pid. Both tools are found by their full path under SystemRoot, never
// on PATH, where an item's working folder could hold a program of the same name.
//
// Bundled into the launch helper: node built-ins only.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The longest each tool may take; a wedged one does not hold the attempt's end. */
const TOOL_TIMEOUT_MS = 15_000;
/** Rounds of "read the tree, end it" in the fallback: a process started during one is found by the next. */
const FALLBACK_ROUNDS = 3;

const trees = new Set<Promise<void>>();

function system32(...parts: string[]): string {
  return path.win32.join(process.env.SystemRoot ?? process.env.windir ?? 'C:\\Windows', 'System32', ...parts);
}

/**
 * Runs a tool to its exit; `ok` when it exited 0, `output` what it wrote to stdout. The output goes
 * through a file, not a pipe: processes the tool starts (WMIC wakes Windows' WMI services, which
 * inherit its handles) can hold a pipe open long after the tool has exited.
 */
function run(file: string, args: string[]): Promise<{ ok: boolean; output: Buffer }> {
  const outFile = path.join(os.tmpdir(), `engine-monitor-tree-${process.pid}-${randomBytes(6).toString('hex')}.txt`);
  return new Promise<{ ok: boolean; output: Buffer }>((resolve) => {
    let fd: number | undefined;
    let child: ChildProcess;
    try {
      fd = openSync(outFile, 'w');
      child = spawn(file, args, { stdio: ['ignore', fd, 'ignore'], windowsHide: true });
    } catch {
      resolve({ ok: false, output: Buffer.alloc(0) });
      return;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    const timer = setTimeout(() => child.kill(), TOOL_TIMEOUT_MS);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      let output = Buffer.alloc(0);
      try {
        output = readFileSync(outFile);
      } catch {
        // nothing written
      }
      resolve({ ok, output });
    };
    child.once('error', () => done(false));
    child.once('exit', (code) => done(code === 0));
  }).finally(() => rmSync(outFile, { force: true }));
}

/**
 * Ends the process `pid` and every process below it. Resolves once done (or given up on); never
 * rejects: a tree that is already gone is not an error.
 */
export function endWindowsTree(pid: number): Promise<void> {
  const ending = (async () => {
    if ((await run(system32('taskkill.exe'), ['/T', '/F', '/PID', String(pid)])).ok) return;
    const ended = new Set<number>();
    let listed = false;
    for (let round = 0; round < FALLBACK_ROUNDS; round++) {
      const parents = await processParents();
      if (parents === null) break;
      listed = true;
      // Children keep their parent's pid after it is gone, so the walk passes through ended ones.
      const tree = [pid, ...descendants(pid, parents)].filter((p) => parents.has(p) && !ended.has(p));
      if (tree.length === 0) break;
      for (const p of tree) {
        ended.add(p);
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // gone already
        }
      }
    }
    // Last resort when neither tool ran: the first process at least.
    if (!listed) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  })();
  trees.add(ending);
  void ending.finally(() => trees.delete(ending));
  return ending;
}

/** Resolves once every tree being ended now is ended: the engine waits for it before it exits. */
export function windowsTreesEnded(): Promise<void> {
  return Promise.all([...trees]).then(() => undefined);
}

/** Every process's parent, by pid, from WMIC; null when it cannot be read. */
async function processParents(): Promise<Map<number, number> | null> {
  const { ok, output } = await run(system32('wbem', 'WMIC.exe'), ['process', 'get', 'ParentProcessId,ProcessId']);
  return ok ? parseProcessTable(output) : null;
}

/**
 * WMIC's table: a header naming the two columns, then one row of two numbers a process. Windows
 * spells the header "ParentProcessId  ProcessId", Wine "ParentProcessIDProcessID" (no space, its
 * own case), and the column order is WMIC's, not the order asked for: the header says which is
 * which. It writes UTF-16 when its output is not a console.
 */
export function parseProcessTable(output: Buffer): Map<number, number> | null {
  const utf16 = output.length >= 2 && (output[1] === 0 || (output[0] === 0xff && output[1] === 0xfe));
  const text = output.toString(utf16 ? 'utf16le' : 'utf8').replace(/^\uFEFF/, '');
  const lines = text.split(/\r*\n/).map((l) => l.trim()).filter((l) => l !== '');
  const header = (lines.shift() ?? '').toLowerCase();
  const parentAt = header.indexOf('parentprocessid');
  // The other column: "processid" where it is not the end of "parentprocessid".
  const pidAt = header.replace('parentprocessid', ' '.repeat('parentprocessid'.length)).indexOf('processid');
  if (parentAt < 0 || pidAt < 0) return null;
  const parentFirst = parentAt < pidAt;
  const parents = new Map<number, number>();
  for (const line of lines) {
    const cells = line.split(/\s+/);
    if (cells.length !== 2 || !cells.every((c) => /^\d+$/.test(c))) continue;
    const [a, b] = cells.map(Number);
    parents.set(parentFirst ? b : a, parentFirst ? a : b);
  }
  return parents;
}

/** The pids below `root`, parents before their children. */
export function descendants(root: number, parents: Map<number, number>): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, parent] of parents) {
    if (pid === parent) continue; // the System Idle Process is its own parent
    children.set(parent, [...(children.get(parent) ?? []), pid]);
  }
  const found: number[] = [];
  const seen = new Set([root]);
  for (let i = -1; i < found.length; i++) {
    for (const child of children.get(i < 0 ? root : found[i]) ?? []) {
      if (!seen.has(child)) {
        seen.add(child);
        found.push(child);
      }
    }
  }
  return found;
}
