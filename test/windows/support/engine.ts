// The headless engine (dist\cli.js serve) run by Windows' node.exe under Wine, driven from Linux
// over loopback HTTP and the control connection VS Code windows use.
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { ControlFile } from '../../../src/shared/hostProtocol';
import { waitFor, winPath, type WinePrefix, type WineRun } from './wine';

/** A workspace and a storage folder on Linux, spelled as Windows sees them. */
export class WinWorkspace {
  readonly root: string;
  readonly folder: string;
  readonly queue: string;
  readonly storage: string;

  /** `storageInWorkspace`: the engine's default, <workspace>\.engine\state, where the CLI finds endpoint.json. */
  constructor(readonly storageInWorkspace = false) {
    this.root = mkdtempSync(path.join(os.tmpdir(), 'engine-winws-'));
    this.folder = path.join(this.root, 'ws');
    this.queue = path.join(this.folder, '.engine', 'queue');
    this.storage = storageInWorkspace ? path.join(this.folder, '.engine', 'state') : path.join(this.root, 'storage');
    mkdirSync(this.queue, { recursive: true });
  }

  /** Writes a queue file as scripts should: a temporary name, then a rename. */
  enqueue(name: string, content: unknown): void {
    const file = path.join(this.queue, name);
    writeFileSync(`${file}.tmp`, typeof content === 'string' ? content : JSON.stringify(content));
    renameSync(`${file}.tmp`, file);
  }

  dispose(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

export interface WinEngine {
  run: WineRun;
  url: string;
  /** Stops the engine as VS Code's Stop Engine does (the control connection's shutdown), and waits for its exit. */
  shutdown(): Promise<number | null>;
}

/** Starts `serve` under Wine on a free port and resolves once it printed its ready line. */
export async function serveWindows(prefix: WinePrefix, ws: WinWorkspace, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<WinEngine> {
  const storage = ws.storageInWorkspace ? [] : ['--storage', winPath(ws.storage)];
  const run = prefix.cli(['serve', '--workspace', winPath(ws.folder), ...storage, '--port', '0', '--poll-interval', '500', ...args], env);
  let exited: { code: number | null } | undefined;
  void run.exited.then((e) => (exited = e));
  const url = await waitFor(`the ready line of serve under Wine`, () => {
    const m = /^listening on (http:\/\/\S+)$/m.exec(run.output());
    if (m) return m[1];
    if (exited) throw new Error(`serve exited with ${exited.code} before it was ready:\n${run.output()}`);
    return undefined;
  }, 60_000);
  return { run, url, shutdown: () => shutdownOverControl(ws.storage, run) };
}

async function shutdownOverControl(storage: string, run: WineRun): Promise<number | null> {
  const control = JSON.parse(readFileSync(path.join(storage, 'control.json'), 'utf8')) as ControlFile;
  const socket = net.connect(control.port, '127.0.0.1');
  socket.setEncoding('utf8');
  socket.on('error', () => undefined);
  let received = '';
  socket.on('data', (chunk: string) => (received += chunk));
  socket.write(JSON.stringify({ type: 'attach', token: control.token, who: 'windows suite' }) + '\n');
  await waitFor('the welcome on the control connection', () => (received.includes('"welcome"') ? true : undefined));
  socket.write(JSON.stringify({ type: 'shutdown', requestId: 1, restart: false }) + '\n');
  const { code } = await run.exited;
  socket.destroy();
  return code;
}

export async function getJson<T = any>(url: string, init?: RequestInit): Promise<T> {
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${url}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** The item as GET /items/{id} reports it, once `ready` holds for it. */
export function waitForItem<T = any>(url: string, id: string, what: string, ready: (item: any) => boolean, headers: Record<string, string> = {}): Promise<T> {
  return waitFor(`item ${id}: ${what}`, async () => {
    const res = await fetch(`${url}/items/${encodeURIComponent(id)}`, { headers });
    if (res.status === 404) return undefined;
    const item = await res.json();
    return ready(item) ? (item as T) : undefined;
  }, 60_000);
}
