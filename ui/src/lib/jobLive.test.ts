import { describe, expect, it } from 'vitest';
import { type FetchPage, JobTasks, type ProgressEvent, type TaskLike, TaskLoader } from './jobLive';

const ev = (taskId: string, state: string, lagged = false): ProgressEvent => ({
  kind: 'TASK',
  taskId,
  state,
  lagged,
  jobState: 'RUNNING',
});
const lag: ProgressEvent = { kind: 'SNAPSHOT', state: 'RUNNING', lagged: true, jobState: 'RUNNING' };

/** A promise settled by hand, for answers that land when the test says. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  const p = new Promise<T>((r) => (resolve = r));
  return { p, resolve };
}
/** tick lets settled answers run on (a few promise hops each). */
const tick = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('JobTasks', () => {
  it('keeps a state an event set after the page was asked for', () => {
    const j = new JobTasks<TaskLike>();
    const mark = j.mark();
    j.apply([ev('a', 'IN_PROGRESS'), ev('a', 'COMPLETE')]);
    // Read before the events committed: older than what is shown.
    j.page(
      [
        { id: 'a', state: 'QUEUED' },
        { id: 'b', state: 'QUEUED' },
      ],
      mark,
    );
    expect(j.states.get('a')).toBe('COMPLETE');
    expect(j.states.get('b')).toBe('QUEUED');
    expect(j.stats.kept).toBe(1);
  });

  it('takes the page for events applied before it was asked for', () => {
    const j = new JobTasks<TaskLike>();
    j.apply([ev('a', 'IN_PROGRESS')]);
    const mark = j.mark();
    // The read holds the event, and a later change whose event was dropped.
    j.page([{ id: 'a', state: 'COMPLETE' }], mark);
    expect(j.states.get('a')).toBe('COMPLETE');
  });

  it('asks for a read at a snapshot or a lag, and reports the job state', () => {
    const j = new JobTasks<TaskLike>();
    expect(j.apply([ev('a', 'QUEUED')])).toEqual({ reread: false, jobState: 'RUNNING' });
    expect(j.apply([ev('a', 'QUEUED'), lag]).reread).toBe(true);
    expect(j.apply([{ ...ev('a', 'COMPLETE', true) }]).reread).toBe(true);
    expect(j.apply([{ kind: 'SNAPSHOT', state: '', lagged: false, jobState: 'PAUSED' }])).toEqual({
      reread: true,
      jobState: 'PAUSED',
    });
  });

  it('keeps plan order across pages and re-reads', () => {
    const j = new JobTasks<TaskLike>();
    j.page([{ id: 'x', state: 'QUEUED' }], 0);
    j.page([{ id: 'y', state: 'QUEUED' }], 0);
    j.page(
      [
        { id: 'x', state: 'COMPLETE' },
        { id: 'y', state: 'QUEUED' },
      ],
      0,
    );
    expect([...j.rows.keys()]).toEqual(['x', 'y']);
    expect(j.rows.get('x')?.state).toBe('COMPLETE');
  });
});

describe('TaskLoader', () => {
  const rows = (ids: string[], state = 'QUEUED') => ids.map((id) => ({ id, state }));

  it('reads page after page from the last id', async () => {
    const calls: (string | null)[] = [];
    const all = rows(['a', 'b', 'c', 'd', 'e']);
    const fetch: FetchPage<TaskLike> = async (after, first) => {
      calls.push(after);
      const from = after === null ? 0 : all.findIndex((r) => r.id === after) + 1;
      return all.slice(from, from + first);
    };
    const j = new JobTasks<TaskLike>();
    const l = new TaskLoader(j, fetch, () => {}, 2);
    l.read();
    await tick();
    expect(calls).toEqual([null, 'b', 'd']);
    expect([...j.rows.keys()]).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(l.complete).toBe(true);
  });

  it('reads again when asked during a read, after it', async () => {
    const answers: ReturnType<typeof deferred<readonly TaskLike[]>>[] = [];
    const fetch: FetchPage<TaskLike> = () => {
      const d = deferred<readonly TaskLike[]>();
      answers.push(d);
      return d.p;
    };
    const j = new JobTasks<TaskLike>();
    const l = new TaskLoader(j, fetch, () => {}, 10);
    l.read();
    l.read(); // a lag while the first read is on its way
    l.read(); // and another: still one more read, not two
    expect(answers.length).toBe(1);
    answers[0]?.resolve(rows(['a'], 'IN_PROGRESS'));
    await tick();
    expect(answers.length).toBe(2);
    answers[1]?.resolve(rows(['a'], 'COMPLETE'));
    await tick();
    expect(answers.length).toBe(2);
    expect(j.states.get('a')).toBe('COMPLETE');
    expect(j.stats.reads).toBe(2);
  });

  it('drops answers once stopped', async () => {
    const d = deferred<readonly TaskLike[]>();
    const j = new JobTasks<TaskLike>();
    const l = new TaskLoader(
      j,
      () => d.p,
      () => {},
    );
    l.read();
    l.stop();
    d.resolve(rows(['a']));
    await tick();
    expect(j.rows.size).toBe(0);
  });

  it('keeps the error of a failed read and reads again when asked', async () => {
    let fail = true;
    const j = new JobTasks<TaskLike>();
    const l = new TaskLoader(
      j,
      async () => {
        if (fail) throw new Error('offline');
        return rows(['a']);
      },
      () => {},
    );
    l.read();
    await tick();
    expect(l.error).toBeInstanceOf(Error);
    fail = false;
    l.read();
    await tick();
    expect(l.error).toBe(null);
    expect(l.complete).toBe(true);
  });
});

// The race as it happens on a loaded machine: a server moves tasks and
// relays each change, dropping some (a subscriber that fell behind) and
// then saying so with a lagged event; page reads see the server as it is
// when they run, and answer late. Whatever the interleaving, once the
// changes stop and the last read is in, the view holds the server's
// states.
describe('convergence', () => {
  type Naive = { page(rows: readonly TaskLike[], mark: number): void };
  function simulate(
    seed: number,
    overwrite: boolean,
  ): { truth: Map<string, string>; view: Map<string, string>; run: () => Promise<void> } {
    let s = seed;
    const rand = () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
    const ids = Array.from({ length: 60 }, (_, i) => `t${String(i).padStart(3, '0')}`);
    const truth = new Map(ids.map((id) => [id, 'QUEUED']));
    const j = new JobTasks<TaskLike>();
    if (overwrite) {
      // What the view did before: an answer overwrote every state.
      (j as unknown as Naive).page = (rows) => {
        for (const r of rows) {
          j.rows.set(r.id, r);
          j.states.set(r.id, r.state);
        }
      };
    }
    // The wire: events, and read answers, in the order they reach the page.
    const wire: (() => void)[] = [];
    const pending: { at: number; run: () => void }[] = [];
    let now = 0;
    const loader = new TaskLoader<TaskLike>(
      j,
      (after, first) =>
        new Promise((resolve) => {
          // The read runs a little after it was asked for, and its answer
          // lands later still.
          const readAt = now + 1 + Math.floor(rand() * 5);
          pending.push({
            at: readAt,
            run: () => {
              const from = after === null ? 0 : ids.indexOf(after) + 1;
              const page = ids.slice(from, from + first).map((id) => ({ id, state: truth.get(id) ?? '' }));
              pending.push({ at: now + 1 + Math.floor(rand() * 8), run: () => wire.push(() => resolve(page)) });
            },
          });
        }),
      () => {},
      25,
    );
    wire.push(() => {
      if (j.apply([{ kind: 'SNAPSHOT', state: '', lagged: false, jobState: 'RUNNING' }]).reread) loader.read();
    });
    const states = ['IN_PROGRESS', 'COMPLETE', 'FAILED', 'QUEUED'];
    let dropped = false;
    const steps = async (n: number, moving: boolean) => {
      for (let i = 0; i < n; i++) {
        now++;
        if (moving) {
          for (let k = 0; k < 3; k++) {
            const id = ids[Math.floor(rand() * ids.length)] ?? '';
            const st = states[Math.floor(rand() * states.length)] ?? '';
            truth.set(id, st);
            if (rand() < 0.2) {
              dropped = true; // the hub's buffer was full
              continue;
            }
            const lagged = dropped;
            dropped = false;
            wire.push(() => {
              if (j.apply([ev(id, st, lagged)]).reread) loader.read();
            });
          }
        }
        if (!moving && dropped) {
          // The burst ended on a drop: the server re-reads and says so.
          dropped = false;
          wire.push(() => {
            if (j.apply([lag]).reread) loader.read();
          });
        }
        for (const p of pending.filter((p) => p.at <= now)) {
          pending.splice(pending.indexOf(p), 1);
          p.run();
        }
        // Some of what is on the wire arrives now, in order.
        const arrive = Math.floor(rand() * (wire.length + 1));
        for (const f of wire.splice(0, arrive)) f();
        await tick();
      }
    };
    const run = async () => {
      await steps(200, true);
      await steps(200, false);
      while (wire.length || pending.length) {
        await steps(1, false);
        for (const f of wire.splice(0)) f();
        await tick();
      }
    };
    return { truth, view: j.states, run };
  }

  it('the view ends at the server state, whatever the interleaving', async () => {
    for (let seed = 1; seed <= 40; seed++) {
      const sim = simulate(seed, false);
      await sim.run();
      expect(Object.fromEntries(sim.view), `seed ${seed}`).toEqual(Object.fromEntries(sim.truth));
    }
  });

  it('overwriting with every answer (the old way) does not, so the simulation exercises the race', async () => {
    let wrong = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const sim = simulate(seed, true);
      await sim.run();
      if (JSON.stringify(Object.fromEntries(sim.view)) !== JSON.stringify(Object.fromEntries(sim.truth))) wrong++;
    }
    expect(wrong).toBeGreaterThan(0);
  });
});
