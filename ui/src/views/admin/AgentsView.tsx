// Agents (superadmin): every registered agent, its slots per tenant, and
// its state live from agentEvents: busy slots, live or lost, the last
// heartbeat.
import { Badge, Group, Paper, Table, Text } from '@mantine/core';
import { IconRobot } from '@tabler/icons-react';
import { useCallback, useEffect, useMemo } from 'react';
import { useQuery, useSubscription } from 'urql';
import { useOnReconnect } from '../../api/connection';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { EmptyState } from '../../components/atomic/EmptyState';
import { Loading } from '../../components/atomic/Loading';
import { PageHeader } from '../../components/atomic/PageHeader';
import { TimeText } from '../../components/atomic/TimeText';
import { useSession } from '../../components/auth/session';
import { SuperadminOnly } from '../../components/admin/SuperadminOnly';
import { graphql } from '../../gql';
import type { AgentEventsSubscription } from '../../gql/graphql';

const AgentsDocument = graphql(`
  query AdminAgents {
    agents {
      id
      version
      host
      capacity
      registeredAt
      lastSeen
      slots {
        tenantId
        slots
      }
    }
    tenants {
      id
      name
    }
  }
`);

const AgentEventsDocument = graphql(`
  subscription AgentEvents {
    agentEvents {
      kind
      agentId
      capacity
      busy
      live
      at
      lagged
    }
  }
`);

type Live = Record<string, { busy: number; live: boolean; at: string; capacity: number }>;

/** reduceAgents keeps the newest state of each agent from its events. */
export function reduceAgents(prev: Live | undefined, data: AgentEventsSubscription): Live {
  const e = data.agentEvents;
  return { ...prev, [e.agentId]: { busy: e.busy, live: e.live, at: e.at, capacity: e.capacity } };
}

function View() {
  const { api } = useSession();
  const [{ data, error, fetching }, reexecute] = useQuery({ query: AgentsDocument });
  const refetch = useCallback(() => reexecute({ requestPolicy: 'network-only' }), [reexecute]);
  useOnReconnect(api.status, refetch);
  const [{ data: live }] = useSubscription({ query: AgentEventsDocument }, reduceAgents);
  const tenants = useMemo(() => new Map((data?.tenants ?? []).map((t) => [t.id, t.name])), [data]);
  // An agent registered since the query: read its details.
  const unknown = Object.keys(live ?? {}).some((id) => data && !data.agents.some((a) => a.id === id));
  useEffect(() => {
    if (unknown) refetch();
  }, [unknown, refetch]);

  if (error) return <ApiErrorAlert error={error} title="Loading agents failed" />;
  if (!data && fetching) return <Loading label="Loading agents…" />;
  const agents = data?.agents ?? [];
  return (
    <>
      <PageHeader
        title="Agents"
        description="The processes that run tasks, their task slots per tenant, and whether they are heard from; live."
      />
      {agents.length === 0 ? (
        <EmptyState icon={<IconRobot size={24} />} title="No agents">
          Start one with coopr agent and an agent token.
        </EmptyState>
      ) : (
        <Paper withBorder radius="md">
          <Table.ScrollContainer minWidth={800}>
            <Table verticalSpacing="sm" data-testid="agent-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Agent</Table.Th>
                  <Table.Th>State</Table.Th>
                  <Table.Th ta="right">Busy</Table.Th>
                  <Table.Th>Last heartbeat</Table.Th>
                  <Table.Th>Slots</Table.Th>
                  <Table.Th>Version</Table.Th>
                  <Table.Th>Registered</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {agents.map((a) => {
                  const l = live?.[a.id];
                  const state = l ? (l.live ? 'live' : 'lost') : 'unknown';
                  return (
                    <Table.Tr key={a.id} data-agent={a.id} data-state={state}>
                      <Table.Td>
                        <Text size="sm" fw={600} ff="monospace">
                          {a.id}
                        </Text>
                        <Text size="xs" c="dimmed">
                          {a.host}
                        </Text>
                      </Table.Td>
                      <Table.Td>
                        <Badge
                          variant="light"
                          color={state === 'live' ? 'teal' : state === 'lost' ? 'red' : 'gray'}
                          tt="none"
                        >
                          {state === 'unknown' ? 'waiting for news' : state}
                        </Badge>
                      </Table.Td>
                      <Table.Td ta="right">{l ? `${l.busy} of ${l.capacity}` : `? of ${a.capacity}`}</Table.Td>
                      <Table.Td>
                        <TimeText iso={l?.at ?? a.lastSeen} size="sm" />
                      </Table.Td>
                      <Table.Td>
                        <Group gap={4}>
                          {a.slots.length === 0 ? (
                            <Text size="sm" c="dimmed">
                              none
                            </Text>
                          ) : (
                            a.slots.map((s) => (
                              <Badge key={s.tenantId} variant="outline" color="gray" tt="none">
                                {tenants.get(s.tenantId) ?? s.tenantId}: {s.slots}
                              </Badge>
                            ))
                          )}
                        </Group>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{a.version || '—'}</Text>
                      </Table.Td>
                      <Table.Td>
                        <TimeText iso={a.registeredAt} size="sm" />
                      </Table.Td>
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        </Paper>
      )}
    </>
  );
}

export function Component() {
  return (
    <SuperadminOnly title="Agents">
      <View />
    </SuperadminOnly>
  );
}
