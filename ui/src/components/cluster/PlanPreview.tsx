// What a create or an operation would do, before it does it: the nodes
// (collapsed by make-up), the plan as stages of tasks grouped by action
// and service (a table, or on request a graph), and the room it takes. Used by the create view and the
// operation dialogs.
import { Alert, Badge, Group, List, Paper, Progress, SegmentedControl, Stack, Table, Text, Title } from '@mantine/core';
import { IconAlertTriangle } from '@tabler/icons-react';
import { lazy, Suspense, useMemo, useState } from 'react';
import { nodes as nodeCount, words } from '../../lib/format';
import { groupLayout, type LayoutNode, numberRanges, type PlannedTask, planStages } from '../../lib/plan';
import { Loading } from '../atomic/Loading';

// React Flow is loaded only when a person asks for the graph.
const PlanGraph = lazy(() => import('./PlanGraph'));

export interface Capacity {
  provider: string;
  pool: string;
  nodes: number;
  used: number;
  free: number;
  requested: number;
}

export interface Quota {
  label: string;
  used: number;
  requested: number;
  max: number | null;
}

export function LayoutTable({ nodes, caption }: { nodes: readonly LayoutNode[]; caption: string }) {
  const rows = useMemo(() => groupLayout(nodes), [nodes]);
  return (
    <Table.ScrollContainer minWidth={560}>
      <Table striped withTableBorder data-testid="layout-table" captionSide="top">
        <Table.Caption>{caption}</Table.Caption>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Nodes</Table.Th>
            <Table.Th>Services</Table.Th>
            <Table.Th>Hardware</Table.Th>
            <Table.Th>Image</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((r) => (
            <Table.Tr key={r.nodenums[0]}>
              <Table.Td>
                <Text size="sm" fw={600}>
                  {nodeCount(r.nodenums.length)}
                </Text>
                <Text size="xs" c="dimmed">
                  #{numberRanges(r.nodenums)}
                </Text>
              </Table.Td>
              <Table.Td>
                <Group gap={4}>
                  {r.services.map((s) => (
                    <Badge key={s} variant="light" tt="none" fw={500}>
                      {s}
                    </Badge>
                  ))}
                </Group>
              </Table.Td>
              <Table.Td>
                <Text size="sm">{r.hardwaretype}</Text>
                {r.flavor && (
                  <Text size="xs" c="dimmed">
                    {r.flavor}
                  </Text>
                )}
              </Table.Td>
              <Table.Td>
                <Text size="sm">{r.imagetype}</Text>
                {r.image && (
                  <Text size="xs" c="dimmed">
                    {r.image}
                  </Text>
                )}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

export function PlanStages({
  tasks,
  edges,
}: {
  tasks: readonly PlannedTask[];
  /** The plan's dependencies, pairs of task refs: the graph's arrows. */
  edges: readonly (readonly string[])[];
}) {
  const stages = useMemo(() => planStages(tasks), [tasks]);
  const [shown, setShown] = useState<'stages' | 'graph'>('stages');
  if (stages.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        Nothing to run.
      </Text>
    );
  }
  return (
    <Stack gap="xs" data-testid="plan-stages">
      <Group justify="space-between" align="center" wrap="wrap">
        <Text size="sm">
          {tasks.length} {tasks.length === 1 ? 'task' : 'tasks'} in {stages.length}{' '}
          {stages.length === 1 ? 'stage' : 'stages'}; a task starts once the tasks it depends on are done, so stages
          overlap.
        </Text>
        <SegmentedControl
          size="xs"
          aria-label="Show the plan as"
          value={shown}
          onChange={(v) => setShown(v === 'graph' ? 'graph' : 'stages')}
          data={[
            { value: 'stages', label: 'Stages' },
            { value: 'graph', label: 'Graph' },
          ]}
        />
      </Group>
      {shown === 'graph' ? (
        <Suspense fallback={<Loading label="Drawing the plan…" />}>
          <PlanGraph tasks={tasks} edges={edges} />
        </Suspense>
      ) : (
        <Table withTableBorder striped>
          <Table.Thead>
            <Table.Tr>
              <Table.Th w={80}>Stage</Table.Th>
              <Table.Th>Tasks</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {stages.map((s) => (
              <Table.Tr key={s.stage}>
                <Table.Td>{s.stage + 1}</Table.Td>
                <Table.Td>
                  <Group gap={6}>
                    {s.groups.map((g) => (
                      <Badge
                        key={`${g.action}/${g.service}`}
                        variant="outline"
                        color="gray"
                        tt="none"
                        fw={500}
                        title={g.nodenums.length > 0 ? `nodes ${numberRanges(g.nodenums)}` : 'the whole cluster'}
                      >
                        {words(g.action)}
                        {g.service ? ` ${g.service}` : ''}
                        {g.count > 1 ? ` × ${g.count}` : ''}
                      </Badge>
                    ))}
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  );
}

function Meter({ label, used, requested, total }: { label: string; used: number; requested: number; total: number }) {
  const after = used + requested;
  const over = after > total;
  return (
    <Stack gap={4}>
      <Group justify="space-between">
        <Text size="sm">{label}</Text>
        <Text size="sm" c={over ? 'red' : undefined}>
          {used} used + {requested} new = {after} of {total}
          {over ? ' (over)' : ''}
        </Text>
      </Group>
      {/* The line above says the same in text. */}
      <Progress.Root size="md" aria-hidden>
        <Progress.Section value={total > 0 ? Math.min(100, (used / total) * 100) : 0} color="gray" />
        <Progress.Section
          value={total > 0 ? Math.min(100 - Math.min(100, (used / total) * 100), (requested / total) * 100) : 0}
          color={over ? 'red' : 'blue'}
        />
      </Progress.Root>
    </Stack>
  );
}

export function RoomUse({ capacity, quotas }: { capacity?: Capacity | null; quotas?: readonly Quota[] }) {
  const limited = (quotas ?? []).filter((q) => q.max !== null);
  const unlimited = (quotas ?? []).filter((q) => q.max === null);
  if (!capacity && (quotas ?? []).length === 0) return null;
  return (
    <Stack gap="sm" data-testid="room-use">
      {limited.map((q) => (
        <Meter
          key={q.label}
          label={`Tenant quota: ${q.label}`}
          used={q.used}
          requested={q.requested}
          total={q.max ?? 0}
        />
      ))}
      {unlimited.length > 0 && (
        <Text size="sm" c="dimmed">
          No tenant limit on {unlimited.map((q) => q.label).join(' or ')} (in use:{' '}
          {unlimited.map((q) => `${q.used} ${q.label}`).join(', ')}).
        </Text>
      )}
      {capacity && (
        <Meter
          label={`Provider ${capacity.provider} (${capacity.pool})`}
          used={capacity.used}
          requested={capacity.requested}
          total={capacity.nodes}
        />
      )}
    </Stack>
  );
}

export function Warnings({ warnings }: { warnings: readonly string[] }) {
  if (warnings.length === 0) return null;
  return (
    <Alert color="orange" variant="light" icon={<IconAlertTriangle size={18} />} title="Warnings">
      <List size="sm">
        {warnings.map((w, i) => (
          <List.Item key={i}>{w}</List.Item>
        ))}
      </List>
    </Alert>
  );
}

export function PreviewSection({ title, children }: { title: string; children: React.ReactNode }) {
  return (
    <Paper withBorder radius="md" p="md">
      <Title order={3} fz="md" mb="sm">
        {title}
      </Title>
      {children}
    </Paper>
  );
}
