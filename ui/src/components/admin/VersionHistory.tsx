// An entity's versions and how any two differ, path by path; an old
// version can be restored (saved again as the newest) or deleted.
import { Badge, Button, Code, Group, Paper, Select, Stack, Table, Text, Title } from '@mantine/core';
import { IconArrowBackUp, IconTrash } from '@tabler/icons-react';
import { useState } from 'react';
import { useMutation, useQuery } from 'urql';
import type { CatalogKind } from '../../gql/graphql';
import { REDACTED } from '../../lib/catalogKinds';
import { fromCombinedError } from '../../lib/errors';
import { type Change, diff, show } from '../../lib/jsonDoc';
import { ApiErrorAlert } from '../atomic/ApiErrorAlert';
import { Loading } from '../atomic/Loading';
import { catalogChanged, DeleteEntityDocument, EntityDocument, PutEntityDocument } from './catalogApi';
import { ConfirmButton } from './ConfirmButton';
import { notify } from './notify';

/** shown is a diff value as people read it: a sensitive provider value is never there to show. */
function shown(v: unknown): string {
  if (v === REDACTED) return '(set; coopr never shows it)';
  return v === '' ? '(empty)' : show(v);
}

const kindColor: Record<Change['kind'], string> = { added: 'green', removed: 'red', changed: 'blue' };

function DiffTable({ changes }: { changes: Change[] }) {
  if (changes.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        The two versions are the same.
      </Text>
    );
  }
  return (
    <Table.ScrollContainer minWidth={640}>
      <Table verticalSpacing="xs" withTableBorder data-testid="version-diff">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Field</Table.Th>
            <Table.Th>Change</Table.Th>
            <Table.Th>Before</Table.Th>
            <Table.Th>After</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {changes.map((c) => (
            <Table.Tr key={c.path} data-path={c.path}>
              <Table.Td>
                <Text size="sm" ff="monospace">
                  {c.path || '(whole document)'}
                </Text>
              </Table.Td>
              <Table.Td>
                <Badge size="sm" variant="light" color={kindColor[c.kind]}>
                  {c.kind}
                </Badge>
              </Table.Td>
              <Table.Td>
                {c.old !== undefined && (
                  <Code block style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word', maxWidth: 360 }}>
                    {shown(c.old)}
                  </Code>
                )}
              </Table.Td>
              <Table.Td>
                {c.new !== undefined && (
                  <Code block style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word', maxWidth: 360 }}>
                    {shown(c.new)}
                  </Code>
                )}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

export interface VersionHistoryProps {
  kind: CatalogKind;
  name: string;
  versions: number[];
  /** After a restore or a delete: the entity changed. */
  onChanged: () => void;
}

export function VersionHistory({ kind, name, versions, onChanged }: VersionHistoryProps) {
  const newest = versions[versions.length - 1] ?? 1;
  const [to, setTo] = useState(String(newest));
  const [from, setFrom] = useState(String(versions.length > 1 ? versions[versions.length - 2] : newest));
  const [a] = useQuery({ query: EntityDocument, variables: { kind, name, version: Number(from) } });
  const [b] = useQuery({ query: EntityDocument, variables: { kind, name, version: Number(to) } });
  const [, put] = useMutation(PutEntityDocument);
  const [, del] = useMutation(DeleteEntityDocument);
  const [error, setError] = useState<ReturnType<typeof fromCombinedError>>([]);
  const options = versions.map((v) => ({ value: String(v), label: `v${v}${v === newest ? ' (newest)' : ''}` }));
  const before = a.data?.catalog.entity?.document;
  const after = b.data?.catalog.entity?.document;
  const old = Number(from);

  return (
    <Stack>
      <Paper withBorder radius="md" p="md">
        <Stack gap="sm">
          <Title order={2} fz="lg">
            Compare versions
          </Title>
          <Group align="flex-end">
            <Select
              label="From"
              data={options}
              value={from}
              onChange={(v) => v && setFrom(v)}
              w={160}
              allowDeselect={false}
            />
            <Select
              label="To"
              data={options}
              value={to}
              onChange={(v) => v && setTo(v)}
              w={160}
              allowDeselect={false}
            />
          </Group>
          <ApiErrorAlert error={a.error ?? b.error} title="Loading a version failed" />
          {before === undefined || after === undefined ? (
            <Loading label="Loading the versions…" />
          ) : (
            <DiffTable changes={diff(before, after)} />
          )}
        </Stack>
      </Paper>
      <Paper withBorder radius="md" p="md">
        <Stack gap="sm">
          <Title order={2} fz="lg">
            Version v{old}
          </Title>
          <Text size="sm" c="dimmed">
            Restoring saves v{old}&apos;s document as a new version; clusters made from any version keep their own copy.
          </Text>
          <ApiErrorAlert error={error} title="Not done" />
          <Group>
            <Button
              variant="light"
              leftSection={<IconArrowBackUp size={16} />}
              disabled={old === newest || before === undefined}
              onClick={async () => {
                const r = await put({ kind, entity: before });
                if (r.error) return setError(fromCombinedError(r.error));
                setError([]);
                notify(`Restored: v${old} is now v${r.data?.putCatalogEntity.entity.version}.`);
                onChanged();
              }}
            >
              Restore v{old}
            </Button>
            <ConfirmButton
              variant="light"
              color="red"
              leftSection={<IconTrash size={16} />}
              disabled={versions.length < 2}
              title={`Delete v${old} of ${name}?`}
              message={`Version ${old} is deleted; the other versions stay.`}
              confirm="Delete version"
              onConfirm={async () => {
                const r = await del({ kind, name, version: old }, catalogChanged);
                if (r.error) return setError(fromCombinedError(r.error));
                setError([]);
                const left = versions.filter((v) => v !== old);
                setFrom(String(left[Math.max(0, left.length - 2)]));
                setTo(String(left[left.length - 1]));
                onChanged();
              }}
            >
              Delete v{old}
            </ConfirmButton>
          </Group>
        </Stack>
      </Paper>
    </Stack>
  );
}
