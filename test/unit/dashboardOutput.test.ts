// The dashboard's item detail panel reads an attempt's output by byte ranges (its first 16 KiB
// and last 48 KiB), never all of a large output: checked here against the real headless engine
// (dist/cli.js) launching real processes, over real HTTP on loopback.
import assert from 'node:assert/strict';
import { OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES, readAttention, readItem, readOutput, type DashboardReader } from '../../src/extension/dashboard/dashboardQueries';
import { getText } from '../../src/extension/textRequest';
import type { ItemSummary } from '../../src/shared/api';
import { getJson, serve, type ServeProcess } from './support/cli';
import { sleep } from './support/http';
import { nodeItem, TempWorkspace } from './support/workspace';

/** 200 000 bytes of ASCII letters in a pattern, so any slice of it is known. */
const BIG = 200_000;
const letters = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => String.fromCharCode(65 + ((from + i) % 26))).join('');

describe('dashboard: the item detail panel\'s reads (real engine)', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let run: ServeProcess;
  const ranges: (string | undefined)[] = [];
  let reader: DashboardReader;

  before(async () => {
    ws = new TempWorkspace('engine-dash-output-');
    ws.enqueue('big.json', nodeItem('big', `process.stdout.write(Array.from({ length: ${BIG} }, (_, i) => String.fromCharCode(65 + (i % 26))).join(''))`));
    ws.enqueue('small.json', nodeItem('small', "console.log('hello'); console.error('oops')"));
    ws.enqueue('silent.json', nodeItem('silent', '0'));
    ws.enqueue('fails.json', nodeItem('fails', 'process.exit(2)', { maxAttempts: 1 }));
    run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '100']);
    const url = run.url;
    reader = {
      get: (p) => getJson(url + p),
      getWithLink: () => Promise.reject(new Error('not used')),
      getText: (p, range) => {
        ranges.push(range);
        return getText(url, p, { range, timeoutMs: 10_000 });
      },
    };
    for (;;) {
      const { items } = await getJson<{ items: ItemSummary[] }>(`${url}/items?limit=10`);
      if (items.length === 4 && items.every((i) => i.outcome !== 'pending')) break;
      await sleep(50);
    }
  });
  after(async () => {
    run.child.kill('SIGTERM');
    await run.exited;
    ws.dispose();
  });
  beforeEach(() => (ranges.length = 0));

  it('shows a small output whole, in one read', async () => {
    const x = await readOutput(reader, 'small', 1, 'all');
    assert.deepEqual(x, { head: 'hello\noops\n', tail: null, totalBytes: 11, omittedBytes: 0 });
    assert.deepEqual(ranges, [`bytes=0-${OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES - 1}`]);
    assert.equal((await readOutput(reader, 'small', 1, 'stderr')).head, 'oops\n');
    assert.equal((await readOutput(reader, 'small', 1, 'stdout')).head, 'hello\n');
  });

  it('shows the start and the end of a large output, and says how much is left out', async () => {
    const x = await readOutput(reader, 'big', 1, 'all');
    assert.equal(x.totalBytes, BIG);
    assert.equal(x.head, letters(0, OUTPUT_HEAD_BYTES));
    assert.equal(x.tail, letters(BIG - OUTPUT_TAIL_BYTES, BIG));
    assert.equal(x.omittedBytes, BIG - OUTPUT_HEAD_BYTES - OUTPUT_TAIL_BYTES);
    assert.deepEqual(ranges, [`bytes=0-${OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES - 1}`, `bytes=-${OUTPUT_TAIL_BYTES}`]);
  });

  it('shows an attempt without output as empty', async () => {
    assert.deepEqual(await readOutput(reader, 'silent', 1, 'all'), { head: '', tail: null, totalBytes: 0, omittedBytes: 0 });
  });

  it('passes on the engine’s reason for an unknown item or attempt', async () => {
    await assert.rejects(readOutput(reader, 'no-such-item', 1, 'all'), /HTTP 404 No item with id "no-such-item"/);
    await assert.rejects(readOutput(reader, 'small', 7, 'all'), /HTTP 404 .*no attempt "7"/);
  });

  it('reads an item\'s definition and attempts (GET /items/{id})', async () => {
    const d = await readItem(reader, 'small');
    assert.equal(d.item.id, 'small');
    assert.deepEqual(d.item.args, ['-e', "console.log('hello'); console.error('oops')"]);
    assert.equal(d.state, 'launched');
    assert.deepEqual(
      d.attempts.map((a) => [a.attempt, a.outcome, a.exitCode, a.outputBytes]),
      [[1, 'succeeded', 0, 11]],
    );
    await assert.rejects(readItem(reader, 'no-such-item'), /HTTP 404/);
  });

  it('lists the items to look at: failed ones, and none running once all ended', async () => {
    const a = await readAttention(reader);
    assert.deepEqual(a.failed.items.map((i) => i.id), ['fails']);
    assert.equal(a.failed.total, 1);
    assert.deepEqual(a.running, { items: [], total: 0 });
  });

  it('percent-encodes item ids in the path', async () => {
    await assert.rejects(readOutput(reader, 'a/b c', 1, 'all'), /HTTP 404 No item with id "a\/b c"/);
  });
});

