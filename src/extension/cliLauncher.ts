// The `engine-monitor` command line for people who installed the .vsix: the extension ships
// dist/cli.js but no program on PATH. At every activation it writes a small launcher into a `bin`
// folder of its global storage (rewritten each time, so it always runs the installed version's
// cli.js with the Node that runs the extension host), and the terminal environment puts that folder
// first on PATH in the integrated terminals. For the user's own shell, `installCliLauncher` copies
// a launcher that calls this one into a folder the user confirms. No `vscode` import: plain Node
// tests run these launchers through a real shell.
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { quotePosix } from './shellQuote';

export const CLI_NAME = 'engine-monitor';
/** A line every launcher we write carries, so we never overwrite a file that is someone else's. */
export const LAUNCHER_MARK = 'Written by the Engine Monitor extension';

/** The launcher's file name on this platform (a .cmd on Windows, where the shell finds it by PATHEXT). */
export function launcherName(platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? `${CLI_NAME}.cmd` : CLI_NAME;
}

/**
 * The text of a launcher that runs `cliPath` with `nodePath`. In Electron builds of VS Code the
 * extension host's executable is Electron, which ELECTRON_RUN_AS_NODE makes a plain Node; set only
 * for that one process, so nothing the client starts inherits it.
 */
export function launcherText(nodePath: string, cliPath: string, platform: NodeJS.Platform = process.platform): string {
  if (platform === 'win32') {
    return `@echo off\r\nrem ${LAUNCHER_MARK}: its command-line client.\r\nsetlocal\r\nset ELECTRON_RUN_AS_NODE=1\r\n"${nodePath}" "${cliPath}" %*\r\n`;
  }
  return `#!/bin/sh\n# ${LAUNCHER_MARK}: its command-line client.\nELECTRON_RUN_AS_NODE=1 exec ${quotePosix(nodePath)} ${quotePosix(cliPath)} "$@"\n`;
}

/** A launcher for the user's shell that runs the one in `binDir` (kept current by every activation). */
export function forwardingLauncherText(target: string, platform: NodeJS.Platform = process.platform): string {
  if (platform === 'win32') return `@echo off\r\nrem ${LAUNCHER_MARK}: it runs the launcher it keeps current.\r\n"${target}" %*\r\n`;
  return `#!/bin/sh\n# ${LAUNCHER_MARK}: it runs the launcher it keeps current.\nexec ${quotePosix(target)} "$@"\n`;
}

/** Writes `text` to `file` whole (a rename), executable. */
export function writeLauncher(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o755 });
  chmodSync(tmp, 0o755);
  renameSync(tmp, file);
}

/** Writes the launcher into `binDir` and returns its path. */
export function writeTerminalLauncher(binDir: string, cliPath: string, nodePath = process.execPath): string {
  const file = path.join(binDir, launcherName());
  writeLauncher(file, launcherText(nodePath, cliPath));
  return file;
}

/** Whether `file` is missing or a launcher we wrote: only then may it be (over)written without asking. */
export function isOursOrMissing(file: string): boolean {
  try {
    return readFileSync(file, 'utf8').includes(LAUNCHER_MARK);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** Whether `dir` is one of the folders of a PATH value. */
export function isOnPath(dir: string, pathValue = process.env.PATH ?? '', platform: NodeJS.Platform = process.platform): boolean {
  const norm = (d: string) => {
    const p = path.resolve(d).replace(/[\\/]+$/, '');
    return platform === 'win32' ? p.toLowerCase() : p;
  };
  const wanted = norm(dir);
  return pathValue.split(platform === 'win32' ? ';' : ':').some((d) => d !== '' && norm(d) === wanted);
}
