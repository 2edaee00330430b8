/**
 * What counts as a secret, stated once, for every place that shows data:
 * jobvisor's logs and a task's ctx.log (log.ts), the errors a task's failure
 * records (worker/entry.ts), and the dashboard (its `dashboard.redact` default).
 *
 * A value is hidden when its key names a secret: SECRET_KEYS, compared
 * without case, at any depth, inside arrays too, each name also written
 * without its underscores or with hyphens (`api_key`, `apiKey`, `api-key`).
 * The names are those of credentials themselves (a password, a token, a
 * key, a cookie or an Authorization header), not of fields that merely may
 * hold one: a `url` is shown with its password and secret query parameters
 * removed (`postgres://app:[redacted]@db:5432/app`), since the host and
 * database it names are what an operator needs to read.
 */

export const SECRET_KEYS = [
  'password',
  'passwd',
  'passphrase',
  'secret',
  'client_secret',
  'token',
  'access_token',
  'refresh_token',
  'api_key',
  'x_api_key',
  'private_key',
  'authorization',
  'proxy_authorization',
  'cookie',
  'set_cookie',
] as const;

export const REDACTED = '[redacted]';

/** The lower-case key names that `names` hide: each as given, without `_`, and with `-` for `_`. */
export function secretKeyNames(names: readonly string[]): string[] {
  const out = new Set<string>();
  for (const name of names) {
    const lower = name.toLowerCase();
    out.add(lower);
    out.add(lower.replaceAll('_', ''));
    out.add(lower.replaceAll('_', '-'));
  }
  return [...out];
}

const SECRET_NAMES = new Set(secretKeyNames(SECRET_KEYS));

/** Whether a key (an object's, a query parameter's) names a secret of SECRET_KEYS. */
export function isSecretKey(key: string): boolean {
  return SECRET_NAMES.has(key.toLowerCase());
}

/** Deeper than this, a value is replaced whole: never walked, never shown. */
const MAX_DEPTH = 1000;

/**
 * `value` with every value under a secret key replaced by "[redacted]" and
 * every URL's credentials removed (redactUrls), at any depth; what JSON
 * would print of it (a toJSON() result, own enumerable keys). Copies only the
 * objects on the way to what it changes: a value with nothing to hide comes
 * back as it is. Never throws; cycles are kept as they are (the logger prints
 * them as "[Circular]").
 */
export function redactSecrets(value: unknown): unknown {
  return walk(value, 0, new Set());
}

function walk(value: unknown, depth: number, path: Set<object>): unknown {
  if (typeof value === 'string') return redactUrls(value);
  if (typeof value !== 'object' || value === null || path.has(value)) return value;
  if (depth > MAX_DEPTH) return REDACTED;
  let shown: unknown = value;
  try {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') {
      shown = toJSON.call(value, '');
      if (typeof shown !== 'object' || shown === null) return walk(shown, depth, path);
    }
  } catch {
    return value;
  }
  path.add(value);
  try {
    return Array.isArray(shown)
      ? walkArray(shown, value, depth, path)
      : walkObject(shown as object, value, depth, path);
  } catch {
    // A getter or a Proxy that throws: what cannot be read is not printed either.
    return REDACTED;
  } finally {
    path.delete(value);
  }
}

function walkArray(items: unknown[], original: unknown, depth: number, path: Set<object>): unknown {
  let out: unknown[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const next = walk(items[i], depth + 1, path);
    if (next !== items[i]) (out ??= [...items])[i] = next;
  }
  return out ?? (items === original ? original : items);
}

function walkObject(obj: object, original: unknown, depth: number, path: Set<object>): unknown {
  let out: Record<string, unknown> | undefined;
  const keys = Object.keys(obj);
  for (const key of keys) {
    const item = (obj as Record<string, unknown>)[key];
    const next = isSecretKey(key) && item !== undefined && item !== null ? REDACTED : walk(item, depth + 1, path);
    if (next === item) continue;
    if (!out) {
      out = {};
      for (const k of keys) define(out, k, (obj as Record<string, unknown>)[k]);
    }
    define(out, key, next);
  }
  return out ?? (obj === original ? original : obj);
}

/** A data property, also for the key "__proto__". */
function define(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** scheme://user:password@ — the userinfo of a URL; a password holds no `/`, `?`, `#` or `@` unescaped. */
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/[^/?#@\s:]*):[^/?#@\s]*@/gi;
/** A query parameter: its name and value. */
const QUERY_PARAM = /([?&])([^=&#\s]+)=([^&#\s"']*)/g;

/**
 * `text` with the password of every URL in it removed (`postgres://app:[redacted]@db/app`)
 * and the value of every query parameter named in SECRET_KEYS hidden (`?token=[redacted]`).
 * Also a libpq-style `password=…`.
 */
export function redactUrls(text: string): string {
  if (!text.includes('=') && !text.includes('@')) return text;
  let out = text.includes('@') ? text.replace(USERINFO, `$1:${REDACTED}@`) : text;
  if (out.includes('=')) {
    out = out.replace(QUERY_PARAM, (all, sep: string, name: string) =>
      isSecretKey(decodeName(name)) ? `${sep}${name}=${REDACTED}` : all,
    );
    out = out.replace(/\b(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'"&]+)/gi, `$1${REDACTED}`);
  }
  return out;
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * The texts a value holds under a secret key (SECRET_KEYS, or those `isSecret`
 * names), anywhere in it (strings, and numbers as written): what an error
 * message must not quote. Values shorter
 * than 4 characters are left out: hiding every "1" or "abc" in a message
 * would garble it and protect nothing.
 */
export function secretValues(value: unknown, isSecret: (key: string) => boolean = isSecretKey): string[] {
  const found = new Set<string>();
  const stack: Array<{ v: unknown; secret: boolean }> = [{ v: value, secret: false }];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const { v, secret } = stack.pop() as { v: unknown; secret: boolean };
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint') {
      const text = String(v);
      if (secret && text.length >= 4) found.add(text);
    } else if (typeof v === 'object' && v !== null && !seen.has(v)) {
      seen.add(v);
      if (Array.isArray(v)) for (const item of v) stack.push({ v: item, secret });
      else
        for (const [k, item] of Object.entries(v as Record<string, unknown>))
          stack.push({ v: item, secret: secret || isSecret(k) });
    }
  }
  // Longest first, so a secret that contains another is hidden whole.
  return [...found].sort((a, b) => b.length - a.length);
}

/** `text` with each of `secrets` (secretValues) replaced by "[redacted]", and URLs' credentials removed. */
export function redactText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.replaceAll(s, REDACTED);
  return redactUrls(out);
}
