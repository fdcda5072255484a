// package.json's welcome views: VS Code takes one view per entry, so the six states shown while
// no engine is connected (no queue folder, not running, starting, remote refused, remote
// connecting, failed) and the "Loading…" shown until the first data are written out once per
// view, six times. Keeping the copies in the manifest keeps package.json the one checked-in source
// of what users see; this test keeps them from drifting apart instead.
import assert from 'node:assert/strict';
import manifest from '../../package.json';
import { Views } from '../../src/extension/constants';

const welcome = manifest.contributes.viewsWelcome as { view: string; contents: string; when: string }[];
const VIEWS = [Views.stats, Views.health, Views.status, Views.logs, Views.items, Views.schedules];
/** The stats view is the first one seen, so its messages say more; the others are terse copies. */
const [FULL, ...TERSE] = VIEWS;

/** Entries for the states before an engine is connected, in the order VS Code shows them. */
function disconnected(view: string) {
  return welcome.filter((w) => w.view === view && w.when.startsWith('!engineMonitor.connected'));
}

describe('Welcome views', () => {
  it('every view shows the same six disconnected states, with the same when clauses in the same order', () => {
    const reference = disconnected(FULL).map((w) => w.when);
    assert.equal(reference.length, 6);
    assert.equal(new Set(reference).size, reference.length, 'no state twice');
    for (const view of VIEWS) assert.deepEqual(disconnected(view).map((w) => w.when), reference, view);
  });

  it('the terse views say the same thing in each state', () => {
    const [first, ...others] = TERSE.map((view) => disconnected(view).map((w) => w.contents));
    for (const [i, contents] of others.entries()) assert.deepEqual(contents, first, TERSE[i + 1]);
  });

  it('each state offers the same actions in the stats view as in the others, or more', () => {
    const links = (text: string) => new Set(text.match(/\(command:[^)]+\)/g) ?? []);
    const full = disconnected(FULL);
    disconnected(TERSE[0]).forEach((terse, i) => {
      for (const link of links(terse.contents)) assert.ok(links(full[i].contents).has(link), `${terse.when}: ${link}`);
    });
  });

  it('every view says "Loading…" until engineMonitor.loaded, and shows an empty state only once loaded (#21 item 9)', () => {
    for (const view of VIEWS) {
      const loading = welcome.filter((w) => w.view === view && w.contents === 'Loading…');
      assert.equal(loading.length, 1, view);
      assert.match(loading[0].when, /^!engineMonitor\.loaded\b/, view);
      for (const w of welcome.filter((x) => x.view === view && x.when.startsWith('engineMonitor.connected'))) {
        assert.match(w.when, /\bengineMonitor\.loaded\b/, `${view}: "${w.contents.slice(0, 30)}…" before the first answer`);
      }
    }
  });

  it('welcome views only name our views', () => {
    for (const w of welcome) assert.ok((VIEWS as string[]).includes(w.view), w.view);
  });
});
