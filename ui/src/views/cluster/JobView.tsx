// The live job view: the job's tasks grouped per stage by action and
// service (a thousand-node job stays a few dozen rows, each expandable),
// colored by state as jobProgress reports changes. The tasks are read a
// page at a time (a thousand-node job has some 15,000), and read again
// after a lag; changes are applied in batches, once per animation frame,
// and lib/jobLive keeps the two consistent. Pause, resume, abort and
// retry; a task's attempts with the output of each, and its output live
// while it runs (taskLog).
import {
  Alert,
  Anchor,
  Badge,
  Box,
  Breadcrumbs,
  Button,
  Code,
  Collapse,
  Drawer,
  Group,
  Paper,
  Progress,
  ScrollArea,
  SimpleGrid,
  Stack,
  Text,
  Title,
  UnstyledButton,
  VisuallyHidden,
} from '@mantine/core';
import {
  IconChevronDown,
  IconChevronRight,
  IconPlayerPause,
  IconPlayerPlay,
  IconPlayerStop,
  IconRefresh,
} from '@tabler/icons-react';
import { memo, useCallback, useEffect, useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import { type CombinedError, useClient, useMutation, useQuery } from 'urql';
import { useOnReconnect } from '../../api/connection';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { Fields } from '../../components/atomic/Fields';
import { Loading } from '../../components/atomic/Loading';
import { PageHeader } from '../../components/atomic/PageHeader';
import { TimeText, useNow } from '../../components/atomic/TimeText';
import { useSession } from '../../components/auth/session';
import { graphql } from '../../gql';
import type { JobState, JobTasksPageQuery } from '../../gql/graphql';
import { type ApiError, fromCombinedError } from '../../lib/errors';
import { formatDuration, words } from '../../lib/format';
import { JobTasks, TaskLoader } from '../../lib/jobLive';
import { Batcher, countStates, groupTasks, type TaskGroup, taskStateColor, taskStates } from '../../lib/plan';

const JobDetailDocument = graphql(`
  query JobDetail($id: ID!) {
    job(id: $id) {
      id
      clusterId
      action
      state
      message
      planHash
      createdAt
      updatedAt
      counts {
        total
      }
    }
  }
`);

const JobTasksPageDocument = graphql(`
  query JobTasksPage($id: ID!, $first: Int!, $after: ID) {
    job(id: $id) {
      id
      tasks(first: $first, after: $after) {
        id
        nodeId
        hostname
        action
        service
        stage
        state
        attempt
        failures
        maxAttempts
        message
      }
    }
  }
`);

const JobProgressDocument = graphql(`
  subscription JobProgressLive($id: ID!) {
    jobProgress(jobId: $id) {
      kind
      taskId
      state
      message
      lagged
      jobState
      done
      failed
      total
    }
  }
`);

const TaskAttemptsDocument = graphql(`
  query TaskAttempts($id: ID!, $task: ID!) {
    job(id: $id) {
      id
      task(id: $task) {
        id
        attempts {
          attempt
          agent
          claimedAt
          finishedAt
          status
          message
          retryable
          stdoutTail
          stderrTail
        }
      }
    }
  }
`);

const TaskLogDocument = graphql(`
  subscription TaskLogLive($id: ID!) {
    taskLog(taskId: $id) {
      attempt
      seq
      stream
      chunk
      lagged
    }
  }
`);

const PauseJob = graphql(`
  mutation PauseJob($id: ID!) {
    pauseJob(id: $id) {
      id
      state
    }
  }
`);
const ResumeJob = graphql(`
  mutation ResumeJob($id: ID!) {
    resumeJob(id: $id) {
      id
      state
    }
  }
`);
const AbortJob = graphql(`
  mutation AbortJob($id: ID!) {
    abortJob(id: $id) {
      id
      state
    }
  }
`);
const RetryJob = graphql(`
  mutation RetryJob($id: ID!) {
    retryJob(id: $id) {
      id
      state
    }
  }
`);

type JobTaskRow = NonNullable<JobTasksPageQuery['job']>['tasks'][number];

/** A page of the job's tasks: what one request may read under the default complexity limit. */
const taskPage = 2000;

interface Live {
  tasks: JobTasks<JobTaskRow>;
  loader: TaskLoader<JobTaskRow> | null;
  /** Bumped at each change of the states or the rows. */
  version: number;
  jobState?: JobState;
}

/**
 * useJobLive follows a job's tasks: it subscribes to jobProgress and reads
 * every task, a page at a time, at the first SNAPSHOT (so that a change
 * after the read is relayed, not lost) and again at each lag.
 */
function useJobLive(jobId: string, enabled: boolean): Live {
  const client = useClient();
  const tasks = useMemo(() => new JobTasks<JobTaskRow>(), [jobId]); // eslint-disable-line react-hooks/exhaustive-deps
  const [loader, setLoader] = useState<TaskLoader<JobTaskRow> | null>(null);
  const [version, setVersion] = useState(0);
  const [jobState, setJobState] = useState<JobState>();
  useEffect(() => {
    if (!enabled) return;
    setJobState(undefined); // another job's, when the route moved to this one
    const bump = () => setVersion((v) => v + 1);
    const l = new TaskLoader<JobTaskRow>(
      tasks,
      async (after, first) => {
        const r = await client
          .query(JobTasksPageDocument, { id: jobId, first, after }, { requestPolicy: 'network-only' })
          .toPromise();
        if (r.error) throw r.error;
        return r.data?.job?.tasks ?? [];
      },
      bump,
      taskPage,
    );
    setLoader(l);
    type Ev = { taskId?: string | null | undefined; state: string; kind: string; lagged: boolean; jobState: JobState };
    const batch = new Batcher<Ev>((evs) => {
      const r = tasks.apply(evs);
      bump();
      if (r.jobState) setJobState(r.jobState as JobState);
      if (r.reread) l.read();
    });
    const sub = client.subscription(JobProgressDocument, { id: jobId }).subscribe((r) => {
      const e = r.data?.jobProgress;
      if (e) batch.push(e);
    });
    return () => {
      batch.drop();
      l.stop();
      sub.unsubscribe();
    };
  }, [client, jobId, enabled, tasks]);
  return { tasks, loader, version, ...(jobState ? { jobState } : {}) };
}

const terminal: readonly string[] = ['COMPLETE', 'FAILED'];

export function Component() {
  const { id = '', jobId = '' } = useParams();
  const { api } = useSession();
  const [{ data, fetching, error }, reexecute] = useQuery({
    query: JobDetailDocument,
    variables: { id: jobId },
  });
  const refetch = useCallback(() => reexecute({ requestPolicy: 'network-only' }), [reexecute]);
  // The tasks come back by themselves: a reconnect resubscribes, and its
  // SNAPSHOT reads them again.
  useOnReconnect(api.status, refetch);
  const job = data?.job;
  // Task states live outside React state: a thousand changes a second
  // mutate a map, and a version bump per frame re-renders.
  const live = useJobLive(jobId, !!job);
  const { tasks, loader } = live;
  const states = tasks.states;
  const jobState = live.jobState ?? job?.state;
  // A job that ends re-reads its times and messages, and its tasks'.
  useEffect(() => {
    if (live.jobState && terminal.includes(live.jobState)) {
      refetch();
      loader?.read();
    }
  }, [live.jobState, refetch, loader]);
  const now = useNow(1000);
  const [selected, setSelected] = useState<string | null>(null);
  const [actionErr, setActionErr] = useState<ApiError[]>([]);
  const [pauseState, pause] = useMutation(PauseJob);
  const [resumeState, resume] = useMutation(ResumeJob);
  const [abortState, abort] = useMutation(AbortJob);
  const [retryState, retry] = useMutation(RetryJob);

  // The rows change only when a page lands.
  const pages = tasks.stats.pages;
  const byId = tasks.rows;
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const stages = useMemo(() => groupTasks([...byId.values()]), [byId, pages]);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const totals = useMemo(() => countStates([...byId.keys()], states), [byId, states, live.version]);
  const failedIds = useMemo(
    () => [...byId.keys()].filter((k) => states.get(k) === 'FAILED'),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [byId, states, live.version],
  );
  const retriedIds = useMemo(
    () => [...byId.values()].filter((t) => t.failures > 0).map((t) => t.id),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [byId, pages],
  );

  if (!data && fetching) return <Loading label="Loading the job…" />;
  if (error) return <ApiErrorAlert error={error} title="Loading the job failed" />;
  if (!job) {
    return (
      <Alert color="gray" title="No such job">
        There is no job {jobId} that you may see.
      </Alert>
    );
  }
  const ended = terminal.includes(jobState ?? '');
  const elapsed = (ended ? Date.parse(job.updatedAt) : now) - Date.parse(job.createdAt);
  const total = job.counts.total;
  const loaded = !!loader?.complete;
  const done = (totals.COMPLETE ?? 0) + (totals.SKIPPED ?? 0);
  const act = async (f: (v: { id: string }) => Promise<{ error?: Parameters<typeof fromCombinedError>[0] }>) => {
    setActionErr([]);
    const r = await f({ id: jobId });
    if (r.error) setActionErr(fromCombinedError(r.error));
    refetch();
  };

  return (
    <>
      <Breadcrumbs mb="sm">
        <Anchor component={Link} to="/clusters" size="sm">
          Clusters
        </Anchor>
        <Anchor component={Link} to={`/clusters/${id}`} size="sm">
          {id}
        </Anchor>
        <Text size="sm">Job {job.id}</Text>
      </Breadcrumbs>
      <PageHeader
        title={
          <Group gap="sm">
            <span>{words(job.action)}</span>
            <Badge size="lg" variant="light" color={jobColor(jobState)} data-testid="job-state" data-state={jobState}>
              {jobState}
            </Badge>
          </Group>
        }
        description={`Job ${job.id} of cluster ${job.clusterId}`}
        actions={
          <>
            {jobState === 'RUNNING' && (
              <Button
                variant="light"
                leftSection={<IconPlayerPause size={16} />}
                loading={pauseState.fetching}
                onClick={() => act(pause)}
              >
                Pause
              </Button>
            )}
            {jobState === 'PAUSED' && (
              <Button
                variant="light"
                leftSection={<IconPlayerPlay size={16} />}
                loading={resumeState.fetching}
                onClick={() => act(resume)}
              >
                Resume
              </Button>
            )}
            {(jobState === 'RUNNING' || jobState === 'PAUSED') && (
              <Button
                variant="light"
                color="red"
                leftSection={<IconPlayerStop size={16} />}
                loading={abortState.fetching}
                onClick={() => act(abort)}
              >
                Abort
              </Button>
            )}
            {jobState === 'FAILED' && (
              <Button leftSection={<IconRefresh size={16} />} loading={retryState.fetching} onClick={() => act(retry)}>
                Retry
              </Button>
            )}
          </>
        }
      />
      <ApiErrorAlert error={actionErr} title="The job did not change" />
      {loader?.error != null && (
        <ApiErrorAlert error={loader.error as CombinedError} title="Reading the job's tasks failed" />
      )}
      {job.message && jobState === 'FAILED' && (
        <Alert color="red" variant="light" title="The job failed" mb="md">
          {job.message}
        </Alert>
      )}
      <Paper withBorder radius="md" p="lg" mb="md">
        <Fields
          cols={4}
          fields={[
            {
              label: 'Done',
              value: loaded ? (
                <span
                  data-testid="job-done"
                  data-events={tasks.stats.events}
                  data-lags={tasks.stats.lags}
                  data-reads={tasks.stats.reads}
                  data-kept={tasks.stats.kept}
                >{`${done} of ${byId.size}`}</span>
              ) : (
                <span data-testid="job-loading">{`Reading the tasks: ${byId.size} of ${total}`}</span>
              ),
            },
            { label: 'Elapsed', value: formatDuration(elapsed) },
            { label: 'Started', value: <TimeText iso={job.createdAt} /> },
            {
              label: 'Plan',
              value: (
                <Text ff="monospace" size="sm">
                  {job.planHash.slice(0, 12)}
                </Text>
              ),
            },
          ]}
        />
        <StateBar counts={totals} total={total} label="All tasks" />
        <Group gap="md" mt="xs" data-testid="job-counts">
          {taskStates
            .filter((s) => totals[s])
            .map((s) => (
              <Group gap={6} key={s}>
                <Box w={10} h={10} bg={`${taskStateColor(s)}.6`} style={{ borderRadius: 2 }} aria-hidden />
                <Text size="sm">
                  {totals[s]} {words(s).toLowerCase()}
                </Text>
              </Group>
            ))}
        </Group>
      </Paper>
      {(failedIds.length > 0 || retriedIds.length > 0) && (
        <Paper withBorder radius="md" p="md" mb="md" data-testid="failed-tasks">
          <Title order={2} fz="md" mb="xs">
            Failures
          </Title>
          <Text size="sm" c="dimmed" mb="xs">
            Tasks that failed, or failed an attempt before succeeding: open one for each attempt's output.
          </Text>
          <Group gap={6}>
            {[...new Set([...failedIds, ...retriedIds])].slice(0, 100).map((tid) => {
              const t = byId.get(tid);
              return t ? <TaskChip key={tid} task={t} state={states.get(tid) ?? t.state} onOpen={setSelected} /> : null;
            })}
          </Group>
        </Paper>
      )}
      <Title order={2} fz="lg" mb="xs">
        Tasks by stage
      </Title>
      <Stack gap="sm" data-testid="task-graph">
        {stages.map((s) => (
          <Paper key={s.stage} withBorder radius="md" p="sm">
            <Text size="sm" fw={600} mb={4}>
              Stage {s.stage + 1}
            </Text>
            <Stack gap={2}>
              {s.groups.map((g) => (
                <GroupRow
                  key={g.key}
                  group={g}
                  states={states}
                  version={live.version}
                  byId={byId}
                  onOpen={setSelected}
                />
              ))}
            </Stack>
          </Paper>
        ))}
      </Stack>
      <TaskDrawer
        jobId={jobId}
        task={selected ? byId.get(selected) : undefined}
        state={selected ? states.get(selected) : undefined}
        onClose={() => setSelected(null)}
      />
    </>
  );
}

function jobColor(s: string | undefined): string {
  switch (s) {
    case 'COMPLETE':
      return 'teal';
    case 'FAILED':
      return 'red';
    case 'PAUSED':
      return 'orange';
  }
  return 'blue';
}

function StateBar({ counts, total, label }: { counts: Record<string, number>; total: number; label: string }) {
  return (
    // The counts beside it say the same in text.
    <Progress.Root size="lg" mt="md" aria-hidden data-label={label}>
      {taskStates
        .filter((s) => counts[s])
        .map((s) => (
          <Progress.Section key={s} value={((counts[s] ?? 0) / Math.max(1, total)) * 100} color={taskStateColor(s)} />
        ))}
    </Progress.Root>
  );
}

const shown = 200;

/** GroupRow is one action of one service in a stage: its state counts, its tasks when opened. */
const GroupRow = memo(function GroupRow({
  group,
  states,
  version,
  byId,
  onOpen,
}: {
  group: TaskGroup;
  states: Map<string, string>;
  version: number;
  byId: Map<string, JobTaskRow>;
  onOpen: (id: string) => void;
}) {
  const [open, setOpen] = useState(false);
  const [all, setAll] = useState(false);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const counts = useMemo(() => countStates(group.ids, states), [group, states, version]);
  const summary = taskStates
    .filter((s) => counts[s])
    .map((s) => `${counts[s]} ${words(s).toLowerCase()}`)
    .join(', ');
  const label = `${words(group.action)}${group.service ? ` ${group.service}` : ''}`;
  return (
    <Box data-group={group.key} data-complete={counts.COMPLETE ?? 0} data-failed={counts.FAILED ?? 0}>
      <UnstyledButton
        onClick={() => setOpen((o) => !o)}
        aria-expanded={open}
        w="100%"
        py={4}
        px={4}
        style={{ borderRadius: 4 }}
      >
        <SimpleGrid cols={3} spacing="sm" style={{ alignItems: 'center' }}>
          <Group gap={4} wrap="nowrap">
            {open ? <IconChevronDown size={14} aria-hidden /> : <IconChevronRight size={14} aria-hidden />}
            <Text size="sm" fw={500}>
              {label}
            </Text>
            <Text size="xs" c="dimmed">
              × {group.ids.length}
            </Text>
          </Group>
          <StateBar counts={counts} total={group.ids.length} label={`${label}: ${summary}`} />
          <Text size="xs">{summary}</Text>
        </SimpleGrid>
      </UnstyledButton>
      <Collapse expanded={open}>
        {open && (
          <Group gap={4} p="xs">
            {(all ? group.ids : group.ids.slice(0, shown)).map((id) => {
              const t = byId.get(id);
              return t ? <TaskChip key={id} task={t} state={states.get(id) ?? t.state} onOpen={onOpen} /> : null;
            })}
            {!all && group.ids.length > shown && (
              <Button size="compact-xs" variant="subtle" onClick={() => setAll(true)}>
                Show all {group.ids.length}
              </Button>
            )}
          </Group>
        )}
      </Collapse>
    </Box>
  );
});

function TaskChip({ task, state, onOpen }: { task: JobTaskRow; state: string; onOpen: (id: string) => void }) {
  const where = task.hostname || (task.nodeId ? `node ${task.nodeId}` : 'cluster');
  return (
    <Button
      size="compact-xs"
      variant="light"
      color={taskStateColor(state)}
      onClick={() => onOpen(task.id)}
      data-task={task.id}
      data-state={state}
      title={`${where}: ${state}`}
    >
      <VisuallyHidden>
        {words(task.action)} {task.service} on{' '}
      </VisuallyHidden>
      {where.split('.')[0]} · {state === 'COMPLETE' ? 'done' : words(state).toLowerCase()}
    </Button>
  );
}

function TaskDrawer({
  jobId,
  task,
  state,
  onClose,
}: {
  jobId: string;
  task: JobTaskRow | undefined;
  state: string | undefined;
  onClose: () => void;
}) {
  const [{ data, fetching }, reexecute] = useQuery({
    query: TaskAttemptsDocument,
    variables: { id: jobId, task: task?.id ?? '' },
    pause: !task,
    requestPolicy: 'network-only',
  });
  // Re-read the attempts when the task's state changes while open.
  useEffect(() => {
    if (task) reexecute({ requestPolicy: 'network-only' });
  }, [task, state, reexecute]);
  const attempts = data?.job?.task?.attempts ?? [];
  return (
    <Drawer
      opened={!!task}
      onClose={onClose}
      position="right"
      size="xl"
      lockScroll={false}
      closeButtonProps={{ 'aria-label': 'Close' }}
      title={task ? `${words(task.action)} ${task.service} on ${task.hostname || 'the cluster'}` : ''}
    >
      {task && (
        <Stack gap="md" data-testid="task-detail">
          <Group gap="xs">
            <Badge color={taskStateColor(state ?? task.state)} variant="light">
              {state ?? task.state}
            </Badge>
            <Text size="sm">
              stage {task.stage + 1}, attempt {task.attempt} of {task.maxAttempts}
              {task.failures > 0 ? `, ${task.failures} failed` : ''}
            </Text>
          </Group>
          {task.message && (
            <Text size="sm" c={state === 'FAILED' ? 'red' : undefined}>
              {task.message}
            </Text>
          )}
          {state === 'IN_PROGRESS' && <LiveLog taskId={task.id} />}
          <Title order={3} fz="md">
            Attempts
          </Title>
          {fetching && attempts.length === 0 && <Text size="sm">Loading…</Text>}
          {!fetching && attempts.length === 0 && (
            <Text size="sm" c="dimmed">
              Not run yet.
            </Text>
          )}
          {attempts.map((a) => (
            <Paper key={a.attempt} withBorder p="sm" radius="md" data-attempt={a.attempt} data-status={a.status ?? ''}>
              <Group justify="space-between" mb={4}>
                <Text size="sm" fw={600}>
                  Attempt {a.attempt} on {a.agent}
                </Text>
                <Badge variant="light" color={a.status === null ? 'blue' : a.status === 0 ? 'teal' : 'red'} tt="none">
                  {a.status === null ? 'running' : a.status === 0 ? 'succeeded' : `failed (status ${a.status})`}
                </Badge>
              </Group>
              <Text size="xs" c="dimmed">
                <TimeText iso={a.claimedAt} span size="xs" />
                {a.finishedAt ? `, took ${formatDuration(Date.parse(a.finishedAt) - Date.parse(a.claimedAt))}` : ''}
              </Text>
              {a.message && (
                <Text size="sm" mt={4} c={a.status ? 'red' : undefined}>
                  {a.message}
                </Text>
              )}
              {a.stdoutTail && <Output label="Output" text={a.stdoutTail} />}
              {a.stderrTail && <Output label="Errors" text={a.stderrTail} />}
            </Paper>
          ))}
        </Stack>
      )}
    </Drawer>
  );
}

function Output({ label, text }: { label: string; text: string }) {
  return (
    <Box mt="xs">
      <Text size="xs" fw={600}>
        {label}
      </Text>
      <ScrollArea.Autosize mah={240}>
        <Code block>{text}</Code>
      </ScrollArea.Autosize>
    </Box>
  );
}

const maxLogChars = 64_000;

function LiveLog({ taskId }: { taskId: string }) {
  const client = useClient();
  const [text, setText] = useState('');
  useEffect(() => {
    setText('');
    const batch = new Batcher<string>((chunks) =>
      setText((t) => {
        const next = t + chunks.join('');
        return next.length > maxLogChars ? next.slice(next.length - maxLogChars) : next;
      }),
    );
    const sub = client.subscription(TaskLogDocument, { id: taskId }).subscribe((r) => {
      const l = r.data?.taskLog;
      if (!l) return;
      const chunk = l.chunk.endsWith('\n') ? l.chunk : l.chunk + '\n';
      batch.push((l.lagged ? '… (lines dropped)\n' : '') + (l.stream === 'STDERR' ? `! ${chunk}` : chunk));
    });
    return () => {
      batch.drop();
      sub.unsubscribe();
    };
  }, [client, taskId]);
  return (
    <Box data-testid="live-log">
      <Text size="xs" fw={600}>
        Live output
      </Text>
      <ScrollArea.Autosize mah={300}>
        <Code block>{text || 'Waiting for output…'}</Code>
      </ScrollArea.Autosize>
    </Box>
  );
}
