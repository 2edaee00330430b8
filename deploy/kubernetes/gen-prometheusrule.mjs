#!/usr/bin/env node
// Writes deploy/kubernetes/prometheusrule.yaml: grafana/alerts.yml (the rules that
// promtool tests) wrapped, unchanged and with its comments, in a Prometheus Operator
// PrometheusRule. One source of truth for the alerts.
//
//   node deploy/kubernetes/gen-prometheusrule.mjs           regenerate
//   node deploy/kubernetes/gen-prometheusrule.mjs --check   exit 1 if the file is stale
// Options --alerts FILE and --out FILE replace the default paths (tests use them).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import YAML from 'yaml';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const HEADER = [
  ' Generated from grafana/alerts.yml by deploy/kubernetes/gen-prometheusrule.mjs: do not edit.',
  ' Change the rules there (promtool tests them), then run: node deploy/kubernetes/gen-prometheusrule.mjs',
].join('\n');

/** The PrometheusRule document for the text of a Prometheus rules file. */
export function render(alertsText) {
  const source = YAML.parseDocument(alertsText);
  if (source.errors.length > 0) throw new Error(`alerts file: ${source.errors[0].message}`);
  const groups = source.get('groups', true);
  if (!YAML.isSeq(groups) || groups.items.length === 0) throw new Error('alerts file: no groups');
  const doc = new YAML.Document({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'jobvisor', labels: { 'app.kubernetes.io/component': 'alerts' } },
    spec: {},
  });
  doc.setIn(['spec', 'groups'], groups);
  doc.commentBefore = HEADER;
  return doc.toString({ lineWidth: 0 });
}

function main() {
  const { values } = parseArgs({
    options: {
      check: { type: 'boolean', default: false },
      alerts: { type: 'string', default: path.join(root, 'grafana/alerts.yml') },
      out: { type: 'string', default: path.join(root, 'deploy/kubernetes/prometheusrule.yaml') },
    },
  });
  const wanted = render(readFileSync(values.alerts, 'utf8'));
  if (!values.check) {
    writeFileSync(values.out, wanted);
    return;
  }
  let current = '';
  try {
    current = readFileSync(values.out, 'utf8');
  } catch {
    // a missing file is stale too
  }
  if (current !== wanted) {
    console.error(`${path.relative(root, values.out)} is stale: run node deploy/kubernetes/gen-prometheusrule.mjs`);
    process.exit(1);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
