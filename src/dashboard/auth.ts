/**
 * Who may use the dashboard. With a token: a request carries it as
 * `Authorization: Bearer <token>`, or carries the session cookie that the login
 * form sets. The cookie holds HMAC-SHA256(token, "jobvisor-dashboard-session"),
 * never the token itself, so it changes when the token does (rotating the token
 * logs every browser out). Both checks compare SHA-256 digests of equal length
 * with crypto.timingSafeEqual. Without a token the dashboard is open: the server
 * (src/dashboard/server.ts) allows that on a loopback address only.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'jobvisor_dashboard';

export interface Auth {
  /** False when no token is configured (an open dashboard). */
  readonly required: boolean;
  /** Whether the Authorization header or the session cookie proves the token. */
  check(authorization: string | undefined, cookie: string | undefined): boolean;
  /** Whether a token typed into the login form is the token. */
  matches(candidate: string): boolean;
  /** The session cookie's value. */
  sessionValue(): string;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

function same(a: string, b: Buffer): boolean {
  return timingSafeEqual(digest(a), b);
}

export function createAuth(token: string | null): Auth {
  if (token === null) return { required: false, check: () => true, matches: () => true, sessionValue: () => 'open' };
  const tokenDigest = digest(token);
  const session = createHmac('sha256', token).update('jobvisor-dashboard-session').digest('hex');
  const sessionDigest = digest(session);
  return {
    required: true,
    check(authorization, cookie) {
      const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
      if (bearer !== undefined && same(bearer, tokenDigest)) return true;
      return cookie !== undefined && same(cookie, sessionDigest);
    },
    matches: (candidate) => same(candidate, tokenDigest),
    sessionValue: () => session,
  };
}
