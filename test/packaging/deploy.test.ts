/**
 * deploy/kubernetes checked with real tools, offline:
 * - `kubectl kustomize` builds the base;
 * - every document validates against its schema (kubernetes-models and its KEDA and
 *   Prometheus Operator packages: JSON Schema from the OpenAPI specs and CRDs), and
 *   TypeScript's excess-property check over the same models rejects any field the
 *   schema does not know (the JSON Schemas allow unknown fields, so a typo such as
 *   `readOnlyRootFileSystem` would otherwise pass silently);
 * - the ConfigMap passes the real strict configuration loader;
 * - invariants across files: grace period above shutdown.grace, probes on the metrics
 *   port, security context, the Secret reference shared by pods and KEDA, CPU and
 *   memory against pool.maxThreads, database connections against max_connections,
 *   the KEDA query run against a real migrated database, and the PrometheusRule
 *   generated from grafana/alerts.yml;
 * - the optional dashboard Component (deploy/kubernetes/dashboard) built next to the
 *   base: its image, token file, Service and NetworkPolicy selectors, probes answered by
 *   the real dashboard, and its connections added to the budget.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import ts from 'typescript';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { loadConfig, type Settings } from '../../src/config/index.ts';
import { createDashboard, normaliseBasePath } from '../../src/dashboard/app.ts';
import { checkExposure } from '../../src/dashboard/server.ts';
import { pauseQueue, resumeQueue } from '../../src/queue/pause.ts';
import { createTestDatabase } from '../helpers/db.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const base = path.join(root, 'deploy/kubernetes');
const dashboardComponent = path.join(base, 'dashboard');
const generator = path.join(base, 'gen-prometheusrule.mjs');

/** PostgreSQL's default max_connections and superuser_reserved_connections. */
const MAX_CONNECTIONS = 100;
const RESERVED_CONNECTIONS = 3;
/** KEDA's pgx pool for the postgresql scaler: up to max(4, CPUs); one query per poll. */
const KEDA_CONNECTIONS = 4;

// Manifests are JSON from YAML: their shape is what the schema checks assert.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Json;
  data?: Record<string, string>;
}

/** Package that holds the models of an API group. */
const MODEL_PACKAGES: Record<string, string> = {
  '': 'kubernetes-models',
  apps: 'kubernetes-models',
  batch: 'kubernetes-models',
  policy: 'kubernetes-models',
  'networking.k8s.io': 'kubernetes-models',
  'keda.sh': '@kubernetes-models/keda',
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
};

function modelModule(doc: Doc): string {
  const [group, version] = doc.apiVersion.includes('/') ? doc.apiVersion.split('/') : ['', doc.apiVersion];
  const pkg = MODEL_PACKAGES[group as string];
  assert.ok(pkg, `${doc.kind}/${doc.metadata.name}: no schema package for API group "${group}"`);
  return group ? `${pkg}/${group}/${version}/${doc.kind}` : `${pkg}/${version}/${doc.kind}`;
}

function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { cwd: root, encoding: 'utf8', timeout: 60_000 });
  if (result.error) throw new Error(`cannot run ${command}: ${result.error.message}`, { cause: result.error });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return result.stdout;
}

function seconds(ms: number): number {
  return ms / 1000;
}

/** Kubernetes quantity → bytes (memory) or cores (cpu). */
function quantity(value: string | number): number {
  if (typeof value === 'number') return value;
  const m = /^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(value);
  assert.ok(m, `unparsable quantity ${value}`);
  const units: Record<string, number> = {
    m: 1e-3,
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
  };
  return Number(m[1]) * (m[2] ? (units[m[2]] as number) : 1);
}

/** "Kind/name: message" for each document that fails its schema. */
async function schemaErrors(docs: Doc[]): Promise<string[]> {
  const errors: string[] = [];
  for (const doc of docs) {
    const mod = (await import(modelModule(doc))) as Record<string, new (data: unknown) => { validate(): void }>;
    const Model = mod[doc.kind];
    assert.ok(Model, `${modelModule(doc)} exports ${doc.kind}`);
    try {
      new Model(doc).validate();
    } catch (err) {
      errors.push(`${doc.kind}/${doc.metadata.name}: ${(err as Error).message}`);
    }
  }
  return errors;
}

/**
 * Database connections of the supervisors at KEDA's maximum during a rollout, plus
 * KEDA's and the migration Job's, as `parts` for the message and their `total`.
 */
function supervisorConnections(docs: Doc[], settings: Settings): { total: number; parts: string } {
  const deployment = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'jobvisor');
  const scaled = docs.find((d) => d.kind === 'ScaledObject');
  assert.ok(deployment && scaled, 'the supervisor Deployment and its ScaledObject');
  const surge = deployment.spec.strategy.rollingUpdate.maxSurge as number;
  // + 1 LISTEN connection, + 1 for the readiness probe.
  const perReplica = settings.database.poolSize + 2 + settings.pool.maxThreads * settings.pool.dbPoolSize;
  const migrate = settings.database.poolSize;
  return {
    total: (scaled.spec.maxReplicaCount + surge) * perReplica + KEDA_CONNECTIONS + migrate,
    parts: `(${scaled.spec.maxReplicaCount} replicas + ${surge} surge) × ${perReplica} + KEDA ${KEDA_CONNECTIONS} + migrate ${migrate}`,
  };
}

describe('deploy/kubernetes', () => {
  let docs: Doc[] = [];
  let settings: Settings;
  let configMapText = '';
  const scratch = mkdtempSync(path.join(tmpdir(), 'jobvisor-deploy-'));

  const find = (kind: string, name?: string): Doc => {
    const doc = docs.find((d) => d.kind === kind && (name === undefined || d.metadata.name === name));
    assert.ok(doc, `no ${kind}${name ? ` named ${name}` : ''} in the kustomize output`);
    return doc;
  };
  const podSpec = (kind: 'Deployment' | 'Job'): Json => find(kind).spec.template.spec;
  const container = (kind: 'Deployment' | 'Job'): Json => podSpec(kind).containers[0];

  before(() => {
    const built = run('kubectl', ['kustomize', base]);
    docs = parseAllDocuments(built).map((d) => d.toJS() as Doc);
    const configMap = find('ConfigMap');
    configMapText = configMap.data?.['config.json'] ?? '';
    const file = path.join(scratch, 'config.json');
    writeFileSync(file, configMapText);
    settings = loadConfig({ env: { NODE_ENV: 'production', JOBVISOR_CONFIG: file } });
  });

  after(() => rmSync(scratch, { recursive: true, force: true }));

  test('kustomize builds every object of the base', () => {
    const kinds = docs.map((d) => d.kind).sort();
    assert.deepEqual(kinds, [
      'ConfigMap',
      'Deployment',
      'Job',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'PrometheusRule',
      'ScaledObject',
      'Service',
      'ServiceAccount',
      'ServiceMonitor',
      'TriggerAuthentication',
    ]);
    for (const doc of docs)
      assert.equal(doc.metadata.labels?.['app.kubernetes.io/name'], 'jobvisor', `${doc.kind} carries the app label`);
  });

  test('every document validates against its schema', async () => {
    assert.deepEqual(await schemaErrors(docs), []);
  });

  test('the schema validator rejects a broken document', async () => {
    const { Deployment } = await import('kubernetes-models/apps/v1/Deployment');
    const broken = structuredClone(find('Deployment'));
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'metrics';
    assert.throws(() => new Deployment(broken).validate(), /containerPort must be integer/);
  });

  test('no document has a field its schema does not know', () => {
    const problems = unknownFields(docs, scratch);
    assert.deepEqual(problems, []);
    const typo = structuredClone(find('Deployment'));
    typo.spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem = true;
    assert.match(unknownFields([typo], scratch).join('\n'), /readOnlyRootFileSystem/);
  });

  test('the ConfigMap is a valid jobvisor configuration', () => {
    assert.ok(configMapText.length > 0, 'ConfigMap has config.json');
    assert.equal(settings.database.url, '', 'the connection string never comes from the ConfigMap');
    assert.doesNotMatch(configMapText, /postgres(ql)?:\/\//, 'no connection string in the ConfigMap');
    const queues = settings.queues;
    assert.ok(queues.cpu && queues.cpu.jobsPerThread === 1, 'CPU-bound queue: one job per thread');
    assert.ok(queues.default && queues.default.jobsPerThread > 1, 'I/O queue shares threads');
    for (const schedule of settings.schedules)
      assert.ok(queues[schedule.queue], `schedule ${schedule.name} targets served queue ${schedule.queue}`);
  });

  test('the Deployment runs 2 replicas sized by pool.maxThreads', () => {
    const deployment = find('Deployment');
    assert.equal(deployment.spec.replicas, 2);
    const { requests, limits } = container('Deployment').resources;
    assert.equal(quantity(requests.cpu), settings.pool.maxThreads, 'requests.cpu = pool.maxThreads');
    assert.equal(limits.cpu, undefined, 'no CPU limit (throttling stalls lease renewal)');
    const heaps = settings.pool.maxThreads * settings.pool.maxOldGenerationSizeMb * 2 ** 20;
    assert.ok(settings.pool.maxOldGenerationSizeMb > 0, 'thread heaps are bounded');
    assert.ok(
      quantity(limits.memory) >= heaps + 512 * 2 ** 20,
      `memory limit ${limits.memory} covers ${settings.pool.maxThreads} thread heaps + 512Mi`,
    );
    assert.equal(quantity(requests.memory), quantity(limits.memory), 'memory request = limit');
    assert.equal(deployment.spec.strategy.rollingUpdate.maxUnavailable, 0);
  });

  test('the grace period outlasts shutdown.grace', () => {
    for (const kind of ['Deployment'] as const) {
      const grace = podSpec(kind).terminationGracePeriodSeconds as number;
      assert.ok(
        grace >= seconds(settings.shutdown.grace) + 10,
        `terminationGracePeriodSeconds ${grace} ≥ shutdown.grace ${seconds(settings.shutdown.grace)}s + 10s to flush and exit`,
      );
    }
  });

  test('probes, Service and ServiceMonitor use the metrics port', () => {
    const c = container('Deployment');
    const port = c.ports.find((p: Json) => p.name === 'metrics');
    assert.equal(port?.containerPort, settings.metrics.port);
    assert.deepEqual([c.livenessProbe.httpGet.path, c.livenessProbe.httpGet.port], ['/healthz', 'metrics']);
    assert.deepEqual([c.readinessProbe.httpGet.path, c.readinessProbe.httpGet.port], ['/readyz', 'metrics']);
    assert.deepEqual([c.startupProbe.httpGet.path, c.startupProbe.httpGet.port], ['/healthz', 'metrics']);

    const podLabels = find('Deployment').spec.template.metadata.labels as Record<string, string>;
    const matches = (selector: Record<string, string>) =>
      Object.entries(selector).every(([k, v]) => podLabels[k] === v);
    const service = find('Service');
    assert.ok(matches(service.spec.selector), 'Service selects the supervisor pods');
    assert.deepEqual(
      service.spec.ports.map((p: Json) => [p.name, p.port, p.targetPort]),
      [['metrics', settings.metrics.port, 'metrics']],
    );
    const monitor = find('ServiceMonitor');
    assert.ok(
      Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => service.metadata.labels?.[k] === v),
      'ServiceMonitor selects the Service',
    );
    assert.deepEqual(
      monitor.spec.endpoints.map((e: Json) => [e.port, e.path]),
      [['metrics', '/metrics']],
    );
    assert.ok(matches(find('PodDisruptionBudget').spec.selector.matchLabels), 'PDB selects the supervisor pods');
    assert.ok(matches(find('Deployment').spec.selector.matchLabels), 'Deployment selector matches its template');
  });

  test("the alerts' scrape job is the Service name", () => {
    const alerts = readFileSync(path.join(root, 'grafana/alerts.yml'), 'utf8');
    const jobs = new Set([...alerts.matchAll(/\bjob="([^"]+)"/g)].map((m) => m[1]));
    assert.deepEqual([...jobs], [find('Service').metadata.name], 'ServiceMonitor names the job after the Service');
  });

  test("pods run as the image's non-root user with a read-only root filesystem", () => {
    const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    const user = [...dockerfile.matchAll(/^USER\s+(\d+):(\d+)\s*$/gm)].at(-1);
    assert.ok(user, 'the Dockerfile sets a numeric USER');
    for (const kind of ['Deployment', 'Job'] as const) {
      const pod = podSpec(kind);
      const c = container(kind);
      assert.equal(pod.securityContext.runAsNonRoot, true, kind);
      assert.equal(pod.securityContext.runAsUser, Number(user[1]), `${kind} runs as the image's USER`);
      assert.equal(pod.securityContext.runAsGroup, Number(user[2]), kind);
      assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault', kind);
      assert.equal(pod.automountServiceAccountToken, false, kind);
      assert.equal(c.securityContext.readOnlyRootFilesystem, true, kind);
      assert.equal(c.securityContext.allowPrivilegeEscalation, false, kind);
      assert.deepEqual(c.securityContext.capabilities.drop, ['ALL'], kind);
      const tmp = c.volumeMounts.find((m: Json) => m.mountPath === '/tmp');
      assert.ok(tmp, `${kind} mounts /tmp`);
      assert.ok(pod.volumes.find((v: Json) => v.name === tmp.name)?.emptyDir, `${kind}: /tmp is an emptyDir`);
    }
    // Task output goes to a mounted volume, never the read-only image.
    const mounts = container('Deployment').volumeMounts.map((m: Json) => m.mountPath as string);
    for (const dir of [settings.thumbnails.dir, settings.reports.dir]) {
      assert.ok(
        path.isAbsolute(dir) && mounts.some((m: string) => dir.startsWith(`${m}/`)),
        `${dir} is on a mounted volume`,
      );
    }
  });

  test('DATABASE_URL comes from one Secret: a DML key for pods and KEDA, a DDL key for the migration Job', () => {
    const refs = (['Deployment', 'Job'] as const).map((kind) => {
      const env = container(kind).env.find((e: Json) => e.name === 'DATABASE_URL');
      assert.ok(env && env.value === undefined, `${kind}: DATABASE_URL is not a literal`);
      return env.valueFrom.secretKeyRef;
    });
    assert.equal(refs[0].name, refs[1].name, 'one Secret');
    assert.equal(refs[0].key, 'url', 'supervisors: the runtime (DML) key');
    assert.equal(refs[1].key, 'migrate-url', 'migration Job: the schema owner (DDL) key');
    const auth = find('TriggerAuthentication');
    assert.deepEqual(auth.spec.secretTargetRef, [{ parameter: 'connection', name: refs[0].name, key: refs[0].key }]);
    assert.equal(find('ScaledObject').spec.triggers[0].authenticationRef.name, auth.metadata.name);
    assert.ok(!docs.some((d) => d.kind === 'Secret'), 'the base ships no Secret');
  });

  test('the NetworkPolicy admits only Prometheus to the metrics port, and lets out only DNS and PostgreSQL', () => {
    const policy = find('NetworkPolicy');
    const selector = policy.spec.podSelector.matchLabels as Record<string, string>;
    for (const kind of ['Deployment', 'Job'] as const) {
      const labels = find(kind).spec.template.metadata.labels as Record<string, string>;
      for (const [k, v] of Object.entries(selector)) assert.equal(labels[k], v, `${kind} pods are selected`);
    }
    assert.deepEqual(policy.spec.policyTypes, ['Ingress', 'Egress']);
    assert.equal(policy.spec.ingress.length, 1);
    const [ingress] = policy.spec.ingress;
    assert.deepEqual(ingress.ports, [{ port: 'metrics', protocol: 'TCP' }]);
    assert.ok(
      container('Deployment').ports.some((p: Json) => p.name === 'metrics'),
      'the named port exists on the supervisor',
    );
    for (const peer of ingress.from) {
      assert.ok(peer.namespaceSelector && peer.podSelector, 'Prometheus pods of one namespace, not everyone');
    }
    const egressPorts = policy.spec.egress.flatMap((r: Json) => r.ports.map((p: Json) => `${p.protocol}/${p.port}`));
    assert.deepEqual(egressPorts.sort(), ['TCP/53', 'TCP/5432', 'UDP/53']);
  });

  test('JOBVISOR_CONFIG names the file mounted from the ConfigMap', () => {
    const configMap = find('ConfigMap');
    for (const kind of ['Deployment', 'Job'] as const) {
      const c = container(kind);
      const value = c.env.find((e: Json) => e.name === 'JOBVISOR_CONFIG')?.value as string;
      const volume = podSpec(kind).volumes.find((v: Json) => v.configMap?.name === configMap.metadata.name);
      assert.ok(volume, `${kind} mounts ${configMap.metadata.name}`);
      const mount = c.volumeMounts.find((m: Json) => m.name === volume.name);
      assert.equal(mount.readOnly, true);
      assert.ok(value.startsWith(`${mount.mountPath}/`), `${kind}: ${value} is under ${mount.mountPath}`);
      assert.ok(configMap.data?.[path.basename(value)] !== undefined, `ConfigMap has key ${path.basename(value)}`);
    }
  });

  test("the migration Job runs `migrate` with the Deployment's image", () => {
    const job = find('Job');
    assert.deepEqual(container('Job').args, ['migrate']);
    assert.equal(container('Job').image, container('Deployment').image);
    assert.deepEqual(container('Deployment').args, ['start']);
    assert.equal(podSpec('Job').restartPolicy, 'Never');
    assert.ok(job.spec.backoffLimit >= 1 && job.spec.activeDeadlineSeconds > 0);
    const version = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
    assert.match(
      container('Deployment').image as string,
      new RegExp(`:${version.replace(/\./g, '\\.')}$`),
      'image tag = package version',
    );
  });

  test('KEDA scales the Deployment on due pending jobs', () => {
    const scaled = find('ScaledObject');
    assert.equal(scaled.spec.scaleTargetRef.name, find('Deployment').metadata.name);
    assert.equal(scaled.spec.minReplicaCount, find('Deployment').spec.replicas);
    assert.ok(scaled.spec.maxReplicaCount > scaled.spec.minReplicaCount);
    const trigger = scaled.spec.triggers[0];
    assert.equal(trigger.type, 'postgresql');
    assert.ok(Number(trigger.metadata.targetQueryValue) > 0);
    assert.match(
      trigger.metadata.query,
      new RegExp(`\\b${settings.database.schema}\\.jobs\\b`),
      'query reads the configured schema',
    );
  });

  test('the KEDA query counts due pending jobs of queues that are not paused, on a real database', async (t) => {
    if (!process.env.JOBVISOR_TEST_DATABASE_URL) {
      t.skip(
        'needs the test PostgreSQL: run through `npm test` or `npx tsx test/run.ts test/packaging/deploy.test.ts`',
      );
      return;
    }
    const db = await createTestDatabase('deploy');
    try {
      await db.pool.query(`
        INSERT INTO jobvisor.jobs (kind, payload, status, run_at)
        SELECT 'k', '{}', s, now() + d
        FROM (VALUES ('pending', interval '-1 minute'), ('pending', interval '-1 second'), ('pending', interval '0'),
                     ('pending', interval '1 hour'), ('running', interval '-1 minute'), ('done', interval '-1 minute'),
                     ('failed', interval '-1 minute'), ('cancelled', interval '-1 minute')) AS v(s, d)`);
      const query = find('ScaledObject').spec.triggers[0].metadata.query as string;
      const count = async () => {
        const { rows } = await db.pool.query<{ count: string }>(query);
        assert.equal(rows.length, 1);
        return Number(Object.values(rows[0] as object)[0]);
      };
      assert.equal(await count(), 3, 'three pending jobs are due');
      // A paused queue's due jobs must not scale pods up: none of them may run.
      await db.pool.query(`
        INSERT INTO jobvisor.jobs (kind, payload, queue, run_at)
        SELECT 'k', '{}', 'mail', now() - interval '1 minute' FROM generate_series(1, 5)`);
      assert.equal(await count(), 8, 'five more due jobs in queue mail');
      await pauseQueue(db.pool, 'mail');
      assert.equal(await count(), 3, 'queue mail is paused: its due jobs are not counted');
      await resumeQueue(db.pool, 'mail');
      assert.equal(await count(), 8, 'resumed: counted again');
    } finally {
      await db.drop();
    }
  });

  test("the metrics guide's overlay adds kube-prometheus-stack's release label to the ServiceMonitor and PrometheusRule", () => {
    const page = readFileSync(path.join(root, 'docs/operations/metrics.md'), 'utf8');
    const block = /```yaml\n# kustomization\.yaml of your overlay\n([\s\S]*?)```/.exec(page)?.[1];
    assert.ok(block, 'the overlay block in docs/operations/metrics.md, "Scrape and alert"');
    const dir = mkdtempSync(path.join(scratch, 'release-'));
    const overlay = block.replace(/^resources: .*$/m, `resources: [${path.relative(dir, base)}]`);
    writeFileSync(path.join(dir, 'kustomization.yaml'), overlay);
    const built = parseAllDocuments(run('kubectl', ['kustomize', dir])).map((d) => d.toJS() as Doc);
    for (const kind of ['ServiceMonitor', 'PrometheusRule']) {
      const doc = built.find((d) => d.kind === kind);
      assert.equal(doc?.metadata.labels?.release, 'kube-prometheus-stack', kind);
    }
    assert.equal(built.length, docs.length, 'the overlay changes labels only');
  });

  test('database connections fit max_connections at full scale', () => {
    const { total, parts } = supervisorConnections(docs, settings);
    assert.ok(
      total <= MAX_CONNECTIONS - RESERVED_CONNECTIONS,
      `${parts} = ${total} > ${MAX_CONNECTIONS - RESERVED_CONNECTIONS}`,
    );
  });

  test('the PrometheusRule is grafana/alerts.yml, regenerated', () => {
    const alerts = parseYaml(readFileSync(path.join(root, 'grafana/alerts.yml'), 'utf8')) as { groups: unknown[] };
    assert.deepEqual(find('PrometheusRule').spec.groups, alerts.groups);
    assert.equal(
      spawnSync(process.execPath, [generator, '--check'], { cwd: root, encoding: 'utf8' }).status,
      0,
      'prometheusrule.yaml is stale: run node deploy/kubernetes/gen-prometheusrule.mjs',
    );
  });

  test('the generator notices a changed rules file', () => {
    const changed = path.join(scratch, 'alerts.yml');
    writeFileSync(changed, readFileSync(path.join(root, 'grafana/alerts.yml'), 'utf8').replace('for: 5m', 'for: 6m'));
    const result = spawnSync(process.execPath, [generator, '--check', '--alerts', changed], {
      cwd: root,
      encoding: 'utf8',
    });
    assert.equal(result.status, 1);
    assert.match(result.stderr, /prometheusrule\.yaml is stale/);
    const out = path.join(scratch, 'rule.yaml');
    execFileSync(process.execPath, [generator, '--alerts', changed, '--out', out]);
    assert.equal((parseYaml(readFileSync(out, 'utf8')) as Doc).spec.groups[0].rules[0].for, '6m');
  });
});

/** Whether every label of `selector` is on `labels` (an empty selector selects every pod). */
function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** The pod labels an object selects by, or undefined for kinds that select no pods. */
function podSelector(doc: Doc): Record<string, string> | undefined {
  const labelSelector = (s: Json): Record<string, string> => {
    assert.equal(
      s.matchExpressions,
      undefined,
      `${doc.kind}/${doc.metadata.name}: matchExpressions are not checked here`,
    );
    return s.matchLabels ?? {};
  };
  switch (doc.kind) {
    case 'Service':
      return doc.spec.selector;
    case 'Deployment':
    case 'PodDisruptionBudget':
      return labelSelector(doc.spec.selector);
    case 'NetworkPolicy':
      return labelSelector(doc.spec.podSelector);
    default:
      return undefined;
  }
}

/**
 * Ways the dashboard pod could expose or miss its token; [] when the token is read
 * from key `token` of Secret `secretName`, mounted read-only as a file and named by
 * JOBVISOR_DASHBOARD_TOKEN_FILE.
 */
function tokenProblems(pod: Json, secretName: string): string[] {
  const c = pod.containers.find((x: Json) => x.name === 'dashboard');
  const env: Json[] = c.env ?? [];
  const problems: string[] = [];
  if (c.envFrom) problems.push('envFrom puts a whole Secret or ConfigMap in the environment');
  if (env.some((e) => e.name === 'JOBVISOR_DASHBOARD_TOKEN'))
    problems.push('JOBVISOR_DASHBOARD_TOKEN is set: the token would be an environment value');
  const file = env.find((e) => e.name === 'JOBVISOR_DASHBOARD_TOKEN_FILE')?.value;
  if (typeof file !== 'string') return [...problems, 'JOBVISOR_DASHBOARD_TOKEN_FILE is not a literal path'];
  const mount = (c.volumeMounts as Json[])
    .filter((m) => file.startsWith(`${m.mountPath}/`))
    .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
  if (!mount) return [...problems, `${file} is on no volume`];
  if (mount.readOnly !== true) problems.push(`${mount.mountPath} is writable`);
  if (mount.subPath !== undefined) problems.push(`${mount.mountPath} uses subPath`);
  const secret = pod.volumes.find((v: Json) => v.name === mount.name)?.secret;
  if (secret?.secretName !== secretName) return [...problems, `${file} is not on a volume of Secret ${secretName}`];
  const relative = path.posix.relative(mount.mountPath, file);
  const key = secret.items ? secret.items.find((i: Json) => i.path === relative)?.key : relative;
  if (key !== 'token') problems.push(`${file} is key ${key ?? '(none)'} of ${secretName}, not token`);
  return problems;
}

describe('deploy/kubernetes/dashboard', () => {
  let docs: Doc[] = [];
  let baseDocs: Doc[] = [];
  let settings: Settings;
  const scratch = mkdtempSync(path.join(tmpdir(), 'jobvisor-deploy-dashboard-'));
  const id = (d: Doc) => `${d.kind}/${d.metadata.name}`;

  /** An overlay of the base with the dashboard Component, as docs/operations/kubernetes.md shows it; `extra` is more YAML. */
  const build = (extra = ''): Doc[] => {
    const dir = mkdtempSync(path.join(scratch, 'overlay-'));
    writeFileSync(
      path.join(dir, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        `resources: [${path.relative(dir, base)}]`,
        `components: [${path.relative(dir, dashboardComponent)}]`,
        extra,
      ].join('\n'),
    );
    return parseAllDocuments(run('kubectl', ['kustomize', dir])).map((d) => d.toJS() as Doc);
  };
  const find = (kind: string, name: string, from = docs): Doc => {
    const doc = from.find((d) => d.kind === kind && d.metadata.name === name);
    assert.ok(doc, `no ${kind} named ${name} in the kustomize output`);
    return doc;
  };
  const added = () => docs.filter((d) => !baseDocs.some((b) => id(b) === id(d)));
  const dashboard = () => find('Deployment', 'jobvisor-dashboard');
  const pod = (deployment = dashboard()): Json => deployment.spec.template.spec;
  const container = (deployment = dashboard()): Json => pod(deployment).containers[0];
  const supervisors = () => find('Deployment', 'jobvisor');
  const podLabels = (workload: Doc): Record<string, string> => workload.spec.template.metadata.labels;

  before(() => {
    baseDocs = parseAllDocuments(run('kubectl', ['kustomize', base])).map((d) => d.toJS() as Doc);
    docs = build();
    const configMap = docs.find((d) => d.kind === 'ConfigMap');
    const file = path.join(scratch, 'config.json');
    writeFileSync(file, configMap?.data?.['config.json'] ?? '');
    settings = loadConfig({ env: { NODE_ENV: 'production', JOBVISOR_CONFIG: file } });
  });

  after(() => rmSync(scratch, { recursive: true, force: true }));

  test('the Component adds a Deployment, a Service and a NetworkPolicy, and changes nothing of the base', () => {
    assert.deepEqual(added().map(id).sort(), [
      'Deployment/jobvisor-dashboard',
      'NetworkPolicy/jobvisor-dashboard',
      'Service/jobvisor-dashboard',
    ]);
    for (const doc of baseDocs) assert.deepEqual(find(doc.kind, doc.metadata.name), doc, `${id(doc)} as in the base`);
    for (const doc of added()) {
      assert.equal(doc.metadata.labels?.['app.kubernetes.io/name'], 'jobvisor', `${id(doc)} carries the app label`);
      assert.equal(doc.metadata.labels?.['app.kubernetes.io/part-of'], 'jobvisor', id(doc));
      assert.equal(doc.metadata.labels?.['app.kubernetes.io/component'], 'dashboard', id(doc));
    }
    assert.ok(!docs.some((d) => d.kind === 'Secret'), 'the token Secret is not shipped');
    // Built on its own it has no supervisor Deployment to take the image from: it stops.
    assert.throws(() => run('kubectl', ['kustomize', dashboardComponent]), /nothing selected by Deployment/);
  });

  test('every added object validates against its schema, with no unknown field', async () => {
    assert.deepEqual(await schemaErrors(added()), []);
    assert.deepEqual(unknownFields(added(), scratch), []);
    const broken = structuredClone(find('Service', 'jobvisor-dashboard'));
    broken.spec.ports[0].port = 'http';
    assert.match((await schemaErrors([broken])).join('\n'), /port must be integer/);
  });

  test("the Deployment runs `dashboard --host 0.0.0.0` with the supervisors' image, which an overlay's images: changes for both", () => {
    assert.deepEqual(container().args, ['dashboard', '--host', '0.0.0.0']);
    assert.throws(() => checkExposure('0.0.0.0', null), /without credentials/, 'so it cannot start without the token');
    assert.equal(container().image, container(supervisors()).image);
    assert.equal(container().image, container(find('Deployment', 'jobvisor', baseDocs)).image);
    const moved = build(
      'images:\n  - name: localhost/jobvisor\n    newName: registry.example/jobvisor\n    newTag: 9.9.9\n',
    );
    for (const name of ['jobvisor', 'jobvisor-dashboard'])
      assert.equal(container(find('Deployment', name, moved)).image, 'registry.example/jobvisor:9.9.9', name);
  });

  test('the pod runs like the supervisors: same user, read-only root, no token, same database key and ConfigMap', () => {
    assert.deepEqual(pod().securityContext, pod(supervisors()).securityContext);
    assert.deepEqual(container().securityContext, container(supervisors()).securityContext);
    assert.equal(container().securityContext.readOnlyRootFilesystem, true);
    assert.equal(pod().automountServiceAccountToken, false);
    assert.equal(pod().serviceAccountName, pod(supervisors()).serviceAccountName);
    const tmp = container().volumeMounts.find((m: Json) => m.mountPath === '/tmp');
    assert.ok(pod().volumes.find((v: Json) => v.name === tmp?.name)?.emptyDir, '/tmp is an emptyDir');
    const env = (d: Doc, name: string) => container(d).env.find((e: Json) => e.name === name);
    assert.deepEqual(env(dashboard(), 'DATABASE_URL'), env(supervisors(), 'DATABASE_URL'), 'the runtime (DML) key');
    assert.equal(env(dashboard(), 'DATABASE_URL').valueFrom.secretKeyRef.key, 'url');
    assert.deepEqual(env(dashboard(), 'JOBVISOR_CONFIG'), env(supervisors(), 'JOBVISOR_CONFIG'));
    assert.equal(env(dashboard(), 'NODE_ENV')?.value, 'production', 'DATABASE_URL is required, never the dev server');
    const configVolume = (d: Doc) => pod(d).volumes.find((v: Json) => v.configMap)?.configMap.name;
    assert.match(configVolume(dashboard()), /^jobvisor-config-[a-z0-9]+$/, 'the hashed ConfigMap name');
    assert.equal(configVolume(dashboard()), configVolume(supervisors()));
    const { requests, limits } = container().resources;
    assert.ok(quantity(requests.cpu) <= 0.25 && quantity(requests.memory) <= 512 * 2 ** 20, 'small requests');
    assert.equal(quantity(requests.memory), quantity(limits.memory), 'memory request = limit');
    assert.equal(limits.cpu, undefined);
  });

  test('the token comes from the Secret as a file through JOBVISOR_DASHBOARD_TOKEN_FILE, never as an env value', () => {
    assert.deepEqual(tokenProblems(pod(), 'jobvisor-dashboard'), []);
    const literal = structuredClone(pod());
    literal.containers[0].env.push({ name: 'JOBVISOR_DASHBOARD_TOKEN', value: 'f'.repeat(64) });
    assert.match(tokenProblems(literal, 'jobvisor-dashboard').join('\n'), /JOBVISOR_DASHBOARD_TOKEN is set/);
    const fromEnv = structuredClone(pod());
    fromEnv.containers[0].envFrom = [{ secretRef: { name: 'jobvisor-dashboard' } }];
    assert.match(tokenProblems(fromEnv, 'jobvisor-dashboard').join('\n'), /envFrom/);
    const otherSecret = structuredClone(pod());
    otherSecret.volumes.find((v: Json) => v.secret).secret.secretName = 'jobvisor-database';
    assert.match(tokenProblems(otherSecret, 'jobvisor-dashboard').join('\n'), /not on a volume of Secret/);
  });

  test('the dashboard Service is ClusterIP and selects the dashboard pods only; nothing of the base selects them', () => {
    const service = find('Service', 'jobvisor-dashboard');
    assert.equal(service.spec.type, 'ClusterIP');
    assert.deepEqual(
      service.spec.ports.map((p: Json) => [p.name, p.port, p.targetPort]),
      [['http', settings.dashboard.port, 'http']],
    );
    const port = container().ports.find((p: Json) => p.name === 'http');
    assert.equal(port?.containerPort, settings.dashboard.port, 'the container port is dashboard.port');
    const workloads = docs.filter((d) => d.kind === 'Deployment' || d.kind === 'Job');
    const selected = (selector: Record<string, string>) =>
      workloads.filter((w) => selects(selector, podLabels(w))).map(id);
    assert.deepEqual(selected(podSelector(service) ?? {}), ['Deployment/jobvisor-dashboard']);
    assert.deepEqual(selected(podSelector(dashboard()) ?? {}), ['Deployment/jobvisor-dashboard'], 'own selector');
    // Of the base, only its NetworkPolicy (every jobvisor pod) selects them.
    for (const doc of baseDocs) {
      const selector = podSelector(doc);
      if (selector === undefined || doc.kind === 'NetworkPolicy') continue;
      assert.ok(!selects(selector, podLabels(dashboard())), `${id(doc)} does not select the dashboard pods`);
    }
    assert.ok(
      !selects(find('ServiceMonitor', 'jobvisor').spec.selector.matchLabels, service.metadata.labels ?? {}),
      'the ServiceMonitor does not scrape the dashboard',
    );
    // The check above notices a supervisor Service that selects by app name only.
    assert.ok(selects({ 'app.kubernetes.io/name': 'jobvisor' }, podLabels(dashboard())));
  });

  test('the probes ask the named port for the login form, which the real dashboard answers 200 without credentials', async () => {
    const c = container();
    const loginPath = `${normaliseBasePath(settings.dashboard.basePath).replace(/\/$/, '')}/login`;
    for (const probe of ['readinessProbe', 'livenessProbe']) {
      assert.deepEqual([c[probe].httpGet.path, c[probe].httpGet.port], [loginPath, 'http'], probe);
      assert.ok(
        c.ports.some((p: Json) => p.name === c[probe].httpGet.port),
        `${probe}: the port exists`,
      );
    }
    // Never connects: the login form needs no database.
    const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    try {
      const serve = (basePath: string) => createDashboard({ pool, basePath, auth: { token: 'a'.repeat(32) } });
      const get = async (basePath: string, url: string) =>
        (await serve(basePath).fetch(new Request(`http://10.0.0.1:9465${url}`, { redirect: 'manual' }))).status;
      for (const probe of ['readinessProbe', 'livenessProbe'])
        assert.equal(await get(settings.dashboard.basePath, c[probe].httpGet.path as string), 200, probe);
      assert.equal(await get(settings.dashboard.basePath, '/'), 303, 'pages need the token');
      assert.equal(
        await get('/jobvisor', c.readinessProbe.httpGet.path as string),
        404,
        'basePath and probes go together',
      );
    } finally {
      await pool.end();
    }
  });

  test('the NetworkPolicy selects the dashboard pods, admits labelled peers to the dashboard port, lets out DNS and PostgreSQL', () => {
    const policy = find('NetworkPolicy', 'jobvisor-dashboard');
    assert.ok(selects(podSelector(policy) ?? {}, podLabels(dashboard())), 'selects the dashboard pods');
    assert.ok(!selects(podSelector(policy) ?? {}, podLabels(supervisors())), 'not the supervisors');
    assert.deepEqual(policy.spec.policyTypes, ['Ingress', 'Egress']);
    assert.equal(policy.spec.ingress.length, 1);
    const [ingress] = policy.spec.ingress;
    assert.deepEqual(ingress.ports, [{ port: 'http', protocol: 'TCP' }]);
    for (const peer of ingress.from) {
      assert.ok(peer.namespaceSelector && peer.podSelector, 'labelled pods of labelled namespaces, not everyone');
      assert.ok(Object.keys(peer.namespaceSelector.matchLabels ?? {}).length > 0, 'not every namespace');
      assert.ok(Object.keys(peer.podSelector.matchLabels ?? {}).length > 0, 'not every pod');
    }
    const egressPorts = policy.spec.egress.flatMap((r: Json) => r.ports.map((p: Json) => `${p.protocol}/${p.port}`));
    assert.deepEqual(egressPorts.sort(), ['TCP/53', 'TCP/5432', 'UDP/53']);
    // Policies add up: any other that selects the dashboard pods opens none of their ports.
    const ports = container().ports.flatMap((p: Json) => [p.name, p.containerPort]);
    for (const other of docs.filter((d) => d.kind === 'NetworkPolicy' && d !== policy)) {
      if (!selects(podSelector(other) ?? {}, podLabels(dashboard()))) continue;
      const opened = (other.spec.ingress ?? []).flatMap((r: Json) =>
        (r.ports ?? [{ port: 'every' }]).map((p: Json) => p.port),
      );
      assert.deepEqual(
        opened.filter((p: Json) => p === 'every' || ports.includes(p)),
        [],
        `${id(other)} opens no dashboard port`,
      );
    }
  });

  test('database connections still fit max_connections with the dashboard', () => {
    const source = readFileSync(path.join(root, 'src/cli/dashboard.ts'), 'utf8');
    const poolSize = Number(/const DASHBOARD_POOL_SIZE = (\d+);/.exec(source)?.[1]);
    assert.ok(poolSize > 0, 'src/cli/dashboard.ts declares DASHBOARD_POOL_SIZE');
    const { total, parts } = supervisorConnections(docs, settings);
    // During a rollout the old and the surge pods are both up. (The command's context pool stays unused.)
    const pods = dashboard().spec.replicas + dashboard().spec.strategy.rollingUpdate.maxSurge;
    const all = total + pods * poolSize;
    assert.ok(
      all <= MAX_CONNECTIONS - RESERVED_CONNECTIONS,
      `${parts} + dashboard ${pods} × ${poolSize} = ${all} > ${MAX_CONNECTIONS - RESERVED_CONNECTIONS}`,
    );
  });
});

/**
 * Type-checks each document as an object literal of its model's interface, so
 * TypeScript reports every property the schema does not declare. Returns
 * "Kind/name: message" lines.
 */
function unknownFields(docs: Doc[], scratch: string): string[] {
  const dir = mkdtempSync(path.join(scratch, 'types-'));
  symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
  const lines = docs.map((doc, i) => `import type { I${doc.kind} as T${i} } from '${modelModule(doc)}';`);
  const first = lines.length;
  lines.push(...docs.map((doc, i) => `export const d${i}: T${i} = ${JSON.stringify(doc)};`));
  const file = path.join(dir, 'manifests.ts');
  writeFileSync(file, `${lines.join('\n')}\n`);
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: [],
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    const doc = docs[line - first];
    const where = doc ? `${doc.kind}/${doc.metadata.name}` : `line ${line + 1}`;
    return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ').slice(0, 400)}`;
  });
}

describe('deploy/app: the image of an app that depends on jobvisor', () => {
  const appDir = path.join(root, 'deploy/app');
  const text = readFileSync(path.join(appDir, 'Dockerfile'), 'utf8');
  /** Instructions with continuation lines joined, comments dropped. */
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'))
    .map((l) => {
      const m = /^\s*(\w+)\s+(.*)$/.exec(l);
      assert.ok(m, `an instruction: ${l}`);
      return { keyword: (m[1] as string).toUpperCase(), args: (m[2] as string).trim() };
    });
  const stages = instructions.filter((i) => i.keyword === 'FROM');
  const runtime = instructions.slice(instructions.lastIndexOf(stages.at(-1) as (typeof instructions)[number]));
  const last = (keyword: string) => runtime.filter((i) => i.keyword === keyword).at(-1)?.args ?? '';

  test('two linters find no problem in the app Dockerfile', async () => {
    const { validate } = await import('dockerfile-utils');
    const problems = validate(text).map(
      (d) => `line ${d.range.start.line + 1}: ${typeof d.message === 'string' ? d.message : d.message.value}`,
    );
    assert.deepEqual(problems, []);
    const dockerfilelint = createRequire(import.meta.url)('dockerfilelint') as {
      run(dir: string, content: string): { line: number; title: string }[];
    };
    assert.deepEqual(
      dockerfilelint.run(appDir, text).map((i) => `line ${i.line}: ${i.title}`),
      [],
    );
  });

  test('is multi-stage; its runtime runs node_modules/.bin/jobvisor under tini, non-root, stopped by SIGTERM', () => {
    assert.ok(stages.length >= 2, 'a build stage and a runtime stage');
    assert.match(
      instructions.map((i) => i.args).join('\n'),
      /npm prune --omit=dev/,
      'development packages are not shipped',
    );
    assert.deepEqual(JSON.parse(last('ENTRYPOINT')), ['/usr/bin/tini', '--', 'node_modules/.bin/jobvisor']);
    assert.deepEqual(JSON.parse(last('CMD')), ['start']);
    assert.match(
      runtime
        .filter((i) => i.keyword === 'RUN')
        .map((i) => i.args)
        .join(' '),
      /apt-get install [^&]*\btini\b/,
    );
    assert.equal(last('STOPSIGNAL'), 'SIGTERM');
    assert.equal(last('EXPOSE'), '9464');
    assert.match(last('ENV'), /JOBVISOR_TASKS_DIR=\/app\/tasks/);
    assert.match(last('WORKDIR'), /^\/app$/);
    const user = /^(\d+):(\d+)$/.exec(last('USER'));
    assert.ok(user && Number(user[1]) > 0, 'a numeric non-root USER');
    const pod = parseAllDocuments(run('kubectl', ['kustomize', appDir]))
      .map((d) => d.toJS() as Doc)
      .find((d) => d.kind === 'Deployment' && d.metadata.name === 'jobvisor');
    assert.equal(pod?.spec.template.spec.securityContext.runAsUser, Number(user[1]), "the base's runAsUser");
  });

  test("the kustomize base takes the app's image: every pod of the overlay runs it with the base's args", () => {
    const docs = parseAllDocuments(run('kubectl', ['kustomize', appDir])).map((d) => d.toJS() as Doc);
    const baseDocs = parseAllDocuments(run('kubectl', ['kustomize', base])).map((d) => d.toJS() as Doc);
    const images = (from: Doc[]) =>
      from
        .filter((d) => d.spec?.template?.spec?.containers)
        .flatMap((d) =>
          (d.spec.template.spec.containers as Json[]).map((c) => `${d.kind}/${d.metadata.name}:${c.image} ${c.args}`),
        );
    assert.deepEqual(images(docs).sort(), [
      'Deployment/jobvisor:registry.example/my-service:1.0.0 start',
      'Job/jobvisor-migrate:registry.example/my-service:1.0.0 migrate',
    ]);
    assert.ok(
      images(baseDocs).every((i) => i.includes(':localhost/jobvisor:')),
      "the base alone keeps jobvisor's own image",
    );
    assert.equal(docs.length, baseDocs.length, 'the overlay changes the image only');
  });
});
