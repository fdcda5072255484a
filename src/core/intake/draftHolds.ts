// Queue files someone is still typing: drafts. An editor that saves on its own (VS Code's
// auto-save, every 200 ms or on a focus change) writes whatever is in the buffer, and an auto-closed
// quote can make half an entry valid JSON: `{"command":"ec"}` would be launched. So a window tells the
// engine which queue files it has open as drafts (`holdDrafts`), and a scan passes over a held file
// until that window saves it explicitly (`ingestDraft`: read it now) or lets it go.
//
// A hold belongs to one window (a client id) and lapses unless renewed, so a window that dies or
// reloads never leaves a file held for ever. Holds are also kept in the storage folder, so an
// engine restarted while a draft is open (Restart Engine, a changed setting) does not read it in
// its first scan, before the window has told it again; they get a fresh lapse time from the start.
//
// Engines with no window (headless, scripts that write and rename) get no holds: nothing changes
// for them.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DRAFT_HOLDS_FILE } from '../../shared/hostProtocol';

/** How long a hold lasts when its window does not say: windows renew every few seconds. */
export const DRAFT_HOLD_MS = 30_000;
const MIN_HOLD_MS = 500;
const MAX_HOLD_MS = 10 * 60_000;

interface ClientHold {
  paths: Set<string>;
  /** Epoch ms after which the hold no longer counts. */
  until: number;
}

export class DraftHolds {
  private readonly clients = new Map<string, ClientHold>();
  /** Held files a scan passed over: looked at again once nothing holds them. */
  private readonly passedOver = new Set<string>();
  /** Files saved on purpose: the next look reads them even though they are held. */
  private readonly readNext = new Set<string>();

  /** Where holds are kept across restarts (null: not kept). */
  private readonly file: string | null;

  /** `storageDir`: the engine's storage folder, where holds are kept across restarts (null: not kept). */
  constructor(
    storageDir: string | null,
    private readonly now: () => number = Date.now,
  ) {
    this.file = storageDir ? path.join(storageDir, DRAFT_HOLDS_FILE) : null;
    if (this.file) this.load(this.file);
  }

  /**
   * `client`'s drafts are now exactly `paths` (absolute), for `forMs` (default DRAFT_HOLD_MS).
   * Sent again to renew; an empty list lets go of them all.
   */
  hold(client: unknown, paths: unknown, forMs: unknown = DRAFT_HOLD_MS): void {
    if (typeof client !== 'string' || client === '') throw new Error('holdDrafts needs "client": a non-empty string naming the window');
    if (!Array.isArray(paths) || !paths.every((p) => typeof p === 'string' && path.isAbsolute(p))) {
      throw new Error('holdDrafts needs "paths": an array of absolute file paths (empty to hold none)');
    }
    const ms = typeof forMs === 'number' && Number.isFinite(forMs) ? Math.min(MAX_HOLD_MS, Math.max(MIN_HOLD_MS, forMs)) : DRAFT_HOLD_MS;
    const before = this.clients.get(client);
    const next = new Set(paths.map(key));
    if (next.size === 0) this.clients.delete(client);
    else this.clients.set(client, { paths: next, until: this.now() + ms });
    if (!before || before.paths.size !== next.size || [...next].some((p) => !before.paths.has(p))) this.save();
  }

  /** `absPath` was saved on purpose: the next scan reads it even while it is held. */
  ingest(absPath: unknown): void {
    if (typeof absPath !== 'string' || !path.isAbsolute(absPath)) throw new Error('ingestDraft needs "path": the absolute path of the queue file');
    this.readNext.add(key(absPath));
  }

  /** Whether a scan passes over `absPath` now (held, and not saved on purpose since). */
  passOver(absPath: string): boolean {
    // The usual case by far (no window, or nothing being edited): a scan of 10,000 files pays nothing.
    if (this.clients.size === 0 && this.readNext.size === 0) return false;
    const k = key(absPath);
    if (this.readNext.delete(k)) return false;
    if (!this.isHeld(k)) return false;
    this.passedOver.add(k);
    return true;
  }

  /**
   * Names in `folder` that a scan looks at even if the folder's watch reported no change: files
   * passed over while held whose hold has ended, and files saved on purpose.
   */
  due(folder: string): string[] {
    if (this.passedOver.size === 0 && this.readNext.size === 0) return [];
    const dir = key(folder);
    const names: string[] = [];
    for (const p of this.passedOver) {
      if (path.dirname(p) === dir && !this.isHeld(p)) {
        this.passedOver.delete(p);
        names.push(path.basename(p));
      }
    }
    for (const p of this.readNext) if (path.dirname(p) === dir) names.push(path.basename(p));
    return names;
  }

  private isHeld(k: string): boolean {
    const now = this.now();
    let held = false;
    for (const [client, hold] of this.clients) {
      if (hold.until <= now) {
        this.clients.delete(client);
        this.save();
      } else if (hold.paths.has(k)) {
        held = true;
      }
    }
    return held;
  }

  private load(file: string): void {
    let saved: unknown;
    try {
      saved = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      return; // none kept, or unreadable: no holds, as for a headless engine
    }
    if (!saved || typeof saved !== 'object') return;
    const until = this.now() + DRAFT_HOLD_MS;
    for (const [client, paths] of Object.entries(saved as Record<string, unknown>)) {
      if (Array.isArray(paths)) this.clients.set(client, { paths: new Set(paths.filter((p): p is string => typeof p === 'string').map(key)), until });
    }
  }

  /** Best effort: a hold that cannot be kept still works until this engine stops. */
  private save(): void {
    if (!this.file) return;
    const saved: Record<string, string[]> = {};
    for (const [client, hold] of this.clients) saved[client] = [...hold.paths];
    try {
      writeFileSync(`${this.file}.tmp`, JSON.stringify(saved));
      renameSync(`${this.file}.tmp`, this.file);
    } catch {
      // storage folder gone or full: the engine's own storage checks report that
    }
  }
}

/** Paths compared as the file system does: resolved, and without case on Windows. */
function key(p: string): string {
  const resolved = path.resolve(p);
  return process.platform === 'win32' ? resolved.toLowerCase() : resolved;
}
