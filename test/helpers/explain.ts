/**
 * Plans as auto_explain reports them on a connection of its own: how many
 * pages a statement read, for tests that a read stays small however large the
 * table, and what its plan computes.
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import type { Store } from '../../src/queue/sql.ts';

/**
 * Runs `fn` on a connection of its own on which auto_explain prints the plan
 * of every statement, with `settings` besides (`SET auto_explain.…`); `plans`
 * holds those plans as they come.
 */
export async function withPlans<T>(
  url: string,
  settings: string[],
  fn: (s: Store, plans: string[]) => Promise<T>,
): Promise<T> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const plans: string[] = [];
  pool.on('connect', (client) => client.on('notice', (n) => plans.push(n.message ?? '')));
  try {
    for (const setting of [
      `LOAD 'auto_explain'`,
      'SET auto_explain.log_min_duration = 0',
      'SET auto_explain.log_level = notice',
      ...settings,
    ])
      await pool.query(setting);
    return await fn({ db: pool, schema: 'jobvisor' }, plans);
  } finally {
    await pool.end();
  }
}

/**
 * What `measure` read: the shared pages (hit or read) of the top plan node of
 * the first statement whose plan matches `statement` (default: any). `warm`
 * runs first on the same connection (loading and planning what it needs),
 * unmeasured. With `nested`, the statements run inside functions are explained
 * too, and `plan` is every plan `measure` made, the nested ones first (the
 * pages are still the matching statement's, which include its functions').
 */
export async function pagesRead<T>(
  url: string,
  warm: (s: Store) => Promise<unknown>,
  measure: (s: Store) => Promise<T>,
  statement = /./,
  nested = false,
) {
  const settings = [
    'SET auto_explain.log_analyze = on',
    'SET auto_explain.log_buffers = on',
    `SET auto_explain.log_nested_statements = ${nested ? 'on' : 'off'}`,
  ];
  return withPlans(url, settings, async (s, plans) => {
    await warm(s);
    plans.length = 0;
    const value = await measure(s);
    const found = plans.find((p) => statement.test(p) && /Buffers: shared/.test(p)) ?? plans.join('\n');
    const top = /Buffers: shared hit=(\d+)(?: read=(\d+))?/.exec(found);
    assert.ok(top, found);
    return { value, pages: Number(top[1]) + Number(top[2] ?? 0), plan: nested ? plans.join('\n') : found };
  });
}

/** One node of an EXPLAIN (FORMAT JSON) plan, with the fields the plan tests read. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  'Parent Relationship'?: string;
  'Total Cost'?: number;
  Plans?: PlanNode[];
}

/**
 * The plan PostgreSQL chooses for `text` with these parameter values, as an
 * unnamed statement gets it (a custom plan), without running it.
 */
export async function explainPlan(db: pg.Pool | pg.ClientBase, text: string, values: unknown[]): Promise<PlanNode> {
  const { rows } = await db.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${text}`, values);
  const top = rows[0]?.['QUERY PLAN'][0]?.Plan;
  assert.ok(top, `no plan for ${text}`);
  return top;
}

/** Every node of a plan, depth first, the node itself first. */
export function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

/** A node as EXPLAIN's text format names it: "Index Scan using jobs_pkey on jobs", "Seq Scan on jobs". */
export function describeNode(node: PlanNode): string {
  const index = node['Index Name'];
  const relation = node['Relation Name'];
  if (index && relation) return `${node['Node Type']} using ${index} on ${relation}`;
  if (index) return `${node['Node Type']} on ${index}`;
  return relation ? `${node['Node Type']} on ${relation}` : node['Node Type'];
}
