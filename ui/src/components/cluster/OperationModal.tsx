// An operation on a live cluster, previewed before it runs: the form for
// the operation, then previewOperation's account of what would run (nodes
// added, removed and changed, config changes, the plan by stage, the
// provider's room), then runOperation pinned to that plan's hash. Delete
// has no operation preview in the API: its dialog lists the nodes that go.
import {
  Alert,
  Badge,
  Button,
  Checkbox,
  Code,
  Group,
  JsonInput,
  List,
  Modal,
  MultiSelect,
  NumberInput,
  Stack,
  Table,
  Text,
} from '@mantine/core';
import { useForm } from '@mantine/form';
import { useState } from 'react';
import { useMutation } from 'urql';
import { graphql } from '../../gql';
import type { ClusterOperation, OperationInput, PreviewOperationMutation } from '../../gql/graphql';
import { type ApiError, fromCombinedError, splitFieldErrors } from '../../lib/errors';
import { nodes as nodeCount, words } from '../../lib/format';
import { parseConfig } from '../../lib/providerFields';
import { ApiErrorAlert } from '../atomic/ApiErrorAlert';
import { LayoutTable, PlanStages, PreviewSection, RoomUse } from './PlanPreview';

const PreviewOperationDocument = graphql(`
  mutation PreviewOperation($id: ID!, $input: OperationInput!) {
    previewOperation(clusterId: $id, input: $input) {
      action
      added {
        nodenum
        hostname
        services
        hardwaretype
        imagetype
        flavor
        image
      }
      removed
      changed {
        nodenum
        add
      }
      configChanges {
        path
        kind
        old
        new
      }
      capacity {
        provider
        pool
        nodes
        used
        free
        requested
      }
      tasks {
        ref
        nodenum
        action
        service
        stage
      }
      edges
      planHash
      sync {
        fromVersion
        toVersion
        addServices
        keptServices
        constraintChanges {
          path
          old
          new
        }
      }
    }
  }
`);

const RunOperationDocument = graphql(`
  mutation RunOperation($id: ID!, $input: OperationInput!, $hash: String) {
    runOperation(clusterId: $id, input: $input, expectedPlanHash: $hash) {
      id
    }
  }
`);

const DeleteClusterDocument = graphql(`
  mutation DeleteCluster($id: ID!) {
    deleteCluster(id: $id) {
      id
    }
  }
`);

export type OperationKind = ClusterOperation | 'DELETE';

export interface OperationModalProps {
  clusterId: string;
  operation: OperationKind | null;
  size: number;
  services: string[];
  /** Services the template allows that the cluster lacks. */
  addable: string[];
  nodes: { nodenum: number; hostname: string }[];
  onClose: () => void;
  /** A job started: its id. */
  onStarted: (jobId: string) => void;
}

const titles: Record<OperationKind, string> = {
  CONFIGURE: 'Configure',
  CONFIGURE_WITH_RESTART: 'Configure with restart',
  START_SERVICES: 'Start services',
  STOP_SERVICES: 'Stop services',
  RESTART_SERVICES: 'Restart services',
  ADD_SERVICES: 'Add services',
  SCALE: 'Scale',
  CHECK: 'Check',
  REPAIR: 'Repair',
  REPLACE_NODE: 'Replace nodes',
  REBOOT_NODE: 'Reboot nodes',
  SYNC_TEMPLATE: 'Sync to the newest template version',
  DELETE: 'Delete cluster',
};

/** Operations that act on nodes the user picks. */
const nodeOps: OperationKind[] = ['REPLACE_NODE', 'REBOOT_NODE'];

interface Values {
  services: string[];
  config: string;
  replace: boolean;
  numMachines: number | string;
  /** Node numbers: the nodes to replace or reboot, or that a scale-in removes. */
  nodes: string[];
}

export function OperationModal(props: OperationModalProps) {
  const { clusterId, operation, onClose } = props;
  return (
    <Modal
      opened={!!operation}
      onClose={onClose}
      lockScroll={false}
      closeButtonProps={{ 'aria-label': 'Close' }}
      title={operation ? titles[operation] : ''}
      size="xl"
    >
      {operation === 'DELETE' ? (
        <DeleteBody {...props} />
      ) : operation ? (
        <OperationBody key={operation} {...props} operation={operation} clusterId={clusterId} />
      ) : null}
    </Modal>
  );
}

function DeleteBody({ clusterId, nodes, onClose, onStarted }: OperationModalProps) {
  const [state, run] = useMutation(DeleteClusterDocument);
  const [err, setErr] = useState<ApiError[]>([]);
  return (
    <Stack gap="md">
      <Text size="sm">
        Deleting removes every node's machine; the cluster ends TERMINATED. These {nodes.length} nodes go:
      </Text>
      <List size="sm" data-testid="delete-nodes">
        {nodes.slice(0, 50).map((n) => (
          <List.Item key={n.nodenum}>{n.hostname}</List.Item>
        ))}
        {nodes.length > 50 && <List.Item>and {nodes.length - 50} more</List.Item>}
      </List>
      <ApiErrorAlert error={err} title="The cluster was not deleted" />
      <Group justify="flex-end">
        <Button variant="default" onClick={onClose}>
          Cancel
        </Button>
        <Button
          color="red"
          loading={state.fetching}
          onClick={async () => {
            const r = await run({ id: clusterId });
            if (r.error) return setErr(fromCombinedError(r.error));
            const j = r.data?.deleteCluster;
            if (j) onStarted(j.id);
            else onClose();
          }}
        >
          Delete cluster
        </Button>
      </Group>
    </Stack>
  );
}

function OperationBody({
  clusterId,
  operation,
  size,
  services,
  addable,
  nodes,
  onClose,
  onStarted,
}: OperationModalProps & { operation: ClusterOperation }) {
  const [previewState, runPreview] = useMutation(PreviewOperationDocument);
  const [runState, runOp] = useMutation(RunOperationDocument);
  const [preview, setPreview] = useState<{
    input: OperationInput;
    result: PreviewOperationMutation['previewOperation'];
  } | null>(null);
  const [alert, setAlert] = useState<ApiError[]>([]);
  const form = useForm<Values>({
    initialValues: { services: [], config: '', replace: false, numMachines: size, nodes: [] },
    validate: {
      config: (v) =>
        operation === 'CONFIGURE' || operation === 'CONFIGURE_WITH_RESTART' ? (parseConfig(v).error ?? null) : null,
      services: (v) => (operation === 'ADD_SERVICES' && v.length === 0 ? 'Choose the services to add' : null),
      numMachines: (v) => (operation === 'SCALE' && !(typeof v === 'number' && v >= 1) ? 'At least 1 node' : null),
      nodes: (v) => (nodeOps.includes(operation) && v.length === 0 ? 'Choose the nodes' : null),
    },
  });
  const values = form.values;

  const toInput = (v: Values): OperationInput => {
    const input: OperationInput = { operation };
    if (operation === 'SCALE') input.numMachines = Number(v.numMachines);
    if (operation === 'CONFIGURE' || operation === 'CONFIGURE_WITH_RESTART') {
      input.config = parseConfig(v.config).value ?? {};
      input.replace = v.replace;
    }
    if (operation.endsWith('_SERVICES') && v.services.length > 0) input.services = v.services;
    if ((nodeOps.includes(operation) || operation === 'SCALE') && v.nodes.length > 0) input.nodes = v.nodes;
    return input;
  };
  const showErrors = (errors: ApiError[]) => {
    const norm = errors.map((e) => (e.field?.startsWith('input.') ? { ...e, field: e.field.slice(6) } : e));
    const { byField, rest } = splitFieldErrors(norm, {
      fields: ['services', 'config', 'numMachines', 'replace', 'nodes'],
    });
    form.setErrors(byField);
    setAlert(rest);
  };
  const onPreview = form.onSubmit(async (v) => {
    setAlert([]);
    const input = toInput(v);
    const r = await runPreview({ id: clusterId, input });
    if (r.error) return showErrors(fromCombinedError(r.error));
    if (r.data) setPreview({ input, result: r.data.previewOperation });
  });
  const onRun = async () => {
    if (!preview) return;
    const r = await runOp({ id: clusterId, input: preview.input, hash: preview.result.planHash });
    if (r.error) {
      setPreview(null);
      return showErrors(fromCombinedError(r.error));
    }
    if (r.data) onStarted(r.data.runOperation.id);
  };
  // A preview stands only for the input it was made from: any edit hides it
  // (compared by content: the form's values object may be new on any render).
  const p = preview && JSON.stringify(preview.input) === JSON.stringify(toInput(values)) ? preview.result : undefined;
  const serviceChoices = operation === 'ADD_SERVICES' ? addable : services;
  return (
    <form onSubmit={onPreview} noValidate>
      <Stack gap="md">
        {operation === 'SCALE' && (
          <NumberInput
            label="Nodes"
            description={`Now ${size}`}
            min={1}
            allowDecimal={false}
            {...form.getInputProps('numMachines')}
          />
        )}
        {(nodeOps.includes(operation) || operation === 'SCALE') && (
          <MultiSelect
            label={operation === 'SCALE' ? 'Nodes to remove' : 'Nodes'}
            description={
              operation === 'SCALE'
                ? 'Shrinking: these go instead of the solver’s pick (optional)'
                : operation === 'REPLACE_NODE'
                  ? 'Each is deleted and a new node with its services takes its place'
                  : 'Each is powered off and on, then its services are started'
            }
            data={nodes.map((n) => ({ value: String(n.nodenum), label: `${n.nodenum} ${n.hostname}` }))}
            {...form.getInputProps('nodes')}
          />
        )}
        {operation === 'CHECK' && (
          <Text size="sm">
            Reaches every node and asks every service whether it runs; changes nothing. The findings show on the cluster
            page.
          </Text>
        )}
        {operation === 'REPAIR' && (
          <Text size="sm">
            Acts on the latest check: replaces nodes that did not answer, installs missing services again and starts
            stopped ones.
          </Text>
        )}
        {operation === 'SYNC_TEMPLATE' && (
          <Text size="sm">
            Moves the cluster to the newest version of its template: adds the services it adds, takes its config changes
            and checks its constraints against the cluster&apos;s nodes, which stay as they are. Preview to see the
            changes; a version the layout breaks is refused with the reasons.
          </Text>
        )}
        {operation.endsWith('_SERVICES') && (
          <MultiSelect
            label="Services"
            description={
              operation === 'ADD_SERVICES'
                ? 'Services the template allows that the cluster lacks'
                : 'None chosen: all; the services they depend on are included'
            }
            data={serviceChoices}
            {...form.getInputProps('services')}
          />
        )}
        {(operation === 'CONFIGURE' || operation === 'CONFIGURE_WITH_RESTART') && (
          <>
            <JsonInput
              label="Config changes"
              description='A JSON merge patch: objects merge key by key, null removes a key, e.g. {"web": {"greeting": "hi"}}'
              autosize
              minRows={4}
              maxRows={14}
              formatOnBlur
              validationError="Not valid JSON"
              {...form.getInputProps('config')}
            />
            <Checkbox
              label="Replace the whole config instead of merging"
              {...form.getInputProps('replace', { type: 'checkbox' })}
            />
          </>
        )}
        <ApiErrorAlert
          error={alert}
          title={operation === 'SYNC_TEMPLATE' ? 'The template cannot be synced' : 'The operation cannot run'}
        />
        {!p && (
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" variant="light" loading={previewState.fetching}>
              Preview
            </Button>
          </Group>
        )}
        {p && (
          <Stack gap="sm" data-testid="operation-preview">
            <Text size="sm">
              Runs <Code>{p.action}</Code>: {p.tasks.length} {p.tasks.length === 1 ? 'task' : 'tasks'}
              {p.added.length > 0 ? `, ${nodeCount(p.added.length)} added` : ''}
              {p.removed.length > 0 ? `, ${nodeCount(p.removed.length)} removed` : ''}.
            </Text>
            {p.sync && <SyncSection sync={p.sync} />}
            {p.added.length > 0 && (
              <PreviewSection title="Nodes added">
                <LayoutTable nodes={p.added} caption="New nodes by services, hardware and image" />
              </PreviewSection>
            )}
            {p.removed.length > 0 && (
              <Alert color="orange" variant="light" title="Nodes removed">
                Nodes {p.removed.join(', ')} and their machines are deleted.
              </Alert>
            )}
            {p.changed.length > 0 && (
              <PreviewSection title="Nodes changed">
                <List size="sm">
                  {p.changed.map((c) => (
                    <List.Item key={c.nodenum}>
                      Node {c.nodenum} gains {c.add.join(', ')}
                    </List.Item>
                  ))}
                </List>
              </PreviewSection>
            )}
            {p.configChanges.length > 0 && (
              <PreviewSection title="Config changes">
                <Table withTableBorder data-testid="config-changes">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Key</Table.Th>
                      <Table.Th>Change</Table.Th>
                      <Table.Th>Before</Table.Th>
                      <Table.Th>After</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {p.configChanges.map((c) => (
                      <Table.Tr key={c.path.join('.')}>
                        <Table.Td ff="monospace">{c.path.join('.')}</Table.Td>
                        <Table.Td>
                          <Badge
                            variant="light"
                            tt="none"
                            color={c.kind === 'REMOVED' ? 'red' : c.kind === 'ADDED' ? 'teal' : 'blue'}
                          >
                            {words(c.kind).toLowerCase()}
                          </Badge>
                        </Table.Td>
                        <Table.Td ff="monospace">
                          {c.old === null || c.old === undefined ? '—' : JSON.stringify(c.old)}
                        </Table.Td>
                        <Table.Td ff="monospace">
                          {c.new === null || c.new === undefined ? '—' : JSON.stringify(c.new)}
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </PreviewSection>
            )}
            {p.capacity && <RoomUse capacity={p.capacity} />}
            <PreviewSection title="Plan">
              <PlanStages tasks={p.tasks} edges={p.edges} />
            </PreviewSection>
            <Group justify="flex-end">
              <Button variant="default" onClick={onClose}>
                Cancel
              </Button>
              <Button onClick={onRun} loading={runState.fetching} color={p.removed.length > 0 ? 'orange' : undefined}>
                Run {words(operation).toLowerCase()}
              </Button>
            </Group>
          </Stack>
        )}
      </Stack>
    </form>
  );
}

type Sync = NonNullable<PreviewOperationMutation['previewOperation']['sync']>;

/** What a template sync changes besides nodes and config: the versions, the services added and kept, the rules. */
function SyncSection({ sync }: { sync: Sync }) {
  return (
    <PreviewSection title="Template version">
      <Stack gap="xs" data-testid="sync-preview">
        <Text size="sm">
          From version {sync.fromVersion === 0 ? 'unrecorded' : sync.fromVersion} to {sync.toVersion}
        </Text>
        <Text size="sm">
          {sync.addServices.length > 0 ? `Services added: ${sync.addServices.join(', ')}` : 'No services added'}
        </Text>
        {sync.keptServices.length > 0 && (
          <Text size="sm">No longer in the template&apos;s defaults, and kept: {sync.keptServices.join(', ')}</Text>
        )}
        {sync.constraintChanges.length > 0 && (
          <Table withTableBorder data-testid="constraint-changes">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Rule</Table.Th>
                <Table.Th>Before</Table.Th>
                <Table.Th>After</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {sync.constraintChanges.map((c) => (
                <Table.Tr key={c.path}>
                  <Table.Td ff="monospace">{c.path}</Table.Td>
                  <Table.Td ff="monospace">{c.old ?? '—'}</Table.Td>
                  <Table.Td ff="monospace">{c.new ?? '—'}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Stack>
    </PreviewSection>
  );
}
