// The index's tokens: the maximal runs of letters and digits that no letter or digit precedes, as
// wordsStartWords (src/shared/itemFilter.ts) decides "precedes".

export const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
/** ASCII letters and digits by code: the common case, without a regular expression. */
export const ASCII_LETTER_OR_DIGIT = new Uint8Array(128).map((_, c) => (/[0-9A-Za-z]/.test(String.fromCharCode(c)) ? 1 : 0));

/** Whether a letter or digit precedes `at`, exactly as wordsStartWords decides it (lone surrogates included). */
function letterOrDigitBefore(text: string, at: number): boolean {
  if (at === 0) return false;
  const code = text.charCodeAt(at - 1);
  if (code < 0x80) return ASCII_LETTER_OR_DIGIT[code] === 1;
  // The character before, whole even when it is outside the Basic Multilingual Plane.
  const before = code >= 0xdc00 && code <= 0xdfff && at >= 2 ? text.slice(at - 2, at) : text[at - 1];
  return LETTER_OR_DIGIT.test(before);
}

/**
 * Calls `fn(start, end)` for each token of `text`: each maximal run of letters and digits (whole
 * code points; a lone surrogate is neither) that no letter or digit precedes as wordsStartWords
 * sees it. (A run after a lone low surrogate that follows a letter is no token: wordsStartWords
 * reads the two as one "character before" and finds the letter in it.)
 */
export function eachToken(text: string, fn: (start: number, end: number) => void): void {
  let start = -1;
  for (let at = 0; at < text.length; ) {
    const code = text.charCodeAt(at);
    let size = 1;
    let inWord: boolean;
    if (code < 0x80) inWord = ASCII_LETTER_OR_DIGIT[code] === 1;
    else {
      const point = text.codePointAt(at) as number;
      if (point > 0xffff) size = 2;
      inWord = LETTER_OR_DIGIT.test(String.fromCodePoint(point));
    }
    if (inWord) {
      if (start < 0) start = at;
    } else if (start >= 0) {
      if (!letterOrDigitBefore(text, start)) fn(start, at);
      start = -1;
    }
    at += size;
  }
  if (start >= 0 && !letterOrDigitBefore(text, start)) fn(start, text.length);
}
