// Large JSON answers (a page of 1,000 log entries or items is 300-500 KB) written in parts rather
// than as one string. One string that size is a V8 large object, which only a full collection
// frees: under API load they piled up to 10-15 MB of the engine host's peak memory, where parts
// below the large-object size (128 KiB) die young (docs/PERFORMANCE.md).

/** Characters per part, at most about: well below V8's large-object size. */
export const JSON_PART_CHARS = 32 * 1024;

/**
 * `${prefix}[${texts.join(',')}]${suffix}` in parts of about JSON_PART_CHARS; each text is one
 * element's JSON and is never split. Concatenated, the parts are exactly that string.
 */
export function jsonArrayParts(texts: readonly string[], prefix = '', suffix = ''): string[] {
  const parts: string[] = [];
  let group: string[] = [];
  let length = 0;
  for (let i = 0; i < texts.length; i++) {
    group.push(texts[i]);
    length += texts[i].length + 1;
    if (length >= JSON_PART_CHARS && i < texts.length - 1) {
      parts.push(`${parts.length === 0 ? `${prefix}[` : ','}${group.join(',')}`);
      group = [];
      length = 0;
    }
  }
  parts.push(`${parts.length === 0 ? `${prefix}[` : ','}${group.join(',')}]${suffix}`);
  return parts;
}
