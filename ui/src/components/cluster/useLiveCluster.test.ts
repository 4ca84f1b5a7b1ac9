import { describe, expect, it } from 'vitest';
import type { LiveClusterSubscription } from '../../gql/graphql';
import { reduceLive } from './useLiveCluster';

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
    cluster: {
      id: 'c1',
      status: 'PENDING',
      size: 3,
      expireTime: null,
      latestJob: { id: 'j1', action: 'CLUSTER_CREATE', state: 'RUNNING' },
    },
  });

  it('takes the snapshot whole', () => {
    expect(reduceLive(undefined, snapshot)).toEqual({
      status: 'PENDING',
      size: 3,
      expireTime: null,
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
    expect(s?.size).toBe(3);
  });

  it('replaces everything with the cluster of a lagged event', () => {
    const s = reduceLive(
      { status: 'PENDING', size: 3 },
      event({
        kind: 'CLUSTER',
        lagged: true,
        state: 'ACTIVE',
        cluster: { id: 'c1', status: 'ACTIVE', size: 5, expireTime: '2026-12-01T00:00:00Z', latestJob: null },
      }),
    );
    expect(s).toEqual({ status: 'ACTIVE', size: 5, expireTime: '2026-12-01T00:00:00Z', latestJob: null });
  });
});
