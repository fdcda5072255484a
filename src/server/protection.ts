// Request protection (Host, Origin, token), as plain functions run before any routing: they are on
// the hot path of every request, so they do a few string/Set lookups and allocate nothing on success.
//
// - Host allow-list: a web page cannot reach us through DNS rebinding, because its requests carry
//   the attacker's host name, never 127.0.0.1 / localhost / [::1].
// - Origin: browsers send Origin on cross-origin requests; anything but our own origin is refused,
//   and no CORS headers are ever sent, so other pages cannot read responses either.
// - Bearer token (optional): compared in constant time so response timing does not leak it.
// - Control token (optional): a second token, accepted wherever the configured one is, and the only
//   key to control when no token is configured (reads stay open then). The engine host makes it up
//   and tells it only to the windows that attach with its private control secret, which hand it to
//   their integrated terminals; everyone else meets a read-only API, as before.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { HttpError } from './respond';

export interface Guard {
  /** Undefined when the request may proceed, else the error to answer with. */
  check(req: IncomingMessage): HttpError | undefined;
  /**
   * Whether this request may control the engine (POST, DELETE): with a configured token (check()
   * has verified it), or carrying the control token.
   */
  mayControl(req: IncomingMessage): boolean;
}

/** True for host names that only ever reach this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h === '::1') return true;
  // 127.0.0.0/8 is loopback; isIP guards against names such as "127.0.0.1.example.com".
  return isIP(h) === 4 && h.startsWith('127.');
}

/** `host:port` as it appears in a Host header or URL (IPv6 literals in brackets). */
export function hostWithPort(host: string, port: number): string {
  // Only an IPv6 literal has a colon (names and IPv4 addresses cannot). Not isIP(): its first IPv6
  // check compiles Node's IPv6 pattern, ~5-10 ms of the engine host's start for this one answer.
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * The Host header values the server answers to: the loopback names, the bound address, and, when
 * bound to every interface (0.0.0.0 / ::, which requires a token), the machine's own addresses and
 * host name, so that remote clients using any of them get through. `extraHosts` adds names a
 * reverse proxy or DNS gives the machine (`--allowed-host`).
 */
export function allowedHostHeaders(boundHost: string, port: number, extraHosts: readonly string[] = []): string[] {
  const names = ['127.0.0.1', 'localhost', '::1', boundHost, ...extraHosts];
  if (boundHost === '0.0.0.0' || boundHost === '::') {
    names.push(hostname());
    for (const addresses of Object.values(networkInterfaces())) {
      for (const a of addresses ?? []) names.push(a.address);
    }
  }
  return [...new Set(names.map((n) => hostWithPort(n.replace(/^\[|\]$/g, ''), port).toLowerCase()))];
}

const UNAUTHORIZED_HEADERS = { 'WWW-Authenticate': 'Bearer realm="engine-monitor"' };

export function createGuard(options: {
  boundHost: string;
  port: number;
  token?: string;
  controlToken?: string;
  allowedHosts?: readonly string[];
}): Guard {
  const hosts = new Set(allowedHostHeaders(options.boundHost, options.port, options.allowedHosts));
  // A browser page served by this server would send Origin http://<one of the allowed hosts>.
  const origins = new Set([...hosts].map((h) => `http://${h}`));
  const hostList = [...hosts].join(', ');
  // Hash both sides to a fixed length so timingSafeEqual can compare tokens of any length.
  const tokenDigest = options.token ? digest(options.token) : undefined;
  const controlDigest = options.controlToken ? digest(options.controlToken) : undefined;
  const bearer = (req: IncomingMessage): Buffer | undefined => {
    const auth = req.headers.authorization;
    const match = auth === undefined ? null : /^Bearer[ ]+(\S+)[ ]*$/i.exec(auth);
    return match ? digest(match[1]) : undefined;
  };
  const isControlToken = (given: Buffer | undefined) => given !== undefined && controlDigest !== undefined && timingSafeEqual(given, controlDigest);

  return {
    mayControl(req) {
      return tokenDigest !== undefined || isControlToken(bearer(req));
    },
    check(req) {
      const host = req.headers.host;
      if (host === undefined || !(hosts.has(host) || hosts.has(host.toLowerCase()))) {
        return new HttpError(
          403,
          'forbidden_host',
          `Host header ${host === undefined ? 'is missing' : JSON.stringify(host) + ' is not allowed'}; use one of: ${hostList}.`,
        );
      }
      const origin = req.headers.origin;
      if (origin !== undefined && !origins.has(origin.toLowerCase())) {
        return new HttpError(
          403,
          'forbidden_origin',
          `Origin ${JSON.stringify(origin)} is not allowed: only this server's own origin may call it (no CORS).`,
        );
      }
      if (tokenDigest) {
        const auth = req.headers.authorization;
        if (auth === undefined) {
          return new HttpError(401, 'unauthorized', 'Missing Authorization header; send "Authorization: Bearer <token>".', UNAUTHORIZED_HEADERS);
        }
        const given = bearer(req);
        if (!given || !(timingSafeEqual(given, tokenDigest) || isControlToken(given))) {
          return new HttpError(401, 'unauthorized', 'Wrong token; send "Authorization: Bearer <token>" with the configured token.', UNAUTHORIZED_HEADERS);
        }
      }
      return undefined;
    },
  };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
