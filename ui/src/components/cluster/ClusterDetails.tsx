// The body of the cluster page under its summary: operations, lease,
// services, nodes, config and jobs. The page re-reads its query when the
// cluster's events say something changed; this shows what it read.
import {
  ActionIcon,
  Alert,
  Anchor,
  Badge,
  Button,
  Code,
  CopyButton,
  Group,
  Menu,
  Modal,
  NumberInput,
  Paper,
  ScrollArea,
  Stack,
  Table,
  Text,
  Title,
} from '@mantine/core';
import { IconCheck, IconChevronDown, IconClockPlus, IconCopy, IconSettings, IconTrash } from '@tabler/icons-react';
import { useMemo, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { graphql } from '../../gql';
import type { ClusterStatus, ClusterSummaryQuery } from '../../gql/graphql';
import { uncheckedServices } from '../../lib/check';
import { type ApiError, fromCombinedError } from '../../lib/errors';
import { formatDateTime, formatDuration, words } from '../../lib/format';
import { leaseLimit, taskStateColor } from '../../lib/plan';
import { summarizeTemplate } from '../../lib/template';
import { ApiErrorAlert } from '../atomic/ApiErrorAlert';
import { TimeText } from '../atomic/TimeText';
import { type OperationKind, OperationModal } from './OperationModal';

const ClusterTemplateDocument = graphql(`
  query ClusterTemplate($name: String!) {
    catalog {
      entity(kind: CLUSTERTEMPLATES, name: $name) {
        name
        document
      }
    }
  }
`);

const SetExpireDocument = graphql(`
  mutation SetClusterExpireTime($id: ID!, $t: Time!) {
    setClusterExpireTime(id: $id, expireTime: $t) {
      id
      expireTime
    }
  }
`);

type Cluster = NonNullable<ClusterSummaryQuery['cluster']>;

function serviceColor(s: string): string {
  switch (s) {
    case 'RUNNING':
      return 'teal';
    case 'FAILED':
      return 'red';
    case 'STOPPED':
    case 'REMOVED':
      return 'orange';
    case 'UNKNOWN':
      return 'gray';
  }
  return 'blue';
}

function addresses(v: unknown): string {
  if (!v || typeof v !== 'object') return '';
  const vals = [...new Set(Object.values(v as Record<string, unknown>).filter((x) => typeof x === 'string'))];
  return vals.join(', ');
}

// NodeSSH says how to log in to a node and which host keys coopr pinned
// for it, so a person can check the fingerprint ssh shows at the first
// connection (or use `coopr known-hosts`).
function NodeSSH({
  command,
  hostKeys,
  deleted,
}: {
  command: string;
  hostKeys: readonly { type: string; fingerprint: string }[];
  deleted: boolean;
}) {
  if (!command)
    return (
      <Text size="xs" c="dimmed">
        {deleted ? 'Machine deleted' : 'No address yet'}
      </Text>
    );
  return (
    <Stack gap={2}>
      <Group gap={4} wrap="nowrap">
        <Code>{command}</Code>
        <CopyButton value={command}>
          {({ copied, copy }) => (
            <ActionIcon
              variant="subtle"
              size="sm"
              onClick={copy}
              aria-label={copied ? 'SSH command copied' : 'Copy the SSH command'}
              title={copied ? 'Copied' : 'Copy'}
            >
              {copied ? <IconCheck size={14} /> : <IconCopy size={14} />}
            </ActionIcon>
          )}
        </CopyButton>
      </Group>
      {hostKeys.length === 0 ? (
        <Text size="xs" c="dimmed">
          No host key pinned yet
        </Text>
      ) : (
        hostKeys.map((k) => (
          <Text key={k.type} size="xs" c="dimmed" ff="monospace" data-testid="host-key">
            {k.type} {k.fingerprint}
          </Text>
        ))
      )}
    </Stack>
  );
}

export function ClusterDetails({
  cluster: c,
  status,
  busy,
  refetch,
}: {
  cluster: Cluster;
  status: ClusterStatus;
  busy: boolean;
  refetch: () => void;
}) {
  const navigate = useNavigate();
  const [op, setOp] = useState<OperationKind | null>(null);
  const [leaseOpen, setLeaseOpen] = useState(false);
  const [{ data: tdata }] = useQuery({ query: ClusterTemplateDocument, variables: { name: c.template } });
  const template = useMemo(
    () => (tdata?.catalog.entity ? summarizeTemplate(tdata.catalog.entity.name, tdata.catalog.entity.document) : null),
    [tdata],
  );
  const live = status !== 'TERMINATED' && status !== 'PENDING';
  const addable = (template?.compatibleServices ?? []).filter((s) => !c.services.includes(s));
  const ops: { kind: OperationKind; label: string }[] = [
    { kind: 'CONFIGURE', label: 'Configure' },
    { kind: 'CONFIGURE_WITH_RESTART', label: 'Configure with restart' },
    { kind: 'START_SERVICES', label: 'Start services' },
    { kind: 'STOP_SERVICES', label: 'Stop services' },
    { kind: 'RESTART_SERVICES', label: 'Restart services' },
    { kind: 'ADD_SERVICES', label: 'Add services' },
    { kind: 'CHECK', label: 'Check' },
    { kind: 'REPAIR', label: 'Repair' },
    { kind: 'REPLACE_NODE', label: 'Replace nodes' },
    { kind: 'REBOOT_NODE', label: 'Reboot nodes' },
    { kind: 'SYNC_TEMPLATE', label: 'Sync template' },
  ];
  return (
    <>
      <Group gap="sm" mt="md" data-testid="cluster-operations">
        <Menu position="bottom-start">
          <Menu.Target>
            <Button
              variant="light"
              leftSection={<IconSettings size={16} />}
              rightSection={<IconChevronDown size={14} />}
              disabled={!live || busy}
            >
              Operations
            </Button>
          </Menu.Target>
          <Menu.Dropdown>
            {ops.map((o) => (
              <Menu.Item
                key={o.kind}
                onClick={() => setOp(o.kind)}
                disabled={o.kind === 'ADD_SERVICES' && addable.length === 0}
              >
                {o.label}
              </Menu.Item>
            ))}
          </Menu.Dropdown>
        </Menu>
        <Button variant="light" onClick={() => setOp('SCALE')} disabled={!live || busy}>
          Scale
        </Button>
        <Button
          variant="light"
          leftSection={<IconClockPlus size={16} />}
          onClick={() => setLeaseOpen(true)}
          disabled={!c.expireTime || status === 'TERMINATED' || status === 'PENDING'}
        >
          Extend lease
        </Button>
        <Button
          variant="light"
          color="red"
          leftSection={<IconTrash size={16} />}
          onClick={() => setOp('DELETE')}
          disabled={status === 'TERMINATED' || busy}
        >
          Delete
        </Button>
        {busy && (
          <Text size="sm" c="dimmed">
            A job is running: operations wait for it.
          </Text>
        )}
      </Group>
      <OperationModal
        clusterId={c.id}
        operation={op}
        size={c.size}
        services={c.services}
        addable={addable}
        nodes={c.nodes}
        onClose={() => setOp(null)}
        onStarted={(jobId) => {
          setOp(null);
          refetch();
          navigate(`/clusters/${c.id}/jobs/${jobId}`);
        }}
      />
      {template && c.expireTime && (
        <LeaseModal
          opened={leaseOpen}
          onClose={() => setLeaseOpen(false)}
          clusterId={c.id}
          createdAt={c.createdAt}
          expireTime={c.expireTime}
          lease={template.lease}
          onDone={refetch}
        />
      )}

      <LastCheck check={c.lastCheck ?? null} />

      <Title order={2} fz="lg" mt="xl" mb="xs">
        Services
      </Title>
      {c.serviceSummary.length === 0 ? (
        <Text size="sm" c="dimmed">
          {c.status === 'TERMINATED' ? 'None: the machines are deleted.' : 'No services yet.'}
        </Text>
      ) : (
        <Paper withBorder radius="md" p="md" data-testid="service-summary">
          <Stack gap={6}>
            {c.serviceSummary.map((s) => (
              <Group key={s.service} gap="sm">
                <Text size="sm" fw={600} w={120}>
                  {s.service}
                </Text>
                {s.states.map((x) => (
                  <Badge key={x.state} variant="light" color={serviceColor(x.state)} tt="none">
                    {words(x.state).toLowerCase()} on {x.count}/{s.nodes}
                  </Badge>
                ))}
              </Group>
            ))}
          </Stack>
        </Paper>
      )}

      <Title order={2} fz="lg" mt="xl" mb="xs">
        Nodes
      </Title>
      {c.nodes.length === 0 ? (
        <Text size="sm" c="dimmed">
          No nodes built yet.
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={800}>
          <Table striped withTableBorder data-testid="node-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Host</Table.Th>
                <Table.Th>Addresses</Table.Th>
                <Table.Th>Hardware</Table.Th>
                <Table.Th>Image</Table.Th>
                <Table.Th>Services</Table.Th>
                <Table.Th>State</Table.Th>
                <Table.Th>SSH</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {c.nodes.map((n) => (
                <Table.Tr key={n.id} data-node={n.nodenum}>
                  <Table.Td>
                    <Text size="sm" ff="monospace">
                      {n.hostname}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm" ff="monospace">
                      {addresses(n.ipaddresses) || '—'}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{n.hardwaretype}</Text>
                    {n.flavor && (
                      <Text size="xs" c="dimmed">
                        {n.flavor}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{n.imagetype}</Text>
                    {n.image && (
                      <Text size="xs" c="dimmed">
                        {n.image}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Group gap={4}>
                      {n.serviceStates.map((s) => (
                        <Badge
                          key={s.service}
                          variant="light"
                          color={serviceColor(s.state)}
                          tt="none"
                          title={s.message || (s.action ? `after ${s.action}` : undefined)}
                        >
                          {s.service}: {words(s.state).toLowerCase()}
                        </Badge>
                      ))}
                    </Group>
                  </Table.Td>
                  <Table.Td>
                    <Badge variant="light" color={n.state === 'OK' ? 'teal' : n.state === 'DELETED' ? 'gray' : 'red'}>
                      {n.state}
                    </Badge>
                    {n.stateReason && (
                      <Text size="xs" c="dimmed">
                        {n.stateReason}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td data-testid="node-ssh">
                    <NodeSSH command={n.sshCommand} hostKeys={n.hostKeys} deleted={n.state === 'DELETED'} />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}

      <Title order={2} fz="lg" mt="xl" mb="xs">
        Config
      </Title>
      <ScrollArea.Autosize mah={320}>
        <Code block data-testid="cluster-config">
          {JSON.stringify(c.config, null, 2)}
        </Code>
      </ScrollArea.Autosize>

      <Title order={2} fz="lg" mt="xl" mb="xs">
        Jobs
      </Title>
      <Table striped withTableBorder data-testid="job-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Job</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Tasks</Table.Th>
            <Table.Th>Started</Table.Th>
            <Table.Th>Took</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {c.jobs.map((j) => (
            <Table.Tr key={j.id} data-job={j.id} data-state={j.state}>
              <Table.Td>
                <Anchor component={Link} to={`/clusters/${c.id}/jobs/${j.id}`} size="sm">
                  {words(j.action)}
                </Anchor>
                {j.message && (
                  <Text size="xs" c="dimmed" lineClamp={1}>
                    {j.message}
                  </Text>
                )}
              </Table.Td>
              <Table.Td>
                <Badge variant="light" color={j.state === 'RUNNING' ? 'blue' : taskStateColor(j.state)}>
                  {j.state}
                </Badge>
              </Table.Td>
              <Table.Td>
                <Text size="sm">
                  {j.counts.complete + j.counts.skipped}/{j.counts.total}
                  {j.counts.failed > 0 ? `, ${j.counts.failed} failed` : ''}
                </Text>
              </Table.Td>
              <Table.Td>
                <TimeText iso={j.createdAt} size="sm" />
              </Table.Td>
              <Table.Td>
                <Text size="sm">
                  {j.state === 'RUNNING' || j.state === 'PAUSED'
                    ? '…'
                    : formatDuration(Date.parse(j.updatedAt) - Date.parse(j.createdAt))}
                </Text>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </>
  );
}

function LeaseModal({
  opened,
  onClose,
  clusterId,
  createdAt,
  expireTime,
  lease,
  onDone,
}: {
  opened: boolean;
  onClose: () => void;
  clusterId: string;
  createdAt: string;
  expireTime: string;
  lease: { max: number; step: number };
  onDone: () => void;
}) {
  const [hours, setHours] = useState<number | string>(
    lease.step > 0 ? Math.max(1, Math.floor(lease.step / 3_600_000)) : 24,
  );
  const [state, run] = useMutation(SetExpireDocument);
  const [err, setErr] = useState<ApiError[]>([]);
  const { latest } = leaseLimit(createdAt, expireTime, lease);
  const target = Date.parse(expireTime) + Number(hours) * 3_600_000;
  const over = latest !== null && target > latest;
  return (
    <Modal
      opened={opened}
      onClose={onClose}
      lockScroll={false}
      closeButtonProps={{ 'aria-label': 'Close' }}
      title="Extend the lease"
    >
      <Stack gap="md">
        <Text size="sm">
          The lease ends {formatDateTime(expireTime)}.{' '}
          {lease.step > 0 ? `Each extension adds at most ${formatDuration(lease.step)}. ` : ''}
          {lease.max > 0 ? `The cluster lives at most ${formatDuration(lease.max)} after it was made. ` : ''}
          {latest !== null ? `The latest end now possible is ${formatDateTime(new Date(latest).toISOString())}.` : ''}
        </Text>
        <NumberInput
          label="Extend by (hours)"
          min={1}
          allowDecimal={false}
          value={hours}
          onChange={setHours}
          error={over ? 'Beyond what the template allows' : undefined}
        />
        <Text size="sm">New end: {Number.isFinite(target) ? formatDateTime(new Date(target).toISOString()) : '—'}</Text>
        <ApiErrorAlert error={err} title="The lease was not changed" />
        {over && (
          <Alert color="orange" variant="light">
            Choose fewer hours, or extend to the latest end possible.
          </Alert>
        )}
        <Group justify="flex-end">
          {latest !== null && (
            <Button
              variant="subtle"
              onClick={() => setHours(Math.max(1, Math.floor((latest - Date.parse(expireTime)) / 3_600_000)))}
            >
              As far as allowed
            </Button>
          )}
          <Button
            loading={state.fetching}
            disabled={over || !(Number(hours) > 0)}
            onClick={async () => {
              setErr([]);
              const r = await run({ id: clusterId, t: new Date(target).toISOString() });
              if (r.error) return setErr(fromCombinedError(r.error));
              onDone();
              onClose();
            }}
          >
            Extend
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** What the latest check found (docs/operations.md#checking-a-cluster). */
function LastCheck({ check }: { check: Cluster['lastCheck'] | null }) {
  if (!check) return null;
  const bad = check.nodes.filter((n) => n.findings.length > 0);
  const unchecked = uncheckedServices(check.nodes);
  return (
    <Paper withBorder radius="md" p="md" mt="md" data-testid="last-check">
      <Group gap="sm" mb={bad.length > 0 ? 'xs' : 0}>
        <Text fw={500}>Last check</Text>
        <Badge color={check.healthy ? 'teal' : 'red'} variant="light">
          {check.healthy ? 'healthy' : `${bad.length} of ${check.nodes.length} nodes with findings`}
        </Badge>
        <Text size="sm" c="dimmed">
          <TimeText iso={check.at} />
        </Text>
      </Group>
      {bad.length > 0 && (
        <Table withTableBorder data-testid="check-findings">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Node</Table.Th>
              <Table.Th>Finding</Table.Th>
              <Table.Th>Service</Table.Th>
              <Table.Th>Detail</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {bad.flatMap((n) =>
              n.findings.map((f, i) => (
                <Table.Tr key={`${n.nodeId}-${i}`}>
                  <Table.Td>{n.hostname}</Table.Td>
                  <Table.Td>
                    <Badge color="red" variant="light" tt="none">
                      {words(f.kind).toLowerCase()}
                    </Badge>
                  </Table.Td>
                  <Table.Td>{f.service}</Table.Td>
                  <Table.Td>
                    <Text size="xs" c="dimmed" lineClamp={2}>
                      {f.detail}
                    </Text>
                  </Table.Td>
                </Table.Tr>
              )),
            )}
          </Table.Tbody>
        </Table>
      )}
      {unchecked.length > 0 && (
        <Text size="sm" c="dimmed" mt="xs" data-testid="check-unchecked">
          Not checked (no status action, no systemd units): {unchecked.join(', ')}
        </Text>
      )}
    </Paper>
  );
}
