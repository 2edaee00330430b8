/**
 * SQL text names the schema `jobvisor`. When another schema is configured, the
 * identifier is replaced once, when statements are prepared, never per query.
 */

const SCHEMA_TOKEN = /\bjobvisor\.(?=[a-z_"])/g;
const SCHEMA_DECL = /\bSCHEMA IF NOT EXISTS jobvisor\b/g;

export function qualify(sql: string, schema: string): string {
  if (schema === 'jobvisor') return sql;
  return sql.replace(SCHEMA_TOKEN, `${schema}.`).replace(SCHEMA_DECL, `SCHEMA IF NOT EXISTS ${schema}`);
}
