// node-postgres reads every query parameter of the store URL as a connection option, so a password
// can come as `?password=` (or `?sslpassword=`) as well as `user:pw@`. Every form is kept out of
// the process table, /status and the settings. A real PostgreSQL from Debian's package, a real
// engine host process.
import * as assert from 'node:assert/strict';
import { redactStoreUrl } from '../../src/core/store/pgStore';
import { parseStoreUrl } from '../../src/shared/storeUrl';
import type { StatusResponse } from '../../src/shared/api';
import { getJson, processesMentioning, serve, type ServeProcess } from './support/cli';
import { PostgresServer, startPostgresOrSkip } from './support/postgres';
import { TempWorkspace } from './support/workspace';

describe('The store URL: a password in its query string', function () {
  this.timeout(120_000);

  it('is redacted in every form node-postgres reads, and refused in the setting', () => {
    assert.equal(redactStoreUrl('postgres://engine@db/fleet?password=hunter2'), 'postgres://engine@db/fleet?password=***');
    assert.equal(redactStoreUrl('postgres://engine:pw@db/fleet?sslpassword=k3y&application_name=x'), 'postgres://engine:***@db/fleet?sslpassword=***&application_name=x');
    assert.equal(redactStoreUrl('postgres://engine@db/fleet?PassWord=hunter2'), 'postgres://engine@db/fleet?PassWord=***');
    for (const url of ['postgres://engine@db/fleet?password=hunter2', 'postgres://engine@db/fleet?sslpassword=hunter2']) {
      const { url: accepted, error } = parseStoreUrl(url);
      assert.equal(accepted, undefined, url);
      assert.match(error ?? '', /contains a password.*Set Store Password/);
      assert.ok(!error?.includes('hunter2'), 'the error does not repeat the password');
    }
  });

  describe('with a real PostgreSQL', function () {
    let pg: PostgresServer | undefined;
    let engine: ServeProcess | undefined;
    let ws: TempWorkspace | undefined;
    before(async function () {
      pg = await startPostgresOrSkip(this);
    });
    after(async () => {
      if (engine && engine.child.exitCode === null && engine.child.signalCode === null) {
        engine.child.kill('SIGTERM');
        await engine.exited;
      }
      ws?.dispose();
      pg?.stop();
    });

    it('connects with ?password= and shows it neither in ps nor in /status', async () => {
      const withUserPassword = new URL(pg!.createDatabase('secrets'));
      const url = `postgres://engine@${withUserPassword.host}${withUserPassword.pathname}?password=${PostgresServer.PASSWORD}`;
      ws = new TempWorkspace('engine-store-secret-');
      engine = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--store', url]);
      const status = await getJson<StatusResponse>(`${engine.url}/status`);
      assert.ok(!JSON.stringify(status).includes(PostgresServer.PASSWORD), 'no password in /status');
      assert.match(status.database.path, /\?password=\*\*\*$/);
      const listed = processesMentioning(`--storage ${ws.storage}`);
      assert.equal(listed.length, 1, 'the engine is in the process table');
      assert.ok(!listed[0].cmdline.includes(PostgresServer.PASSWORD), `ps shows the password: ${listed[0].cmdline}`);
      assert.match(listed[0].cmdline, /password=\*\*\*/);
    });
  });
});
