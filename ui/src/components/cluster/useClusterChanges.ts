// The tenant-wide stream of cluster changes (clusterChanges): statuses and
// jobs starting and ending, for every cluster the user may see. Lists use
// it to learn of clusters that are not on the page they show: a new one, or
// one whose change moves it into or out of a filter.
import { useEffect, useRef } from 'react';
import { useClient } from 'urql';
import { graphql } from '../../gql';

const ClusterChangesDocument = graphql(`
  subscription ClusterChanges {
    clusterChanges {
      kind
      clusterId
      state
      lagged
    }
  }
`);

/**
 * useClusterChanges calls onChange with the cluster a change is about, or
 * null when changes were dropped (re-read everything). The SNAPSHOT, which
 * names no cluster, is not passed on.
 */
export function useClusterChanges(onChange: (clusterId: string | null) => void): void {
  const client = useClient();
  const latest = useRef(onChange);
  latest.current = onChange;
  useEffect(() => {
    const sub = client.subscription(ClusterChangesDocument, {}).subscribe((r) => {
      const e = r.data?.clusterChanges;
      if (!e) return;
      if (e.lagged) latest.current(null);
      else if (e.kind === 'CLUSTER' || e.kind === 'JOB') latest.current(e.clusterId);
    });
    return () => sub.unsubscribe();
  }, [client]);
}
