import { describe, expect, it } from 'vitest';
import { boxHeight, boxWidth, planGraph } from './planGraph';

// A 3-node plan as the planner makes one: create and bootstrap every
// node, install lb and web, configure them, start web before lb.
const t = (ref: string, stage: number, action: string, service: string, nodenum: number | null = null) => ({
  ref,
  stage,
  action,
  service,
  nodenum,
});
const tasks = [
  t('t0', 0, 'CREATE', '', 1),
  t('t1', 0, 'CREATE', '', 2),
  t('t2', 0, 'CREATE', '', 3),
  t('t3', 1, 'INSTALL', 'lb', 1),
  t('t4', 1, 'INSTALL', 'web', 2),
  t('t5', 1, 'INSTALL', 'web', 3),
  t('t6', 2, 'START', 'web', 2),
  t('t7', 2, 'START', 'web', 3),
  t('t8', 3, 'START', 'lb', 1),
];
const edges = [
  ['t0', 't3'],
  ['t1', 't4'],
  ['t2', 't5'],
  ['t4', 't6'],
  ['t5', 't7'],
  ['t3', 't8'],
  ['t6', 't8'],
  ['t7', 't8'],
  // Implied by t1 -> t4 -> t6 -> t8: no arrow of its own.
  ['t1', 't8'],
];

describe('planGraph', () => {
  const g = planGraph(tasks, edges);
  it('makes a box per action of a service in a stage, with its nodes', () => {
    expect(g.boxes.map((b) => [b.id, b.count, b.nodenums])).toEqual([
      ['0/CREATE/', 3, [1, 2, 3]],
      ['1/INSTALL/lb', 1, [1]],
      ['1/INSTALL/web', 2, [2, 3]],
      ['2/START/web', 2, [2, 3]],
      ['3/START/lb', 1, [1]],
    ]);
  });
  it('draws each dependency between boxes once, leaving out those a path implies', () => {
    expect(g.arrows.map((a) => a.id).sort()).toEqual([
      '0/CREATE/->1/INSTALL/lb',
      '0/CREATE/->1/INSTALL/web',
      '1/INSTALL/lb->3/START/lb',
      '1/INSTALL/web->2/START/web',
      '2/START/web->3/START/lb',
    ]);
  });
  it('puts each stage in its own row, top to bottom, boxes apart', () => {
    const ys = g.boxes.map((b) => b.y);
    expect(new Set(ys).size).toBe(4);
    const byStage = (s: number) => g.boxes.filter((b) => b.stage === s);
    expect(byStage(0)[0]?.y).toBeLessThan(byStage(1)[0]?.y ?? 0);
    expect(byStage(1)[0]?.y).toBeGreaterThanOrEqual((byStage(0)[0]?.y ?? 0) + boxHeight);
    const [a, b] = byStage(1);
    expect(Math.abs((a?.x ?? 0) - (b?.x ?? 0))).toBeGreaterThanOrEqual(boxWidth);
  });
  it('orders a column by where its arrows come from', () => {
    // In plan order START web comes first in stage 3, but CONFIGURE lb
    // follows INSTALL lb, the first box of stage 2: it goes first.
    const rows = planGraph([...tasks, t('t9', 2, 'CONFIGURE', 'lb', 1)], [...edges, ['t3', 't9']]).boxes;
    const x = (id: string) => rows.find((b) => b.id === id)?.x ?? -1;
    expect(x('1/INSTALL/lb')).toBeLessThan(x('1/INSTALL/web'));
    expect(x('2/CONFIGURE/lb')).toBeLessThan(x('2/START/web'));
  });
  it('is empty for an empty plan', () => {
    expect(planGraph([], [])).toEqual({ boxes: [], arrows: [] });
  });
});
