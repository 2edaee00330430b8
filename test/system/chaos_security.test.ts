/**
 * Security basics:
 *   - every SQL statement in src/ is parameterized: no value is spliced into SQL
 *     text except reviewed identifiers (checked on the TypeScript syntax tree);
 *   - database credentials come only from the environment or a mounted secret
 *     file, never from a configuration file;
 *   - a whole run's output (a supervisor at trace level through successes,
 *     failures, a thread death, a lost listener and a PostgreSQL restart, plus
 *     every CLI command, a wrong password and a secret-file run) never contains
 *     the database password;
 *   - the HTTP endpoints show no job payloads;
 *   - the container image runs as a non-root user.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import ts from 'typescript';
import { loadConfig } from '../../src/config/index.ts';
import { ConfigError } from '../../src/errors.ts';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { httpGet, report, until } from '../helpers/chaos/measure.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from '../helpers/chaos/postgres.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { assertDrains, BIN, type SpawnedSupervisor, spawnSupervisor, writeConfig } from '../helpers/supervisor.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// ---------------------------------------------------------------------------
// SQL: values never spliced into statement text.

/**
 * Interpolations into SQL text that were reviewed: identifiers, which
 * PostgreSQL cannot take as parameters. Key: file and the interpolated
 * expression exactly as written. A new one fails the test until reviewed here.
 */
const REVIEWED: Record<string, string> = {
  'src/cli/context.ts: name.replace(/"/g, \'""\')':
    'CREATE DATABASE takes no parameters; the name is a quoted identifier with quotes doubled',
  'src/cli/demo.ts: settings.database.schema':
    'a configured schema, validated as a lower-case SQL identifier by the configuration',
  'src/bench/database.ts: name': 'bench database name: a fixed prefix, a label reduced to [a-z0-9_], random hex',
  'src/bench/database.ts: sql': 'admin() helper; its callers are the two bench_… statements above',
  'src/queue/copy.ts: copyFrom(qualify(COPY_JOBS, schema))': 'COPY text from the COPY_JOBS constant, schema-qualified',
  'src/db/held.ts: config':
    "a pass-through for the heartbeat's statements: the query configs of src/queue, checked where they are written",
  'src/queue/claim_limited.ts: beginText':
    "the per-key claim's planner settings (SET LOCAL) after BEGIN, from the constants of src/queue/sql.ts",
  'src/db/scoped_settings.ts: settings':
    "a statement's own SET LOCAL settings: the constants THROUGH_INDEXES, AS_INDEX_WALK, … of src/queue/sql.ts, and the store's bound below",
  'src/queue/sql.ts: Math.max(0, Math.floor(Number(ms)))':
    'a whole number of milliseconds (the SET LOCAL statement_timeout of a store), a number by construction',
  "src/db/scoped_settings.ts: pairs.map(([n]) => `current_setting('${n}')`).join(', ')":
    'setting names matched as \\w+ from those same constants; values go as parameters',
  "src/db/scoped_settings.ts: pairs.map(([n], i) => `set_config('${n}', $${i + 1}, true)`).join(', ')":
    'setting names matched as \\w+ from those same constants; values go as parameters',
  'src/db/scoped_settings.ts: { text: read }': 'the current_setting() read built just above from those names',
  'src/db/scoped_settings.ts: { text: write, values: pairs.map(([, v]) => v) }':
    'the set_config() call built just above from those names; values go as parameters',
  'src/db/scoped_settings.ts: { text: write, values: before }':
    'the same set_config() call, putting back the values read before; values go as parameters',
};

/**
 * Interpolations that are safe by construction: module constants (and arithmetic
 * on them, as in `$${FILTER_PARAMS + 1}`), identifier quoting, schema qualification.
 */
function safeByConstruction(expr: ts.Expression): boolean {
  if (ts.isIdentifier(expr)) return /^[A-Z][A-Z0-9_]*$/.test(expr.text);
  if (ts.isNumericLiteral(expr)) return true;
  if (ts.isParenthesizedExpression(expr)) return safeByConstruction(expr.expression);
  if (
    ts.isBinaryExpression(expr) &&
    [ts.SyntaxKind.PlusToken, ts.SyntaxKind.MinusToken, ts.SyntaxKind.AsteriskToken].includes(expr.operatorToken.kind)
  )
    return safeByConstruction(expr.left) && safeByConstruction(expr.right);
  if (ts.isCallExpression(expr)) {
    const callee = expr.expression.getText();
    if (callee === 'quoteIdent') return true;
    // set_config('statement_timeout', $n, is_local): a placeholder's number and a typed scope;
    // setIfOwnedSql: a setting's name (a closed union type) and placeholders' numbers.
    if (callee === 'setStatementTimeoutSql' || callee === 'setIfOwnedSql')
      return expr.arguments.every((a) => ts.isNumericLiteral(a) || ts.isIdentifier(a) || ts.isStringLiteral(a));
    if (callee === 'qualify') return expr.arguments[0] !== undefined && sqlTextIsConstant(expr.arguments[0]);
  }
  return false;
}

function sqlTextIsConstant(expr: ts.Expression): boolean {
  if (ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr)) return true;
  if (ts.isIdentifier(expr)) return /^[A-Z][A-Z0-9_]*$/.test(expr.text) || expr.text === 'text';
  if (ts.isPropertyAccessExpression(expr)) return ['m.sql', 'statement.text'].includes(expr.getText());
  if (ts.isTemplateExpression(expr)) return expr.templateSpans.every((s) => safeByConstruction(s.expression));
  if (ts.isCallExpression(expr)) return safeByConstruction(expr);
  return false;
}

/** A query's first argument: SQL text, or a { name?, text, values } object (either way round a condition). */
function statementOk(expr: ts.Expression): boolean {
  if (ts.isParenthesizedExpression(expr)) return statementOk(expr.expression);
  if (ts.isConditionalExpression(expr)) return statementOk(expr.whenTrue) && statementOk(expr.whenFalse);
  if (ts.isObjectLiteralExpression(expr)) {
    const text = expr.properties.find((p) => p.name?.getText() === 'text');
    if (!text) return false;
    if (ts.isShorthandPropertyAssignment(text)) return true; // `text` from a named statement (sql.ts)
    return ts.isPropertyAssignment(text) && sqlTextIsConstant(text.initializer);
  }
  // A template is checked span by span where templates are visited.
  return ts.isTemplateExpression(expr) || sqlTextIsConstant(expr);
}

const SQL_START =
  /^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|LISTEN|NOTIFY|COPY|WITH|VACUUM|TRUNCATE|GRANT|REVOKE|SET|SHOW|BEGIN|COMMIT)\b/i;

interface Finding {
  where: string;
  key: string;
  text: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** Every place in src/ where something not constant reaches SQL text. */
function unparameterized(): { findings: Finding[]; statements: number } {
  const findings: Finding[] = [];
  let statements = 0;
  for (const file of sourceFiles(path.join(root, 'src'))) {
    const rel = path.relative(root, file);
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const flag = (node: ts.Node, expr: ts.Node) => {
      const key = `${rel}: ${expr.getText()}`;
      const { line } = source.getLineAndCharacterOfPosition(node.getStart());
      findings.push({ where: `${rel}:${line + 1}`, key, text: node.getText().slice(0, 120) });
    };
    const visit = (node: ts.Node) => {
      // SQL written as a template: every substitution must be safe or reviewed.
      if (ts.isTemplateExpression(node) && SQL_START.test(node.head.text)) {
        statements++;
        for (const span of node.templateSpans) if (!safeByConstruction(span.expression)) flag(node, span.expression);
      }
      // SQL built with +.
      if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
        const left = node.left;
        if ((ts.isStringLiteral(left) || ts.isNoSubstitutionTemplateLiteral(left)) && SQL_START.test(left.text))
          flag(node, node.right);
      }
      // Whatever is passed to .query() as text must be constant, a statement object, or reviewed.
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        node.expression.name.text === 'query' &&
        // The dashboard's `c.req.query(name)` reads a URL parameter (Hono), not SQL.
        !/\.req$/.test(node.expression.expression.getText())
      ) {
        statements++;
        const first = node.arguments[0];
        if (first && !statementOk(first)) flag(node, first);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { findings, statements };
}

function sqlTextIsLiteral(expr: ts.Expression): boolean {
  if (ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr)) return true;
  return ts.isTemplateExpression(expr) && expr.templateSpans.every((s) => safeByConstruction(s.expression));
}

/**
 * src/queue: every statement is a named constant (prepared/planned) with literal
 * text, or a template built only from module constants (the admin filter).
 */
function queueStatements(): { constants: number; bad: string[] } {
  const bad: string[] = [];
  let constants = 0;
  for (const file of sourceFiles(path.join(root, 'src/queue'))) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const visit = (node: ts.Node) => {
      if (
        ts.isCallExpression(node) &&
        ts.isIdentifier(node.expression) &&
        ['prepared', 'planned'].includes(node.expression.text)
      ) {
        const text = node.arguments[1];
        if (text && sqlTextIsLiteral(text)) constants++;
        else if (text) bad.push(`${path.relative(root, file)}: ${node.getText().slice(0, 100)}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { constants, bad };
}

// ---------------------------------------------------------------------------

let server: ChaosPostgres;
let url: string;
let pool: pg.Pool;
const spawned: SpawnedSupervisor[] = [];

before(async () => {
  server = await startChaosPostgres();
  url = await createMigratedDatabase(server, 'chaos_security');
  pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => {});
  await pool.query(
    'CREATE TABLE chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp())',
  );
});

after(async () => {
  await Promise.all(spawned.map((s) => s.stop('SIGKILL')));
  await pool?.end().catch(() => {});
  await server?.destroy();
});

function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, JOBVISOR_CONFIG: '', NODE_ENV: 'test', LOG_LEVEL: 'trace', DATABASE_URL: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

/** Every form the password could be printed in. */
function leaks(text: string, password: string): boolean {
  return [password, encodeURIComponent(password), Buffer.from(password).toString('base64')].some((p) =>
    text.includes(p),
  );
}

describe('security basics', () => {
  it('every SQL statement is parameterized: no value is spliced into SQL text', () => {
    const { findings, statements } = unparameterized();
    const unreviewed = findings.filter((f) => !(f.key in REVIEWED));
    const stale = Object.keys(REVIEWED).filter((k) => !findings.some((f) => f.key === k));
    const queue = queueStatements();
    report('security.sql', {
      statementsChecked: statements,
      reviewedInterpolations: findings.length - unreviewed.length,
      unreviewed: unreviewed.length,
      queueConstants: queue.constants,
    });
    assert.deepEqual(
      unreviewed.map((f) => `${f.where} ${f.key}: ${f.text}`),
      [],
      'values spliced into SQL: pass them as $n parameters (or, for an identifier, review and list it in REVIEWED)',
    );
    assert.deepEqual(queue.bad, [], 'src/queue statements must be literal text');
    assert.ok(queue.constants >= 15, `src/queue holds its statements as constants (${queue.constants})`);
    assert.ok(stale.length < Object.keys(REVIEWED).length, 'the review list still matches the code');
  });

  it('credentials only from the environment or a mounted secret, never from a configuration file', async () => {
    const file = writeConfig({
      database: { url: `postgres://postgres:${server.password}@127.0.0.1:${server.port}/chaos_security` },
    });
    assert.throws(
      () => loadConfig({ env: { JOBVISOR_CONFIG: file } }),
      (err: Error) =>
        err instanceof ConfigError && /database\.url/.test(err.message) && !leaks(err.message, server.password),
    );
    const secretFile = path.join(path.dirname(file), 'database-url');
    writeFileSync(secretFile, `${url}\n`, { mode: 0o600 });
    assert.equal(
      loadConfig({ env: { DATABASE_URL_FILE: secretFile } }).database.url,
      url,
      'DATABASE_URL_FILE is read (a mounted secret)',
    );
    assert.throws(
      () => loadConfig({ env: { DATABASE_URL_FILE: secretFile, DATABASE_URL: url } }),
      ConfigError,
      'not both',
    );
    assert.throws(
      () => loadConfig({ env: { DATABASE_URL_FILE: '/nonexistent/secret' } }),
      (err: Error) => err instanceof ConfigError && /DATABASE_URL_FILE/.test(err.message),
    );
    // And end to end: a command that reads its URL from the secret file.
    const r = await cli(['stats', '--json'], { DATABASE_URL_FILE: secretFile });
    assert.equal(r.code, 0, r.out);
    assert.ok(!leaks(r.out, server.password));
  });

  it('a whole run never prints the database password; the HTTP endpoints show no payloads', async () => {
    const password = server.password;
    const marker = 'payload-marker-7c1e';
    const env = { LOG_LEVEL: 'trace' };
    const config = {
      pool: { maxThreads: 2 },
      queues: { default: { concurrency: 5, jobsPerThread: 5 }, cpu: { concurrency: 1, jobsPerThread: 1 } },
      jobs: { lease: '4s', timeout: '20s' },
      backoff: { base: '100ms', max: '200ms' },
      poll: { interval: '1s' },
      reaper: { interval: '500ms' },
    };
    const outputs: string[] = [];
    // CLI commands, each with the password in its URL.
    for (const args of [
      ['migrate'],
      ['enqueue', 'chaos_run', JSON.stringify({ secret: marker })],
      ['stats'],
      ['jobs', 'list', '--json'],
      ['jobs', 'retry', '--failed'],
    ]) {
      const r = await cli(args, { DATABASE_URL: url });
      outputs.push(r.out);
      assert.ok(r.code === 0, `${args.join(' ')}: ${r.out}`);
    }
    const wrong = `Wrong-Pw-${Date.now()}`;
    const denied = await cli(['stats'], { DATABASE_URL: url.replace(encodeURIComponent(password), wrong) });
    assert.equal(denied.code, 1, denied.out);
    assert.ok(!denied.out.includes(wrong), 'a refused password is not printed either');
    outputs.push(denied.out);

    const s = await spawnSupervisor({ databaseUrl: url, tasksDir: FIXTURE_TASKS, config, env, readyTimeoutMs: 60_000 });
    spawned.push(s);
    const ids = (
      await enqueueMany(pool, [
        ...Array.from({ length: 20 }, (_, i) => ({ kind: 'chaos_run', payload: { secret: marker, i } })),
        ...Array.from({ length: 3 }, () => ({
          kind: 'chaos_fail',
          payload: { secret: marker },
          maxAttempts: 2,
          uniqueKey: undefined,
        })),
        { kind: 'chaos_exit', queue: 'cpu', payload: { secret: marker }, maxAttempts: 1 },
        { kind: 'no_such_task', payload: { secret: marker }, maxAttempts: 1, uniqueKey: `${marker}-key` },
      ])
    ).map((r) => r.id);
    await until(
      'every job finished',
      async () =>
        (
          await pool.query(
            "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status IN ('done', 'failed')",
            [ids],
          )
        ).rows[0].n,
      (n) => n === ids.length,
      60_000,
    );
    // A lost listener and a restarted server: error paths, with error objects, get logged too.
    await pool.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'jobvisor-listener'",
    );
    await s.waitForLog(/listener reconnected/, 20_000);
    await server.stop('fast');
    await until(
      'readyz 503',
      () => httpGet(s.metricsPort, '/readyz'),
      (r) => r.status === 503,
      15_000,
      100,
    );
    await server.start();
    await until(
      'readyz 200',
      () => httpGet(s.metricsPort, '/readyz'),
      (r) => r.status === 200,
      30_000,
      100,
    );
    await s.waitForLog(/database error/, 1000).catch(() => undefined);
    // The endpoints, including one that does not exist.
    const endpoints = await Promise.all(
      ['/metrics', '/healthz', '/readyz', `/${marker}`, '/metrics?x=1'].map((p) => httpGet(s.metricsPort, p)),
    );
    await assertDrains(s);
    const supervisorOutput = s.logs.map((l) => JSON.stringify(l)).join('\n');
    outputs.push(supervisorOutput);
    const all = outputs.join('\n');
    const lines = all.split('\n').length;
    const metrics = endpoints[0]?.body ?? '';
    report('security.logs-and-metrics', {
      outputLines: lines,
      logLevels: [...new Set(s.logs.map((l) => l.level))].sort(),
      passwordFound: leaks(all, password),
      metricsBytes: metrics.length,
      payloadInEndpoints: endpoints.some((e) => e.body.includes(marker)),
    });
    assert.ok(lines > 50, `a real run's worth of output (${lines} lines)`);
    assert.ok(
      s.logs.some((l) => Number(l.level) <= 20),
      'debug or trace lines were written',
    );
    assert.ok(!leaks(all, password), 'the password appears nowhere in the output');
    assert.match(metrics, /jobvisor_/);
    for (const e of endpoints) {
      assert.ok(!e.body.includes(marker), `no payload or unique key in an HTTP answer: ${e.body.slice(0, 200)}`);
      assert.ok(!leaks(e.body, password), 'no password in an HTTP answer');
    }
  });

  it('the container image runs as a non-root user', (t) => {
    const dockerfile = path.join(root, 'Dockerfile');
    if (!existsSync(dockerfile)) {
      t.skip('no Dockerfile');
      return;
    }
    const users = readFileSync(dockerfile, 'utf8')
      .split('\n')
      .filter((l) => /^\s*USER\s+/i.test(l))
      .map((l) => l.trim().split(/\s+/)[1] as string);
    const last = users[users.length - 1];
    assert.ok(last, 'the final stage sets USER');
    assert.ok(!/^(root|0)(:|$)/.test(last), `USER ${last} is not root`);
  });
});
