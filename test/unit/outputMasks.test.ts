// The masks of Compare Output with Last Success: the default patterns of the settings table hide
// what differs between two runs that did the same thing (date-times, times of day, durations),
// and nothing else; a pattern that is not a regular expression is reported and skipped.
import assert from 'node:assert/strict';
import { compileMasks, MASK, maskOutput } from '../../src/extension/output/outputMasks';
import { SETTINGS } from '../../src/shared/settings';

const defaults = compileMasks(SETTINGS['output.compareMasks'].default);

describe('compare masks', () => {
  it('the defaults make two runs of the same steps read the same, and keep a real change', () => {
    const run = (at: string, clock: string, ms: string, result: string) =>
      [`[${at}] build started`, `${clock} compiling 12 files`, `compiled in ${ms}`, `step 2: ${result}`, 'exit code 0 after 3 retries'].join('\n');
    const first = maskOutput(run('2026-11-28T15:40:01.123Z', '15:40:01', '812ms', 'ok'), defaults.regexps);
    const second = maskOutput(run('2026-11-28 16:02:59+01:00', '9:02:59.5', '1.25 s', 'FAILED'), defaults.regexps);
    const a = first.split('\n');
    const b = second.split('\n');
    assert.deepEqual(a.filter((line, i) => line !== b[i]), ['step 2: ok'], 'only the real change differs');
    assert.equal(a[0], `[${MASK}] build started`);
    assert.equal(a[2], `compiled in ${MASK}`);
    assert.equal(a[4], 'exit code 0 after 3 retries', 'numbers that are not durations stay');
  });

  it('skips an invalid pattern and says why; an empty one masks nothing', () => {
    const masks = compileMasks(['(unclosed', '', 'secret-\\d+']);
    assert.equal(masks.regexps.length, 1);
    assert.equal(masks.invalid.length, 1);
    assert.equal(masks.invalid[0].pattern, '(unclosed');
    assert.match(masks.invalid[0].error, /Invalid regular expression/);
    assert.equal(maskOutput('token secret-42 here', masks.regexps), `token ${MASK} here`);
    assert.equal(maskOutput('as it is', compileMasks([]).regexps), 'as it is');
  });
});
