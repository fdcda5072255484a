// Builds the .vsix the way a release does (`npm run package`), but in a staging copy of the
// repository, so the test neither rewrites the working tree's dist/ (other suites use its
// development build) nor depends on what happens to be lying in it; and reads the result with a
// small zip reader (no unzip binary on a clean CI machine).
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
export const MANIFEST = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  name: string;
  publisher: string;
  version: string;
  [key: string]: unknown;
};
export const EXTENSION_ID = `${MANIFEST.publisher}.${MANIFEST.name}`;

const execFileAsync = promisify(execFile);

/** Runs a command, resolving with its output; rejects with the whole output when it fails. */
export async function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<string> {
  try {
    const { stdout, stderr } = await execFileAsync(cmd, args, {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      timeout: opts.timeoutMs ?? 120_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return `${stdout}${stderr}`;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string; code?: unknown };
    throw new Error(`${cmd} ${args.join(' ')} failed (${String(e.code)}):\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

/** Build outputs, local state and heavy folders that a fresh checkout does not have. */
const NOT_IN_A_CHECKOUT = new Set(['node_modules', '.git', 'dist', 'out', '.vscode-test', 'test-results', 'bench-results']);

export interface Staged {
  dir: string;
  vsix: string;
  /** What `npm run package` printed. */
  output: string;
  dispose(): void;
}

/**
 * Copies the working tree (sources, tests, examples, docs: everything but build outputs and
 * node_modules, which is linked) to a temporary folder, plants files a developer's tree typically
 * has (a development build's source maps, engine state of the demo), and runs `npm run package`
 * there. The .vsix must come out the same as from a fresh checkout.
 */
export async function packageInStaging(): Promise<Staged> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-package-'));
  try {
    cpSync(REPO_ROOT, dir, {
      recursive: true,
      filter: (src) => {
        const rel = path.relative(REPO_ROOT, src).split(path.sep);
        if (rel.length === 1 && (NOT_IN_A_CHECKOUT.has(rel[0]) || rel[0].endsWith('.vsix'))) return false;
        return !rel.join('/').includes('.engine/state');
      },
    });
    symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    // Leftovers .vscodeignore must keep out.
    mkdirSync(path.join(dir, 'dist'), { recursive: true });
    writeFileSync(path.join(dir, 'dist', 'extension.js.map'), '{"version":3,"sources":[],"mappings":""}');
    for (const state of ['.engine/state', 'examples/demo/.engine/state']) {
      mkdirSync(path.join(dir, state), { recursive: true });
      writeFileSync(path.join(dir, state, 'engine.sqlite'), 'not a real database');
    }
    const vsix = path.join(dir, `${MANIFEST.name}-${MANIFEST.version}.vsix`);
    // stdin is not a terminal here, as in CI: vsce must not need to ask anything.
    const output = await run('npm', ['run', '--silent', 'package', '--', '--out', vsix], { cwd: dir, env: { CI: 'true' } });
    return { dir, vsix, output, dispose: () => rmSync(dir, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

export interface ZipEntry {
  name: string;
  size: number;
  compressedSize: number;
  data(): Buffer;
}

/** Lists a zip file's entries from its central directory (no zip64, which a .vsix never needs). */
export function readZip(file: string): ZipEntry[] {
  const buf = readFileSync(file);
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error(`${file} is not a zip file (no end of central directory)`);
  const count = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  const entries: ZipEntry[] = [];
  for (let n = 0; n < count; n++) {
    if (buf.readUInt32LE(p) !== 0x02014b50) throw new Error(`${file}: bad central directory entry ${n}`);
    const method = buf.readUInt16LE(p + 10);
    const compressedSize = buf.readUInt32LE(p + 20);
    const size = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    const local = buf.readUInt32LE(p + 42);
    const name = buf.toString('utf8', p + 46, p + 46 + nameLen);
    p += 46 + nameLen + extraLen + commentLen;
    entries.push({
      name,
      size,
      compressedSize,
      data: () => {
        if (buf.readUInt32LE(local) !== 0x04034b50) throw new Error(`${file}: bad local header for ${name}`);
        const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
        const raw = buf.subarray(start, start + compressedSize);
        if (method === 0) return Buffer.from(raw);
        if (method === 8) return inflateRawSync(raw);
        throw new Error(`${file}: ${name} uses compression method ${method}`);
      },
    });
  }
  return entries;
}
