/**
 * Cross-site request refusal for state-changing requests: the request's Origin
 * (or, when a browser sent none, its Referer) must name the host the request was
 * sent to. A request with neither is refused: every browser sends one of them on
 * a same-site form POST (the dashboard sets Referrer-Policy: same-origin), so
 * only a forged or stripped request lacks both. `Origin: null` (sandboxed frames,
 * some redirects) is refused too.
 */

export interface OriginHeaders {
  origin?: string;
  referer?: string;
  host?: string;
  forwardedHost?: string;
}

/** Null when the request may change state; otherwise why not. */
export function refuseCrossSite(h: OriginHeaders): string | null {
  const source = h.origin ?? h.referer;
  if (!source) return 'missing Origin and Referer';
  let sourceHost: string;
  try {
    sourceHost = new URL(source).host.toLowerCase();
  } catch {
    return 'unreadable Origin';
  }
  if (!sourceHost) return 'opaque Origin';
  // Behind a proxy the browser's host may arrive as X-Forwarded-Host; a browser cannot set that header itself.
  const targets = [h.host, ...(h.forwardedHost?.split(',') ?? [])]
    .filter((t): t is string => !!t)
    .map((t) => t.trim().toLowerCase());
  return targets.includes(sourceHost) ? null : `cross-site request from ${sourceHost}`;
}
