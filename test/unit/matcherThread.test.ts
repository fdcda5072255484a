// The thread that runs queue files' own problem-matcher regexps (src/core/matcherThread.ts): the
// same problems as matching on the main thread, a regexp that backtracks without end stopped at its
// budget while the main thread carries on, the matches queued behind it run on a fresh thread, and
// close() leaves nothing waiting. Real worker threads, loaded from the sources through tsx.
import assert from 'node:assert/strict';
import { hasOwnRegexp, MatcherThread } from '../../src/core/features/problems/matcherThread';
import { matchProblems, type ProblemMatcherInput } from '../../src/core/features/problems/problemMatchers';

const OWN: ProblemMatcherInput = { severity: 'warning', pattern: { regexp: '^([^:]+):(\\d+):(\\d+) (.*)$', file: 1, line: 2, column: 3, message: 4 } };
const REDOS: ProblemMatcherInput = { pattern: { regexp: '^(a+)+$', file: 1, line: 1 } };
const OUTPUT = ['building', 'src/a.ts(3,7): error TS2322: wrong type', 'lib/b.md:4:1 trailing space', 'done'].join('\n');

describe('problem matchers: the matcher thread', function () {
  this.timeout(60_000);
  let thread: MatcherThread | undefined;
  afterEach(async () => {
    await thread?.close();
    thread = undefined;
  });

  it('tells the built-ins from matchers with a queue file\'s regexp', () => {
    assert.equal(hasOwnRegexp('$tsc'), false);
    assert.equal(hasOwnRegexp(['$tsc', '$gcc']), false);
    assert.equal(hasOwnRegexp(OWN), true);
    assert.equal(hasOwnRegexp(['$tsc', OWN]), true);
  });

  it('finds the problems matching on the main thread finds', async () => {
    const t = (thread = new MatcherThread());
    for (const matcher of [OWN, ['$tsc', OWN]] as ProblemMatcherInput[]) {
      const problems = await t.match(OUTPUT, matcher, '/work/ws');
      assert.ok(problems.length > 0);
      assert.deepEqual(problems, matchProblems(OUTPUT, matcher, '/work/ws'));
    }
  });

  it('stops a regexp that backtracks without end at its budget; the main thread runs meanwhile, and the next match gets a fresh thread', async () => {
    const t = (thread = new MatcherThread(1000));
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 50);
    try {
      const stuck = t.match(`${'a'.repeat(40)}!\n`, REDOS, '/w');
      // Queued behind it: runs once the stuck thread is gone.
      const next = t.match(OUTPUT, OWN, '/work/ws');
      await assert.rejects(stuck, /ran for more than 1 s on the attempt's output and was stopped; a regexp with nested repetition/);
      assert.ok(ticks > 0, 'the main thread ran timers while the regexp backtracked');
      assert.deepEqual(await next, matchProblems(OUTPUT, OWN, '/work/ws'));
    } finally {
      clearInterval(ticker);
    }
  });

  it('close() rejects the match under way and those queued, and later matches', async () => {
    const t = (thread = new MatcherThread(60_000));
    const stuck = t.match(`${'a'.repeat(40)}!\n`, REDOS, '/w');
    const queued = t.match(OUTPUT, OWN, '/w');
    const rejected = Promise.all([assert.rejects(stuck, /shutting down/), assert.rejects(queued, /shutting down/)]);
    await t.close();
    await rejected;
    await assert.rejects(t.match(OUTPUT, OWN, '/w'), /shutting down/);
  });
});
