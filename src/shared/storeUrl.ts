// The PostgreSQL store's URL as the extension's setting gives it. Apart
// from the VS Code API, so the host launch (and its plain-Node tests) can check it too.

/**
 * `engineMonitor.store.url` checked: undefined when empty (the embedded database), an
 * error message when it is not a postgres:// URL or carries a password, which a settings file (plain
 * text, often committed) must never hold.
 */
export function parseStoreUrl(value: string): { url?: string; error?: string } {
  if (!value) return {};
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return { error: `engineMonitor.store.url is not a URL: ${JSON.stringify(value)}. Expected postgres://user@host:5432/database.` };
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    return { error: `engineMonitor.store.url must start with postgres:// (it starts with ${u.protocol}//). Expected postgres://user@host:5432/database.` };
  }
  if (u.password || secretParams(u).length > 0) {
    // The value itself is not repeated: it holds the password.
    return { error: 'engineMonitor.store.url contains a password. Remove it from the setting and set it with "Engine Monitor: Set Store Password…" (kept in VS Code\'s secret storage), or put it in ~/.pgpass.' };
  }
  return { url: value };
}

/**
 * Query parameters that carry a secret. node-postgres reads every parameter of the URL as a
 * connection option, so `?password=` and `?sslpassword=` work as well as `user:pw@`: any name
 * with "pass" in it is treated as one.
 */
function secretParams(u: URL): string[] {
  return [...u.searchParams.keys()].filter((k) => /pass/i.test(k));
}

/** The URL with every password replaced: what ps, /status, logs and errors may show. */
export function redactStoreUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const key of secretParams(u)) u.searchParams.set(key, '***');
    return u.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}
