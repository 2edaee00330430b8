/**
 * grafana/ checked with the real tools and against the real registry:
 * - `promtool check rules` and `promtool test rules` pass (promtool comes from
 *   Debian's `prometheus` package; set PROMTOOL to use another binary);
 * - every PromQL expression of the dashboard parses (promtool checks it as a
 *   recording rule, with the dashboard variables substituted);
 * - every `jobvisor_*`, `process_*` and `nodejs_*` name in the dashboard, the rules and
 *   the rule tests is one that `createMetrics().registry` exports (histograms as
 *   _bucket/_sum/_count; Node's default metrics unprefixed);
 * - database gauges are aggregated with max/min, per-process counters with sum.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { findTool, PROMTOOL, skipUnless } from '../helpers/tools.ts';

const grafanaDir = fileURLToPath(new URL('../../grafana/', import.meta.url));
const promtool = findTool(PROMTOOL) ?? 'promtool';
/** The promtool checks are skipped, with the install command, when promtool is missing. */
const needsPromtool = { skip: skipUnless(PROMTOOL) };
const REQUIRED_ALERTS = [
  'JobvisorDeadLettersGrowing',
  'JobvisorOldestPendingTooOld',
  'JobvisorRetryRateHigh',
  'JobvisorNoSupervisorUp',
];
/** Read from the database and reported alike by every replica: aggregate with max or min. */
const DATABASE_GAUGES = ['jobvisor_jobs', 'jobvisor_oldest_pending_seconds'];
const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
]);
/** Functions that keep one series per input series; the check looks through them. */
const PER_SERIES = /^(rate|irate|increase|delta|idelta|deriv|resets|changes|[a-z]+_over_time)$/;

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface Panel {
  type: string;
  title?: string;
  datasource?: { uid?: string };
  targets?: { expr?: string }[];
  panels?: Panel[];
}
interface Variable {
  name: string;
  type: string;
  query?: string | { query?: string };
  datasource?: { uid?: string };
}
interface Dashboard {
  panels: Panel[];
  templating: { list: Variable[] };
}

function runPromtool(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile(promtool, args, { cwd: grafanaDir, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') {
        reject(
          new Error(`cannot run ${promtool} (install Debian's prometheus package): ${error.message}`, { cause: error }),
        );
        return;
      }
      resolve({ code: error ? Number(error.code) : 0, output: `${stdout}${stderr}` });
    });
  });
}

type MetricList = Awaited<ReturnType<ReturnType<typeof createMetrics>['registry']['getMetricsAsJSON']>>;

/** Every name a scrape of these metrics can contain. */
function exportedNames(metrics: MetricList): Set<string> {
  const names = new Set<string>();
  for (const metric of metrics) {
    const type = String(metric.type);
    const suffixes =
      type === 'histogram' ? ['_bucket', '_sum', '_count'] : type === 'summary' ? ['', '_sum', '_count'] : [''];
    for (const suffix of suffixes) names.add(metric.name + suffix);
  }
  return names;
}

/** jobvisor's own names, and Node's default metrics (unprefixed, as every Node.js exporter names them). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b(?:jobvisor|process|nodejs)_[a-z0-9_]+/g)].map((match) => match[0]);
}

function unknownNames(expr: string, exported: Set<string>): string[] {
  return metricNames(expr).filter((name) => !exported.has(name));
}

/** The function or aggregation whose argument list holds `index`, and where it starts. */
function enclosingCall(expr: string, index: number): { name: string; start: number } | undefined {
  let depth = 0;
  for (let i = index - 1; i >= 0; i--) {
    const c = expr[i];
    if (c === ')') depth++;
    else if (c === '(' && depth > 0) depth--;
    else if (c === '(') {
      const head = /([a-z_]+)(?:\s+(?:by|without)\s*\([^()]*\))?\s*$/.exec(expr.slice(0, i));
      return head ? { name: head[1] ?? '', start: head.index } : { name: '', start: i };
    }
  }
  return undefined;
}

/** Wrong aggregations of database gauges (must be max/min) and per-process counters (must be sum). */
function aggregationProblems(expr: string, perProcess: Set<string>): string[] {
  const problems: string[] = [];
  for (const match of expr.matchAll(/\bjobvisor_[a-z0-9_]+/g)) {
    const name = match[0];
    const base = name.replace(/_(bucket|sum|count)$/, '');
    const wanted = DATABASE_GAUGES.includes(name) ? ['max', 'min'] : perProcess.has(base) ? ['sum'] : undefined;
    if (!wanted) continue;
    let call = enclosingCall(expr, match.index);
    while (call && PER_SERIES.test(call.name)) call = enclosingCall(expr, call.start);
    const found = call && AGGREGATIONS.has(call.name) ? call.name : 'no aggregation';
    if (!wanted.includes(found))
      problems.push(`${name} aggregated with ${found}, expected ${wanted.join(' or ')}: ${expr}`);
  }
  return problems;
}

/** PromQL of a dashboard with its variables replaced by plausible values. */
function substituteVariables(expr: string): string {
  return expr.replaceAll('$__rate_interval', '5m').replaceAll('$job', 'jobvisor').replaceAll('$queue', '.*');
}

function variableQuery(variable: Variable): string | undefined {
  return typeof variable.query === 'string' ? variable.query : variable.query?.query;
}

function allPanels(panels: Panel[]): Panel[] {
  return panels.flatMap((panel) => [panel, ...allPanels(panel.panels ?? [])]);
}

describe('grafana/', () => {
  let rules: Rule[];
  let dashboard: Dashboard;
  let exported: Set<string>;
  let perProcess: Set<string>;
  let scratch: string;

  before(async () => {
    const file = parseYaml(await readFile(path.join(grafanaDir, 'alerts.yml'), 'utf8')) as {
      groups: { rules: Rule[] }[];
    };
    rules = file.groups.flatMap((group) => group.rules);
    dashboard = JSON.parse(await readFile(path.join(grafanaDir, 'dashboard.json'), 'utf8')) as Dashboard;
    const metrics = await createMetrics().registry.getMetricsAsJSON();
    exported = exportedNames(metrics);
    perProcess = new Set(metrics.filter((m) => ['counter', 'histogram'].includes(String(m.type))).map((m) => m.name));
    scratch = await mkdtemp(path.join(tmpdir(), 'jobvisor-grafana-'));
  });

  after(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('the checks reject unknown names and wrong aggregations', () => {
    assert.deepEqual(unknownNames('sum(rate(jobvisor_jobs_completed_total[5m])) / jobvisor_nope_total', exported), [
      'jobvisor_nope_total',
    ]);
    assert.deepEqual(unknownNames('jobvisor_job_run_seconds_bucket + jobvisor_job_run_seconds', exported), [
      'jobvisor_job_run_seconds',
    ]);
    assert.deepEqual(unknownNames('jobvisor_jobs_completed_total_bucket', exported), [
      'jobvisor_jobs_completed_total_bucket',
    ]);
    // Node's default metrics keep their conventional names, so stock Node.js dashboards match.
    assert.deepEqual(unknownNames('process_cpu_seconds_total + nodejs_eventloop_lag_p99_seconds', exported), []);
    assert.deepEqual(unknownNames('jobvisor_process_cpu_seconds_total', exported), [
      'jobvisor_process_cpu_seconds_total',
    ]);
    assert.equal(aggregationProblems('sum by (queue) (jobvisor_jobs{status="pending"})', perProcess).length, 1);
    assert.equal(aggregationProblems('jobvisor_oldest_pending_seconds > 600', perProcess).length, 1);
    assert.equal(aggregationProblems('max by (queue) (rate(jobvisor_jobs_completed_total[5m]))', perProcess).length, 1);
    assert.deepEqual(
      aggregationProblems('min by (queue) (min_over_time(jobvisor_jobs[15m])) - max(jobvisor_jobs)', perProcess),
      [],
    );
    assert.deepEqual(
      aggregationProblems(
        'histogram_quantile(0.5, sum by (le) (rate(jobvisor_job_run_seconds_bucket[5m])))',
        perProcess,
      ),
      [],
    );
  });

  it('promtool check rules accepts alerts.yml', needsPromtool, async () => {
    const { code, output } = await runPromtool(['check', 'rules', 'alerts.yml']);
    assert.equal(code, 0, output);
    assert.match(output, /SUCCESS: 4 rules found/);
  });

  it('promtool test rules passes alerts.test.yml', needsPromtool, async () => {
    const { code, output } = await runPromtool(['test', 'rules', 'alerts.test.yml']);
    assert.equal(code, 0, output);
    assert.match(output, /SUCCESS/);
  });

  it('defines each alert with a for, a severity, a summary, a description and a runbook_url to its section', async () => {
    const readme = await readFile(path.join(grafanaDir, 'README.md'), 'utf8');
    assert.deepEqual(rules.map((rule) => rule.alert).sort(), [...REQUIRED_ALERTS].sort());
    for (const rule of rules) {
      assert.match(rule.for ?? '', /^\d+[smh]$/, `${rule.alert}: for`);
      assert.match(rule.labels?.severity ?? '', /^(warning|critical)$/, `${rule.alert}: severity`);
      assert.ok(rule.annotations?.summary, `${rule.alert}: summary`);
      assert.ok(rule.annotations?.description, `${rule.alert}: description`);
      // A URL Alertmanager and Grafana can link to, pointing at this README's section.
      const runbook = rule.annotations?.runbook_url ?? '';
      assert.match(runbook, /^https:\/\/[^\s{}]+\/grafana\/README\.md#[a-z]+$/, `${rule.alert}: runbook_url`);
      assert.equal(runbook.split('#')[1], rule.alert?.toLowerCase(), `${rule.alert}: runbook_url anchor`);
      assert.match(readme, new RegExp(`^#+ ${rule.alert}$`, 'm'), `${rule.alert}: README section`);
    }
  });

  it('the rules and the rule tests name only exported metrics', async () => {
    const tests = parseYaml(await readFile(path.join(grafanaDir, 'alerts.test.yml'), 'utf8')) as {
      tests: { input_series: { series: string }[] }[];
    };
    const texts = [
      ...rules.map((rule) => rule.expr),
      ...tests.tests.flatMap((test) => test.input_series.map((input) => input.series)),
    ];
    assert.ok(texts.flatMap(metricNames).length > 10);
    assert.deepEqual(
      texts.flatMap((text) => unknownNames(text, exported)),
      [],
    );
    assert.deepEqual(
      rules.flatMap((rule) => aggregationProblems(rule.expr, perProcess)),
      [],
    );
  });

  it('the dashboard has a datasource variable, a queue variable and the agreed panels', () => {
    const variables = new Map(dashboard.templating.list.map((variable) => [variable.name, variable]));
    assert.equal(variables.get('datasource')?.type, 'datasource');
    assert.equal(variables.get('queue')?.type, 'query');
    const panels = allPanels(dashboard.panels).filter((panel) => panel.type !== 'row');
    for (const panel of panels) {
      assert.equal(panel.datasource?.uid, '${datasource}', `${panel.title}: datasource`);
      assert.ok(panel.targets?.length, `${panel.title}: targets`);
    }
    const titles = panels.map((panel) => panel.title ?? '');
    for (const wanted of [
      /completed \/ s/i,
      /^retries/i,
      /^dead letters \/ s/i,
      /^wait time/i,
      /^run time/i,
      /^backlog by queue/i,
      /^oldest pending$/i,
      /^threads busy per replica/i,
      /^jobs in flight/i,
      /event-loop lag p99/i,
      /^supervisors up$/i,
    ]) {
      assert.ok(
        titles.some((title) => wanted.test(title)),
        `a panel titled ${wanted}`,
      );
    }
  });

  it('the dashboard shows failing loops and stale database gauges, per replica', () => {
    const exprs = allPanels(dashboard.panels).flatMap((panel) => (panel.targets ?? []).map((t) => t.expr ?? ''));
    assert.ok(exprs.some((e) => /by \(instance, loop\) \(jobvisor_loop_failing_seconds\b/.test(e)));
    assert.ok(exprs.some((e) => /by \(instance\) \(1 - jobvisor_database_gauges_up\b/.test(e)));
    assert.ok(!exprs.some((e) => e.includes('jobvisor_jobs_enqueued_total')), 'the old name of the schedule counter');
  });

  it('the dashboard names only exported metrics and aggregates them correctly', () => {
    const exprs = allPanels(dashboard.panels).flatMap((panel) =>
      (panel.targets ?? []).map((target) => target.expr ?? ''),
    );
    const queries = dashboard.templating.list
      .map(variableQuery)
      .filter((query): query is string => query !== undefined);
    assert.ok(exprs.length >= 20);
    assert.ok(
      exprs.every((expr) => metricNames(expr).length > 0 || /\bup\{/.test(expr)),
      'every query reads a metric',
    );
    assert.deepEqual(
      [...exprs, ...queries].flatMap((expr) => unknownNames(expr, exported)),
      [],
    );
    assert.deepEqual(
      exprs.flatMap((expr) => aggregationProblems(expr, perProcess)),
      [],
    );
    assert.ok(exprs.some((expr) => /histogram_quantile\(0\.99, .*jobvisor_job_wait_seconds_bucket/.test(expr)));
    assert.ok(exprs.some((expr) => /histogram_quantile\(0\.99, .*jobvisor_job_run_seconds_bucket/.test(expr)));
  });

  it('every dashboard query is valid PromQL (checked by promtool)', needsPromtool, async () => {
    const exprs = allPanels(dashboard.panels).flatMap((panel) =>
      (panel.targets ?? []).map((target) => target.expr ?? ''),
    );
    for (const variable of dashboard.templating.list) {
      const selector = /^label_values\((.+),\s*[a-zA-Z_]+\)$/.exec(variableQuery(variable) ?? '')?.[1];
      if (selector) exprs.push(`count(${selector})`);
    }
    const file = path.join(scratch, 'dashboard-queries.yml');
    const recorded = exprs.map((expr, i) => ({ record: `dashboard:query_${i}`, expr: substituteVariables(expr) }));
    await writeFile(file, stringifyYaml({ groups: [{ name: 'dashboard', rules: recorded }] }));
    const { code, output } = await runPromtool(['check', 'rules', file]);
    assert.equal(code, 0, output);
    assert.match(output, new RegExp(`SUCCESS: ${recorded.length} rules found`));
  });
});
