// The tenant's catalog, kind by kind. Read-only for now: the editors and
// the template builder come next (docs/ui.md#what-comes-next).
import { Badge, Paper, Table, Tabs, Text } from '@mantine/core';
import { IconBooks } from '@tabler/icons-react';
import { useSearchParams } from 'react-router';
import { useQuery } from 'urql';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { EmptyState } from '../../components/atomic/EmptyState';
import { Loading } from '../../components/atomic/Loading';
import { PageHeader } from '../../components/atomic/PageHeader';
import { graphql } from '../../gql';
import type { CatalogKind } from '../../gql/graphql';

const CatalogEntitiesDocument = graphql(`
  query CatalogEntities($kind: CatalogKind!) {
    catalog {
      entities(kind: $kind) {
        name
        version
        versions
        document
      }
    }
  }
`);

const kinds: { kind: CatalogKind; label: string; slug: string }[] = [
  { kind: 'CLUSTERTEMPLATES', label: 'Templates', slug: 'clustertemplates' },
  { kind: 'PARTIALTEMPLATES', label: 'Partials', slug: 'partialtemplates' },
  { kind: 'SERVICES', label: 'Services', slug: 'services' },
  { kind: 'PROVIDERS', label: 'Providers', slug: 'providers' },
  { kind: 'HARDWARETYPES', label: 'Hardware', slug: 'hardwaretypes' },
  { kind: 'IMAGETYPES', label: 'Images', slug: 'imagetypes' },
  { kind: 'PROVIDERTYPES', label: 'Provider types', slug: 'providertypes' },
  { kind: 'AUTOMATORTYPES', label: 'Automator types', slug: 'automatortypes' },
];

function description(doc: unknown): string {
  const d = doc && typeof doc === 'object' ? (doc as { description?: unknown }).description : undefined;
  return typeof d === 'string' ? d : '';
}

function EntityTable({ kind, label }: { kind: CatalogKind; label: string }) {
  const [{ data, fetching, error }] = useQuery({ query: CatalogEntitiesDocument, variables: { kind } });
  if (error) return <ApiErrorAlert error={error} title={`Loading ${label.toLowerCase()} failed`} />;
  if (!data && fetching) return <Loading label={`Loading ${label.toLowerCase()}…`} />;
  const entities = data?.catalog.entities ?? [];
  if (entities.length === 0) {
    return (
      <EmptyState icon={<IconBooks size={24} />} title={`No ${label.toLowerCase()}`}>
        Import a catalog to add some: coopr catalog import DIR, or importCatalog through the API.
      </EmptyState>
    );
  }
  return (
    <Paper withBorder radius="md">
      <Table.ScrollContainer minWidth={600}>
        <Table verticalSpacing="sm" highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Description</Table.Th>
              <Table.Th ta="right">Version</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {entities.map((e) => (
              <Table.Tr key={e.name}>
                <Table.Td>
                  <Text size="sm" fw={600} ff="monospace">
                    {e.name}
                  </Text>
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
  const [search, setSearch] = useSearchParams();
  const slug = search.get('kind') ?? 'clustertemplates';
  const current = kinds.find((k) => k.slug === slug) ?? kinds[0]!;
  return (
    <>
      <PageHeader
        title="Catalog"
        description="What your tenant's clusters are built from. Provider types and automator types are shared by every tenant and kept by the superadmin."
      />
      <Tabs value={current.slug} onChange={(v) => v && setSearch({ kind: v }, { replace: true })} keepMounted={false}>
        <Tabs.List mb="md">
          {kinds.map((k) => (
            <Tabs.Tab key={k.slug} value={k.slug}>
              {k.label}
            </Tabs.Tab>
          ))}
        </Tabs.List>
        {kinds.map((k) => (
          <Tabs.Panel key={k.slug} value={k.slug}>
            <EntityTable kind={k.kind} label={k.label} />
          </Tabs.Panel>
        ))}
      </Tabs>
    </>
  );
}
