// Runs a CommonJS bundle through V8's code cache. The engine host is one ~2 MB bundle, and a
// start spends about a fifth of its CPU until "listening" parsing and compiling it (the same
// functions on every start, in every window that starts it). V8 can hand back the compiled
// functions as bytes; given them on the next start it skips that work.
//
// The cache is a speed-up, never a dependency: a missing, unreadable, foreign or stale cache
// file, or a folder others could write to, runs the bundle as Node would, and anything that
// goes wrong while writing one is ignored.
import { isAscii } from 'node:buffer';
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import Module from 'node:module';
import { homedir } from 'node:os';
import path from 'node:path';
import vm from 'node:vm';

/** `off` turns the cache off; a folder puts it there. Unset: the user's cache folder. */
export const CODE_CACHE_ENV = 'ENGINE_MONITOR_CODE_CACHE';

/** What became of the cache on this start: the tests and the bench read it. */
export type CodeCacheState =
  /** V8 took the cached code. */
  | 'accepted'
  /** No cache file for this bundle, Node and flags yet. */
  | 'absent'
  /** A cache file of another build of the bundle (same path, other contents). */
  | 'stale'
  /** V8 refused the cached bytes (another V8, other flags, or damaged). */
  | 'rejected'
  /** No usable folder: turned off, or one that others could write to. */
  | 'off';

export interface CodeCacheRun {
  state: CodeCacheState;
  /** Where the cache is (or would be) kept; undefined when off. */
  file?: string;
  /**
   * Writes the code V8 has compiled so far, when the cache was not taken. Called once the program
   * has done its start-up work, so the functions that start-up runs are in it. Never throws.
   */
  save(): boolean;
}

const HASH_BYTES = 32;
/** Cache files of other builds or Node versions not written for this long are removed. */
const PRUNE_AFTER_MS = 30 * 24 * 3600 * 1000;

/** The per-user cache folder, as each platform keeps them. */
export function defaultCodeCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (process.platform === 'win32') return path.join(env.LOCALAPPDATA || path.join(homedir(), 'AppData', 'Local'), 'engine-monitor', 'code-cache');
  if (process.platform === 'darwin') return path.join(homedir(), 'Library', 'Caches', 'engine-monitor', 'code-cache');
  return path.join(env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'engine-monitor', 'code-cache');
}

/**
 * A folder only this user can write to, made if missing; undefined if there is none. Cached code
 * is run as code: a file someone else could put there would run with the engine's rights.
 */
function privateDir(dir: string): string | undefined {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (process.platform === 'win32') return dir;
    const st = statSync(dir);
    if (!st.isDirectory() || st.uid !== process.getuid?.() || (st.mode & 0o022) !== 0) return undefined;
    return dir;
  } catch {
    return undefined;
  }
}

/**
 * Loads `file` (a CommonJS bundle) as `require` would, through the code cache in `dir`, and runs
 * it. The cache file is named by the bundle's path, Node's version, the architecture and Node's
 * flags (V8 refuses code compiled under other flags); inside, the bundle's SHA-256 comes first, as
 * V8 itself checks only the source's length.
 */
export function runWithCodeCache(file: string, dir: string | undefined): CodeCacheRun {
  const bytes = readFileSync(file);
  // A release bundle is ASCII (esbuild escapes the rest, and minifying drops the comments): read
  // as Latin-1 it is the same text without a UTF-8 decode, half the read of a 1.4 MB bundle.
  const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
  const usable = dir === undefined ? undefined : privateDir(dir);
  // The file's bytes: hashing the text would encode it back to them first.
  const digest = createHash('sha256').update(bytes).digest();
  const cacheFile =
    usable &&
    path.join(
      usable,
      `${createHash('sha256').update([path.resolve(file), process.version, process.arch, process.execArgv.join(' ')].join('\0')).digest('hex').slice(0, 32)}.bin`,
    );
  let cached: Buffer | undefined;
  let state: CodeCacheState = cacheFile ? 'absent' : 'off';
  if (cacheFile) {
    try {
      const stored = readFileSync(cacheFile);
      if (stored.length > HASH_BYTES && stored.subarray(0, HASH_BYTES).equals(digest)) cached = stored.subarray(HASH_BYTES);
      else state = 'stale';
    } catch {
      // none yet
    }
  }
  const script = new vm.Script(Module.wrap(source), { filename: file, cachedData: cached });
  if (cached) state = script.cachedDataRejected ? 'rejected' : 'accepted';

  const mod = new Module(file, module);
  mod.filename = file;
  mod.paths = module.paths;
  const compiled = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: Module, filename: string, dirname: string) => void;
  const run: CodeCacheRun = {
    state,
    file: cacheFile,
    save: () => (cacheFile && state !== 'accepted' ? writeCache(cacheFile, digest, script) : false),
  };
  compiled.call(mod.exports, mod.exports, Module.createRequire(file), mod, file, path.dirname(file));
  mod.loaded = true;
  return run;
}

/** Written whole or not at all (a file beside it, then renamed over it): a half-written cache would be read as code. */
function writeCache(cacheFile: string, digest: Buffer, script: vm.Script): boolean {
  const temp = `${cacheFile}.${process.pid}.tmp`;
  try {
    const data = script.createCachedData();
    const fd = openSync(temp, 'w', 0o600);
    try {
      writeSync(fd, digest);
      writeSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, cacheFile);
    prune(path.dirname(cacheFile), cacheFile);
    return true;
  } catch {
    try {
      unlinkSync(temp);
    } catch {
      // never made
    }
    return false;
  }
}

/** Cache files of builds and Node versions no longer used would otherwise pile up, ~1 MB each. */
function prune(dir: string, keep: string): void {
  const now = Date.now();
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (p === keep || !/\.(bin|tmp)$/.test(name)) continue;
    try {
      if (now - statSync(p).mtimeMs > PRUNE_AFTER_MS) unlinkSync(p);
    } catch {
      // another start pruned it first
    }
  }
}
