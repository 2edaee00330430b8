/**
 * DNS rebinding refusal for the open (token-less) dashboard. A page on
 * evil.example can have its name re-resolved to 127.0.0.1 and then call the
 * dashboard from its own origin: the browser sends `Host: evil.example`, and
 * Origin matches it, so the same-site check (origin.ts) passes. Without a
 * token nothing else stands in the way, so an open dashboard answers only
 * requests whose Host names this machine (`localhost`, 127.0.0.0/8, `[::1]`)
 * or a name the operator listed in `dashboard.allowedHosts`.
 *
 * With a token, any Host is served: a rebound page has neither the token nor
 * the session cookie (cookies belong to the name they were set for), and a
 * dashboard behind an ingress is reached by whatever name the ingress has.
 */

/** The host name of a Host header (lower case, IPv6 in brackets), or null when unreadable. */
export function hostName(header: string | undefined): string | null {
  if (!header || /[\s/\\?#@]/.test(header)) return null;
  try {
    const name = new URL(`http://${header}`).hostname.toLowerCase();
    return name === '' ? null : name;
  } catch {
    return null;
  }
}

/** Whether a host name is this machine by itself, without DNS: localhost, 127.0.0.0/8, [::1]. */
export function isLoopbackName(name: string): boolean {
  return name === 'localhost' || name === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/**
 * The check for an open dashboard: null when a request with this Host header
 * may be served, otherwise why not. `allowed` are extra host names (no port),
 * compared case-insensitively.
 */
export function refuseHost(header: string | undefined, allowed: readonly string[]): string | null {
  const name = hostName(header);
  if (name === null) return 'missing or unreadable Host';
  if (isLoopbackName(name)) return null;
  const bare = name.replace(/^\[|\]$/g, '');
  if (allowed.some((a) => a.toLowerCase().replace(/^\[|\]$/g, '') === bare)) return null;
  return `host ${name} is not allowed`;
}
