// Add Item…'s optional fields: what each step asks, and how an answer becomes the field's value in
// the queue file. No `vscode` import, so the unit tests run it in Node; whether the value is valid
// is the engine's to say (the command asks it through the host's `checkItem`).
import { ENGINE_MATCHERS, watchInput } from '../tasks/taskItem';

/** The fields offered after the name and the command line, in the order their steps come. */
export const EXTRA_FIELDS = ['schedule', 'dependsOn', 'priority', 'problemMatcher', 'service', 'watch'] as const;
export type ExtraField = (typeof EXTRA_FIELDS)[number];

export const EXTRA_FIELD_LABELS: Record<ExtraField, { label: string; description: string }> = {
  schedule: { label: 'Schedule', description: 'run on a cron schedule (the item becomes a template)' },
  dependsOn: { label: 'Depends on', description: 'start only after other items have launched' },
  priority: { label: 'Priority', description: '−100 … 100: among due items, higher first' },
  problemMatcher: { label: 'Problem matcher', description: 'turn its output into problems ($tsc, $gcc, …)' },
  service: { label: 'Service readiness', description: 'a long-running process, ready when a port, URL, line or command says so' },
  watch: { label: 'Watch', description: 'run when files change (the item becomes a template)' },
};

/** Fields that cannot go together in one item: a schedule and a watch are two kinds of template. */
export function conflictingFields(picked: readonly ExtraField[]): string | undefined {
  return picked.includes('schedule') && picked.includes('watch')
    ? 'Schedule and Watch cannot go together: an item runs on a schedule or when files change. Untick one.'
    : undefined;
}

/** An answer read: the field's value, or what is wrong with the text (before the engine judges it). */
export type Parsed<T> = { value: T } | { problem: string };

/** `0 2 * * *`, or the same followed by an IANA zone: `0 2 * * * Europe/Berlin`. */
export function parseSchedule(text: string): Parsed<string | { cron: string; timezone: string }> {
  const fields = text.trim().split(/\s+/).filter(Boolean);
  if (fields.length === 5) return { value: fields.join(' ') };
  if (fields.length === 6) return { value: { cron: fields.slice(0, 5).join(' '), timezone: fields[5] } };
  return {
    problem: `A cron expression has 5 fields (minute hour day-of-month month day-of-week), e.g. "0 2 * * *", optionally followed by a time zone ("0 2 * * * Europe/Berlin"); this has ${fields.length}.`,
  };
}

/** Item ids separated by commas or spaces. */
export function parseDependsOn(text: string): Parsed<string[]> {
  const ids = text.split(/[\s,]+/).filter(Boolean);
  if (ids.length === 0) return { problem: 'Enter the id of at least one item, e.g. build-web (several separated by commas).' };
  return { value: [...new Set(ids)] };
}

export function parsePriority(text: string): Parsed<number> {
  const t = text.trim().replace(/^[−–]/, '-');
  if (!/^[+-]?\d{1,4}$/.test(t)) return { problem: 'Enter a whole number from -100 to 100 (higher launches first; 0 is the default).' };
  return { value: Number(t) };
}

export function parseWatch(text: string): Parsed<{ paths: string[] }> {
  const read = watchInput(text);
  return 'problem' in read ? read : { value: { paths: read.paths } };
}

/** The problem matchers the engine knows by name, with what each reads. */
export const MATCHER_CHOICES: ReadonlyArray<{ name: (typeof ENGINE_MATCHERS)[number]; description: string }> = [
  { name: '$tsc', description: 'TypeScript: src/a.ts(4,9): error TS2322: …' },
  { name: '$eslint-stylish', description: 'ESLint’s default format' },
  { name: '$eslint-compact', description: 'ESLint’s compact format' },
  { name: '$gcc', description: 'gcc, g++ and clang' },
  { name: '$go', description: 'go build and go vet' },
  { name: '$python', description: 'a Python traceback or SyntaxError' },
];

/** How a service tells it is ready: the queue file's `ready` probes, or none (ready after 1 s running). */
export const READY_KINDS = ['port', 'http', 'logPattern', 'command', 'none'] as const;
export type ReadyKind = (typeof READY_KINDS)[number];

export const READY_CHOICES: Record<ReadyKind, { label: string; prompt: string; placeHolder: string }> = {
  port: { label: 'A port accepts connections', prompt: 'The TCP port, optionally after a host (host:port)', placeHolder: 'e.g. 3000 or 127.0.0.1:5432' },
  http: { label: 'A URL answers 2xx', prompt: 'The http:// or https:// URL to GET', placeHolder: 'e.g. http://127.0.0.1:3000/health' },
  logPattern: { label: 'A line of its output matches', prompt: 'A regular expression a line of its output matches once it is ready', placeHolder: 'e.g. listening on' },
  command: { label: 'A command exits 0', prompt: 'A shell command line, run in the item’s folder, that exits 0 once it is ready', placeHolder: 'e.g. pg_isready -h 127.0.0.1' },
  none: { label: 'Once it has run 1 s', prompt: '', placeHolder: '' },
};

export type ReadyValue = { port: number; host?: string } | { http: string } | { logPattern: string } | { command: string };

export function parseReady(kind: Exclude<ReadyKind, 'none'>, text: string): Parsed<ReadyValue> {
  const t = text.trim();
  if (!t) return { problem: `Enter ${READY_CHOICES[kind].prompt.charAt(0).toLowerCase()}${READY_CHOICES[kind].prompt.slice(1)}.` };
  switch (kind) {
    case 'port': {
      const m = /^(?:(.+):)?(\d{1,5})$/.exec(t);
      if (!m) return { problem: 'Enter a port number (1 … 65535), optionally after a host: 3000 or 127.0.0.1:3000.' };
      return { value: m[1] ? { port: Number(m[2]), host: m[1] } : { port: Number(m[2]) } };
    }
    case 'http':
      return { value: { http: t } };
    case 'logPattern':
      return { value: { logPattern: text } };
    case 'command':
      return { value: { command: t } };
  }
}
