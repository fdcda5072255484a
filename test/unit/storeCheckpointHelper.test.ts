// The store's checkpoints in a process started by the launch helper (the rest of the checkpoint
// tests, on a worker thread, are in storeCheckpoint.test.ts).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Store, type StoreNote } from '../../src/core/store';
import { AttemptLauncher } from '../../src/core/launching';
import { locateLaunchHelper } from '../../src/host/launchHelperEntry';
import { itemDefinition, processAlive, waitFor } from './support/workspace';
import { addLogs, checkpointStores, copyAsCrashed, dump } from './support/storeTesting';

describe('store: background snapshots (checkpoint worker) on a real disk', function () {
  this.timeout(60_000);
  const stores = checkpointStores();
  const openStore = (dir?: string, notes?: StoreNote[]) => stores.open(dir, notes);

  describe('in a process started by the launch helper', () => {
    let launcher: AttemptLauncher | undefined;
    afterEach(async () => {
      await launcher?.close(0);
      launcher = undefined;
    });

    /** A store whose checkpoints go through a ready launch helper, as the engine wires it. */
    async function openWithHelper(notes: StoreNote[] = []): Promise<{ store: Store; helperPids: number[] }> {
      launcher = new AttemptLauncher({ entry: locateLaunchHelper(), helpers: 2 });
      const l = launcher;
      // The helpers start with the first launch.
      assert.equal((await l.launch(1, itemDefinition({}), 1).done).succeeded, true);
      await waitFor('both helpers to be ready', () => l.helperPids.length === 2);
      const { store } = await Store.open({ storageDir: stores.ws.storage, onNote: (n) => notes.push(n), runCheckpoint: (job) => l.runCheckpoint(job), exportCheckpointMaxBytes: 0 });
      stores.track(store);
      return { store, helperPids: l.helperPids };
    }

    /** Children of a process (Linux /proc), each with its nice value. */
    function childrenOf(pid: number): { pid: number; nice: number }[] {
      const out: { pid: number; nice: number }[] = [];
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(' ').filter(Boolean)) {
          try {
            const stat = readFileSync(`/proc/${child}/stat`, 'utf8');
            out.push({ pid: Number(child), nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) });
          } catch {
            // gone meanwhile
          }
        }
      }
      return out;
    }

    it('builds the snapshot in another process at the lowest priority; a restart from it equals the live database', async function () {
      this.timeout(120_000);
      if (process.platform !== 'linux') this.skip(); // /proc
      const { store, helperPids } = await openWithHelper();
      addLogs(store, 1, 3000);
      assert.equal(store.snapshotInBackground(), true);
      addLogs(store, 3001, 50);
      // Every process the helper runs meanwhile, by pid, with the lowest nice value seen for it.
      const seen = new Map<number, number>();
      let settledYet = false;
      const done = store.whenCheckpointed().then((ok) => ((settledYet = true), ok));
      while (!settledYet) {
        for (const c of helperPids.flatMap(childrenOf)) seen.set(c.pid, Math.max(seen.get(c.pid) ?? 0, c.nice));
        await new Promise((r) => setTimeout(r, 2));
      }
      assert.equal(await done, true);
      assert.equal(store.lastSnapshot?.background, true);
      assert.equal(seen.size, 1, `the helpers ran one checkpoint process: ${JSON.stringify([...seen])}`);
      const [[pid, nice]] = [...seen];
      assert.notEqual(pid, process.pid);
      assert.equal(nice, 19, 'at nice 19');
      // What is proven is that it exits, not how fast: at nice 19 beside the parallel unit group it
      // once took over 5 s to be scheduled again after answering.
      await waitFor('the checkpoint process to exit', () => !processAlive(pid), 60_000);
      store.commit();
      const crashed = path.join(stores.ws.root, 'crashed');
      copyAsCrashed(stores.ws.storage, crashed);
      const reopened = await openStore(crashed);
      assert.deepEqual(dump(reopened), dump(store));
      assert.equal((dump(reopened) as { logs: unknown[] }).logs.length, 3050);
    });

    it('a checkpoint process killed mid-build: the snapshot is written from memory, nothing is lost, and the log says where it failed', async function () {
      if (process.platform !== 'linux') this.skip(); // /proc
      const notes: StoreNote[] = [];
      const { store, helperPids } = await openWithHelper(notes);
      addLogs(store, 1, 3000);
      assert.equal(store.snapshotInBackground(), true);
      const [victim] = await waitFor('the checkpoint process', () => {
        const c = helperPids.flatMap(childrenOf);
        return c.length > 0 && c;
      });
      process.kill(victim.pid, 'SIGKILL');
      assert.equal(await store.whenCheckpointed(), true, 'the fallback snapshot succeeded');
      assert.equal(store.lastSnapshot?.background, false);
      assert.equal(notes.length, 1);
      assert.match(notes[0].message, /background snapshot failed \(the checkpoint process ended \(signal SIGKILL\)\); wrote the snapshot from memory instead/);
      assert.equal(notes[0].details?.builtIn, `process ${victim.pid}`);
      await waitFor('no temporary file left', () => readdirSync(stores.ws.storage).every((f) => !f.includes('.tmp-')), 5000);
      copyAsCrashed(stores.ws.storage, path.join(stores.ws.root, 'copy'));
      assert.deepEqual(dump(await openStore(path.join(stores.ws.root, 'copy'))), dump(store));
    });

    it('the engine shutting down mid-checkpoint ends the checkpoint process and leaves no temporary file', async function () {
      if (process.platform !== 'linux') this.skip(); // /proc
      const { store, helperPids } = await openWithHelper();
      addLogs(store, 1, 3000);
      assert.equal(store.snapshotInBackground(), true);
      const [child] = await waitFor('the checkpoint process', () => {
        const c = helperPids.flatMap(childrenOf);
        return c.length > 0 && c;
      });
      const live = dump(store);
      const done = store.whenCheckpointed();
      // The engine's order: the store first (a final snapshot from memory), then the launcher.
      store.close();
      await launcher!.close(0);
      assert.equal(await done, false, 'abandoned');
      await waitFor('the checkpoint process to end', () => !processAlive(child.pid), 5000);
      await waitFor('no temporary file left', () => readdirSync(stores.ws.storage).every((f) => !f.includes('.tmp-')), 5000);
      copyAsCrashed(stores.ws.storage, path.join(stores.ws.root, 'copy'));
      assert.deepEqual(dump(await openStore(path.join(stores.ws.root, 'copy'))), live);
    });

    /** A store whose checkpoints go to `l` as the engine wires it, before `l` has any helper. */
    async function openBeside(l: AttemptLauncher, notes: StoreNote[] = []): Promise<Store> {
      const { store } = await Store.open({ storageDir: stores.ws.storage, onNote: (n) => notes.push(n), runCheckpoint: (job) => l.runCheckpoint(job), exportCheckpointMaxBytes: 0 });
      stores.track(store);
      return store;
    }

    /**
     * A pool of two real launch helpers not started yet, a store beside it with `entries` log
     * entries, and a background checkpoint asked for: it starts the helpers and waits for one.
     */
    async function checkpointWaitingForHelpers(entries: number): Promise<{ l: AttemptLauncher; store: Store }> {
      launcher = new AttemptLauncher({ entry: locateLaunchHelper(), helpers: 2 });
      const l = launcher;
      const store = await openBeside(l);
      addLogs(store, 1, entries);
      assert.equal(l.helperPid, undefined, 'no helper before any launch');
      assert.equal(store.snapshotInBackground(), true);
      assert.equal(l.helperPids.length, 0, 'none ready yet: the checkpoint waits');
      return { l, store };
    }

    /** Processes whose command line names `text` (a checkpoint process carries its job's storage folder). */
    function processesNaming(text: string): string[] {
      return execFileSync('ps', ['-e', '-o', 'args=']).toString().split('\n').filter((l) => l.includes(text));
    }

    it('a checkpoint asked for while the helpers start waits for one and runs in a process it starts, not on a thread here', async function () {
      if (process.platform !== 'linux') this.skip(); // /proc
      const { l, store } = await checkpointWaitingForHelpers(3000);
      assert.notEqual(l.helperPid, undefined, 'the checkpoint started the helpers');
      // Once a helper is ready, the checkpoint process is its child.
      const [child] = await waitFor('the checkpoint process', () => {
        const c = l.helperPids.flatMap((h) => childrenOf(h));
        return c.length > 0 && c;
      });
      assert.equal(await store.whenCheckpointed(), true);
      assert.equal(store.lastSnapshot?.background, true);
      assert.equal(store.lastSnapshot?.builtIn, `process ${child.pid}`, 'built by the process the helper started');
      store.commit();
      const crashed = path.join(stores.ws.root, 'crashed');
      copyAsCrashed(stores.ws.storage, crashed);
      assert.deepEqual(dump(await openStore(crashed)), dump(store));
    });

    it('a checkpoint cancelled while it waits for the helpers never starts, and leaves no temporary file', async function () {
      if (process.platform !== 'linux') this.skip(); // ps
      const { l, store } = await checkpointWaitingForHelpers(3000);
      const done = store.whenCheckpointed();
      // What the engine's shutdown does first: give the checkpoint up.
      store.abandonCheckpoint();
      assert.equal(await done, false, 'abandoned');
      // A barrier: each helper handles its messages in order, and a waiting checkpoint is sent to
      // the first helper ready before any launch is; one launch finished in each means each has
      // already acted on anything sent before.
      await waitFor('both helpers to be ready', () => l.helperPids.length === 2);
      const runs = [1, 2].map((id) => l.launch(id, itemDefinition({}), 1));
      assert.deepEqual(new Set(runs.map((r) => l.helperPidOf(r))), new Set(l.helperPids));
      await Promise.all(runs.map((r) => r.done));
      assert.deepEqual(processesNaming(stores.ws.storage), [], 'no checkpoint process');
      assert.deepEqual(readdirSync(stores.ws.storage).filter((f) => f.includes('.tmp-')), [], 'no temporary file');
    });

    it('a checkpoint that waited for a helper can be cancelled once it runs there: its process ends', async function () {
      if (process.platform !== 'linux') this.skip(); // /proc
      const { l, store } = await checkpointWaitingForHelpers(3000);
      const [child] = await waitFor('the checkpoint process', () => {
        const c = l.helperPids.flatMap((h) => childrenOf(h));
        return c.length > 0 && c;
      });
      const done = store.whenCheckpointed();
      store.abandonCheckpoint();
      assert.equal(await done, false, 'abandoned');
      await waitFor('the checkpoint process to end', () => !processAlive(child.pid), 5000);
      await waitFor('no temporary file left', () => readdirSync(stores.ws.storage).every((f) => !f.includes('.tmp-')), 5000);
    });

    it('a checkpoint waiting for helpers that cannot start runs on a worker thread once the launcher falls back', async function () {
      this.timeout(20_000);
      const broken = path.join(stores.ws.root, 'broken-launch-helper.js');
      writeFileSync(broken, 'process.exit(3)');
      const warnings: string[] = [];
      launcher = new AttemptLauncher({ entry: { file: broken, execArgv: [] }, helpers: 2, warn: (m) => warnings.push(m) });
      const l = launcher;
      const store = await openBeside(l);
      addLogs(store, 1, 200);
      assert.equal(store.snapshotInBackground(), true);
      assert.equal(l.mode, 'helper', 'still trying the helpers');
      assert.equal(await store.whenCheckpointed(), true);
      assert.equal(l.mode, 'in-process');
      assert.equal(store.lastSnapshot?.background, true);
      assert.equal(store.lastSnapshot?.builtIn, 'worker thread');
      assert.equal(warnings.length, 1);
      store.commit();
      copyAsCrashed(stores.ws.storage, path.join(stores.ws.root, 'copy'));
      assert.deepEqual(dump(await openStore(path.join(stores.ws.root, 'copy'))), dump(store));
    });

    it('a checkpoint waiting for the helpers when the launcher closes runs on a worker thread', async () => {
      const { l, store } = await checkpointWaitingForHelpers(200);
      launcher = undefined;
      await l.close(0);
      assert.equal(await store.whenCheckpointed(), true);
      assert.equal(store.lastSnapshot?.builtIn, 'worker thread');
    });
  });
});
