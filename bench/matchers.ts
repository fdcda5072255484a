// Cost of the problem matchers on the largest output they read: 1 MiB (see
// SCAN_MAX_BYTES in src/core/attemptProblems.ts), as a ratio to splitting the same text into lines
// (the least any line matcher must do), both measured in this run, medians of 7 after a warm-up.
//   npx tsx bench/matchers.ts
import { SCAN_MAX_BYTES } from '../src/core/features/problems/attemptProblems';
import { matchProblems, type ProblemMatcherInput } from '../src/core/features/problems/problemMatchers';

/** Build-log-like output: one tsc error in ten lines, the rest stack-trace-like noise. */
function output(): string {
  const lines: string[] = [];
  let bytes = 0;
  while (bytes < SCAN_MAX_BYTES) {
    const i = lines.length;
    const line =
      i % 10 === 0
        ? `src/file${i}.ts(${i},5): error TS2322: Type 'number' is not assignable to type 'string'.`
        : `    at some.module.function (node_modules/pkg/index.js:${i}:17) building chunk ${i} of many`;
    lines.push(line);
    bytes += line.length + 1;
  }
  return lines.join('\n');
}

function median(run: () => unknown, times = 7): number {
  const ms: number[] = [];
  for (let r = 0; r < times; r++) {
    const start = process.hrtime.bigint();
    run();
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return ms.sort((a, b) => a - b)[Math.floor(times / 2)];
}

const text = output();
const MATCHERS: ProblemMatcherInput[] = [
  '$tsc',
  '$gcc',
  '$go',
  '$eslint-stylish',
  '$eslint-compact',
  '$python',
  ['$tsc', '$gcc', '$go'],
  { pattern: { regexp: '^(\\S+):(\\d+):(\\d+) (\\w+) (.*)$', file: 1, line: 2, column: 3, severity: 4, message: 5 } },
];
for (const m of MATCHERS) matchProblems(text, m, '/w'); // warm-up: regexps compiled, code optimised
console.log(`output: ${(text.length / 1024 / 1024).toFixed(2)} MiB, ${text.split('\n').length} lines`);
for (const m of MATCHERS) {
  const baseline = median(() => text.split(/\r?\n/));
  const match = median(() => matchProblems(text, m, '/w'));
  const found = matchProblems(text, m, '/w').length;
  console.log(`${JSON.stringify(m).slice(0, 40).padEnd(40)} ${match.toFixed(1).padStart(6)} ms  ${(match / baseline).toFixed(1).padStart(5)}× the line split (${baseline.toFixed(1)} ms)  ${found} problems`);
}
