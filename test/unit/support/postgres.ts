// A real PostgreSQL server for the tests on the fleet's store: initdb and pg_ctl from
// Debian's postgresql package, in a temporary folder, on a free loopback port, with its unix socket
// in that folder. PostgreSQL refuses to run as root, so as root (here and in CI) the server runs as
// the `postgres` user the package creates. Missing binaries fail the tests under CI=true and skip
// them elsewhere, saying why.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** Where initdb and pg_ctl are: pg_config --bindir, else the newest /usr/lib/postgresql/<n>/bin. */
export function postgresBinDir(): string | undefined {
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (existsSync(path.join(dir, 'initdb'))) return dir;
  } catch {
    // pg_config is in libpq-dev, which the server does not need
  }
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? path.join(root, versions[0], 'bin') : undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export class PostgresServer {
  private constructor(
    readonly dir: string,
    private portNumber: number,
    private readonly bin: string,
    private readonly asUser: string | undefined,
  ) {}

  get port(): number {
    return this.portNumber;
  }

  /** The URL engines get: user `engine`, password in the URL (tests check it never shows). */
  url(db = 'fleet'): string {
    return `postgres://engine:${PostgresServer.PASSWORD}@127.0.0.1:${this.port}/${db}`;
  }

  static readonly PASSWORD = 's3cret-Pw-7411';

  /** initdb, start, and a role `engine` with a password (scram on TCP); createDatabase() gives it databases. */
  static async start(): Promise<PostgresServer> {
    const bin = postgresBinDir();
    if (!bin) throw new Error('PostgreSQL is not installed (no initdb under pg_config --bindir or /usr/lib/postgresql/*/bin): apt-get install postgresql');
    const asUser = process.getuid?.() === 0 ? 'postgres' : undefined;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'em-pg-'));
    chmodSync(dir, 0o755);
    const server = new PostgresServer(dir, await freePort(), bin, asUser);
    if (asUser) execFileSync('chown', ['-R', asUser, dir]);
    const pwfile = path.join(dir, 'pw');
    writeFileSync(pwfile, 'superpw\n');
    if (asUser) execFileSync('chown', [asUser, pwfile]);
    server.run('initdb', ['-D', server.data, '-U', 'postgres', '--pwfile', pwfile, '-A', 'scram-sha-256', '--no-sync', '-E', 'UTF8', '--locale', 'C']);
    // The port was free when asked for, but another process (another test file's server, another
    // suite on the machine) can take it before the server binds it: then the server starts on
    // another free port.
    for (let tries = 1; ; tries++) {
      writeFileSync(
        path.join(server.data, 'postgresql.auto.conf'),
        `listen_addresses = '127.0.0.1'\nport = ${server.port}\nunix_socket_directories = '${dir}'\nfsync = off\nmax_connections = 100\n`,
      );
      if (asUser) execFileSync('chown', ['-R', asUser, server.data]);
      const logged = server.logText().length;
      try {
        server.startServer();
        break;
      } catch (err) {
        if (tries >= 5 || !server.logText().slice(logged).includes('Address already in use')) throw err;
        server.portNumber = await freePort();
      }
    }
    try {
      server.psql('postgres', `CREATE ROLE engine LOGIN PASSWORD '${PostgresServer.PASSWORD}'`);
    } catch (err) {
      server.stop();
      throw err;
    }
    return server;
  }

  private logText(): string {
    const log = path.join(this.dir, 'server.log');
    return existsSync(log) ? readFileSync(log, 'utf8') : '';
  }

  private get data(): string {
    return path.join(this.dir, 'data');
  }

  private run(tool: string, args: string[]): string {
    const file = path.join(this.bin, tool);
    const cmd = this.asUser ? 'runuser' : file;
    const argv = this.asUser ? ['-u', this.asUser, '--', file, ...args] : args;
    const r = spawnSync(cmd, argv, { encoding: 'utf8', cwd: this.dir, env: { ...process.env, PGPASSWORD: 'superpw' } });
    if (r.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`);
    return r.stdout;
  }

  startServer(): void {
    this.run('pg_ctl', ['-D', this.data, '-l', path.join(this.dir, 'server.log'), '-w', '-t', '60', 'start']);
  }

  /** Fast shutdown: every connection is cut, as when the database host restarts. */
  stopServer(): void {
    this.run('pg_ctl', ['-D', this.data, '-m', 'fast', '-w', '-t', '60', 'stop']);
  }

  /** Runs SQL as the superuser over the unix socket; the output as psql prints it unaligned. */
  psql(db: string, sql: string): string {
    return this.run('psql', ['-h', this.dir, '-p', String(this.port), '-U', 'postgres', '-d', db, '-v', 'ON_ERROR_STOP=1', '-At', '-c', sql]);
  }

  /** A fresh database owned by `engine`, for a test that needs its own. */
  createDatabase(name: string): string {
    this.psql('postgres', `CREATE DATABASE ${name} OWNER engine`);
    return this.url(name);
  }

  /**
   * A fresh database owned by `engine` whose character type knows letters beyond ASCII, as a
   * fleet's should: under the cluster's C locale PostgreSQL's text search folds no case but
   * ASCII's, and sql.js's index folds all.
   */
  createUtf8Database(name: string): string {
    this.psql('postgres', `CREATE DATABASE ${name} OWNER engine TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'`);
    return this.url(name);
  }

  stop(): void {
    try {
      this.stopServer();
    } catch {
      // already stopped
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * For a suite's before(): the server, or a skip (with the reason) when PostgreSQL is missing and
 * this is not CI. Under CI=true a missing PostgreSQL fails: CI installs it (.ci/run).
 */
export async function startPostgresOrSkip(ctx: Mocha.Context): Promise<PostgresServer | undefined> {
  if (!postgresBinDir() && process.env.CI !== 'true') {
    console.log('      (PostgreSQL is not installed: its tests are skipped; CI=true makes this a failure)');
    ctx.skip();
    return undefined;
  }
  return PostgresServer.start();
}
