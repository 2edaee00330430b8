/**
 * Argument parsing on node:util parseArgs, strict: an unknown option or a
 * missing value is bad usage (exit 2) with a one-line message.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { InputError, messageOf } from '../errors.ts';

export interface Parsed {
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
}

export function parse(argv: string[], options: NonNullable<ParseArgsConfig['options']>, command: string): Parsed {
  try {
    return parseArgs({
      args: joinNegativeNumbers(argv, options),
      allowPositionals: true,
      strict: true,
      options,
    }) as Parsed;
  } catch (err) {
    const message =
      messageOf(err)
        .split('\n')[0]
        ?.replace(/\. To specify a positional argument.*$/, '') ?? 'bad arguments';
    throw new InputError(`${command}: ${message}`);
  }
}

/** Options only: a stray argument is bad usage too (`jobvisor migrate foo` must not migrate). */
export function parseFlags(
  argv: string[],
  options: NonNullable<ParseArgsConfig['options']>,
  command: string,
): Parsed['values'] {
  const { values, positionals } = parse(argv, options, command);
  if (positionals.length > 0) throw new InputError(`${command}: unexpected argument ${JSON.stringify(positionals[0])}`);
  return values;
}

/** `--priority -3` reads as an option followed by another option; make it `--priority=-3`. */
function joinNegativeNumbers(argv: string[], options: NonNullable<ParseArgsConfig['options']>): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const next = argv[i + 1];
    const name = arg.startsWith('--') ? arg.slice(2) : undefined;
    if (name && options[name]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

export function integer(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value.trim())) throw new InputError(`${name} must be an integer, got ${JSON.stringify(value)}`);
  const n = Number(value);
  if (n < min || n > max) throw new InputError(`${name} must be from ${min} to ${max}, got ${value}`);
  return n;
}

export function jobIds(values: string[]): string[] {
  if (values.length === 0) throw new InputError('give at least one job id');
  return values.map((v) => {
    if (!/^\d{1,18}$/.test(v) || BigInt(v) <= 0n)
      throw new InputError(`job id must be a positive integer, got ${JSON.stringify(v)}`);
    return BigInt(v).toString();
  });
}
