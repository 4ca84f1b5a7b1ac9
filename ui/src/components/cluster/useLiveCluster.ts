// Live state of one cluster from clusterEvents: the SNAPSHOT (and a lagged
// event) carries the cluster; later events carry the new status of the
// cluster or the new state of a job. Task events are ignored here: views
// of jobs subscribe to jobProgress.
import { useEffect, useRef } from 'react';
import { useSubscription } from 'urql';
import { graphql } from '../../gql';
import type {
  ClusterStatus,
  JobState,
  LiveClusterSubscription,
  LiveClusterSubscriptionVariables,
} from '../../gql/graphql';

export const LiveClusterDocument = graphql(`
  subscription LiveCluster($id: ID!) {
    clusterEvents(clusterId: $id) {
      kind
      seq
      jobId
      state
      lagged
      cluster {
        id
        status
        latestJob {
          id
          action
          state
        }
      }
    }
  }
`);

/** What the events say of a cluster: its status and its latest job's state. */
export interface LiveCluster {
  status?: ClusterStatus;
  latestJob?: { id: string; action?: string; state: JobState } | null;
}

const jobStates: readonly string[] = ['RUNNING', 'PAUSED', 'COMPLETE', 'FAILED'];

/** reduceLive folds one event into the live state. */
export function reduceLive(
  prev: LiveCluster | undefined,
  e: LiveClusterSubscription['clusterEvents'],
): LiveCluster | undefined {
  if (e.cluster) {
    return { status: e.cluster.status, latestJob: e.cluster.latestJob ?? null };
  }
  if (e.kind === 'CLUSTER') return { ...prev, status: e.state as ClusterStatus };
  if (e.kind === 'JOB' && e.jobId && jobStates.includes(e.state)) {
    const action = prev?.latestJob?.id === e.jobId ? prev.latestJob.action : undefined;
    return { ...prev, latestJob: { id: e.jobId, state: e.state as JobState, ...(action ? { action } : {}) } };
  }
  return prev;
}

export interface ClusterState {
  status: ClusterStatus;
  latestJob?: { id: string; action: string; state: JobState } | null;
}

/**
 * mergeLive is what a view shows of a cluster it read with a query and
 * follows live: the events' status and job state, which are newer than the
 * query's; the job's action from the query, as a new job's event does not
 * carry it until the query is read again. Everything else (size, lease)
 * comes from the query, which is re-read when an event says it changed.
 */
export function mergeLive(c: ClusterState, live: LiveCluster | undefined): ClusterState & { busy: boolean } {
  const status = live?.status ?? c.status;
  let latestJob = c.latestJob ?? null;
  if (live?.latestJob) {
    const action = live.latestJob.action ?? (latestJob?.id === live.latestJob.id ? latestJob.action : '');
    latestJob = { id: live.latestJob.id, action, state: live.latestJob.state };
  }
  return { status, latestJob, busy: latestJob?.state === 'RUNNING' };
}

/**
 * useLiveCluster follows a cluster while enabled. onChange is told of a
 * change a query should re-read (the cluster's status, or a job starting or
 * ending): events carry states, not the rest of the cluster.
 */
export function useLiveCluster(id: string, enabled: boolean, onChange?: () => void): LiveCluster | undefined {
  const changed = useRef(onChange);
  changed.current = onChange;
  const [{ data }] = useSubscription<
    LiveClusterSubscription,
    LiveCluster | undefined,
    LiveClusterSubscriptionVariables
  >({ query: LiveClusterDocument, variables: { id }, pause: !enabled }, (prev, event) =>
    reduceLive(prev, event.clusterEvents),
  );
  const last = useRef<LiveCluster | undefined>(undefined);
  useEffect(() => {
    if (!data || last.current === data) return;
    const before = last.current;
    last.current = data;
    if (before && (before.status !== data.status || before.latestJob?.state !== data.latestJob?.state)) {
      changed.current?.();
    }
  }, [data]);
  return data;
}
