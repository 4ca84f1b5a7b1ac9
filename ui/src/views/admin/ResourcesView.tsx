// Plugin resources (docs/task-protocol.md#plugin-resources): the files and
// archives a driver uses, by plugin. Admins upload versions (inactive),
// stage one per name, recall or delete them, and sync: the staged versions
// go live together as the tenant's next resource generation.
import {
  Badge,
  Button,
  Group,
  Input,
  Paper,
  SegmentedControl,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { IconRefresh, IconUpload } from '@tabler/icons-react';
import { useCallback, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { EntityListDocument } from '../../components/admin/catalogApi';
import { ConfirmButton } from '../../components/admin/ConfirmButton';
import { notify } from '../../components/admin/notify';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { EmptyState } from '../../components/atomic/EmptyState';
import { PageHeader } from '../../components/atomic/PageHeader';
import { TimeText } from '../../components/atomic/TimeText';
import { graphql } from '../../gql';
import type { PluginType, ResourceState } from '../../gql/graphql';
import { type ApiError, fromCombinedError, splitFieldErrors } from '../../lib/errors';
import { getIn, isObject } from '../../lib/jsonDoc';
import { IconPackage } from '@tabler/icons-react';

const ResourcesDocument = graphql(`
  query AdminResources($pluginType: PluginType!, $plugin: String!) {
    resources(pluginType: $pluginType, plugin: $plugin) {
      pluginType
      plugin
      resourceType
      name
      version
      format
      permissions
      state
      digest
      size
      createdAt
    }
  }
`);

const GenerationDocument = graphql(`
  query AdminResourceGeneration {
    resourceGeneration
  }
`);

const UploadDocument = graphql(`
  mutation AdminUploadResource($input: ResourceUploadInput!) {
    uploadResource(input: $input) {
      pluginType
      plugin
      resourceType
      name
      version
      state
    }
  }
`);
const StageDocument = graphql(`
  mutation AdminStageResource($input: ResourceVersionInput!) {
    stageResource(input: $input) {
      pluginType
      plugin
      resourceType
      name
      version
      state
    }
  }
`);
const RecallDocument = graphql(`
  mutation AdminRecallResource($input: ResourceVersionInput!) {
    recallResource(input: $input) {
      pluginType
      plugin
      resourceType
      name
      version
      state
    }
  }
`);
const DeleteDocument = graphql(`
  mutation AdminDeleteResource($input: ResourceVersionInput!) {
    deleteResource(input: $input)
  }
`);
const SyncDocument = graphql(`
  mutation AdminSyncResources {
    syncResources
  }
`);

const resourcesChanged = { additionalTypenames: ['PluginResource'] };
const resourcesContext = { additionalTypenames: ['PluginResource'] };

const stateColor: Record<ResourceState, string> = {
  INACTIVE: 'gray',
  STAGED: 'blue',
  ACTIVE: 'teal',
  RECALLED: 'orange',
};
const stateText: Record<ResourceState, string> = {
  INACTIVE: 'inactive',
  STAGED: 'staged: live at the next sync',
  ACTIVE: 'active',
  RECALLED: 'recalled: inactive at the next sync',
};

function base64(buf: ArrayBuffer): string {
  const bytes = new Uint8Array(buf);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function bytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export function Component() {
  const [pluginType, setPluginType] = useState<PluginType>('AUTOMATORTYPES');
  const [plugin, setPlugin] = useState<string | null>(null);
  const [{ data: plugins }] = useQuery({ query: EntityListDocument, variables: { kind: pluginType } });
  const [gen, refetchGen] = useQuery({ query: GenerationDocument });
  const [list] = useQuery({
    query: ResourcesDocument,
    variables: { pluginType, plugin: plugin ?? '' },
    pause: !plugin,
    // An empty list names no type: without this an upload would not refresh it.
    context: resourcesContext,
  });
  const [, upload] = useMutation(UploadDocument);
  const [, stage] = useMutation(StageDocument);
  const [, recall] = useMutation(RecallDocument);
  const [, remove] = useMutation(DeleteDocument);
  const [{ fetching: syncing }, sync] = useMutation(SyncDocument);
  const [errors, setErrors] = useState<ApiError[]>([]);
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [resourceType, setResourceType] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [uploading, setUploading] = useState(false);

  const descriptor = plugins?.catalog.entities.find((e) => e.name === plugin)?.document;
  const types = getIn(descriptor, 'resourceTypes');
  const typeNames = isObject(types) ? Object.keys(types) : [];
  const withTypes = (plugins?.catalog.entities ?? []).filter((e) => isObject(getIn(e.document, 'resourceTypes')));
  const options = (plugins?.catalog.entities ?? []).map((e) => ({
    value: e.name,
    label: withTypes.includes(e) ? e.name : `${e.name} (no resource types)`,
  }));

  const refreshGen = useCallback(() => refetchGen({ requestPolicy: 'network-only' }), [refetchGen]);
  const act = async (r: { error?: import('@urql/core').CombinedError }, done: string) => {
    if (r.error) return setErrors(fromCombinedError(r.error));
    setErrors([]);
    notify(done);
  };

  const rows = list.data?.resources ?? [];
  return (
    <>
      <PageHeader
        title="Plugin resources"
        description="Files and archives the drivers use, by plugin. Upload a version, stage it, then sync: staged versions go live together, and running jobs keep the generation they started with."
        actions={
          <Group gap="sm">
            <Badge size="lg" variant="light" color="teal" tt="none" data-testid="resource-generation">
              Live generation {gen.data?.resourceGeneration ?? '…'}
            </Badge>
            <ConfirmButton
              leftSection={<IconRefresh size={16} />}
              loading={syncing}
              title="Sync resources?"
              message="Staged versions become active and recalled ones inactive, all at once, as the next generation. Jobs made from now on use it."
              confirm="Sync"
              color="blue"
              onConfirm={async () => {
                const r = await sync({}, resourcesChanged);
                await act(r, `Synced: generation ${r.data?.syncResources ?? ''} is live.`);
                refreshGen();
              }}
            >
              Sync
            </ConfirmButton>
          </Group>
        }
      />
      <Stack>
        <Paper withBorder radius="md" p="md">
          <Group align="flex-end">
            <Input.Wrapper label="Plugin kind">
              <div>
                <SegmentedControl
                  aria-label="Plugin kind"
                  value={pluginType}
                  onChange={(v) => {
                    setPluginType(v as PluginType);
                    setPlugin(null);
                    setResourceType(null);
                  }}
                  data={[
                    { value: 'AUTOMATORTYPES', label: 'Automator types' },
                    { value: 'PROVIDERTYPES', label: 'Provider types' },
                  ]}
                />
              </div>
            </Input.Wrapper>
            <Select
              label="Plugin"
              placeholder="Choose a plugin"
              data={options}
              value={plugin}
              onChange={(v) => {
                setPlugin(v);
                setResourceType(null);
              }}
              searchable
              w={280}
            />
          </Group>
        </Paper>
        <ApiErrorAlert error={errors} title="Not done" />
        {!plugin ? (
          <EmptyState icon={<IconPackage size={24} />} title="Choose a plugin">
            Resources belong to a plugin: a provider type or an automator type whose descriptor lists resource types.
          </EmptyState>
        ) : (
          <>
            <Paper withBorder radius="md" p="md">
              <form
                onSubmit={async (e) => {
                  e.preventDefault();
                  if (!file || !resourceType) return;
                  setUploading(true);
                  try {
                    const content = base64(await file.arrayBuffer());
                    const r = await upload(
                      { input: { pluginType, plugin, resourceType, name, content } },
                      resourcesChanged,
                    );
                    if (r.error) {
                      const { byField, rest } = splitFieldErrors(fromCombinedError(r.error), {
                        prefix: 'input.',
                        fields: ['resourceType', 'name', 'content'],
                      });
                      setFieldErrors(byField);
                      setErrors(rest);
                      return;
                    }
                    setFieldErrors({});
                    setErrors([]);
                    notify(`Uploaded ${name} v${r.data?.uploadResource.version} (inactive until staged and synced).`);
                  } finally {
                    setUploading(false);
                  }
                }}
              >
                <Stack gap="sm">
                  <Title order={2} fz="md">
                    Upload a version
                  </Title>
                  {typeNames.length === 0 && (
                    <Text size="sm" c="dimmed">
                      {plugin}&apos;s descriptor lists no resource types, so it takes no resources.
                    </Text>
                  )}
                  <Group align="flex-start" grow>
                    <Select
                      label="Resource type"
                      data={typeNames.map((t) => ({
                        value: t,
                        label: `${t} (${String(getIn(types, `${t}.format`) ?? 'file')})`,
                      }))}
                      value={resourceType}
                      onChange={setResourceType}
                      error={fieldErrors.resourceType}
                    />
                    <TextInput
                      label="Name"
                      value={name}
                      onChange={(e) => setName(e.currentTarget.value)}
                      error={fieldErrors.name}
                    />
                    <Input.Wrapper label="File" error={fieldErrors.content}>
                      <input
                        type="file"
                        aria-label="File"
                        data-testid="resource-file"
                        onChange={(e) => {
                          const f = e.currentTarget.files?.[0] ?? null;
                          setFile(f);
                          if (f && !name) setName(f.name.replace(/\.(tar\.gz|tgz|[^.]+)$/, ''));
                        }}
                        style={{ marginTop: 8 }}
                      />
                    </Input.Wrapper>
                  </Group>
                  <Group justify="flex-end">
                    <Button
                      type="submit"
                      leftSection={<IconUpload size={16} />}
                      disabled={!file || !resourceType || !name}
                      loading={uploading}
                    >
                      Upload
                    </Button>
                  </Group>
                </Stack>
              </form>
            </Paper>
            <ApiErrorAlert error={list.error} title="Loading the resources failed" />
            {rows.length === 0 ? (
              <Text size="sm" c="dimmed">
                {plugin} has no resources yet.
              </Text>
            ) : (
              <Paper withBorder radius="md">
                <Table.ScrollContainer minWidth={800}>
                  <Table verticalSpacing="sm" data-testid="resource-table">
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th>Type</Table.Th>
                        <Table.Th>Name</Table.Th>
                        <Table.Th ta="right">Version</Table.Th>
                        <Table.Th>State</Table.Th>
                        <Table.Th>Digest</Table.Th>
                        <Table.Th ta="right">Size</Table.Th>
                        <Table.Th>Uploaded</Table.Th>
                        <Table.Th>Actions</Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {rows.map((x) => {
                        const input = {
                          pluginType,
                          plugin,
                          resourceType: x.resourceType,
                          name: x.name,
                          version: x.version,
                        };
                        const label = `${x.name} v${x.version}`;
                        return (
                          <Table.Tr
                            key={`${x.resourceType}/${x.name}/${x.version}`}
                            data-resource={label}
                            data-state={x.state}
                          >
                            <Table.Td>{x.resourceType}</Table.Td>
                            <Table.Td ff="monospace">{x.name}</Table.Td>
                            <Table.Td ta="right">v{x.version}</Table.Td>
                            <Table.Td>
                              <Badge variant="light" color={stateColor[x.state]} tt="none">
                                {stateText[x.state]}
                              </Badge>
                            </Table.Td>
                            <Table.Td>
                              <Text size="xs" ff="monospace" title={x.digest}>
                                {x.digest.slice(0, 19)}…
                              </Text>
                            </Table.Td>
                            <Table.Td ta="right">{bytes(x.size)}</Table.Td>
                            <Table.Td>
                              <TimeText iso={x.createdAt} size="sm" />
                            </Table.Td>
                            <Table.Td>
                              <Group gap={4} wrap="nowrap">
                                {(x.state === 'INACTIVE' || x.state === 'RECALLED') && (
                                  <Button
                                    size="compact-sm"
                                    variant="light"
                                    aria-label={`Stage ${label}`}
                                    onClick={async () =>
                                      act(await stage({ input }, resourcesChanged), `${label} is staged.`)
                                    }
                                  >
                                    Stage
                                  </Button>
                                )}
                                {(x.state === 'STAGED' || x.state === 'ACTIVE') && (
                                  <Button
                                    size="compact-sm"
                                    variant="light"
                                    color="orange"
                                    aria-label={`Recall ${label}`}
                                    onClick={async () =>
                                      act(await recall({ input }, resourcesChanged), `${label} is recalled.`)
                                    }
                                  >
                                    Recall
                                  </Button>
                                )}
                                {x.state === 'INACTIVE' && (
                                  <ConfirmButton
                                    size="compact-sm"
                                    variant="subtle"
                                    color="red"
                                    aria-label={`Delete ${label}`}
                                    title={`Delete ${label}?`}
                                    message="The version and its bytes are deleted."
                                    confirm="Delete"
                                    onConfirm={async () =>
                                      act(await remove({ input }, resourcesChanged), `${label} is deleted.`)
                                    }
                                  >
                                    Delete
                                  </ConfirmButton>
                                )}
                              </Group>
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
        )}
      </Stack>
    </>
  );
}
