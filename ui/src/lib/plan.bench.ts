// What one animation frame of the job view costs for a 1,000-node job
// (15 tasks a node): applying a second's 1,000 task changes and counting
// every group's states again. Run: npx vitest bench --run src/lib/plan.bench.ts
import { bench, describe } from 'vitest';
import { countStates, groupTasks, type JobTask } from './plan';

const actions = ['CREATE', 'CONFIRM', 'BOOTSTRAP', 'INSTALL', 'CONFIGURE', 'INITIALIZE', 'START'];
const services = ['base', 'web'];
const tasks: JobTask[] = [];
for (let n = 0; n < 1000; n++) {
  let stage = 0;
  for (const a of actions) {
    for (const s of a === 'CREATE' || a === 'CONFIRM' || a === 'BOOTSTRAP' ? [''] : services) {
      tasks.push({ id: `${n}-${a}-${s}`, stage: stage++, action: a, service: s, state: 'NOT_SUBMITTED' });
    }
  }
}
const states = new Map(tasks.map((t) => [t.id, t.state]));
const stages = groupTasks(tasks);
const groups = stages.flatMap((s) => s.groups);

describe(`job view, ${tasks.length} tasks in ${groups.length} groups`, () => {
  bench('group the tasks (once per read of the job)', () => {
    groupTasks(tasks);
  });
  bench('a frame: apply 1,000 changes, count every group and the whole job', () => {
    for (let i = 0; i < 1000; i++) {
      const t = tasks[(i * 7919) % tasks.length]!;
      states.set(t.id, i % 2 ? 'COMPLETE' : 'IN_PROGRESS');
    }
    for (const g of groups) countStates(g.ids, states);
    countStates(
      tasks.map((t) => t.id),
      states,
    );
  });
});
