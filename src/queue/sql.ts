/**
 * Runtime statements are named constants written against schema `jobvisor`.
 * `prepared(name, text)` returns, per configured schema, a pg QueryConfig with a
 * stable name, so each connection parses and plans a hot statement once.
 */
import type pg from 'pg';
import { qualify } from '../db/schema.ts';
import type { Db } from '../db/pool.ts';

export type { Db };

/** Where the jobs table lives: a pg Pool/Client and the schema name. */
export interface Store {
  db: Db;
  schema: string;
}

export interface Statement {
  (schema: string): { name: string; text: string };
}

export function prepared(name: string, text: string): Statement {
  const cache = new Map<string, { name: string; text: string }>();
  return (schema) => {
    let s = cache.get(schema);
    if (!s) {
      s = { name: schema === 'jobvisor' ? `jobvisor_${name}` : `jobvisor_${name}_${schema}`, text: qualify(text, schema) };
      cache.set(schema, s);
    }
    return s;
  };
}

export async function run<R extends pg.QueryResultRow>(store: Store, statement: Statement, values: unknown[]): Promise<R[]> {
  const { name, text } = statement(store.schema);
  const result = await store.db.query<R>({ name, text, values });
  return result.rows;
}

/** `null` lets the database use its own clock (one clock for every replica); tests pin a time. */
export type Now = Date | null;
