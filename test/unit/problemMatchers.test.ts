// Problem matchers: every built-in against real output of its tool captured in
// test/unit/fixtures/matchers (see the README there for how each was made), the project's own tsc
// run live, a queue file's own single-line matcher, and what parseItem rejects in a matcher.
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseItem, type ItemResult } from '../../src/core/intake/items';
import { matchProblems, MAX_PROBLEMS_PER_ATTEMPT, problemMatcherProblem, type ProblemMatcherInput } from '../../src/core/features/problems/problemMatchers';

const FIXTURES = path.resolve(__dirname, 'fixtures/matchers');
/** The item's cwd the tools ran in when the fixtures were captured. */
const CWD = '/tmp/mfx';
const fixture = (name: string): string => readFileSync(path.join(FIXTURES, name), 'utf8');
const match = (name: string, matcher: ProblemMatcherInput, cwd = CWD) => matchProblems(fixture(name), matcher, cwd);

describe('problem matchers: built-ins on real tool output', () => {
  it('$tsc reads tsc output, files resolved against the cwd', () => {
    assert.deepEqual(match('tsc.txt', '$tsc'), [
      { file: '/tmp/mfx/src/broken.ts', line: 4, column: 9, severity: 'error', message: "Type 'number' is not assignable to type 'string'.", code: '2322' },
      { file: '/tmp/mfx/src/broken.ts', line: 5, column: 25, severity: 'error', message: "Cannot find name 'missing'.", code: '2304' },
    ]);
  });

  it('$tsc reads --pretty output too, colours and source excerpts included', () => {
    assert.deepEqual(match('tsc-pretty.txt', '$tsc'), match('tsc.txt', '$tsc'));
  });

  it('$tsc still matches what the project\'s own tsc prints today', async function () {
    this.timeout(120_000);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'em-matchers-tsc-'));
    try {
      mkdirSync(path.join(dir, 'src'));
      copyFileSync(path.join(FIXTURES, 'broken.ts.txt'), path.join(dir, 'src/broken.ts'));
      const tsc = path.resolve(__dirname, '../../node_modules/typescript/bin/tsc');
      const out = await promisify(execFile)(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'ES2022', 'src/broken.ts'], { cwd: dir }).then(
        () => assert.fail('tsc accepted a broken file'),
        (e: { stdout: string }) => e.stdout,
      );
      const problems = matchProblems(out, '$tsc', dir);
      assert.deepEqual(
        problems.map((p) => [p.file, p.line, p.column, p.code]),
        [
          [path.join(dir, 'src/broken.ts'), 4, 9, '2322'],
          [path.join(dir, 'src/broken.ts'), 5, 25, '2304'],
        ],
        out,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // gcc and python3 are on this machine and in CI (.ci/run installs g++, which needs gcc, and
  // python3): the captured fixtures still describe what they print today.
  for (const [name, source, target, args, matcher, captured] of [
    ['gcc', 'broken.c', 'broken.c', ['-c', 'broken.c', '-o', '/dev/null'], '$gcc', 'gcc.txt'],
    ['python3', 'broken.py.txt', 'broken.py', ['broken.py'], '$python', 'python.txt'],
  ] as const) {
    it(`${matcher} still matches what ${name} prints today`, async function () {
      this.timeout(60_000);
      const dir = mkdtempSync(path.join(os.tmpdir(), `em-matchers-${name}-`));
      try {
        copyFileSync(path.join(FIXTURES, source), path.join(dir, target));
        const out = await promisify(execFile)(name, [...args], { cwd: dir, env: { ...process.env, LC_ALL: 'C.UTF-8' } }).then(
          () => assert.fail(`${name} accepted a broken file`),
          (e: { stdout: string; stderr: string; code?: string | number }) => {
            if (e.code === 'ENOENT') {
              if (process.env.CI) assert.fail(`${name} is not installed; .ci/run installs it`);
              this.skip();
            }
            return e.stdout + e.stderr;
          },
        );
        const expected = match(captured, matcher, dir).map((p) => [p.file.replace(CWD, dir), p.line, p.column, p.severity, p.code]);
        const live = matchProblems(out, matcher, dir).map((p) => [p.file, p.line, p.column, p.severity, p.code]);
        assert.deepEqual(live, expected, out);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  it('$gcc reads warnings and errors, not the "In function" line or the excerpts', () => {
    assert.deepEqual(match('gcc.txt', '$gcc'), [
      {
        file: '/tmp/mfx/broken.c',
        line: 4,
        column: 15,
        severity: 'warning',
        message: 'initialization of ‘int’ from ‘char *’ makes integer from pointer without a cast [-Wint-conversion]',
        code: null,
      },
      { file: '/tmp/mfx/broken.c', line: 5, column: 24, severity: 'error', message: 'expected ‘;’ before ‘return’', code: null },
    ]);
  });

  it('$python puts a traceback\'s exception at its innermost frame', () => {
    assert.deepEqual(match('python.txt', '$python'), [
      { file: '/tmp/mfx/broken.py', line: 2, column: null, severity: 'error', message: 'ZeroDivisionError: division by zero', code: 'ZeroDivisionError' },
    ]);
  });

  it('$python reads a SyntaxError report (no "Traceback" line)', () => {
    assert.deepEqual(match('python-syntax.txt', '$python'), [
      { file: '/tmp/mfx/syntax.py', line: 2, column: null, severity: 'error', message: "SyntaxError: '(' was never closed", code: 'SyntaxError' },
    ]);
  });

  it('$eslint-stylish reads the file line and the indented problems under it', () => {
    assert.deepEqual(match('eslint-stylish.txt', '$eslint-stylish'), [
      { file: '/tmp/mfx/broken.js', line: 2, column: 9, severity: 'error', message: "'unused' is assigned a value but never used", code: 'no-unused-vars' },
      { file: '/tmp/mfx/broken.js', line: 3, column: 13, severity: 'warning', message: "Expected '===' and instead saw '=='", code: 'eqeqeq' },
    ]);
  });

  it('$eslint-compact reads the documented compact format', () => {
    assert.deepEqual(match('eslint-compact.txt', '$eslint-compact'), [
      { file: '/tmp/mfx/broken.js', line: 2, column: 9, severity: 'error', message: "'unused' is assigned a value but never used.", code: 'no-unused-vars' },
      { file: '/tmp/mfx/broken.js', line: 3, column: 13, severity: 'warning', message: "Expected '===' and instead saw '=='.", code: 'eqeqeq' },
    ]);
  });

  it('$go reads go build and go vet output', () => {
    assert.deepEqual(match('go.txt', '$go', '/src/demo'), [
      { file: '/src/demo/main.go', line: 5, column: 2, severity: 'error', message: 'undefined: missing', code: null },
      { file: '/src/demo/main.go', line: 9, column: 9, severity: 'error', message: 'cannot use "x" (untyped string constant) as int value in return statement', code: null },
    ]);
    assert.deepEqual(
      match('go-vet.txt', '$go', '/src/demo').map((p) => [p.file, p.line, p.column, p.message]),
      [['/src/demo/main.go', 7, 2, 'fmt.Printf format %d has arg name of wrong type string']],
    );
  });

  it('a built-in finds nothing in another tool\'s output', () => {
    for (const name of ['gcc.txt', 'python.txt', 'eslint-stylish.txt', 'eslint-compact.txt']) assert.deepEqual(match(name, '$tsc'), [], name);
    assert.deepEqual(match('tsc.txt', '$python'), []);
    assert.deepEqual(match('tsc.txt', '$eslint-stylish'), []);
  });

  it('an array applies every matcher to each line: problems in output order', () => {
    const text = `${fixture('tsc.txt')}${fixture('gcc.txt')}`;
    const problems = matchProblems(text, ['$tsc', '$gcc'], CWD);
    assert.deepEqual(
      problems.map((p) => `${path.basename(p.file)}:${p.line}`),
      ['broken.ts:4', 'broken.ts:5', 'broken.c:4', 'broken.c:5'],
    );
  });
});

describe('problem matchers: a queue file\'s own matcher', () => {
  const custom: ProblemMatcherInput = {
    owner: 'lint',
    fileLocation: 'relative',
    pattern: { regexp: '^(\\S+)@(\\d+):(\\d+) \\[(\\w+)\\] (.*?) \\((\\w+)\\)$', file: 1, line: 2, column: 3, severity: 4, message: 5, code: 6 },
  };

  it('maps its groups, resolves relative files against the cwd and keeps absolute ones', () => {
    const out = 'checking…\nlib/a.txt@3:7 [warning] trailing space (W1)\n/etc/b.txt@10:1 [ERROR] bad header (E9)\n';
    assert.deepEqual(matchProblems(out, custom, '/work/ws'), [
      { file: '/work/ws/lib/a.txt', line: 3, column: 7, severity: 'warning', message: 'trailing space', code: 'W1' },
      { file: '/etc/b.txt', line: 10, column: 1, severity: 'error', message: 'bad header', code: 'E9' },
    ]);
  });

  it('takes ["relative", folder] from the cwd, and defaults severity, message, column and code', () => {
    const m: ProblemMatcherInput = { severity: 'info', fileLocation: ['relative', 'pkg'], pattern: { regexp: '^NOTE (\\S+) (\\d+)$', file: 1, line: 2 } };
    assert.deepEqual(matchProblems('NOTE x.md 12\r\n', m, '/work/ws'), [
      { file: '/work/ws/pkg/x.md', line: 12, column: null, severity: 'info', message: 'NOTE x.md 12', code: null },
    ]);
  });

  it(`keeps at most ${MAX_PROBLEMS_PER_ATTEMPT} problems`, () => {
    const text = Array.from({ length: MAX_PROBLEMS_PER_ATTEMPT + 50 }, (_, i) => `f.ts(${i + 1},1): error TS1000: x`).join('\n');
    const problems = matchProblems(text, '$tsc', '/w');
    assert.equal(problems.length, MAX_PROBLEMS_PER_ATTEMPT);
    assert.equal(problems.at(-1)!.line, MAX_PROBLEMS_PER_ATTEMPT);
  });
});

describe('problem matchers: what an item may name', () => {
  const parse = (problemMatcher: unknown): ItemResult =>
    parseItem({ command: 'tsc', problemMatcher }, { workspaceFolder: '/tmp/ws', relPath: '.engine/queue/a.json', index: 0, defaults: { timeoutMs: 1000, maxAttempts: 1 } });
  const rejected = (problemMatcher: unknown): string => {
    const r = parse(problemMatcher);
    assert.ok(!r.ok, `expected ${JSON.stringify(problemMatcher)} to be rejected`);
    assert.equal(r.field, 'problemMatcher', r.reason);
    return r.reason;
  };

  it('accepts every built-in, an object, and an array, keeping it on the definition', () => {
    for (const name of ['$tsc', '$eslint-stylish', '$eslint-compact', '$gcc', '$go', '$python']) {
      const r = parse(name);
      assert.ok(r.ok && r.item.problemMatcher === name, name);
    }
    const obj = { owner: 'x', fileLocation: ['relative', 'src'], pattern: { regexp: '^(.*):(\\d+)$', file: 1, line: 2 } };
    const r = parse([obj, '$gcc']);
    assert.ok(r.ok);
    assert.deepEqual(r.item.problemMatcher, [obj, '$gcc']);
  });

  it('rejects an unknown name, naming the built-ins', () => {
    assert.match(rejected('$tsx'), /"problemMatcher" "\$tsx" is not a built-in matcher; use one of \$tsc, \$eslint-stylish/);
  });

  it('rejects a regexp that does not compile, saying why', () => {
    assert.match(rejected({ pattern: { regexp: '^(unclosed', line: 1 } }), /"problemMatcher"\.pattern\.regexp is not a valid regular expression: .*Unterminated group/);
  });

  it('rejects a group the regexp does not have, a missing line, and multi-line forms', () => {
    assert.match(rejected({ pattern: { regexp: '^(.*):(\\d+)$', file: 1, line: 3 } }), /pattern\.line is group 3, but the regexp has only 2 group\(s\)/);
    assert.match(rejected({ pattern: { regexp: '^(.*)$', file: 1 } }), /pattern needs "line"/);
    assert.match(rejected({ pattern: [{ regexp: '^(.*)$' }, { regexp: '^(\\d+)$', line: 1, loop: true }] }), /multi-line matcher/);
    assert.match(rejected(['$tsc', { pattern: { regexp: '(', line: 1 } }]), /"problemMatcher\[1\]"\.pattern\.regexp is not a valid regular expression/);
    assert.match(rejected({ pattern: { regexp: '^(.*)$', line: 1 }, background: {} }), /unknown field "background"/);
  });

  it('the checker accepts what the schema accepts', () => {
    assert.equal(problemMatcherProblem('$go'), undefined);
    assert.equal(problemMatcherProblem({ pattern: { regexp: '^(.*):(\\d+)$', line: 2 } }), undefined);
  });
});
