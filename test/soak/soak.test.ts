// Long runs, outside `npm test`: `npm run test:soak`.
import assert from 'node:assert/strict';
import { crashLoop } from '../unit/support/crashLoop';
import { loadWhileLaunching } from '../unit/support/load';
import { TempWorkspace } from '../unit/support/workspace';

describe('soak', function () {
  this.timeout(60 * 60_000);
  let ws: TempWorkspace;
  beforeEach(() => (ws = new TempWorkspace('engine-soak-')));
  afterEach(() => ws.dispose());

  it('survives 100 kill -9s on 2,000 items', async () => {
    const r = await crashLoop(ws, { items: 2000, kills: 100, seed: 7, log: (l) => process.stdout.write(`      ${l}\r`) });
    console.log(`\n      crash loop: ${JSON.stringify(r)}`);
    assert.ok(r.interrupted >= r.duplicates);
  });

  it('keeps memory bounded over a 2-minute load while items launch', async () => {
    const r = await loadWhileLaunching(ws, { items: 5_000, logClients: 25, sseClients: 25, minDurationMs: 120_000 });
    console.log(`      ${JSON.stringify(r)}`);
    assert.equal(r.errors, 0);
    assert.equal(r.sseDropped, 0);
    // 5,000 items and their ~15,000 log entries live in the in-memory database; bounded means
    // well under what a leak of per-request or per-event buffers would reach.
    assert.ok(r.rssKiB.peak - r.rssKiB.start < 200 * 1024, `RSS grew ${(r.rssKiB.peak - r.rssKiB.start) / 1024} MiB`);
  });
});
