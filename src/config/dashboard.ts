/**
 * The `dashboard` configuration section (`jobvisor dashboard`). Its credentials
 * are not here: they come only from the environment (JOBVISOR_DASHBOARD_TOKEN
 * or JOBVISOR_DASHBOARD_TOKEN_FILE), read by src/dashboard/token.ts.
 */
import convict from 'convict';
import { SECRET_KEYS } from '../secrets.ts';

/** Payload keys shown as `[redacted]` unless configured otherwise: the secrets' names (secrets.ts). */
export const DEFAULT_REDACT: readonly string[] = SECRET_KEYS;

function basePathFormat(value: unknown): void {
  if (typeof value !== 'string' || !/^\/([A-Za-z0-9._~-]+\/)*([A-Za-z0-9._~-]+)?$/.test(value))
    throw new Error(
      'must be a URL path starting with "/" (letters, digits, . _ ~ - between slashes), such as "/jobs-ui"',
    );
}

/** A host name or a bracketed IPv6 address, without port. */
const HOST_NAME = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$/;

/** A convict format for a list of host names: a list in files, comma-separated in the environment. */
export const HOST_LIST = 'jobvisor-host-list';
convict.addFormat({
  name: HOST_LIST,
  validate: (value: unknown) => {
    if (!Array.isArray(value) || !value.every((h) => typeof h === 'string' && HOST_NAME.test(h)))
      throw new Error('must be a list of host names without port or scheme, such as ["jobs.internal"]');
  },
  coerce: (v: unknown) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((h) => h.trim())
          .filter(Boolean)
      : v,
});

function redactFormat(value: unknown): void {
  if (!Array.isArray(value) || !value.every((k) => typeof k === 'string' && k.length > 0))
    throw new Error('must be a list of non-empty payload key names');
}

export const dashboardSchema = {
  port: {
    doc: 'Port of the dashboard (0: a free port). Separate from metrics.port, which never shows payloads.',
    format: 'port',
    default: 9465,
    env: 'DASHBOARD_PORT',
  },
  host: {
    doc: 'Address the dashboard binds. A non-loopback address needs JOBVISOR_DASHBOARD_TOKEN(_FILE).',
    format: String,
    default: '127.0.0.1',
  },
  readOnly: {
    doc: 'Refuse every action (403); pages only.',
    format: (v: unknown) => {
      if (typeof v !== 'boolean') throw new Error('must be true or false');
    },
    default: false,
  },
  basePath: {
    doc: 'Path prefix the dashboard is served under (behind an ingress), such as "/jobvisor".',
    format: basePathFormat,
    default: '/',
  },
  allowedHosts: {
    doc: 'Without a dashboard token: host names (the Host header, no port) served besides localhost, 127.0.0.1 and [::1]; any other gets 403, against DNS rebinding. With a token any host is served.',
    format: HOST_LIST,
    default: [] as string[],
    env: 'DASHBOARD_ALLOWED_HOSTS',
  },
  redact: {
    doc: 'Payload keys shown as [redacted], matched case-insensitively at any depth, each also without its underscores or with hyphens (api_key: apiKey, api-key). Default: the names of secrets that logs hide too.',
    format: redactFormat,
    default: [...DEFAULT_REDACT],
  },
};
