// The plan as a graph: one box per action of a service in a stage (the
// rows of the stage table, so a thousand nodes stay a few boxes), an arrow
// where a task of one waits for a task of another. The planner's stages
// are already a layering of the graph (every edge goes to a later stage),
// so the boxes stand in a row per stage, top to bottom, ordered to cross
// few arrows; no general graph layout is needed. (Rows, not columns: a
// plan is a long chain of stages a few boxes wide, which read at full size
// down a page, but shrank to illegible side by side.)
import type { PlannedTask } from './plan';

export interface GraphBox {
  id: string;
  stage: number;
  action: string;
  service: string;
  count: number;
  nodenums: number[];
  /** Top left, in pixels. */
  x: number;
  y: number;
}

export interface GraphArrow {
  id: string;
  from: string;
  to: string;
}

export const boxWidth = 200;
export const boxHeight = 52;
const columnGap = 24;
const rowGap = 36;

/**
 * planGraph groups a plan's tasks and edges into boxes and arrows, laid
 * out by stage. An arrow that another path already implies (a waits for b
 * waits for c: no arrow a to c) is left out: the graph shows the order, not
 * every dependency.
 */
export function planGraph(
  tasks: readonly PlannedTask[],
  edges: readonly (readonly string[])[],
): { boxes: GraphBox[]; arrows: GraphArrow[] } {
  const boxOf = new Map<string, string>();
  const boxes = new Map<string, GraphBox>();
  for (const t of tasks) {
    const id = `${t.stage}/${t.action}/${t.service}`;
    boxOf.set(t.ref, id);
    let b = boxes.get(id);
    if (!b) {
      b = { id, stage: t.stage, action: t.action, service: t.service, count: 0, nodenums: [], x: 0, y: 0 };
      boxes.set(id, b);
    }
    b.count++;
    if (t.nodenum != null) b.nodenums.push(t.nodenum);
  }
  for (const b of boxes.values()) b.nodenums.sort((a, b) => a - b);

  const next = new Map<string, Set<string>>();
  for (const e of edges) {
    const from = boxOf.get(e[0] ?? '');
    const to = boxOf.get(e[1] ?? '');
    if (!from || !to || from === to) continue;
    let s = next.get(from);
    if (!s) next.set(from, (s = new Set()));
    s.add(to);
  }
  // Transitive reduction: a to c goes when c is reachable from another of
  // a's successors. Boxes are few (tens), so a search per arrow is cheap.
  const reaches = (from: string, to: string, skip: string): boolean => {
    const seen = new Set<string>();
    const stack = [...(next.get(from) ?? [])].filter((n) => n !== skip);
    while (stack.length) {
      const n = stack.pop() ?? '';
      if (n === to) return true;
      if (seen.has(n)) continue;
      seen.add(n);
      stack.push(...(next.get(n) ?? []));
    }
    return false;
  };
  const arrows: GraphArrow[] = [];
  for (const [from, tos] of next) {
    for (const to of tos) {
      if (!reaches(from, to, to)) arrows.push({ id: `${from}->${to}`, from, to });
    }
  }

  // A row per stage; within one, order by the mean place of the boxes an
  // arrow comes from (the barycenter heuristic), keeping plan order first.
  const columns = new Map<number, GraphBox[]>();
  for (const b of boxes.values()) {
    let c = columns.get(b.stage);
    if (!c) columns.set(b.stage, (c = []));
    c.push(b);
  }
  const stages = [...columns.keys()].sort((a, b) => a - b);
  const row = new Map<string, number>();
  const prev = new Map<string, string[]>();
  for (const a of arrows) {
    let p = prev.get(a.to);
    if (!p) prev.set(a.to, (p = []));
    p.push(a.from);
  }
  for (const s of stages) {
    const col = columns.get(s) ?? [];
    const weight = (b: GraphBox, i: number) => {
      const rows = (prev.get(b.id) ?? []).map((p) => row.get(p)).filter((r): r is number => r !== undefined);
      return rows.length ? rows.reduce((x, y) => x + y, 0) / rows.length : i;
    };
    const order = col.map((b, i) => ({ b, w: weight(b, i), i })).sort((p, q) => p.w - q.w || p.i - q.i);
    order.forEach(({ b }, i) => row.set(b.id, i));
    columns.set(
      s,
      order.map(({ b }) => b),
    );
  }
  const widest = Math.max(0, ...[...columns.values()].map((c) => c.length));
  stages.forEach((s, y) => {
    const row = columns.get(s) ?? [];
    // Shorter rows are centered under the widest.
    const offset = ((widest - row.length) * (boxWidth + columnGap)) / 2;
    row.forEach((b, i) => {
      b.x = offset + i * (boxWidth + columnGap);
      b.y = y * (boxHeight + rowGap);
    });
  });
  return { boxes: stages.flatMap((s) => columns.get(s) ?? []), arrows };
}
