// Problem matching at an attempt's end: the item's matcher reads the attempt's captured output
// before the outcome is recorded, so the outcome's log entry and its problems arrive together.
// Matchers with a queue file's own regexps run on their own thread (they may backtrack without end).
import type { AttemptProblem } from '../../../shared/api';
import type { AttemptResult } from '../../launching/attemptProcess';
import type { LogWriter } from '../../intake/ingest';
import type { AttemptRef } from '../../kernel/transitions';
import { attemptProblems } from './attemptProblems';
import { MatcherThread } from './matcherThread';

export class ProblemMatching {
  private readonly thread: MatcherThread;

  constructor(
    budgetMs: number | undefined,
    private readonly outputDir: () => string,
    private readonly log: LogWriter,
    private readonly isClosed: () => boolean,
  ) {
    this.thread = new MatcherThread(budgetMs);
  }

  /**
   * The problems the item's matcher finds in the attempt's output; null when it has no matcher. A
   * failure to read the output is logged and gives none: it never holds up the outcome.
   */
  async problems(a: AttemptRef, result: AttemptResult): Promise<AttemptProblem[] | null> {
    const matcher = a.item.problemMatcher;
    if (matcher === undefined) return null;
    if (result.outputBytes === null) return [];
    try {
      return await attemptProblems(this.outputDir(), a.attemptId, matcher, a.item.cwd, this.thread);
    } catch (err) {
      if (!this.isClosed()) {
        this.log('database_error', 'warn', `cannot apply the problem matcher of "${a.item.name}" to attempt ${a.attempt}: ${(err as Error).message}`, a.item.id, {
          attempt: a.attempt,
          error: (err as Error).message,
        });
      }
      return [];
    }
  }

  /** Whether `pattern` matches a line of `text`, on the matcher thread under its budget: a service's ready logPattern. */
  matchLines(text: string, pattern: string): Promise<boolean> {
    return this.thread.test(text, pattern);
  }

  close(): Promise<void> {
    return this.thread.close();
  }
}
