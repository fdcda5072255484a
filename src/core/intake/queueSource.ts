// The default item source: *.json and *.jsonl files directly in <workspace folder>/<queue dir>.
// Scripts enqueue by writing a temporary name and renaming, so a file we see is complete; a file
// whose size and mtime have not changed since we read it is not read again.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { DraftHolds } from './draftHolds';
import { FolderChanges } from './folderChanges';
import { isInside, parseItem, type ItemDefaults, type ItemResult } from './items';

export const MAX_QUEUE_FILE_BYTES = 1024 * 1024;
/**
 * A scan prompted by a change notification comes while a writer may still be writing (one that
 * writes in place rather than renaming): a file that does not parse yet and was written this
 * recently is looked at again later instead of being rejected half written.
 */
const WRITING_MS = 1000;
/** Queue files read concurrently in a scan (each at most MAX_QUEUE_FILE_BYTES: 16 MiB in flight at most). */
const READ_AT_ONCE = 16;

export interface QueueEntry {
  /** Line number (jsonl) or array index (json); null when the file held a single object. */
  index: number;
  result: ItemResult;
}

export interface QueueFileRead {
  /** Absolute path: the key under which the engine remembers the fingerprint. */
  absPath: string;
  /** Path relative to the workspace folder, `/`-separated: what logs and derived ids use. */
  relPath: string;
  fingerprint: string;
  /** Set when the whole file is rejected (bad JSON, too large, link outside the workspace…). */
  fileError?: string;
  entries: QueueEntry[];
}

/** A changed file read but not parsed yet. */
interface FileBytes {
  absPath: string;
  relPath: string;
  fingerprint: string;
  mtimeMs: number;
  bytes: Buffer;
}

export interface SourceScan {
  /** Files that are new or changed since their fingerprint was last recorded. */
  changed: QueueFileRead[];
  /** A problem with the source itself (queue folder unreadable); files are not affected. */
  error: string | null;
}

export class QueueDirectorySource {
  readonly kind = 'queue-directory' as const;
  readonly location: string;
  /** Whether the queue folder was named outside the workspace on purpose (see the constructor). */
  private readonly allowOutsideWorkspace: boolean;
  /** Lets a poll read only the files that changed (every file when that is not known). */
  private readonly changes: FolderChanges;
  /** Names a prompted scan found still being written: the next scan looks at them again. */
  private readonly unsettled = new Set<string>();

  constructor(
    readonly workspaceFolder: string,
    queueDirectory: string,
    private readonly defaults: ItemDefaults,
    fullScanEveryMs?: number,
    /** Files an editor holds as drafts: passed over until saved on purpose (draftHolds.ts). */
    private readonly drafts?: DraftHolds,
    /** The folder's watch reported a change: the caller may scan now rather than at its next poll. */
    onChange?: () => void,
  ) {
    this.location = path.resolve(workspaceFolder, queueDirectory);
    // The queue folder may lie outside the workspace only when whoever configured it named an
    // outside folder (`--queue-dir ../shared-queue`). A link planted inside the workspace must
    // not make the engine read, and launch, files from elsewhere.
    this.allowOutsideWorkspace = !isInside(workspaceFolder, this.location);
    this.changes = new FolderChanges(fullScanEveryMs, onChange);
  }

  /** Stops watching the queue folder. */
  close(): void {
    this.changes.close();
  }

  /**
   * `known(absPath)` returns the fingerprint recorded when that file was last processed.
   * `everyFile`: look at every file, not only those the watch reported changed. `prompted`: the
   * scan follows a change notification, so a file may be half written (WRITING_MS).
   */
  async scan(known: (absPath: string) => string | undefined, everyFile = false, prompted = false): Promise<SourceScan> {
    const changed: QueueFileRead[] = [];
    const error = await this.scanEach(known, (file) => void changed.push(file), everyFile, prompted);
    return { changed, error };
  }

  /**
   * As scan(), handing each changed file to `take` as soon as it is parsed, in the names' order,
   * and the next only once `take` is done with it (false from `take` ends the scan). A scan of
   * 100 files of 1,000 items each used to hold every file's parsed items at once, some 50 MB of the
   * engine's heap, all promoted to V8's old generation before ingestion had finished with them;
   * now one file's items are held at a time, and the bytes of the few read ahead. Returns the
   * source's own problem, or null.
   */
  async scanEach(
    known: (absPath: string) => string | undefined,
    take: (file: QueueFileRead) => Promise<boolean | void> | boolean | void,
    everyFile = false,
    prompted = false,
  ): Promise<string | null> {
    let names: string[];
    let realRoot: string;
    try {
      realRoot = await realpathOr(this.workspaceFolder);
      const realLocation = await fs.realpath(this.location);
      if (!this.allowOutsideWorkspace && !isInside(realRoot, realLocation)) {
        return `queue folder ${this.location} resolves outside the workspace (to ${realLocation}); nothing in it is read. Make it a real folder inside the workspace, or name the outside folder explicitly with --queue-dir`;
      }
      const changes = await this.changes.take(realLocation, everyFile);
      names = changes === 'all' ? await fs.readdir(realLocation) : [...new Set([...changes, ...this.unsettled, ...(this.drafts?.due(this.location) ?? [])])];
      this.unsettled.clear();
    } catch (err) {
      this.changes.reset();
      const code = (err as NodeJS.ErrnoException).code;
      // No queue folder yet is the normal state of a fresh workspace, not an error.
      if (code === 'ENOENT') return null;
      return `cannot read queue folder ${this.location}: ${(err as Error).message}`;
    }
    names = names.filter((n) => n.endsWith('.json') || n.endsWith('.jsonl')).sort();
    // A few files read at a time: one by one, 10,000 files cost 10,000 round trips to the thread
    // pool for each of lstat, open, read and close, and the event loop mostly waited. They are
    // parsed one by one, each just before it is taken, in the names' order, so items are
    // discovered in the same order either way.
    for (let i = 0; i < names.length; i += READ_AT_ONCE) {
      const reads = await Promise.all(names.slice(i, i + READ_AT_ONCE).map((name) => this.readIfChanged(path.join(this.location, name), realRoot, known)));
      for (let j = 0; j < reads.length; j++) {
        const read = reads[j];
        if (!read) continue;
        // Let go of the bytes as the file is parsed: only the files still to parse hold theirs.
        reads[j] = undefined;
        const file = 'bytes' in read ? await this.parseRead(read, realRoot, prompted) : read;
        if (file && (await take(file)) === false) return null;
      }
    }
    return null;
  }

  /** A changed file's bytes, or what is wrong with it (then it has no bytes); undefined when unchanged or gone. */
  private async readIfChanged(absPath: string, realRoot: string, known: (absPath: string) => string | undefined): Promise<QueueFileRead | FileBytes | undefined> {
    if (this.drafts?.passOver(absPath)) return undefined;
    const relPath = path.relative(this.workspaceFolder, absPath).split(path.sep).join('/');
    let stat;
    try {
      stat = await fs.lstat(absPath);
    } catch {
      return undefined; // renamed or deleted between readdir and lstat: the next scan sees the truth
    }
    let target = absPath;
    if (stat.isSymbolicLink()) {
      try {
        target = await fs.realpath(absPath);
        stat = await fs.stat(target);
      } catch (err) {
        const fingerprint = `link:${stat.mtimeMs}`;
        if (known(absPath) === fingerprint) return undefined;
        return { absPath, relPath, fingerprint, entries: [], fileError: `broken link: ${(err as Error).message}` };
      }
      if (!isInside(realRoot, target)) {
        const fingerprint = `outside:${target}`;
        if (known(absPath) === fingerprint) return undefined;
        return {
          absPath,
          relPath,
          fingerprint,
          entries: [],
          fileError: `link points outside the workspace (to ${target}); copy the file into the queue folder instead`,
        };
      }
    }
    if (!stat.isFile()) return undefined;
    const fingerprint = `${stat.size}:${stat.mtimeMs}:${stat.ino}`;
    if (known(absPath) === fingerprint) return undefined;
    if (stat.size > MAX_QUEUE_FILE_BYTES) {
      return {
        absPath,
        relPath,
        fingerprint,
        entries: [],
        fileError: `file is ${stat.size} bytes, over the 1 MiB limit; split it into several files`,
      };
    }
    try {
      return { absPath, relPath, fingerprint, mtimeMs: stat.mtimeMs, bytes: await fs.readFile(target) };
    } catch (err) {
      return { absPath, relPath, fingerprint, entries: [], fileError: `cannot read file: ${(err as Error).message}` };
    }
  }

  /** A read file's items; undefined while it may still be being written (see WRITING_MS). */
  private async parseRead(read: FileBytes, realRoot: string, prompted: boolean): Promise<QueueFileRead | undefined> {
    const { absPath, relPath, fingerprint } = read;
    const parsed = this.parseFile(read.bytes, relPath, absPath.endsWith('.jsonl'));
    // Not recorded, so not rejected: read again by the next scan, when the writer is done or the
    // file has been as it is for WRITING_MS (then a mistake, rejected as always).
    if (prompted && parsed.unfinished && Date.now() - read.mtimeMs < WRITING_MS) {
      this.unsettled.add(path.basename(absPath));
      return undefined;
    }
    await confineWorkingFolders(parsed.entries, this.workspaceFolder, realRoot);
    return { absPath, relPath, fingerprint, ...parsed };
  }

  /** `unfinished`: the text ends in JSON cut short (a file still being written looks so). */
  private parseFile(bytes: Buffer, relPath: string, jsonLines: boolean): { entries: QueueEntry[]; fileError?: string; unfinished?: boolean } {
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      return { entries: [], fileError: 'file is not UTF-8 text (binary?); write items as JSON' };
    }
    // Editors on Windows like to write a byte-order mark; it carries no meaning, so accept it.
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    const ctx = (index: number) => ({ workspaceFolder: this.workspaceFolder, relPath, index, defaults: this.defaults });

    if (jsonLines) {
      const entries: QueueEntry[] = [];
      const lines = text.split('\n');
      let unfinished = false;
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i].trim();
        if (!line) continue;
        let value: unknown;
        try {
          value = JSON.parse(line);
        } catch (err) {
          // The last line, without its line break yet: perhaps still being written.
          unfinished = i === lines.length - 1;
          entries.push({ index: i, result: { ok: false, reason: `line ${i + 1} is not valid JSON: ${jsonErrorWithoutContent(err)}` } });
          continue;
        }
        entries.push({ index: i, result: parseItem(value, ctx(i)) });
      }
      return { entries, unfinished };
    }

    // A file just created (an editor's "New File", `touch`) is not an item yet, nor a mistake.
    if (text.trim() === '') return { entries: [] };
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      return { entries: [], fileError: `not valid JSON: ${jsonErrorWithoutContent(err)}`, unfinished: true };
    }
    if (Array.isArray(value)) {
      return { entries: value.map((entry, i) => ({ index: i, result: parseItem(entry, ctx(i)) })) };
    }
    if (value === null || typeof value !== 'object') {
      return { entries: [], fileError: 'file must hold one item object or an array of items' };
    }
    return { entries: [{ index: 0, result: parseItem(value, ctx(0)) }] };
  }
}

async function realpathOr(folder: string): Promise<string> {
  return fs.realpath(folder).catch(() => folder);
}

/**
 * `cwd` was checked by spelling when the item was parsed; a link inside the workspace can still
 * lead out of it (`"cwd": "lnk"` with `lnk -> /etc`). An existing folder is checked by its real
 * path here; one that does not exist yet is checked again when an attempt starts.
 */
export async function confineWorkingFolders(entries: QueueEntry[], workspaceFolder: string, realRoot: string): Promise<void> {
  const real = new Map<string, string | null>();
  for (const entry of entries) {
    if (!entry.result.ok) continue;
    const cwd = entry.result.item.cwd;
    if (!real.has(cwd)) real.set(cwd, await fs.realpath(cwd).catch(() => null));
    const target = real.get(cwd);
    if (target && !isInside(realRoot, target)) {
      entry.result = { ok: false, reason: `cwd "${path.relative(workspaceFolder, cwd)}" leads outside the workspace folder (to ${target}) through a link; use a real folder inside it`, field: 'cwd' };
    }
  }
}

/**
 * V8's JSON.parse messages quote the text around the error (`"AWS_SECRET=abc123" is not valid
 * JSON`); a rejection is logged and shown, so it says where and what kind of error only.
 */
export function jsonErrorWithoutContent(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message
    .replace(/, ".*" is not valid JSON$/s, '')
    .replace(/^Unexpected token .*?(?= in JSON|$)/s, 'Unexpected character')
    .replace(/"[^"]*"/g, '"…"');
}
