// What the create and operation previews and the job view show of a plan
// or a job: nodes with the same make-up collapsed into one row, and tasks
// grouped per stage by action and service, so that a thousand nodes stay
// a few readable lines (docs/ui.md#the-job-view).

export interface LayoutNode {
  nodenum: number;
  hostname: string;
  services: readonly string[];
  hardwaretype: string;
  imagetype: string;
  flavor: string;
  image: string;
}

export interface LayoutRow {
  services: string[];
  hardwaretype: string;
  imagetype: string;
  flavor: string;
  image: string;
  /** Node numbers, ascending. */
  nodenums: number[];
}

/** groupLayout collapses nodes with the same services, hardware and image into one row, in first-node order. */
export function groupLayout(nodes: readonly LayoutNode[]): LayoutRow[] {
  const rows = new Map<string, LayoutRow>();
  for (const n of [...nodes].sort((a, b) => a.nodenum - b.nodenum)) {
    const services = [...n.services];
    const key = JSON.stringify([services, n.hardwaretype, n.imagetype, n.flavor, n.image]);
    let r = rows.get(key);
    if (!r) {
      r = {
        services,
        hardwaretype: n.hardwaretype,
        imagetype: n.imagetype,
        flavor: n.flavor,
        image: n.image,
        nodenums: [],
      };
      rows.set(key, r);
    }
    r.nodenums.push(n.nodenum);
  }
  return [...rows.values()];
}

/** numberRanges writes ascending numbers as ranges: 1–3, 5, 7–9. */
export function numberRanges(ns: readonly number[]): string {
  const out: string[] = [];
  let i = 0;
  while (i < ns.length) {
    let j = i;
    while (j + 1 < ns.length && ns[j + 1] === (ns[j] ?? 0) + 1) j++;
    out.push(i === j ? String(ns[i]) : `${ns[i]}–${ns[j]}`);
    i = j + 1;
  }
  return out.join(', ');
}

export interface PlannedTask {
  ref: string;
  nodenum?: number | null;
  action: string;
  service: string;
  stage: number;
}

export interface PlanGroup {
  action: string;
  service: string;
  /** Tasks in the group; cluster-scoped tasks have no node. */
  count: number;
  nodenums: number[];
}

export interface PlanStage {
  stage: number;
  groups: PlanGroup[];
  tasks: number;
}

/** planStages groups a preview's tasks by stage, then by action and service in plan order. */
export function planStages(tasks: readonly PlannedTask[]): PlanStage[] {
  const stages = new Map<number, Map<string, PlanGroup>>();
  for (const t of tasks) {
    let s = stages.get(t.stage);
    if (!s) stages.set(t.stage, (s = new Map()));
    const key = `${t.action}\u0000${t.service}`;
    let g = s.get(key);
    if (!g) s.set(key, (g = { action: t.action, service: t.service, count: 0, nodenums: [] }));
    g.count++;
    if (t.nodenum != null) g.nodenums.push(t.nodenum);
  }
  return [...stages.entries()]
    .sort(([a], [b]) => a - b)
    .map(([stage, groups]) => {
      const gs = [...groups.values()];
      for (const g of gs) g.nodenums.sort((a, b) => a - b);
      return { stage, groups: gs, tasks: gs.reduce((n, g) => n + g.count, 0) };
    });
}

/** The task states the job view counts, in the order it shows them. */
export const taskStates = [
  'FAILED',
  'IN_PROGRESS',
  'QUEUED',
  'NOT_SUBMITTED',
  'COMPLETE',
  'SKIPPED',
  'DROPPED',
] as const;
export type TaskStateName = (typeof taskStates)[number];

export interface JobTask {
  id: string;
  stage: number;
  action: string;
  service: string;
  state: string;
}

export interface TaskGroup {
  key: string;
  stage: number;
  action: string;
  service: string;
  /** Task ids, in plan order. */
  ids: string[];
}

/** groupTasks is the job view's skeleton: its groups do not change as tasks change state. */
export function groupTasks(tasks: readonly JobTask[]): { stage: number; groups: TaskGroup[] }[] {
  const stages = new Map<number, Map<string, TaskGroup>>();
  for (const t of tasks) {
    let s = stages.get(t.stage);
    if (!s) stages.set(t.stage, (s = new Map()));
    const key = `${t.stage}/${t.action}/${t.service}`;
    let g = s.get(key);
    if (!g) s.set(key, (g = { key, stage: t.stage, action: t.action, service: t.service, ids: [] }));
    g.ids.push(t.id);
  }
  return [...stages.entries()].sort(([a], [b]) => a - b).map(([stage, g]) => ({ stage, groups: [...g.values()] }));
}

/** countStates counts the states of ids. */
export function countStates(ids: readonly string[], states: ReadonlyMap<string, string>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const id of ids) {
    const s = states.get(id) ?? 'NOT_SUBMITTED';
    out[s] = (out[s] ?? 0) + 1;
  }
  return out;
}

/** taskStateColor is the color a task state is shown in, always beside its name. */
export function taskStateColor(s: string): string {
  switch (s) {
    case 'COMPLETE':
      return 'teal';
    case 'FAILED':
      return 'red';
    case 'IN_PROGRESS':
      return 'blue';
    case 'QUEUED':
      return 'cyan';
    case 'SKIPPED':
      return 'orange';
    case 'DROPPED':
      return 'grape';
  }
  return 'gray';
}

/**
 * Batcher gathers updates and hands them over at most once per animation
 * frame: a job with a thousand task changes a second re-renders sixty
 * times, not a thousand.
 */
export class Batcher<T> {
  private pending: T[] = [];
  private scheduled = false;
  constructor(
    private readonly flush: (items: T[]) => void,
    private readonly schedule: (f: () => void) => unknown = (f) => requestAnimationFrame(f),
  ) {}

  push(item: T): void {
    this.pending.push(item);
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(() => {
      this.scheduled = false;
      const items = this.pending;
      this.pending = [];
      if (items.length > 0) this.flush(items);
    });
  }

  /** drop forgets what has not been flushed (the view went away). */
  drop(): void {
    this.pending = [];
  }
}

/** leaseBounds says how far a lease may be extended now: ms since epoch, or null when it never ends. */
export function leaseLimit(
  createdAt: string,
  expireTime: string | null,
  lease: { max: number; step: number },
): { latest: number | null; step: number | null } {
  const maxEnd = lease.max > 0 ? Date.parse(createdAt) + lease.max : null;
  const stepEnd = lease.step > 0 && expireTime ? Date.parse(expireTime) + lease.step : null;
  let latest: number | null = null;
  if (maxEnd !== null && stepEnd !== null) latest = Math.min(maxEnd, stepEnd);
  else latest = maxEnd ?? stepEnd;
  return { latest, step: lease.step > 0 ? lease.step : null };
}
