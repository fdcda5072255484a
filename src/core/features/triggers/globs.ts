// The globs of an item's `watch.paths`: checked when the item is read, turned into one regular
// expression each, and split at their first wildcard so only the folders that can hold a match
// are watched. The syntax is the common one (VS Code's files.exclude, .gitignore, tsconfig):
// `*` within a name, `**` across folders, `?`, `{a,b}`, `[abc]`. Written here rather than taken
// from a package: the engine's bundle has no glob library, and this subset is a page long.
import path from 'node:path';
import { isInside } from '../../intake/workingFolder';

const WILD = /[*?[{]/;

/** A glob made absolute against the item's cwd: the folder to watch and the tests for what changed. */
export interface WatchGlob {
  /** The glob as the item wrote it. */
  glob: string;
  /** The deepest folder without a wildcard, absolute. */
  base: string;
  /** Whether a changed path (absolute) is one the glob names, or lies inside a folder it names. */
  test(absPath: string): boolean;
  /** Whether a folder under `base` (absolute) can hold a match, so it is worth watching. */
  descend(absDir: string): boolean;
}

/** The segments of `glob` with `/` separators, `.` removed. */
function segments(glob: string): string[] {
  return glob.replace(/\\/g, '/').split('/').filter((s) => s !== '' && s !== '.');
}

/** Why `glob` is not a path the item may watch from `cwd`, or undefined. */
export function watchGlobProblem(glob: string, cwd: string, workspaceFolder: string): string | undefined {
  if (path.isAbsolute(glob) || /^[A-Za-z]:/.test(glob)) return `"watch.paths" entry "${glob}" is absolute; write it relative to the item's cwd`;
  const parts = segments(glob);
  if (parts.length === 0) return `"watch.paths" entry "${glob}" names no file; write a glob such as "src/**/*.ts"`;
  const firstWild = parts.findIndex((s) => WILD.test(s));
  if (firstWild >= 0 && parts.slice(firstWild).includes('..')) return `"watch.paths" entry "${glob}" has ".." after a wildcard; put the folder before the wildcards`;
  if (!isInside(workspaceFolder, path.resolve(cwd, ...(firstWild < 0 ? parts : parts.slice(0, firstWild))))) {
    return `"watch.paths" entry "${glob}" leads outside the workspace folder; watch files inside it`;
  }
  try {
    for (const part of parts.slice(Math.max(firstWild, 0))) globRegExp(part);
  } catch (e) {
    return `"watch.paths" entry "${glob}" is not a glob the engine can read: ${(e as Error).message}`;
  }
  return undefined;
}

const slash = (p: string) => p.replace(/\\/g, '/');

/** `glob` (relative to `cwd`) as a watch. A glob without wildcards names a file or a whole folder. */
export function watchGlob(glob: string, cwd: string): WatchGlob {
  const parts = segments(glob);
  const firstWild = parts.findIndex((s) => WILD.test(s));
  if (firstWild < 0) {
    const target = slash(path.resolve(cwd, ...parts));
    const base = path.dirname(path.resolve(cwd, ...parts));
    return {
      glob,
      base,
      test: (p) => slash(p) === target || slash(p).startsWith(`${target}/`),
      // The folders on the way to it, and (when it is a folder) everything inside it.
      descend: (d) => slash(d) === target || slash(d).startsWith(`${target}/`) || target.startsWith(`${slash(d).replace(/\/$/, '')}/`),
    };
  }
  const base = path.resolve(cwd, ...parts.slice(0, firstWild));
  const rest = parts.slice(firstWild);
  const whole = globRegExp(`${slash(base).replace(/\/$/, '')}/${rest.join('/')}`);
  const deep = rest.includes('**');
  // Without `**` a match is exactly rest.length folders deep; each folder on the way must match its segment.
  const each = rest.map((s) => globRegExp(s));
  return {
    glob,
    base,
    test: (p) => whole.test(slash(p)),
    descend: (d) => {
      const rel = slash(path.relative(base, d));
      if (rel === '' || deep) return true;
      const names = rel.split('/');
      return names.length < rest.length && names.every((n, i) => each[i].test(n));
    },
  };
}

/** An anchored regular expression for an absolute glob with `/` separators. */
export function globRegExp(glob: string): RegExp {
  let re = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const ownSegment = (i === 0 || glob[i - 1] === '/') && (i + 2 === glob.length || glob[i + 2] === '/');
        if (ownSegment) {
          // `**/` matches no folder or any number of them; a trailing `**` anything below.
          if (glob[i + 2] === '/') {
            re += '(?:[^/]*/)*';
            i += 2;
          } else {
            re += '.*';
            i += 1;
          }
          continue;
        }
        i += 1;
      }
      re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) throw new Error('a "[" without its "]"');
      const body = glob.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\');
      re += `[${body}]`;
      i = end;
    } else if (c === '{') {
      braces++;
      re += '(?:';
    } else if (c === '}' && braces > 0) {
      braces--;
      re += ')';
    } else if (c === ',' && braces > 0) re += '|';
    else re += c.replace(/[.+^$()|\\\]}]/g, '\\$&');
  }
  if (braces > 0) throw new Error('a "{" without its "}"');
  return new RegExp(`^${re}$`);
}
