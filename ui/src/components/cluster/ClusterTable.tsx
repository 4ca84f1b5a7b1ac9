import { Anchor, Stack, Table, Text } from '@mantine/core';
import { Link } from 'react-router';
import type { ClusterListQuery } from '../../gql/graphql';
import { shortId, words } from '../../lib/format';
import { TimeText } from '../atomic/TimeText';
import { ClusterStatusBadge } from './ClusterStatusBadge';
import { mergeLive, useLiveCluster } from './useLiveCluster';

export type ClusterRowData = ClusterListQuery['clusters']['nodes'][number];

export interface ClusterTableProps {
  clusters: readonly ClusterRowData[];
  /** Admins see every cluster of the tenant: show whose each is. */
  showOwner: boolean;
  /** A row's cluster changed in a way only a re-read shows (size, lease, a new job). */
  onChange: () => void;
}

/** ClusterTable lists clusters, each row kept live by its cluster's events. */
export function ClusterTable({ clusters, showOwner, onChange }: ClusterTableProps) {
  return (
    <Table.ScrollContainer minWidth={760}>
      <Table verticalSpacing="sm" highlightOnHover striped={false} data-testid="cluster-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th>Template</Table.Th>
            <Table.Th ta="right">Size</Table.Th>
            {showOwner && <Table.Th>Owner</Table.Th>}
            <Table.Th>Lease ends</Table.Th>
            <Table.Th>Created</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {clusters.map((c) => (
            <ClusterRow key={c.id} cluster={c} showOwner={showOwner} onChange={onChange} />
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

function ClusterRow({
  cluster: c,
  showOwner,
  onChange,
}: {
  cluster: ClusterRowData;
  showOwner: boolean;
  onChange: () => void;
}) {
  // A terminated cluster never changes again: no subscription for it.
  const live = useLiveCluster(c.id, c.status !== 'TERMINATED', onChange);
  const { status, latestJob: job, busy } = mergeLive(c, live);
  const { expireTime, size } = c;
  return (
    <Table.Tr data-cluster-id={c.id} data-status={status}>
      <Table.Td>
        <Stack gap={0}>
          <Anchor component={Link} to={`/clusters/${c.id}`} fw={600} size="sm">
            {c.name}
          </Anchor>
          <Text size="xs" c="dimmed" ff="monospace">
            {shortId(c.id)}
          </Text>
        </Stack>
      </Table.Td>
      <Table.Td>
        <ClusterStatusBadge status={status} busy={busy} />
        {job && job.state !== 'COMPLETE' && (
          <Text size="xs" c="dimmed" mt={2}>
            {job.action ? words(job.action) : 'job'} {words(job.state)}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        <Text size="sm">{c.template}</Text>
      </Table.Td>
      <Table.Td ta="right">
        <Text size="sm">{size}</Text>
      </Table.Td>
      {showOwner && (
        <Table.Td>
          <Text size="sm">{c.owner}</Text>
        </Table.Td>
      )}
      <Table.Td>
        {status === 'TERMINATED' ? (
          <Text size="sm" c="dimmed">
            —
          </Text>
        ) : expireTime ? (
          <TimeText iso={expireTime} />
        ) : (
          <Text size="sm" c="dimmed">
            never
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        <TimeText iso={c.createdAt} c="dimmed" />
      </Table.Td>
    </Table.Tr>
  );
}
