/**
 * The workflow graph page: every job connected to one job by dependencies,
 * drawn left to right by depth (views/graph.ts), with what the drawing leaves
 * out said in words: a workflow read only in part (the admin read's bound),
 * and columns or depth bands drawn as counts.
 */
import { html } from 'hono/html';
import type { Workflow } from '../../queue/admin/index.ts';
import { workflowGraph } from './graph.ts';
import { LAYOUT_LIMITS, layoutWorkflow } from './graph_layout.ts';
import { count, layout, status, type ViewContext } from './layout.ts';

export function workflowPage(v: ViewContext, w: Workflow) {
  const drawn = layoutWorkflow(w.nodes);
  const edges = w.nodes.reduce((n, j) => n + j.parents.length, 0);
  const byStatus = new Map<string, number>();
  for (const j of w.nodes) byStatus.set(j.status, (byStatus.get(j.status) ?? 0) + 1);
  const label = `Workflow of job ${w.root}: ${w.nodes.length} jobs`;
  const body = html`<div data-refresh="10">
    <h1>Workflow of job <a href="${v.base}jobs/${w.root}">${w.root}</a></h1>
    <p class="actions">
      <button type="button" id="refresh-toggle" hidden>Pause auto-refresh</button>
    </p>
    <p id="workflow-summary">
      ${count(w.nodes.length)}${w.truncated ? '+' : ''} jobs, ${count(edges)} dependencies, depth ${drawn.depth}:
      ${[...byStatus].sort(([a], [b]) => (a < b ? -1 : 1)).map(([s, n]) => html`${status(s)} ${count(n)} `)}
    </p>
    ${
      w.truncated
        ? html`<p class="flash warn" id="workflow-truncated">
            This workflow has more than ${count(w.limit)} jobs: shown are the ${count(w.limit)} nearest to job
            ${w.root}, and the counts are theirs.
          </p>`
        : ''
    }
    ${
      drawn.collapsed === 'layers'
        ? html`<p class="muted" id="workflow-collapsed">
            Columns of more than ${LAYOUT_LIMITS.layerLimit} jobs (and the largest columns, while more than
            ${LAYOUT_LIMITS.nodeLimit} jobs would be drawn) are drawn as one box with their counts by status.
          </p>`
        : drawn.collapsed === 'bands'
          ? html`<p class="muted" id="workflow-collapsed">
              More than ${LAYOUT_LIMITS.columnLimit} levels: each box is a range of depths, with its jobs counted by
              status.
            </p>`
          : ''
    }
    ${w.nodes.length === 0 ? html`<p class="muted">There is no job ${w.root}.</p>` : workflowGraph(v, drawn, w.root, label)}
    <p class="muted">
      Left to right: parents before their dependents; a job stands one column after its deepest parent.
    </p>
  </div>`;
  return layout(v, `Workflow of job ${w.root}`, 'jobs', body);
}
