// The job view's tasks and their live states, kept consistent with the
// server while changes stream in over jobProgress and pages of tasks are
// read over HTTP (docs/ui.md#the-job-view).
//
// A read and the stream race: a page's answer was read at some moment
// after its request left, and changes relayed after that moment may have
// been applied before the answer lands. Written over them, the answer
// would put back states older than ones already shown, and a task that
// changes no more would stay wrong for good. So each task remembers when
// (by a counter of applied changes) it last changed by an event, and a
// page only sets the tasks that no event touched since its request left:
// a change applied before the request left was relayed after its commit,
// so the read holds it (or something newer). A change applied after may
// be older than the read; the newer one is then still on its way, or was
// dropped, and a drop is followed by a lagged event, which reads again.

/** The fields of jobProgress the view uses. */
export interface ProgressEvent {
  kind: string;
  taskId?: string | null | undefined;
  state: string;
  lagged: boolean;
  jobState: string;
}

export interface TaskLike {
  id: string;
  state: string;
}

/** What was counted, for the benchmarks and for telling why a view is wrong. */
export interface JobLiveStats {
  /** Task events applied. */
  events: number;
  /** SNAPSHOT or lagged events (each asks for a read). */
  lags: number;
  /** Pages applied, and their rows. */
  pages: number;
  rows: number;
  /** Rows not applied because an event after the page's request was newer. */
  kept: number;
  /** Full reads started. */
  reads: number;
}

/** JobTasks is a job's tasks in plan order with their current states. */
export class JobTasks<T extends TaskLike> {
  /** The tasks as last read, in plan order (the order the pages came in). */
  readonly rows = new Map<string, T>();
  /** The current state of each task. */
  readonly states = new Map<string, string>();
  /** For each task, the clock when an event last set its state. */
  private readonly touched = new Map<string, number>();
  private clock = 0;
  readonly stats: JobLiveStats = { events: 0, lags: 0, pages: 0, rows: 0, kept: 0, reads: 0 };

  /** mark is taken as a read's request leaves and given back with its answer. */
  mark(): number {
    return this.clock;
  }

  /** apply applies events in the order they came; it says whether a read is due and the last job state. */
  apply(evs: readonly ProgressEvent[]): { reread: boolean; jobState: string | undefined } {
    let reread = false;
    let jobState: string | undefined;
    for (const e of evs) {
      if (e.kind === 'SNAPSHOT' || e.lagged) {
        reread = true;
        this.stats.lags++;
      }
      if (e.kind === 'TASK' && e.taskId) {
        this.clock++;
        this.states.set(e.taskId, e.state);
        this.touched.set(e.taskId, this.clock);
        this.stats.events++;
      }
      jobState = e.jobState;
    }
    return { reread, jobState };
  }

  /** page applies rows read by a request that left at mark. */
  page(rows: readonly T[], mark: number): void {
    this.stats.pages++;
    for (const r of rows) {
      this.rows.set(r.id, r);
      this.stats.rows++;
      if ((this.touched.get(r.id) ?? 0) > mark) {
        this.stats.kept++;
        continue;
      }
      this.states.set(r.id, r.state);
    }
  }
}

/** A page read: the tasks after the task after (null: from the first), at most first. */
export type FetchPage<T> = (after: string | null, first: number) => Promise<readonly T[]>;

/**
 * TaskLoader reads every task a page at a time into a JobTasks. A read
 * asked for while one is under way is done again once that one ends (its
 * pages read before the ask may miss what was dropped); pages land as
 * they come, each by the rule above.
 */
export class TaskLoader<T extends TaskLike> {
  private running = false;
  private again = false;
  private stopped = false;
  /** Whether a whole read has ended, and the last read's error. */
  complete = false;
  error: unknown = null;

  constructor(
    private readonly tasks: JobTasks<T>,
    private readonly fetchPage: FetchPage<T>,
    private readonly changed: () => void,
    private readonly pageSize = 2000,
  ) {}

  /** read reads every task, now or after the read under way. */
  read(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    void this.run();
  }

  /** stop drops answers still on their way (the view went away). */
  stop(): void {
    this.stopped = true;
  }

  get busy(): boolean {
    return this.running;
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      do {
        this.again = false;
        this.tasks.stats.reads++;
        let after: string | null = null;
        for (;;) {
          const mark = this.tasks.mark();
          const rows = await this.fetchPage(after, this.pageSize);
          if (this.stopped) return;
          this.tasks.page(rows, mark);
          this.changed();
          const last = rows[rows.length - 1];
          if (rows.length < this.pageSize || !last) break;
          after = last.id;
        }
        this.complete = true;
        this.error = null;
      } while (this.again && !this.stopped);
    } catch (e) {
      this.error = e;
      if (!this.stopped) this.changed();
    } finally {
      this.running = false;
    }
  }
}
