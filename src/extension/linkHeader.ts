// The API pages /logs and /items with a `Link: <url>; rel="next"` header (RFC 8288). No `vscode`
// here, so the dashboard's paging can be tested in plain Node.

/** The target of a `Link` header's `rel="next"` entry, as the API writes it (`<url>; rel="next"`). */
export function nextLink(header: string | null): string | undefined {
  if (!header) return undefined;
  // Targets are matched whole, not split on ',': a URL may contain one.
  for (const m of header.matchAll(/<([^>]*)>\s*;\s*rel="?([^";,]*)"?/g)) {
    if (m[2].toLowerCase() === 'next') return m[1];
  }
  return undefined;
}
