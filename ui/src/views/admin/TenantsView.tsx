// Tenants (superadmin): each tenant's task slots (workers) and quotas; a
// new tenant, optionally with a copy of the superadmin's catalog; deleting
// one with no workers.
import {
  Button,
  Checkbox,
  Group,
  Modal,
  NumberInput,
  Paper,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { IconBuilding, IconPencil } from '@tabler/icons-react';
import { useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { ConfirmButton } from '../../components/admin/ConfirmButton';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { Loading } from '../../components/atomic/Loading';
import { PageHeader } from '../../components/atomic/PageHeader';
import { TimeText } from '../../components/atomic/TimeText';
import { SuperadminOnly } from '../../components/admin/SuperadminOnly';
import { graphql } from '../../gql';
import type { TenantInput } from '../../gql/graphql';
import { type ApiError, fromCombinedError, splitFieldErrors } from '../../lib/errors';

const TenantsDocument = graphql(`
  query AdminTenants {
    tenants {
      id
      name
      description
      workers
      maxClusters
      maxNodes
      createdAt
    }
  }
`);

const CreateTenantDocument = graphql(`
  mutation AdminCreateTenant($input: TenantInput!, $bootstrap: Boolean) {
    createTenant(input: $input, bootstrap: $bootstrap) {
      id
      name
      description
      workers
      maxClusters
      maxNodes
      createdAt
    }
  }
`);

const UpdateTenantDocument = graphql(`
  mutation AdminUpdateTenant($name: String!, $input: TenantInput!) {
    updateTenant(name: $name, input: $input) {
      id
      name
      description
      workers
      maxClusters
      maxNodes
      createdAt
    }
  }
`);

const DeleteTenantDocument = graphql(`
  mutation AdminDeleteTenant($name: String!) {
    deleteTenant(name: $name)
  }
`);

interface TenantForm {
  name: string;
  description: string;
  workers: number | '';
  maxClusters: number | '';
  maxNodes: number | '';
}

const blank: TenantForm = { name: '', description: '', workers: 0, maxClusters: '', maxNodes: '' };

/** toInput: an empty quota is no limit (-1 removes one). */
function toInput(f: TenantForm): TenantInput {
  return {
    name: f.name,
    description: f.description,
    workers: f.workers === '' ? 0 : f.workers,
    maxClusters: f.maxClusters === '' ? -1 : f.maxClusters,
    maxNodes: f.maxNodes === '' ? -1 : f.maxNodes,
  };
}

function TenantFields({
  form,
  setForm,
  errors,
  isNew,
}: {
  form: TenantForm;
  setForm: (f: TenantForm) => void;
  errors: Record<string, string>;
  isNew: boolean;
}) {
  const num = (k: 'workers' | 'maxClusters' | 'maxNodes', label: string, description: string) => (
    <NumberInput
      label={label}
      description={description}
      min={0}
      allowDecimal={false}
      value={form[k]}
      placeholder={k === 'workers' ? '0' : 'No limit'}
      onChange={(v) => setForm({ ...form, [k]: typeof v === 'number' ? v : '' })}
      error={errors[k]}
    />
  );
  return (
    <Stack gap="sm">
      <Group grow align="flex-start">
        <TextInput
          label="Tenant name"
          value={form.name}
          disabled={!isNew}
          onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
          error={errors.name}
        />
        <TextInput
          label="Description"
          value={form.description}
          onChange={(e) => setForm({ ...form, description: e.currentTarget.value })}
          error={errors.description}
        />
      </Group>
      <Group grow align="flex-start">
        {num('workers', 'Workers', 'Task slots: how many of its tasks run at once.')}
        {num('maxClusters', 'Max clusters', 'Empty: no limit.')}
        {num('maxNodes', 'Max nodes', 'Empty: no limit.')}
      </Group>
    </Stack>
  );
}

function split(errs: ApiError[]) {
  return splitFieldErrors(errs, {
    prefix: 'input.',
    fields: ['name', 'description', 'workers', 'maxClusters', 'maxNodes'],
  });
}

function View() {
  const [{ data, error, fetching }] = useQuery({ query: TenantsDocument });
  const [, create] = useMutation(CreateTenantDocument);
  const [, update] = useMutation(UpdateTenantDocument);
  const [, del] = useMutation(DeleteTenantDocument);
  const [form, setForm] = useState<TenantForm>(blank);
  const [bootstrap, setBootstrap] = useState(true);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [alert, setAlert] = useState<ApiError[]>([]);
  const [editing, setEditing] = useState<TenantForm>();
  const [editErrors, setEditErrors] = useState<Record<string, string>>({});
  const [editAlert, setEditAlert] = useState<ApiError[]>([]);
  const [listAlert, setListAlert] = useState<ApiError[]>([]);

  if (error) return <ApiErrorAlert error={error} title="Loading tenants failed" />;
  if (!data && fetching) return <Loading label="Loading tenants…" />;
  const tenants = data?.tenants ?? [];
  return (
    <>
      <PageHeader
        title="Tenants"
        description="Each tenant has its own catalog, users and clusters, task slots and quotas."
      />
      <Stack>
        <Paper withBorder radius="md">
          <ApiErrorAlert error={listAlert} title="Not done" />
          <Table.ScrollContainer minWidth={760}>
            <Table verticalSpacing="sm" data-testid="tenant-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Tenant</Table.Th>
                  <Table.Th ta="right">Workers</Table.Th>
                  <Table.Th ta="right">Max clusters</Table.Th>
                  <Table.Th ta="right">Max nodes</Table.Th>
                  <Table.Th>Since</Table.Th>
                  <Table.Th>Actions</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {tenants.map((t) => (
                  <Table.Tr key={t.id} data-tenant={t.name}>
                    <Table.Td>
                      <Text size="sm" fw={600} ff="monospace">
                        {t.name}
                      </Text>
                      {t.description && (
                        <Text size="xs" c="dimmed">
                          {t.description}
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td ta="right">{t.workers}</Table.Td>
                    <Table.Td ta="right">{t.maxClusters ?? 'no limit'}</Table.Td>
                    <Table.Td ta="right">{t.maxNodes ?? 'no limit'}</Table.Td>
                    <Table.Td>
                      <TimeText iso={t.createdAt} size="sm" />
                    </Table.Td>
                    <Table.Td>
                      <Group gap={4} wrap="nowrap">
                        <Button
                          size="compact-sm"
                          variant="light"
                          leftSection={<IconPencil size={14} />}
                          aria-label={`Edit ${t.name}`}
                          onClick={() => {
                            setEditErrors({});
                            setEditAlert([]);
                            setEditing({
                              name: t.name,
                              description: t.description,
                              workers: t.workers,
                              maxClusters: t.maxClusters ?? '',
                              maxNodes: t.maxNodes ?? '',
                            });
                          }}
                        >
                          Edit
                        </Button>
                        {t.name !== 'superadmin' && (
                          <ConfirmButton
                            size="compact-sm"
                            variant="subtle"
                            color="red"
                            aria-label={`Delete ${t.name}`}
                            title={`Delete tenant ${t.name}?`}
                            message="The tenant, its users, tokens, catalog and clusters' records are deleted. Only a tenant with no workers can be deleted."
                            confirm="Delete tenant"
                            onConfirm={async () => {
                              const r = await del({ name: t.name }, { additionalTypenames: ['Tenant'] });
                              setListAlert(r.error ? fromCombinedError(r.error) : []);
                            }}
                          >
                            Delete
                          </ConfirmButton>
                        )}
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        </Paper>
        <Paper withBorder radius="md" p="md">
          <form
            onSubmit={async (e) => {
              e.preventDefault();
              const r = await create({ input: toInput(form), bootstrap });
              if (r.error) {
                const { byField, rest } = split(fromCombinedError(r.error));
                setErrors(byField);
                setAlert(rest);
                return;
              }
              setErrors({});
              setAlert([]);
              setForm(blank);
            }}
          >
            <Stack gap="sm">
              <Title order={2} fz="lg">
                New tenant
              </Title>
              <TenantFields form={form} setForm={setForm} errors={errors} isNew />
              <Checkbox
                label="Start it with a copy of the superadmin tenant's catalog"
                checked={bootstrap}
                onChange={(e) => setBootstrap(e.currentTarget.checked)}
              />
              <ApiErrorAlert error={alert} title="Not made" />
              <Group justify="flex-end">
                <Button type="submit" disabled={!form.name} leftSection={<IconBuilding size={16} />}>
                  Create tenant
                </Button>
              </Group>
            </Stack>
          </form>
        </Paper>
      </Stack>
      <Modal
        opened={!!editing}
        onClose={() => setEditing(undefined)}
        title={`Tenant ${editing?.name ?? ''}`}
        size="lg"
        centered
        lockScroll={false}
        closeButtonProps={{ 'aria-label': 'Close' }}
      >
        {editing && (
          <form
            onSubmit={async (e) => {
              e.preventDefault();
              const r = await update({ name: editing.name, input: toInput(editing) });
              if (r.error) {
                const { byField, rest } = split(fromCombinedError(r.error));
                setEditErrors(byField);
                setEditAlert(rest);
                return;
              }
              setEditing(undefined);
            }}
          >
            <Stack>
              <TenantFields form={editing} setForm={setEditing} errors={editErrors} isNew={false} />
              <ApiErrorAlert error={editAlert} title="Not saved" />
              <Group justify="flex-end">
                <Button variant="default" onClick={() => setEditing(undefined)}>
                  Cancel
                </Button>
                <Button type="submit">Save</Button>
              </Group>
            </Stack>
          </form>
        )}
      </Modal>
    </>
  );
}

export function Component() {
  return (
    <SuperadminOnly title="Tenants">
      <View />
    </SuperadminOnly>
  );
}
