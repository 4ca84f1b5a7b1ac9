// The tenant's catalog, kind by kind: each entity links to its editor and
// versions; admins add entities or import a whole catalog from here.
import { Anchor, Badge, Button, Group, Paper, Table, Tabs, Text } from '@mantine/core';
import { IconBooks, IconFileImport, IconPlus } from '@tabler/icons-react';
import { Link, useSearchParams } from 'react-router';
import { useQuery } from 'urql';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { EmptyState } from '../../components/atomic/EmptyState';
import { Loading } from '../../components/atomic/Loading';
import { PageHeader } from '../../components/atomic/PageHeader';
import { useSession } from '../../components/auth/session';
import { catalogChanged, EntityListDocument } from '../../components/admin/catalogApi';

const catalogContext = catalogChanged;
import { catalogKinds, entityPath, type KindInfo } from '../../lib/catalogKinds';

function description(doc: unknown): string {
  const d = doc && typeof doc === 'object' ? (doc as { description?: unknown }).description : undefined;
  return typeof d === 'string' ? d : '';
}

function EntityTable({ info, canWrite }: { info: KindInfo; canWrite: boolean }) {
  const [{ data, fetching, error }] = useQuery({
    query: EntityListDocument,
    variables: { kind: info.kind },
    // An empty list names no type: without this a new entity would not show.
    context: catalogContext,
  });
  const label = info.label.toLowerCase();
  if (error) return <ApiErrorAlert error={error} title={`Loading ${label} failed`} />;
  if (!data && fetching) return <Loading label={`Loading ${label}…`} />;
  const entities = data?.catalog.entities ?? [];
  if (entities.length === 0) {
    return (
      <EmptyState
        icon={<IconBooks size={24} />}
        title={`No ${label}`}
        action={
          canWrite ? (
            <Button component={Link} to={entityPath(info)} leftSection={<IconPlus size={16} />}>
              New {info.singular}
            </Button>
          ) : undefined
        }
      >
        Add one, or import a catalog.
      </EmptyState>
    );
  }
  return (
    <Paper withBorder radius="md">
      <Table.ScrollContainer minWidth={600}>
        <Table verticalSpacing="sm" highlightOnHover data-testid="catalog-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Description</Table.Th>
              <Table.Th ta="right">Version</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {entities.map((e) => (
              <Table.Tr key={e.name} data-entity={e.name}>
                <Table.Td>
                  <Anchor component={Link} to={entityPath(info, e.name)} size="sm" fw={600} ff="monospace">
                    {e.name}
                  </Anchor>
                </Table.Td>
                <Table.Td>
                  <Text size="sm" c={description(e.document) ? undefined : 'dimmed'} lineClamp={2}>
                    {description(e.document) || '—'}
                  </Text>
                </Table.Td>
                <Table.Td ta="right">
                  <Badge variant="light" color="gray" tt="none" title={`versions ${e.versions.join(', ')}`}>
                    v{e.version}
                    {e.versions.length > 1 ? ` of ${e.versions.length}` : ''}
                  </Badge>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </Paper>
  );
}

export function Component() {
  const { who } = useSession();
  const [search, setSearch] = useSearchParams();
  const slug = search.get('kind') ?? 'clustertemplates';
  const current = catalogKinds.find((k) => k.slug === slug) ?? catalogKinds[0]!;
  const canWrite = !current.shared || who.superadmin;
  return (
    <>
      <PageHeader
        title="Catalog"
        description="What your tenant's clusters are built from. Provider types and automator types are shared by every tenant and kept by the superadmin."
        actions={
          <Group gap="sm">
            <Button
              component={Link}
              to="/admin/catalog/import"
              variant="default"
              leftSection={<IconFileImport size={16} />}
            >
              Import
            </Button>
            {canWrite && (
              <Button component={Link} to={entityPath(current)} leftSection={<IconPlus size={16} />}>
                New {current.singular}
              </Button>
            )}
          </Group>
        }
      />
      <Tabs value={current.slug} onChange={(v) => v && setSearch({ kind: v }, { replace: true })} keepMounted={false}>
        <Tabs.List mb="md">
          {catalogKinds.map((k) => (
            <Tabs.Tab key={k.slug} value={k.slug}>
              {k.label}
            </Tabs.Tab>
          ))}
        </Tabs.List>
        {catalogKinds.map((k) => (
          <Tabs.Panel key={k.slug} value={k.slug}>
            <EntityTable info={k} canWrite={!k.shared || who.superadmin} />
          </Tabs.Panel>
        ))}
      </Tabs>
    </>
  );
}
