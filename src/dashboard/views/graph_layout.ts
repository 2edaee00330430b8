/**
 * Where each job of a workflow goes on the graph page. Pure.
 *
 * Columns are depths, left to right: a job's depth is the longest path to it
 * from a job without parents (longest-path layering), so every edge points
 * rightwards and a fan-in stands one column after its last parent. Within a
 * column jobs are ordered by the mean row of their parents (one barycentre
 * pass, which keeps most edges from crossing), then by id.
 *
 * Bounds, so that a 10,000 → 1 fan-in still draws as a page:
 *   - a column of more than `layerLimit` jobs becomes one box counting its
 *     jobs by status; while more than `nodeLimit` jobs would still be drawn
 *     one by one, the largest remaining column is counted too;
 *   - more than `columnLimit` columns (a chain of 1,000), and every box is a
 *     band of consecutive depths, at most `columnLimit` bands, each counting
 *     its jobs by status.
 * Edges join boxes; edges between the same two boxes are drawn once with their count.
 */

export interface GraphInput {
  id: string;
  kind: string;
  status: string;
  queue: string;
  /** Parents among the input's ids (others are ignored). */
  parents: string[];
}

/** Several jobs drawn as one box. */
export interface GraphGroup {
  total: number;
  /** Status → count, alphabetical. */
  byStatus: Record<string, number>;
  /** Kinds present, alphabetical. */
  kinds: string[];
  /** Depths covered, first and last. */
  depths: [number, number];
}

export interface GraphBox {
  key: string;
  column: number;
  row: number;
  /** A single job … */
  job?: GraphInput;
  /** … or a group of them. */
  group?: GraphGroup;
}

export interface GraphEdge {
  from: string;
  to: string;
  count: number;
}

export interface GraphLayout {
  boxes: GraphBox[];
  edges: GraphEdge[];
  columns: number;
  /** Rows of the tallest column. */
  rows: number;
  /** 'none': every job drawn; 'layers': some columns are counts; 'bands': every box is a range of depths. */
  collapsed: 'none' | 'layers' | 'bands';
  /** Longest path, in edges. */
  depth: number;
}

export interface LayoutLimits {
  layerLimit?: number;
  nodeLimit?: number;
  columnLimit?: number;
}

export const LAYOUT_LIMITS = { layerLimit: 40, nodeLimit: 300, columnLimit: 60 } as const;

/** Each job's depth: longest path from a job without parents among `nodes`. */
export function depths(nodes: GraphInput[]): Map<string, number> {
  const ids = new Set(nodes.map((n) => n.id));
  const children = new Map<string, string[]>();
  const waiting = new Map<string, number>();
  for (const n of nodes) {
    const parents = n.parents.filter((p) => ids.has(p) && p !== n.id);
    waiting.set(n.id, parents.length);
    for (const p of parents) {
      const list = children.get(p);
      if (list) list.push(n.id);
      else children.set(p, [n.id]);
    }
  }
  const depth = new Map<string, number>();
  const ready = nodes.filter((n) => waiting.get(n.id) === 0).map((n) => n.id);
  for (const id of ready) depth.set(id, 0);
  // Kahn's order: a job is placed once all its parents are.
  for (let i = 0; i < ready.length; i++) {
    const id = ready[i] as string;
    for (const c of children.get(id) ?? []) {
      depth.set(c, Math.max(depth.get(c) ?? 0, (depth.get(id) ?? 0) + 1));
      const left = (waiting.get(c) ?? 0) - 1;
      waiting.set(c, left);
      if (left === 0) ready.push(c);
    }
  }
  // Edges written by hand in SQL could form a cycle; such jobs go after the rest rather than vanish.
  const last = Math.max(-1, ...depth.values()) + 1;
  for (const n of nodes) if (!depth.has(n.id)) depth.set(n.id, last);
  return depth;
}

function byId(a: GraphInput, b: GraphInput): number {
  return a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function groupOf(jobs: GraphInput[], first: number, lastDepth: number): GraphGroup {
  const byStatus: Record<string, number> = {};
  for (const s of jobs.map((j) => j.status).sort()) byStatus[s] = (byStatus[s] ?? 0) + 1;
  return {
    total: jobs.length,
    byStatus,
    kinds: [...new Set(jobs.map((j) => j.kind))].sort(),
    depths: [first, lastDepth],
  };
}

export function layoutWorkflow(nodes: GraphInput[], limits: LayoutLimits = {}): GraphLayout {
  const { layerLimit, nodeLimit, columnLimit } = { ...LAYOUT_LIMITS, ...limits };
  const depth = depths(nodes);
  const maxDepth = Math.max(0, ...depth.values());
  const layers: GraphInput[][] = Array.from({ length: nodes.length === 0 ? 0 : maxDepth + 1 }, () => []);
  for (const n of [...nodes].sort(byId)) layers[depth.get(n.id) ?? 0]?.push(n);

  const boxOf = new Map<string, string>();
  const boxes: GraphBox[] = [];
  let collapsed: GraphLayout['collapsed'] = 'none';
  if (layers.length > columnLimit) {
    collapsed = 'bands';
    const band = Math.ceil(layers.length / columnLimit);
    for (let c = 0; c * band < layers.length; c++) {
      const jobs = layers.slice(c * band, (c + 1) * band).flat();
      const key = `band-${c}`;
      for (const j of jobs) boxOf.set(j.id, key);
      boxes.push({
        key,
        column: c,
        row: 0,
        group: groupOf(jobs, c * band, Math.min(layers.length, (c + 1) * band) - 1),
      });
    }
  } else {
    const counted = new Set(layers.flatMap((l, i) => (l.length > layerLimit ? [i] : [])));
    let drawn = layers.reduce((n, l, i) => n + (counted.has(i) ? 0 : l.length), 0);
    while (drawn > nodeLimit) {
      let largest = -1;
      layers.forEach((l, i) => {
        if (!counted.has(i) && (largest < 0 || l.length > (layers[largest]?.length ?? 0))) largest = i;
      });
      counted.add(largest);
      drawn -= layers[largest]?.length ?? 0;
    }
    const rowOf = new Map<string, number>();
    layers.forEach((layer, column) => {
      if (counted.has(column)) {
        collapsed = 'layers';
        const key = `layer-${column}`;
        for (const j of layer) {
          boxOf.set(j.id, key);
          rowOf.set(j.id, 0);
        }
        boxes.push({ key, column, row: 0, group: groupOf(layer, column, column) });
        return;
      }
      const centre = (j: GraphInput) => {
        const rows = j.parents.map((p) => rowOf.get(p)).filter((r): r is number => r !== undefined);
        return rows.length === 0 ? Number.POSITIVE_INFINITY : rows.reduce((a, b) => a + b, 0) / rows.length;
      };
      const ordered = layer
        .map((j) => ({ j, c: centre(j) }))
        .sort((a, b) => (a.c === b.c ? byId(a.j, b.j) : a.c < b.c ? -1 : 1))
        .map(({ j }) => j);
      ordered.forEach((j, row) => {
        rowOf.set(j.id, row);
        boxOf.set(j.id, j.id);
        boxes.push({ key: j.id, column, row, job: j });
      });
    });
  }

  const edges = new Map<string, GraphEdge>();
  for (const n of nodes)
    for (const p of n.parents) {
      const from = boxOf.get(p);
      const to = boxOf.get(n.id);
      if (from === undefined || to === undefined || from === to) continue;
      const key = `${from}\u0000${to}`;
      const e = edges.get(key);
      if (e) e.count++;
      else edges.set(key, { from, to, count: 1 });
    }
  const columns = Math.max(0, ...boxes.map((b) => b.column + 1));
  const rows = Math.max(0, ...boxes.map((b) => b.row + 1));
  return { boxes, edges: [...edges.values()], columns, rows, collapsed, depth: maxDepth };
}
