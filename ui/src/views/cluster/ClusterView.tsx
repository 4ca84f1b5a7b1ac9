// The cluster page. This first version shows the cluster's summary, live;
// its nodes, services, config, lease, jobs and operations come next
// (docs/ui.md#what-comes-next).
import { Alert, Anchor, Badge, Breadcrumbs, Group, Paper, Text, Title } from '@mantine/core';
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
      nodes {
        id
      }
      latestJob {
        id
        action
        state
        message
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
            { label: 'Size', value: `${nodes(c.size)} (${c.nodes.length} built)` },
            { label: 'Owner', value: c.owner },
            {
              label: 'Lease ends',
              value: c.expireTime ? <TimeText iso={c.expireTime} /> : 'never',
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
      <Title order={2} fz="lg" mt="xl" mb="xs">
        Nodes, jobs and operations
      </Title>
      <Text c="dimmed" size="sm">
        The cluster's nodes, its jobs with their live task graph, and operations on it come to this page next. Meanwhile{' '}
        <Text span ff="monospace" size="sm">
          coopr cluster show {c.id}
        </Text>{' '}
        has them.
      </Text>
    </>
  );
}
