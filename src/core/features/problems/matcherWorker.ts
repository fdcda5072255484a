// The problem-matcher thread (dist/matcher-worker.js): applies an item's own matcher regexps to an
// attempt's output off the engine's main thread (src/core/features/problems/matcherThread.ts). A queue file's regexp
// can backtrack for minutes on one line (`^(a+)+$` against 30 a's and a `!`); here that costs only
// this thread, which the engine terminates when its time is up.
import { parentPort } from 'node:worker_threads';
import type { MatchAnswer, MatcherReady, MatchJob } from './matcherThread';
import { matchProblems } from './problemMatchers';

if (!parentPort) throw new Error('matcher-worker: started by the engine as a worker thread');
const port = parentPort;
port.on('message', (job: MatchJob) => {
  let answer: MatchAnswer;
  try {
    if (job.test !== undefined) {
      const re = new RegExp(job.test);
      answer = { id: job.id, matched: job.text.split('\n').some((line) => re.test(line.replace(/\r$/, ''))) };
    } else answer = { id: job.id, problems: matchProblems(job.text, job.matcher!, job.cwd) };
  } catch (err) {
    answer = { id: job.id, error: (err as Error).message };
  }
  port.postMessage(answer);
});
// Loaded and listening: the engine starts a match's time budget from here, since loading this
// module on a loaded machine (or through tsx in the tests) is not the regexp's time.
port.postMessage({ ready: true } satisfies MatcherReady);
