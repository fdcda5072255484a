// Where a queue-file entry is in the file's text, for a diagnostic: the engine names an entry by
// its index (a .json array's element, 0 for a single object) or its line (.jsonl), and maybe a
// top-level field of it. No `vscode` import: offsets only, so the unit tests run it in Node.
//
// A small scanner rather than a JSON parser with offsets: the engine read this file with
// JSON.parse, so it is valid JSON when an entry was rejected; only strings (with their escapes)
// and nesting need tracking. On text that changed since (no such entry any more) it answers
// undefined and the caller falls back to the start of the file.

export interface OffsetRange {
  start: number;
  end: number;
}

/** The range of entry `entry` (null: the file as a whole), narrowed to `field`'s name when found. */
export function entryRange(text: string, jsonLines: boolean, entry: number | null, field?: string): OffsetRange | undefined {
  if (entry === null) return undefined;
  const whole = jsonLines ? lineRange(text, entry) : elementRange(text, entry);
  if (!whole) return undefined;
  return (field !== undefined && propertyNameRange(text, whole, field)) || whole;
}

/** Line `line` (0-based), without its surrounding whitespace. */
function lineRange(text: string, line: number): OffsetRange | undefined {
  let start = 0;
  for (let i = 0; i < line; i++) {
    const nl = text.indexOf('\n', start);
    if (nl < 0) return undefined;
    start = nl + 1;
  }
  let end = text.indexOf('\n', start);
  if (end < 0) end = text.length;
  return trim(text, start, end);
}

/** The `index`-th element of a top-level array, or the top-level value itself when it is not an array and index is 0. */
function elementRange(text: string, index: number): OffsetRange | undefined {
  let i = skipSpace(text, text.charCodeAt(0) === 0xfeff ? 1 : 0);
  if (text[i] !== '[') {
    if (index !== 0 || i >= text.length) return undefined;
    return trim(text, i, text.length);
  }
  i++;
  for (let n = 0; ; n++) {
    i = skipSpace(text, i);
    if (i >= text.length || text[i] === ']') return undefined;
    const end = valueEnd(text, i);
    if (n === index) return { start: i, end };
    i = skipSpace(text, end);
    if (text[i] !== ',') return undefined;
    i++;
  }
}

/** The name (with its quotes) of the top-level property `name` of the object in `within`. */
function propertyNameRange(text: string, within: OffsetRange, name: string): OffsetRange | undefined {
  let i = within.start;
  if (text[i] !== '{') return undefined;
  i++;
  while (i < within.end) {
    i = skipSpace(text, i);
    if (text[i] !== '"') return undefined;
    const keyEnd = stringEnd(text, i);
    let key: unknown;
    try {
      key = JSON.parse(text.slice(i, keyEnd));
    } catch {
      return undefined;
    }
    if (key === name) return { start: i, end: keyEnd };
    i = skipSpace(text, keyEnd);
    if (text[i] !== ':') return undefined;
    i = valueEnd(text, skipSpace(text, i + 1));
    i = skipSpace(text, i);
    if (text[i] !== ',') return undefined;
    i++;
  }
  return undefined;
}

/** Offset just after the JSON value starting at `i`. */
function valueEnd(text: string, i: number): number {
  if (text[i] === '"') return stringEnd(text, i);
  if (text[i] === '{' || text[i] === '[') {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const c = text[j];
      if (c === '"') {
        j = stringEnd(text, j) - 1;
      } else if (c === '{' || c === '[') {
        depth++;
      } else if (c === '}' || c === ']') {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return text.length;
  }
  // A number, true, false or null: up to the next delimiter.
  let j = i;
  while (j < text.length && !/[\s,\]}]/.test(text[j])) j++;
  return j;
}

/** Offset just after the string whose opening quote is at `i`. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === '\\') j++;
    else if (text[j] === '"') return j + 1;
  }
  return text.length;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && /\s/.test(text[i])) i++;
  return i;
}

function trim(text: string, start: number, end: number): OffsetRange {
  while (start < end && /\s/.test(text[start])) start++;
  while (end > start && /\s/.test(text[end - 1])) end--;
  return { start, end };
}

/** One entry of a queue file as the engine numbers it: a .jsonl line (0-based) or a .json array index (0 for a single object). */
export interface EntrySpan extends OffsetRange {
  index: number;
}

/**
 * Every entry's range in one pass (the CodeLens asks for all of them at once; entryRange per
 * entry would read a 10,000-line file 10,000 times). Blank .jsonl lines are no entry, as for the
 * engine. A .json file that is not an array is one entry, index 0.
 */
export function entryRanges(text: string, jsonLines: boolean): EntrySpan[] {
  const spans: EntrySpan[] = [];
  if (jsonLines) {
    let start = 0;
    for (let index = 0; start <= text.length; index++) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      const r = trim(text, start, end);
      if (r.end > r.start) spans.push({ index, ...r });
      start = end + 1;
    }
    return spans;
  }
  let i = skipSpace(text, text.charCodeAt(0) === 0xfeff ? 1 : 0);
  if (i >= text.length) return spans;
  if (text[i] !== '[') return [{ index: 0, ...trim(text, i, text.length) }];
  i++;
  for (let index = 0; ; index++) {
    i = skipSpace(text, i);
    if (i >= text.length || text[i] === ']') return spans;
    const end = valueEnd(text, i);
    spans.push({ index, start: i, end });
    i = skipSpace(text, end);
    if (text[i] !== ',') return spans;
    i++;
  }
}
