// The cluster page: its summary, nodes, services, config, lease and jobs,
// live (clusterEvents re-reads the query when something changes), and the
// operations on it, each previewed in OperationModal before it runs.
import { Alert, Anchor, Badge, Breadcrumbs, Group, Paper, Text } from '@mantine/core';
import { IconServerOff } from '@tabler/icons-react';
import { useCallback } from 'react';
import { Link, useParams } from 'react-router';
import { useQuery } from 'urql';
import { useOnReconnect } from '../../api/connection';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { EmptyState } from '../../components/atomic/EmptyState';
import { Fields } from '../../components/atomic/Fields';
import { Loading } from '../../components/atomic/Loading';
import { PageHeader } from '../../components/atomic/PageHeader';
import { TimeText } from '../../components/atomic/TimeText';
import { useSession } from '../../components/auth/session';
import { ClusterStatusBadge } from '../../components/cluster/ClusterStatusBadge';
import { mergeLive, useLiveCluster } from '../../components/cluster/useLiveCluster';
import { graphql } from '../../gql';
import { nodes, words } from '../../lib/format';
import { ClusterDetails } from '../../components/cluster/ClusterDetails';

const ClusterSummaryDocument = graphql(`
  query ClusterSummary($id: ID!) {
    cluster(id: $id) {
      id
      name
      description
      owner
      status
      message
      template
      provider
      services
      size
      dnsSuffix
      expireTime
      createdAt
      updatedAt
      config
      nodes {
        id
        nodenum
        hostname
        ipaddresses
        hardwaretype
        imagetype
        flavor
        image
        services
        state
        stateReason
        sshCommand
        hostKeys {
          type
          fingerprint
        }
        serviceStates {
          service
          state
          action
          message
        }
      }
      serviceSummary {
        service
        nodes
        states {
          state
          count
        }
        summary
      }
      latestJob {
        id
        action
        state
        message
      }
      lastCheck {
        at
        jobId
        healthy
        nodes {
          nodeId
          nodenum
          hostname
          reachable
          findings {
            kind
            service
            detail
          }
          unchecked
        }
      }
      jobs {
        id
        action
        state
        message
        createdAt
        updatedAt
        counts {
          total
          complete
          failed
          skipped
        }
      }
    }
  }
`);

export function Component() {
  const { id = '' } = useParams();
  const { api } = useSession();
  const [{ data, fetching, error }, reexecute] = useQuery({ query: ClusterSummaryDocument, variables: { id } });
  const refetch = useCallback(() => reexecute({ requestPolicy: 'network-only' }), [reexecute]);
  useOnReconnect(api.status, refetch);
  const c = data?.cluster;
  const live = useLiveCluster(id, !!c && c.status !== 'TERMINATED', refetch);

  const crumbs = (
    <Breadcrumbs mb="sm">
      <Anchor component={Link} to="/clusters" size="sm">
        Clusters
      </Anchor>
      <Text size="sm">{c?.name ?? id}</Text>
    </Breadcrumbs>
  );
  if (!data && fetching) return <Loading label="Loading the cluster…" />;
  if (error) {
    return (
      <>
        {crumbs}
        <ApiErrorAlert error={error} title="Loading the cluster failed" />
      </>
    );
  }
  if (!c) {
    return (
      <>
        {crumbs}
        <EmptyState icon={<IconServerOff size={24} />} title="No such cluster">
          There is no cluster {id} that you may see: it may belong to another user, or the link is wrong.
        </EmptyState>
      </>
    );
  }
  const { status, latestJob: job, busy } = mergeLive(c, live);
  return (
    <>
      {crumbs}
      <PageHeader
        title={
          <Group gap="sm">
            <span>{c.name}</span>
            <ClusterStatusBadge status={status} busy={busy} size="lg" />
          </Group>
        }
        description={c.description || undefined}
      />
      {c.message && status !== 'ACTIVE' && (
        <Alert color="orange" variant="light" title="The last job failed" mb="md">
          {c.message}
        </Alert>
      )}
      <Paper withBorder radius="md" p="lg">
        <Fields
          fields={[
            { label: 'Template', value: c.template },
            { label: 'Provider', value: c.provider },
            {
              label: 'Size',
              value:
                c.status === 'TERMINATED' ? `${nodes(c.size)} (deleted)` : `${nodes(c.size)} (${c.nodes.length} built)`,
            },
            { label: 'Owner', value: c.owner },
            {
              label: 'Lease ends',
              value: (
                <span data-testid="lease-end">
                  {c.status === 'TERMINATED' ? (
                    'none: deleted'
                  ) : c.expireTime ? (
                    <TimeText iso={c.expireTime} />
                  ) : (
                    'never'
                  )}
                </span>
              ),
            },
            { label: 'Created', value: <TimeText iso={c.createdAt} /> },
            {
              label: 'Services',
              value: (
                <Group gap={4}>
                  {c.services.map((s) => (
                    <Badge key={s} variant="outline" color="gray" tt="none">
                      {s}
                    </Badge>
                  ))}
                </Group>
              ),
            },
            {
              label: 'Latest job',
              value: job ? `${job.action ? words(job.action) : 'job'}: ${words(job.state)}` : 'none',
            },
            {
              label: 'ID',
              value: (
                <Text ff="monospace" size="sm">
                  {c.id}
                </Text>
              ),
            },
          ]}
        />
      </Paper>
      <ClusterDetails cluster={c} status={status} busy={busy} refetch={refetch} />
    </>
  );
}
