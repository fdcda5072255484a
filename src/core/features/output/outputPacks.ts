// Short outputs share a pack (outputFiles.ts): this process appends each finished attempt's record
// to its pack for the output folder and links `<id>.o` to it, so a thousand short attempts make a
// few files instead of a thousand. Synchronous on purpose: a record is small and written once.
import { closeSync, linkSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { PACK_BYTES, packFile, singleFile } from './outputFiles';

/** The pack this process appends short outputs to, per output folder (outputFiles.ts). */
interface Pack {
  file: string;
  fd: number;
  size: number;
  records: number;
}
const packs = new Map<string, Pack>();
let packCount = 0;
/** Links to one pack at most (ext4 allows 65,000 per inode). */
const PACK_RECORDS = 4096;
/** Folders whose file system refuses hard links: short outputs are single files there. */
const noLinks = new Set<string>();

/** Appends one attempt's record to the folder's pack and links `<id>.o` to it; false if it could not. */
export function appendToPack(dir: string, attemptId: number, record: Buffer): boolean {
  if (noLinks.has(dir)) return false;
  let pack = packs.get(dir);
  if (pack && (pack.size >= PACK_BYTES || pack.records >= PACK_RECORDS)) {
    retirePack(dir, pack);
    pack = undefined;
  }
  try {
    if (!pack) {
      const file = packFile(dir, process.pid, ++packCount);
      pack = { file, fd: openSync(file, 'wx'), size: 0, records: 0 };
      packs.set(dir, pack);
    }
    const at = pack.size;
    if (writeSync(pack.fd, record, 0, record.length, at) !== record.length) throw new Error('short write');
    pack.size += record.length;
    pack.records++;
  } catch {
    // Disk full, folder gone…: this pack takes nothing more; the caller tries a file of its own.
    if (pack) retirePack(dir, pack);
    return false;
  }
  try {
    // Never over an existing name (a stale file, or one a test put there): that is the single file's case.
    linkSync(pack.file, singleFile(dir, attemptId));
    return true;
  } catch (err) {
    // Anything but a name in the way (the pack's name or folder is gone, links are refused): a new pack next time.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') retirePack(dir, pack);
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') noLinks.add(dir);
    return false;
  }
}

/** The pack takes no more records: its own name goes, its bytes stay while an attempt's link does. */
function retirePack(dir: string, pack: Pack): void {
  packs.delete(dir);
  try {
    unlinkSync(pack.file);
  } catch {
    // gone already
  }
  try {
    closeSync(pack.fd);
  } catch {
    // closed already
  }
}

/** When this process exits (the launch helper): its packs' own names go, the attempts' links stay. */
export function retireOutputPacks(): void {
  for (const [dir, pack] of [...packs]) retirePack(dir, pack);
}

/** The same for one output folder (an engine that launched in its own process shuts down). */
export function retireOutputPack(dir: string): void {
  const pack = packs.get(dir);
  if (pack) retirePack(dir, pack);
}
