// package.json's welcome views: VS Code takes one view per entry, so the five states shown while
// no engine is connected (no queue folder, not running, remote refused, remote connecting, failed)
// and the one "Connecting to the engine…" shown until the first data are written out once per
// view, six times. Keeping the copies in the
// manifest keeps package.json the one checked-in source of what users see; this test keeps them
// from drifting apart instead.
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
  it('every view shows the same five disconnected states, with the same when clauses in the same order', () => {
    const reference = disconnected(FULL).map((w) => w.when);
    assert.equal(reference.length, 5);
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

  it('every view says "Connecting to the engine…" until the first data, and shows an empty state only once loaded', () => {
    for (const view of VIEWS) {
      const mine = welcome.filter((w) => w.view === view);
      const connecting = mine.filter((w) => w.contents === 'Connecting to the engine…');
      assert.equal(connecting.length, 1, view);
      assert.match(connecting[0].when, /^!engineMonitor\.loaded\b/, view);
      // One honest state while an engine starts or is being reached: no second message for it.
      assert.equal(mine.filter((w) => /Loading|Starting the engine/.test(w.contents)).length, 0, view);
      for (const w of mine.filter((x) => x.when.startsWith('engineMonitor.connected'))) {
        assert.match(w.when, /\bengineMonitor\.loaded\b/, `${view}: "${w.contents.slice(0, 30)}…" before the first answer`);
      }
    }
  });

  it('"Connecting to the engine…" and the settled states never show together', () => {
    // The states VS Code evaluates "when" against during a start-up, attach, start, and each end state.
    const contexts: Record<string, string | boolean>[] = [
      { loaded: false, connected: false, hostState: '', hasQueueFolder: true },
      { loaded: false, connected: false, hostState: 'starting', hasQueueFolder: true },
      { loaded: false, connected: false, hostState: 'running', hasQueueFolder: true },
      { loaded: false, connected: true, hostState: 'attached', hasQueueFolder: true },
      { loaded: true, connected: true, hostState: 'running', hasQueueFolder: true },
      { loaded: true, connected: false, hostState: 'off', hasQueueFolder: true },
      { loaded: false, connected: false, hostState: 'off', hasQueueFolder: true },
      { loaded: true, connected: false, hostState: 'failed', hasQueueFolder: true },
    ];
    for (const view of VIEWS) {
      for (const ctx of contexts) {
        const shown = welcome.filter((w) => w.view === view && evaluate(w.when, ctx)).map((w) => w.contents.split('\n')[0]);
        const connecting = shown.includes('Connecting to the engine…');
        const before = !ctx.loaded && ctx.hostState !== 'off' && ctx.hostState !== 'failed';
        assert.equal(connecting, before, `${view} ${JSON.stringify(ctx)}: ${JSON.stringify(shown)}`);
        if (connecting) assert.equal(shown.length, 1, `${view} ${JSON.stringify(ctx)}: only the connecting state, got ${JSON.stringify(shown)}`);
      }
    }
  });

  it('welcome views only name our views', () => {
    for (const w of welcome) assert.ok((VIEWS as string[]).includes(w.view), w.view);
  });
});

/**
 * The subset of VS Code's "when" grammar the manifest uses here: `&&` of `key`, `!key`,
 * `key == v`, `key != v`, `key =~ /re/`. Keys are read without their `engineMonitor.` prefix.
 */
function evaluate(when: string, ctx: Record<string, string | boolean>): boolean {
  return when.split('&&').every((raw) => {
    const term = raw.trim();
    const read = (k: string) => ctx[k.replace(/^engineMonitor\./, '')] ?? '';
    let m = /^(\S+)\s*(==|!=)\s*(\S+)$/.exec(term);
    if (m) return (String(read(m[1])) === m[3]) === (m[2] === '==');
    m = /^(\S+)\s*=~\s*\/(.*)\/$/.exec(term);
    if (m) return new RegExp(m[2]).test(String(read(m[1])));
    if (term.startsWith('!')) return !read(term.slice(1));
    return Boolean(read(term));
  });
}
