/**
 * A workflow drawn as SVG on the server (no script): one box per job (kind,
 * id, status colour; a link to its page) or per group of jobs (counts by
 * status and a bar of their shares), edges from parent to child as curves
 * with an arrowhead, a count on an edge that stands for several. Positions
 * come from graph_layout.ts; colours from the stylesheet's status classes.
 */
import { html } from 'hono/html';
import type { GraphBox, GraphLayout } from './graph_layout.ts';
import { count, type Html, type ViewContext } from './layout.ts';

const W = 168;
const H = 44;
const GAP_X = 64;
const GAP_Y = 12;
const PAD = 8;

/** A status as a CSS class suffix: the table's statuses are plain words; anything else is "other". */
function cls(status: string): string {
  return /^[a-z]{1,20}$/.test(status) ? status : 'other';
}

function short(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function place(layout: GraphLayout, rowsIn: Map<number, number>, b: GraphBox) {
  // Shorter columns are centred against the tallest.
  const offset = (layout.rows - (rowsIn.get(b.column) ?? 1)) / 2;
  return { x: PAD + b.column * (W + GAP_X), y: PAD + (b.row + offset) * (H + GAP_Y) };
}

function jobBox(v: ViewContext, b: GraphBox, x: number, y: number, root: string): Html {
  const j = b.job!;
  return html`<a href="${v.base}jobs/${j.id}" class="node" data-job="${j.id}">
    <title>job ${j.id} · ${j.kind} · ${j.status} · queue ${j.queue}</title>
    <rect
      class="n-${cls(j.status)}${j.id === root ? ' root' : ''}"
      x="${x}"
      y="${y}"
      width="${W}"
      height="${H}"
      rx="6"
    ></rect>
    <text x="${x + 8}" y="${y + 18}" class="kind">${short(j.kind, 22)}</text>
    <text x="${x + 8}" y="${y + 35}">#${j.id} · ${j.status}</text>
  </a>`;
}

function groupBox(b: GraphBox, x: number, y: number): Html {
  const g = b.group!;
  const kinds = g.kinds.length === 1 ? (g.kinds[0] as string) : `${g.kinds.length} kinds`;
  const statuses = Object.entries(g.byStatus);
  const depths = g.depths[0] === g.depths[1] ? `depth ${g.depths[0]}` : `depths ${g.depths[0]}–${g.depths[1]}`;
  let at = x;
  const bar = statuses.map(([s, n]) => {
    const w = (n / g.total) * W;
    const r = html`<rect
      class="n-${cls(s)}"
      x="${at.toFixed(1)}"
      y="${y + H - 6}"
      width="${w.toFixed(1)}"
      height="6"
    ></rect>`;
    at += w;
    return r;
  });
  return html`<g class="group" data-group="${b.key}">
    <title>
      ${count(g.total)} jobs (${depths}): ${statuses.map(([s, n]) => `${count(n)} ${s}`).join(', ')};
      ${g.kinds.join(', ')}
    </title>
    <rect class="n-group" x="${x}" y="${y}" width="${W}" height="${H}" rx="6"></rect>
    <text x="${x + 8}" y="${y + 16}" class="kind">${short(kinds, 16)} ×${count(g.total)}</text>
    <text x="${x + 8}" y="${y + 31}"> ${short(statuses.map(([s, n]) => `${count(n)} ${s}`).join(' · '), 30)} </text>
    ${bar}
  </g>`;
}

export function workflowGraph(v: ViewContext, layout: GraphLayout, root: string, label: string): Html {
  const rowsIn = new Map<number, number>();
  for (const b of layout.boxes) rowsIn.set(b.column, Math.max(rowsIn.get(b.column) ?? 0, b.row + 1));
  const at = new Map(layout.boxes.map((b) => [b.key, place(layout, rowsIn, b)]));
  const width = PAD * 2 + layout.columns * W + Math.max(0, layout.columns - 1) * GAP_X;
  const height = PAD * 2 + layout.rows * H + Math.max(0, layout.rows - 1) * GAP_Y;
  const edges = layout.edges.map((e) => {
    const a = at.get(e.from)!;
    const b = at.get(e.to)!;
    const [x1, y1, x2, y2] = [a.x + W, a.y + H / 2, b.x - 3, b.y + H / 2];
    const mid = (x1 + x2) / 2;
    return html`<path class="edge" d="M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}" marker-end="url(#arrow)"
        ><title>${e.count === 1 ? 'parent → child' : `${count(e.count)} edges`}</title></path
      >${
        e.count > 1
          ? html`<text class="edge-count" x="${mid}" y="${(y1 + y2) / 2 - 3}" text-anchor="middle">
              ${count(e.count)}
            </text>`
          : ''
      }`;
  });
  return html`<div class="graph-scroll">
    <svg
      class="graph"
      id="workflow-graph"
      role="img"
      aria-label="${label}"
      viewBox="0 0 ${width} ${height}"
      width="${width}"
      height="${height}"
    >
      <defs>
        <marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto">
          <path d="M0,0 L8,4 L0,8 z" class="arrow"></path>
        </marker>
      </defs>
      ${edges}
      ${layout.boxes.map((b) => {
        const { x, y } = at.get(b.key)!;
        return b.job ? jobBox(v, b, x, y, root) : groupBox(b, x, y);
      })}
    </svg>
  </div>`;
}
