// code-server for the harness (codeServer.ts): where it is installed, its default settings, and
// starting and stopping it on a free loopback port with its own user-data-dir and process group.
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { endEngineHosts } from './engineProbe';

/** Root of the repository (this file lives in <repo>/test/vscode). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');
export const CODE_SERVER_VERSION = '4.100.3';
export const CHROMIUM_PATH = '/usr/bin/chromium';
export const SCREENSHOT_DIR = path.join(REPO_ROOT, 'test-results', 'screenshots');

export const SETUP_HINT = 'run `bash test/vscode/setup-code-server.sh` (installs chromium, ripgrep, libkrb5-dev and code-server)';

// ------------------------------------------------------------------------------------------------
// code-server
// ------------------------------------------------------------------------------------------------

/** Path of the installed code-server entry point (a Node script). Throws when it is not installed. */
export function codeServerBinary(): string {
  const entry = path.join(REPO_ROOT, '.vscode-test', 'code-server', 'node_modules', 'code-server', 'out', 'node', 'entry.js');
  if (!existsSync(entry)) {
    throw new Error(`code-server ${CODE_SERVER_VERSION} is not installed (expected ${entry}); ${SETUP_HINT}`);
  }
  return entry;
}

/**
 * Settings written to the temporary user-data-dir's User/settings.json: keep the workbench quiet
 * and deterministic (no welcome page, walkthroughs, tips, telemetry, update or recommendation
 * notifications, no close confirmation that would block tearing the page down).
 */
export const DEFAULT_USER_SETTINGS: Readonly<Record<string, unknown>> = {
  'workbench.startupEditor': 'none',
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'window.confirmBeforeClose': 'never',
  // Test folders inside the repo would otherwise raise "a git repository was found in a parent folder".
  'git.openRepositoryInParentFolders': 'never',
  'chat.commandCenter.enabled': false,
  // Only matters with trustWorkspaces: open untrusted folders in restricted mode without the modal
  // "Do you trust the authors?" dialog, so trust tests start from a known, unblocked state.
  'security.workspace.trust.startupPrompt': 'never',
};

export interface StartCodeServerOptions {
  /** Keep Workspace Trust active (default false: code-server runs with --disable-workspace-trust). */
  trustWorkspaces?: boolean;
  /** Merged over DEFAULT_USER_SETTINGS. */
  userSettings?: Record<string, unknown>;
  /** Extra environment for code-server; the remote extension host inherits it. */
  env?: NodeJS.ProcessEnv;
  /** Extensions directory (default: a fresh empty temporary one, removed by stop()). */
  extensionsDir?: string;
  /** Milliseconds to wait for the server to answer (default 60 000). */
  startTimeoutMs?: number;
  /** Print code-server's own stdout/stderr as it comes (default: only on failure, or CODE_SERVER_VERBOSE=1). */
  verbose?: boolean;
}

export interface CodeServer {
  /** http://127.0.0.1:<port> (no trailing slash). */
  readonly url: string;
  readonly port: number;
  readonly userDataDir: string;
  readonly extensionsDir: string;
  /** Everything code-server (and processes it spawned) wrote to stdout/stderr so far. */
  output(): string;
  /** Kills the whole process tree and removes the temporary directories. Safe to call twice. */
  stop(): Promise<void>;
}

/** Process groups still running; killed synchronously if this Node process exits without stop(). */
const liveGroups = new Set<number>();
let exitHookInstalled = false;
function trackGroup(pid: number): void {
  liveGroups.add(pid);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const pgid of liveGroups) killGroup(pgid, 'SIGKILL');
    });
  }
}
function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    /* already gone */
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function httpStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(0));
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Starts code-server on a free 127.0.0.1 port with a temporary user-data-dir; resolves once it answers. */
export async function startCodeServer(opts: StartCodeServerOptions = {}): Promise<CodeServer> {
  const entry = codeServerBinary();
  const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'code-server-test-'));
  const userDataDir = path.join(tmpRoot, 'user-data');
  const extensionsDir = opts.extensionsDir ?? path.join(tmpRoot, 'extensions');
  const xdgDir = path.join(tmpRoot, 'xdg');
  for (const d of [path.join(userDataDir, 'User'), extensionsDir, xdgDir]) mkdirSync(d, { recursive: true });
  writeFileSync(
    path.join(userDataDir, 'User', 'settings.json'),
    JSON.stringify({ ...DEFAULT_USER_SETTINGS, ...opts.userSettings }, null, 2),
  );
  // An explicit (empty) config file: otherwise code-server reads, or on first run writes,
  // ~/.config/code-server/config.yaml, which may set a password or a certificate.
  const configFile = path.join(tmpRoot, 'config.yaml');
  writeFileSync(configFile, 'auth: none\ncert: false\n');

  const verbose = opts.verbose ?? process.env.CODE_SERVER_VERBOSE === '1';
  const startTimeoutMs = opts.startTimeoutMs ?? 60_000;
  let lastError: Error | undefined;

  // The port is picked before code-server binds it, so another process may take it in between:
  // retry a couple of times on EADDRINUSE.
  for (let attempt = 1; attempt <= 3; attempt++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const args = [
      entry,
      '--auth', 'none',
      '--bind-addr', `127.0.0.1:${port}`,
      '--config', configFile,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-getting-started-override',
      '--ignore-last-opened',
      '--user-data-dir', userDataDir,
      '--extensions-dir', extensionsDir,
      ...(opts.trustWorkspaces ? [] : ['--disable-workspace-trust']),
    ];
    let output = '';
    const child: ChildProcess = spawn(process.execPath, args, {
      // Own process group, so stop() can kill code-server together with its extension host,
      // pty host and file watcher in one go.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        // code-server keeps its logs and state under XDG dirs; keep them out of the user's home.
        XDG_CONFIG_HOME: xdgDir,
        XDG_DATA_HOME: xdgDir,
        XDG_CACHE_HOME: xdgDir,
        ...opts.env,
      },
    });
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      output += text;
      if (verbose) process.stderr.write(text.replace(/\n$/, '').replace(/^/gm, '[code-server] ') + '\n');
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const exitPromise = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        exited = { code, signal };
        liveGroups.delete(child.pid!);
        resolve();
      });
    });
    if (child.pid === undefined) {
      await exitPromise.catch(() => undefined);
      rmSync(tmpRoot, { recursive: true, force: true });
      throw new Error(`could not spawn code-server (${process.execPath} ${entry})`);
    }
    trackGroup(child.pid);
    const pid = child.pid;

    let stopped = false;
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      killGroup(pid, 'SIGTERM');
      let graceTimer: NodeJS.Timeout | undefined;
      await Promise.race([exitPromise, new Promise<void>((r) => (graceTimer = setTimeout(r, 5000)))]);
      clearTimeout(graceTimer); // a pending timer would keep the test process alive for 5 s
      // The extension host and other helpers may outlive the server itself; SIGKILL whatever is
      // left in the group (harmless when the group is already empty).
      await sleep(200);
      killGroup(pid, 'SIGKILL');
      liveGroups.delete(pid);
      // The engine host is detached from VS Code and outlives it by design: the test ends it.
      await endEngineHosts(userDataDir);
      // To tell where a window's start went (the extension host's own log times each activation).
      const keepLogs = process.env.CODE_SERVER_KEEP_LOGS;
      if (keepLogs && existsSync(path.join(userDataDir, 'logs'))) cpSync(path.join(userDataDir, 'logs'), path.join(keepLogs, path.basename(tmpRoot)), { recursive: true });
      rmSync(tmpRoot, { recursive: true, force: true, maxRetries: 3 });
    };

    // Wait until it answers (code-server serves /healthz once its HTTP server is up).
    const deadline = Date.now() + startTimeoutMs;
    while (!exited && Date.now() < deadline) {
      if ((await httpStatus(`${url}/healthz`)) === 200) {
        return { url, port, userDataDir, extensionsDir, output: () => output, stop };
      }
      await sleep(250);
    }
    if (exited && /EADDRINUSE/.test(output) && attempt < 3) {
      lastError = new Error(`port ${port} was taken`);
      continue;
    }
    const why = exited
      ? `exited early (code ${exited.code}, signal ${exited.signal})`
      : `did not answer on ${url}/healthz within ${startTimeoutMs} ms`;
    await stop();
    throw new Error(`code-server ${why}. Its output:\n${output}`);
  }
  rmSync(tmpRoot, { recursive: true, force: true });
  throw lastError ?? new Error('code-server did not start');
}
