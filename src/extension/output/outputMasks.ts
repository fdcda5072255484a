// What Compare Output with Last Success hides on both sides: the parts of a line that differ from
// run to run without anything having changed (timestamps, durations). No `vscode` here, so the
// unit tests run it as it is.

/** What a masked match becomes: the same on both sides, so the diff editor does not mark it. */
export const MASK = '…';

export interface CompiledMasks {
  regexps: RegExp[];
  /** The patterns that are not valid regular expressions, with why: skipped. */
  invalid: { pattern: string; error: string }[];
}

export function compileMasks(patterns: readonly string[]): CompiledMasks {
  const regexps: RegExp[] = [];
  const invalid: CompiledMasks['invalid'] = [];
  for (const pattern of patterns) {
    if (pattern === '') continue; // would match everywhere and mask nothing
    try {
      regexps.push(new RegExp(pattern, 'gu'));
    } catch (err) {
      invalid.push({ pattern, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return { regexps, invalid };
}

/** `text` with every match of every mask replaced by MASK, the masks applied in order. */
export function maskOutput(text: string, regexps: readonly RegExp[]): string {
  let out = text;
  for (const re of regexps) out = out.replace(re, (m) => (m === '' ? m : MASK));
  return out;
}
