/**
 * The dashboard's credential: JOBVISOR_DASHBOARD_TOKEN, or the file named by
 * JOBVISOR_DASHBOARD_TOKEN_FILE (a mounted secret; its trailing newline is
 * dropped). Never from a configuration file, never logged.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../errors.ts';

/** Shortest token accepted: a guessable one would make the bearer check pointless. */
export const MIN_TOKEN_LENGTH = 16;

/**
 * The configured token, or null when neither variable is set.
 * @throws ConfigError when both are set, the file cannot be read, or the token is too short.
 */
export function readDashboardToken(env: NodeJS.ProcessEnv = process.env): string | null {
  const direct = env.JOBVISOR_DASHBOARD_TOKEN;
  const file = env.JOBVISOR_DASHBOARD_TOKEN_FILE;
  if (direct && file)
    throw new ConfigError(
      'invalid configuration: set JOBVISOR_DASHBOARD_TOKEN or JOBVISOR_DASHBOARD_TOKEN_FILE, not both',
    );
  let token: string;
  if (file) {
    try {
      token = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      throw new ConfigError(
        `invalid configuration: JOBVISOR_DASHBOARD_TOKEN_FILE names ${file}, which cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  } else if (direct) token = direct;
  else return null;
  const where = file ? 'the file of JOBVISOR_DASHBOARD_TOKEN_FILE' : 'JOBVISOR_DASHBOARD_TOKEN';
  if (token.length < MIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token))
    throw new ConfigError(
      `invalid configuration: ${where} must hold a token of at least ${MIN_TOKEN_LENGTH} characters of printable ASCII without spaces (e.g. \`openssl rand -hex 32\`)`,
    );
  return token;
}
