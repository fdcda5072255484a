// Human output of the client: tables that fit the terminal, colours only where they help. On a
// terminal, a table is as wide as `columns` (long cells cut with "…"); into a pipe or a file,
// nothing is cut and nothing is coloured, so `grep` and `awk` see whole values. NO_COLOR (any
// value, https://no-color.org) turns colours off on a terminal too. Every engine string goes
// through escapeControls first: an item named "\x1b[2J" or "a\nb" prints as those characters and
// cannot clear the screen or forge a row.
import { escapeControls } from '../../shared/format';

export interface Terminal {
  /** Table width to fit, or undefined: no limit (not a terminal). */
  columns: number | undefined;
  colour: boolean;
}

export function detectTerminal(stream: NodeJS.WriteStream = process.stdout, env: NodeJS.ProcessEnv = process.env): Terminal {
  const tty = stream.isTTY === true;
  return {
    columns: tty ? Math.max(20, stream.columns || 80) : undefined,
    colour: tty && env.NO_COLOR === undefined,
  };
}

export type Colour = 'red' | 'green' | 'yellow' | 'blue' | 'dim' | 'bold' | 'cyan';
const SGR: Record<Colour, [string, string]> = {
  red: ['\x1b[31m', '\x1b[39m'],
  green: ['\x1b[32m', '\x1b[39m'],
  yellow: ['\x1b[33m', '\x1b[39m'],
  blue: ['\x1b[34m', '\x1b[39m'],
  cyan: ['\x1b[36m', '\x1b[39m'],
  dim: ['\x1b[2m', '\x1b[22m'],
  bold: ['\x1b[1m', '\x1b[22m'],
};

/** A cell: engine text (escaped when rendered) and, optionally, its colour. */
export interface Cell {
  text: string;
  colour?: Colour;
}
export type CellInput = string | number | null | undefined | Cell;

export interface Column {
  header: string;
  /** Cut this column first when the table is too wide (the free-text ones: name, message, error). */
  flexible?: boolean;
  /** Numbers read better right-aligned. */
  align?: 'right';
}

const SEP = '  ';

export function cell(text: CellInput, colour?: Colour): Cell {
  if (text !== null && typeof text === 'object') return text;
  return { text: text === null || text === undefined ? '-' : String(text), colour };
}

export function paint(term: Terminal, text: string, colour: Colour | undefined): string {
  if (!colour || !term.colour) return text;
  const [on, off] = SGR[colour];
  return `${on}${text}${off}`;
}

/** Cuts `text` to `width` characters, the last being "…" when anything was cut. */
export function truncate(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  if (width <= 0) return '';
  return `${chars.slice(0, width - 1).join('')}…`;
}

const width = (s: string): number => [...s].length;

/**
 * Rows under a header, columns two spaces apart. When a terminal width is known and the table is
 * wider, the flexible columns shrink (widest first, down to 8 characters), then the last columns.
 */
export function table(term: Terminal, columns: Column[], rows: CellInput[][]): string {
  const cells = rows.map((r) => columns.map((_, i) => {
    const c = cell(r[i]);
    return { text: escapeControls(c.text), colour: c.colour };
  }));
  const widths = columns.map((c, i) => Math.max(width(c.header), ...cells.map((r) => width(r[i].text))));
  if (term.columns !== undefined) fit(widths, columns, term.columns);
  const line = (texts: { text: string; colour?: Colour }[], last: boolean) =>
    texts
      .map((c, i) => {
        const t = truncate(c.text, widths[i]);
        const pad = ' '.repeat(Math.max(0, widths[i] - width(t)));
        // The last column is not padded: no trailing blanks.
        const padded = columns[i].align === 'right' ? pad + paint(term, t, c.colour) : paint(term, t, c.colour) + (i === texts.length - 1 && last ? '' : pad);
        return padded;
      })
      .join(SEP)
      .replace(/ +$/, '');
  const header = line(
    columns.map((c) => ({ text: c.header, colour: 'bold' as const })),
    true,
  );
  return [header, ...cells.map((r) => line(r, true))].map((l) => `${l}\n`).join('');
}

function fit(widths: number[], columns: Column[], total: number): void {
  const used = () => widths.reduce((a, b) => a + b, 0) + SEP.length * (widths.length - 1);
  const MIN = 8;
  while (used() > total) {
    let widest = -1;
    for (let i = 0; i < widths.length; i++) {
      if (columns[i].flexible && widths[i] > MIN && (widest < 0 || widths[i] > widths[widest])) widest = i;
    }
    if (widest < 0) break;
    widths[widest] = Math.max(MIN, widths[widest] - (used() - total));
  }
  // Still too wide: the rightmost columns give way, down to one character each.
  for (let i = widths.length - 1; i >= 0 && used() > total; i--) {
    widths[i] = Math.max(1, widths[i] - (used() - total));
  }
}

/** `key  value` lines, keys aligned; values are engine strings (escaped) or cells. */
export function pairs(term: Terminal, entries: [string, CellInput][]): string {
  const keyWidth = Math.max(...entries.map(([k]) => width(k)));
  return entries
    .map(([k, v]) => {
      const c = cell(v);
      let text = escapeControls(c.text);
      if (term.columns !== undefined) text = truncate(text, Math.max(8, term.columns - keyWidth - SEP.length));
      return `${k.padEnd(keyWidth)}${SEP}${paint(term, text, c.colour)}\n`;
    })
    .join('');
}

export function heading(term: Terminal, text: string): string {
  return `${paint(term, escapeControls(text), 'bold')}\n`;
}
