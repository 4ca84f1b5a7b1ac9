import { describe, expect, it } from 'vitest';
import type { LiveClusterSubscription } from '../../gql/graphql';
import { mergeLive, reduceLive } from './useLiveCluster';

type Event = LiveClusterSubscription['clusterEvents'];
const event = (e: Partial<Event>): Event => ({
  kind: 'TASK',
  seq: '1',
  jobId: null,
  state: '',
  lagged: false,
  cluster: null,
  ...e,
});

describe('reduceLive', () => {
  const snapshot = event({
    kind: 'SNAPSHOT',
    seq: '0',
    state: 'PENDING',
    cluster: { id: 'c1', status: 'PENDING', latestJob: { id: 'j1', action: 'CLUSTER_CREATE', state: 'RUNNING' } },
  });

  it('takes the snapshot whole', () => {
    expect(reduceLive(undefined, snapshot)).toEqual({
      status: 'PENDING',
      latestJob: { id: 'j1', action: 'CLUSTER_CREATE', state: 'RUNNING' },
    });
  });

  it('follows the status and the job, ignoring tasks', () => {
    let s = reduceLive(undefined, snapshot);
    s = reduceLive(s, event({ kind: 'TASK', state: 'COMPLETE' }));
    expect(s?.status).toBe('PENDING');
    s = reduceLive(s, event({ kind: 'JOB', jobId: 'j1', state: 'COMPLETE' }));
    expect(s?.latestJob).toEqual({ id: 'j1', action: 'CLUSTER_CREATE', state: 'COMPLETE' });
    s = reduceLive(s, event({ kind: 'CLUSTER', state: 'ACTIVE' }));
    expect(s?.status).toBe('ACTIVE');
    // A new job: its action is not in the event.
    s = reduceLive(s, event({ kind: 'JOB', jobId: 'j2', state: 'RUNNING' }));
    expect(s?.latestJob).toEqual({ id: 'j2', state: 'RUNNING' });
  });

  it('replaces everything with the cluster of a lagged event', () => {
    const s = reduceLive(
      { status: 'PENDING', latestJob: { id: 'j1', state: 'RUNNING' } },
      event({
        kind: 'CLUSTER',
        lagged: true,
        state: 'ACTIVE',
        cluster: { id: 'c1', status: 'ACTIVE', latestJob: null },
      }),
    );
    expect(s).toEqual({ status: 'ACTIVE', latestJob: null });
  });
});

describe('mergeLive', () => {
  const queried = {
    status: 'ACTIVE' as const,
    latestJob: { id: 'j1', action: 'CLUSTER_CREATE', state: 'COMPLETE' as const },
  };
  it('shows the query until events come', () => {
    expect(mergeLive(queried, undefined)).toEqual({ ...queried, busy: false });
  });
  it('prefers the events for the status and job state, and the query for the action', () => {
    expect(mergeLive(queried, { status: 'PENDING', latestJob: { id: 'j2', state: 'RUNNING' } })).toEqual({
      status: 'PENDING',
      latestJob: { id: 'j2', action: '', state: 'RUNNING' },
      busy: true,
    });
    // The query read again knows the new job's action.
    expect(
      mergeLive(
        { status: 'PENDING', latestJob: { id: 'j2', action: 'CLUSTER_SCALE', state: 'RUNNING' } },
        { status: 'ACTIVE', latestJob: { id: 'j2', state: 'COMPLETE' } },
      ),
    ).toEqual({ status: 'ACTIVE', latestJob: { id: 'j2', action: 'CLUSTER_SCALE', state: 'COMPLETE' }, busy: false });
  });
});
