// Problem matchers: an item's `problemMatcher` turns what its attempt printed
// into problems at file/line/column, as VS Code's task problem matchers do. The engine applies them
// once an attempt has finished (src/core/features/problems/attemptProblems.ts reads the output); this file holds the
// pure part: the built-in matchers, checking a queue file's matcher, and matching text.
//
// The built-ins follow the patterns VS Code documents for its tasks ($tsc, $eslint-stylish,
// $eslint-compact, $gcc from the C/C++ extension, $go from the Go extension). `$python` has no VS
// Code counterpart: it reads a traceback (or a SyntaxError report) and puts the exception at the
// innermost frame. `$eslint-stylish` and `$python` span several lines, so they are line scanners
// here rather than one regexp; a queue file's own matcher is a single-line one.
import path from 'node:path';
import type { AttemptProblem } from '../../../shared/api';

export type ProblemSeverity = AttemptProblem['severity'];

/** A single-line matcher in the shape of a VS Code task's (`pattern` holds 1-based group numbers). */
export interface PatternMatcherInput {
  owner?: string;
  /** The severity of a match whose pattern has no severity group (or an unknown word there); default error. */
  severity?: ProblemSeverity;
  fileLocation?: 'relative' | 'absolute' | ['relative' | 'absolute', string?];
  pattern: {
    regexp: string;
    file?: number;
    line?: number;
    column?: number;
    severity?: number;
    message?: number;
    code?: number;
  };
}

export const BUILT_IN_MATCHERS = ['$tsc', '$eslint-stylish', '$eslint-compact', '$gcc', '$go', '$python'] as const;
export type BuiltInMatcherName = (typeof BUILT_IN_MATCHERS)[number];

/** What an item's `problemMatcher` may be: a built-in's name, a matcher, or several of them. */
export type ProblemMatcherInput = BuiltInMatcherName | PatternMatcherInput | (BuiltInMatcherName | PatternMatcherInput)[];

/** At most this many problems are kept per attempt: a runaway build's 100 000 warnings help nobody. */
export const MAX_PROBLEMS_PER_ATTEMPT = 1000;
/** Lines longer than this are not matched (a minified bundle on one line would make a regexp crawl). */
export const MAX_MATCHED_LINE_CHARS = 4096;

// ---- the built-ins ----------------------------------------------------------------------------

const TSC: PatternMatcherInput = {
  owner: 'typescript',
  fileLocation: 'relative',
  // `src/a.ts(3,7): error TS2322: …` (tsc's plain output) and `src/a.ts:3:7 - error TS2322: …` (--pretty).
  pattern: { regexp: '^([^\\s].*)[(:](\\d+)[,:](\\d+)(?:\\):\\s+|\\s+-\\s+)(error|warning|info)\\s+TS(\\d+)\\s*:\\s*(.*)$', file: 1, line: 2, column: 3, severity: 4, code: 5, message: 6 },
};

const ESLINT_COMPACT: PatternMatcherInput = {
  owner: 'eslint',
  fileLocation: 'relative',
  // `/abs/a.js: line 3, col 7, Error - 'x' is defined but never used. (no-unused-vars)`
  pattern: { regexp: '^(.+):\\sline\\s(\\d+),\\scol\\s(\\d+),\\s(Error|Warning|Info)\\s-\\s(.+)\\s\\((.+)\\)$', file: 1, line: 2, column: 3, severity: 4, message: 5, code: 6 },
};

const GCC: PatternMatcherInput = {
  owner: 'cpp',
  fileLocation: 'relative',
  // `broken.c:3:12: error: expected ';' before '}' token` (also `fatal error:`, and no column).
  pattern: { regexp: '^(.*?):(\\d+):(\\d*):?\\s+(?:fatal\\s+)?(warning|error):\\s+(.*)$', file: 1, line: 2, column: 3, severity: 4, message: 5 },
};

const GO: PatternMatcherInput = {
  owner: 'go',
  fileLocation: 'relative',
  // `./main.go:5:2: undefined: x` (go build, go vet), optionally after a `vet: ` prefix.
  pattern: { regexp: '^([^:]*: )?((?:.:)?[^:]*):(\\d+)(?::(\\d+))?: (.*)$', file: 2, line: 3, column: 4, message: 5 },
};

// eslint's default (stylish) format: the file on a line of its own, then one indented line per
// problem: `  3:7  error  'x' is defined but never used  no-unused-vars`.
const STYLISH_FILE = /^([^\s].*)$/;
const STYLISH_PROBLEM = /^\s+(\d+):(\d+)\s+(error|warning|info)\s+(.+?)(?:\s\s+(\S+))?$/;
// The summary that ends stylish output: `✖ 2 problems (1 error, 1 warning)`.
const STYLISH_SUMMARY = /^\u2716 \d+ problems?/;

// Python: `  File "/abs/a.py", line 3, in f` (a frame), then, unindented, `NameError: name 'x' …`.
const PY_FRAME = /^\s*File "(.+)", line (\d+)(?:, in .*)?$/;
const PY_EXCEPTION = /^([A-Za-z_][\w.]*)(?::\s?(.*))?$/;
// Markers under a frame's source line (`^^^^`, `~~~^^~~` since 3.11). Python prints that line with
// its own indentation stripped, so the markers do not give the file's column: problems from
// tracebacks have none.
const PY_MARKERS = /^\s*[~^]+\s*$/;

// ---- checking a queue file's matcher -----------------------------------------------------------

const GROUPS = ['file', 'line', 'column', 'severity', 'message', 'code'] as const;
const MATCHER_KEYS = ['owner', 'severity', 'fileLocation', 'pattern'];

/** Why `input` (validated by the JSON Schema for its shape) is not a matcher the engine can use, or undefined. */
export function problemMatcherProblem(input: unknown): string | undefined {
  const list = Array.isArray(input) ? input : [input];
  if (list.length === 0) return '"problemMatcher" is an empty array; name a matcher (for example "$tsc") or remove the field';
  for (let i = 0; i < list.length; i++) {
    const where = Array.isArray(input) ? `"problemMatcher[${i}]"` : '"problemMatcher"';
    const m = list[i] as unknown;
    if (typeof m === 'string') {
      if (!(BUILT_IN_MATCHERS as readonly string[]).includes(m)) return `${where} "${m}" is not a built-in matcher; use one of ${BUILT_IN_MATCHERS.join(', ')}, or an object with "pattern": { "regexp", "file", "line", … }`;
      continue;
    }
    if (m === null || typeof m !== 'object' || Array.isArray(m)) return `${where} must be a built-in matcher's name (${BUILT_IN_MATCHERS.join(', ')}) or an object with "pattern"`;
    const o = m as Record<string, unknown>;
    const unknown = Object.keys(o).find((k) => !MATCHER_KEYS.includes(k));
    if (unknown) return `${where} has unknown field "${unknown}" (allowed: ${MATCHER_KEYS.join(', ')}; multi-line and background matchers are not supported)`;
    const p = o.pattern as Record<string, unknown> | undefined;
    if (Array.isArray(p)) return `${where}.pattern is an array (a multi-line matcher); only single-line matchers are supported: one object { "regexp", "file", "line", … }`;
    if (!p || typeof p !== 'object') return `${where} needs "pattern": { "regexp": "…", "file": 1, "line": 2, "message": 3 }`;
    if (typeof p.regexp !== 'string' || p.regexp === '') return `${where}.pattern.regexp must be a non-empty regular expression string`;
    let groups: number;
    try {
      // Group count: a regexp that also matches the empty string, tried on it (a standard trick).
      groups = new RegExp(`${p.regexp}|`).exec('')!.length - 1;
    } catch (e) {
      return `${where}.pattern.regexp is not a valid regular expression: ${(e as Error).message}`;
    }
    for (const key of Object.keys(p)) {
      if (key === 'regexp' || key === 'loop' || key === 'kind') {
        if (key === 'loop') return `${where}.pattern.loop is for multi-line matchers, which are not supported; remove it`;
        continue;
      }
      if (!(GROUPS as readonly string[]).includes(key)) return `${where}.pattern has unknown field "${key}" (allowed: regexp, ${GROUPS.join(', ')})`;
      const n = p[key];
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) return `${where}.pattern.${key} must be a group number (1 or more)`;
      if (n > groups) return `${where}.pattern.${key} is group ${n}, but the regexp has only ${groups} group(s)`;
    }
    if (p.line === undefined) return `${where}.pattern needs "line": the group number of the line`;
    const fl = o.fileLocation;
    if (fl !== undefined) {
      const kind: unknown = Array.isArray(fl) ? (fl as unknown[])[0] : fl;
      if (kind !== 'relative' && kind !== 'absolute') return `${where}.fileLocation must be "relative", "absolute" or ["relative", "<folder>"]`;
      if (Array.isArray(fl) && fl.length > 1 && typeof fl[1] !== 'string') return `${where}.fileLocation's folder must be a string`;
    }
    if (o.severity !== undefined && !['error', 'warning', 'info'].includes(o.severity as string)) return `${where}.severity must be "error", "warning" or "info"`;
  }
  return undefined;
}

// ---- matching ---------------------------------------------------------------------------------

/** Something that reads lines and reports problems; fresh per attempt (the multi-line ones keep state). */
interface LineScanner {
  line(text: string, out: AttemptProblem[]): void;
  end(out: AttemptProblem[]): void;
}

/** Problems in `text` by `matcher`, with files resolved against `cwd` (the item's working folder). */
export function matchProblems(text: string, matcher: ProblemMatcherInput, cwd: string): AttemptProblem[] {
  const scanners = (Array.isArray(matcher) ? matcher : [matcher]).map((m) => scannerFor(m, cwd));
  const out: AttemptProblem[] = [];
  // Both line ends: output captured on Windows or from a tool that writes CRLF.
  const lines = text.split(/\r?\n/);
  for (const raw of lines) {
    if (out.length >= MAX_PROBLEMS_PER_ATTEMPT) break;
    const line = stripAnsi(raw);
    if (line.length > MAX_MATCHED_LINE_CHARS) continue;
    for (const s of scanners) s.line(line, out);
  }
  for (const s of scanners) s.end(out);
  return out.slice(0, MAX_PROBLEMS_PER_ATTEMPT);
}

// Colours from tools that colour even when not on a terminal (FORCE_COLOR, --color).
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;
function stripAnsi(s: string): string {
  return s.includes('\u001b') ? s.replace(ANSI, '') : s;
}

function scannerFor(m: BuiltInMatcherName | PatternMatcherInput, cwd: string): LineScanner {
  switch (m) {
    case '$tsc':
      return patternScanner(TSC, cwd);
    case '$eslint-compact':
      return patternScanner(ESLINT_COMPACT, cwd);
    case '$gcc':
      return patternScanner(GCC, cwd);
    case '$go':
      return patternScanner(GO, cwd);
    case '$eslint-stylish':
      return stylishScanner(cwd);
    case '$python':
      return pythonScanner(cwd);
    default:
      return patternScanner(m, cwd);
  }
}

function patternScanner(m: PatternMatcherInput, cwd: string): LineScanner {
  const re = new RegExp(m.pattern.regexp);
  const p = m.pattern;
  const base = baseFolder(m.fileLocation, cwd);
  const group = (match: RegExpExecArray, n: number | undefined): string | undefined => (n === undefined ? undefined : match[n]);
  return {
    line(text, out) {
      const match = re.exec(text);
      if (!match) return;
      const line = Number(group(match, p.line));
      if (!Number.isInteger(line) || line < 1) return;
      const file = group(match, p.file ?? 1);
      if (!file) return;
      const column = Number(group(match, p.column));
      out.push({
        file: resolveFile(base, file.trim()),
        line,
        column: Number.isInteger(column) && column >= 1 ? column : null,
        severity: severityOf(group(match, p.severity), m.severity ?? 'error'),
        message: (group(match, p.message ?? 0) ?? text).trim(),
        code: group(match, p.code) || null,
      });
    },
    end() {},
  };
}

function stylishScanner(cwd: string): LineScanner {
  let file: string | undefined;
  return {
    line(text, out) {
      const problem = STYLISH_PROBLEM.exec(text);
      if (problem && file) {
        out.push({
          file,
          line: Number(problem[1]),
          column: Number(problem[2]) || null,
          severity: severityOf(problem[3], 'error'),
          message: problem[4].trim(),
          code: problem[5] ?? null,
        });
        return;
      }
      if (text.trim() === '' || STYLISH_SUMMARY.test(text)) {
        file = undefined;
        return;
      }
      const f = STYLISH_FILE.exec(text);
      // Only a path starts a file's block (eslint prints absolute paths; relative when configured).
      if (f && (path.isAbsolute(f[1]) || f[1].startsWith('.') || /[\\/]/.test(f[1]))) file = resolveFile(cwd, f[1].trim());
    },
    end() {},
  };
}

function pythonScanner(cwd: string): LineScanner {
  let frame: { file: string; line: number } | undefined;
  // Lines since the last frame: its source line, maybe a caret line, then the exception.
  let after = 0;
  return {
    line(text, out) {
      const f = PY_FRAME.exec(text);
      if (f) {
        frame = { file: resolveFile(cwd, f[1]), line: Number(f[2]) };
        after = 0;
        return;
      }
      if (!frame) return;
      after++;
      if (PY_MARKERS.test(text)) return;
      const isIndented = /^\s/.test(text);
      const ex = isIndented ? null : PY_EXCEPTION.exec(text);
      if (ex) {
        out.push({ file: frame.file, line: frame.line, column: null, severity: 'error', message: text.trim(), code: ex[1] });
        frame = undefined;
      } else if (!isIndented || after > 3) {
        // Something else (a chained traceback's "During handling…", program output): not this frame's.
        frame = undefined;
      }
    },
    end() {},
  };
}

function baseFolder(fileLocation: PatternMatcherInput['fileLocation'], cwd: string): string {
  if (Array.isArray(fileLocation) && fileLocation[1]) return path.resolve(cwd, fileLocation[1]);
  return cwd;
}

/**
 * The file as an absolute path. Relative paths are taken from the item's cwd (or the matcher's
 * folder); an absolute path, which "absolute" promises and compilers often print, stays as it is.
 */
function resolveFile(base: string, file: string): string {
  return path.resolve(base, file);
}

function severityOf(word: string | undefined, fallback: ProblemSeverity): ProblemSeverity {
  const w = word?.toLowerCase();
  if (w === undefined) return fallback;
  if (w.startsWith('err') || w === 'fatal' || w === 'e') return 'error';
  if (w.startsWith('warn') || w === 'w') return 'warning';
  if (w.startsWith('info') || w === 'note' || w === 'hint' || w === 'i') return 'info';
  return fallback;
}
