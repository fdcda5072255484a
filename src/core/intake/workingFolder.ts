// An attempt's working folder, checked just before its spawn. The scanner judged `cwd` when the
// item was ingested, but the folder may not have existed then, or a link on its way may have been
// made or changed since: what counts is where it leads when the process starts. Node reports a
// missing working folder as ENOENT of the command ("spawn pwd ENOENT"), which sends people looking
// for the wrong thing, so a missing folder is named here first.
//
// Synchronous on purpose: it runs right before spawn() (which blocks the thread anyway) and costs
// a stat and two realpath calls. Bundled into the launch helper: node built-ins only.
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';

/** True when `candidate` is `root` or below it, by spelling (callers resolve links first where it matters). */
export function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  // `..foo` is a folder inside root; only `..` itself or `../…` leaves it.
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/**
 * Why the attempt cannot start in `cwd`, or null when it can. With `workspaceFolders`, `cwd`
 * must also lead, by its real path, into the real path of the workspace folder it is spelled
 * under (every item's `cwd` is, once ingested).
 */
export function workingFolderProblem(cwd: string, workspaceFolders?: readonly string[]): string | null {
  // The innermost folder holding it, when workspace folders nest.
  const root = workspaceFolders?.filter((w) => isInside(w, cwd)).sort((a, b) => b.length - a.length)[0];
  const shown = root === undefined ? cwd : path.relative(root, cwd).split(path.sep).join('/') || '.';
  let isFolder: boolean;
  try {
    isFolder = statSync(cwd).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return `cwd "${shown}" does not exist (create it, or fix "cwd" in the queue file)`;
    return `cwd "${shown}" cannot be used (${code ?? (err as Error).message}); check its permissions, or fix "cwd" in the queue file`;
  }
  if (!isFolder) return `cwd "${shown}" is not a folder (make it one, or fix "cwd" in the queue file)`;
  if (workspaceFolders === undefined) return null;
  if (root === undefined) {
    return `cwd "${cwd}" is outside every workspace folder of this engine (${workspaceFolders.join(', ')}); fix "cwd" in the queue file`;
  }
  const realRoot = realOr(root);
  const real = realOr(cwd);
  if (!isInside(realRoot, real)) {
    return `cwd "${shown}" leads outside the workspace folder (to ${real}); use a real folder inside it, or fix "cwd" in the queue file`;
  }
  return null;
}

function realOr(folder: string): string {
  try {
    return realpathSync.native(folder);
  } catch {
    return folder;
  }
}
