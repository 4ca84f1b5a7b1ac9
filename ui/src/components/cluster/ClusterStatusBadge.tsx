import { Badge, type BadgeProps, Loader, VisuallyHidden } from '@mantine/core';
import type { ClusterStatus } from '../../gql/graphql';

const colors: Record<ClusterStatus, string> = {
  PENDING: 'blue',
  ACTIVE: 'teal',
  INCOMPLETE: 'orange',
  INCONSISTENT: 'red',
  TERMINATED: 'gray',
};

const descriptions: Record<ClusterStatus, string> = {
  PENDING: 'being built or changed',
  ACTIVE: 'up',
  INCOMPLETE: 'a job failed part-way',
  INCONSISTENT: 'its state is unknown',
  TERMINATED: 'deleted',
};

/** clusterStatusColor is the color every view shows a status in. */
export function clusterStatusColor(s: ClusterStatus): string {
  return colors[s] ?? 'gray';
}

export interface ClusterStatusBadgeProps extends BadgeProps {
  status: ClusterStatus;
  /** A job is running on the cluster. */
  busy?: boolean;
}

export function ClusterStatusBadge({ status, busy, ...props }: ClusterStatusBadgeProps) {
  return (
    <Badge
      color={clusterStatusColor(status)}
      variant="light"
      title={`${status.toLowerCase()}: ${descriptions[status] ?? ''}`}
      leftSection={busy ? <Loader size={9} color={clusterStatusColor(status)} aria-hidden /> : undefined}
      {...props}
    >
      {status}
      {busy && <VisuallyHidden> (a job is running)</VisuallyHidden>}
    </Badge>
  );
}
