import { describe, expect, it } from 'vitest';
import { Batcher, countStates, groupLayout, groupTasks, leaseLimit, numberRanges, planStages } from './plan';

const node = (nodenum: number, services: string[]) => ({
  nodenum,
  hostname: `n${nodenum}`,
  services,
  hardwaretype: 'small',
  imagetype: 'debian12',
  flavor: 'f',
  image: 'i',
});

describe('groupLayout', () => {
  it('collapses nodes of the same make-up, in node order', () => {
    const rows = groupLayout([node(1003, ['base', 'web']), node(1000, ['base', 'lb']), node(1001, ['base', 'web'])]);
    expect(rows.map((r) => [r.services, r.nodenums])).toEqual([
      [['base', 'lb'], [1000]],
      [
        ['base', 'web'],
        [1001, 1003],
      ],
    ]);
  });
});

describe('numberRanges', () => {
  it.each([
    [[], ''],
    [[5], '5'],
    [[1, 2, 3, 5, 7, 8, 9], '1–3, 5, 7–9'],
  ])('%j is %s', (ns, want) => expect(numberRanges(ns)).toBe(want));
});

describe('planStages', () => {
  it('groups tasks by stage, then action and service', () => {
    const s = planStages([
      { ref: 't0', nodenum: 1, action: 'CREATE', service: '', stage: 0 },
      { ref: 't1', nodenum: 2, action: 'CREATE', service: '', stage: 0 },
      { ref: 't2', nodenum: 2, action: 'INSTALL', service: 'web', stage: 1 },
      { ref: 't3', nodenum: null, action: 'NETWORK_ALLOCATE', service: '', stage: 1 },
    ]);
    expect(s).toEqual([
      { stage: 0, tasks: 2, groups: [{ action: 'CREATE', service: '', count: 2, nodenums: [1, 2] }] },
      {
        stage: 1,
        tasks: 2,
        groups: [
          { action: 'INSTALL', service: 'web', count: 1, nodenums: [2] },
          { action: 'NETWORK_ALLOCATE', service: '', count: 1, nodenums: [] },
        ],
      },
    ]);
  });
});

describe('groupTasks and countStates', () => {
  it('keeps a thousand nodes to one row per stage, action and service', () => {
    const tasks = Array.from({ length: 3000 }, (_, i) => ({
      id: String(i),
      stage: i % 3,
      action: 'INSTALL',
      service: 'web',
      state: i < 10 ? 'FAILED' : 'COMPLETE',
    }));
    const g = groupTasks(tasks);
    expect(g.map((s) => s.groups.length)).toEqual([1, 1, 1]);
    const states = new Map(tasks.map((t) => [t.id, t.state]));
    states.set('3', 'IN_PROGRESS');
    expect(countStates(g[0]!.groups[0]!.ids, states)).toEqual({ FAILED: 3, IN_PROGRESS: 1, COMPLETE: 996 });
  });
});

describe('Batcher', () => {
  it('hands over everything pushed before a frame in one flush', () => {
    const frames: (() => void)[] = [];
    const flushed: number[][] = [];
    const b = new Batcher<number>(
      (xs) => flushed.push(xs),
      (f) => frames.push(f),
    );
    for (let i = 0; i < 1000; i++) b.push(i);
    expect(frames.length).toBe(1);
    frames.shift()!();
    b.push(1000);
    frames.shift()!();
    expect(flushed.map((x) => x.length)).toEqual([1000, 1]);
  });
  it('drops what is pending', () => {
    const frames: (() => void)[] = [];
    const flushed: number[][] = [];
    const b = new Batcher<number>(
      (xs) => flushed.push(xs),
      (f) => frames.push(f),
    );
    b.push(1);
    b.drop();
    frames.shift()!();
    expect(flushed).toEqual([]);
  });
});

describe('leaseLimit', () => {
  const h = 3_600_000;
  it('takes the nearer of the step and the max', () => {
    const created = '2026-01-01T00:00:00Z';
    const expire = '2026-01-01T10:00:00Z';
    expect(leaseLimit(created, expire, { max: 12 * h, step: 4 * h }).latest).toBe(Date.parse(created) + 12 * h);
    expect(leaseLimit(created, expire, { max: 48 * h, step: 4 * h }).latest).toBe(Date.parse(expire) + 4 * h);
    expect(leaseLimit(created, expire, { max: 0, step: 0 }).latest).toBeNull();
  });
});
