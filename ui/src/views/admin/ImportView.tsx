// Import a whole catalog: a directory in Coopr's layout (services/,
// providers/, clustertemplates/ ... of JSON files, as `coopr catalog
// import DIR` reads) or bundle documents, or a bundle pasted. The import
// replaces the tenant's catalog: what the document lacks is deleted.
import { Alert, Anchor, Breadcrumbs, Group, Input, JsonInput, Paper, Stack, Table, Text, Title } from '@mantine/core';
import { IconFileImport } from '@tabler/icons-react';
import { useState } from 'react';
import { Link } from 'react-router';
import { useMutation } from 'urql';
import { ConfirmButton } from '../../components/admin/ConfirmButton';
import { catalogChanged, ImportCatalogDocument } from '../../components/admin/catalogApi';
import { IssueList } from '../../components/admin/IssueList';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { PageHeader } from '../../components/atomic/PageHeader';
import { useSession } from '../../components/auth/session';
import { bundleFromFiles, catalogKinds } from '../../lib/catalogKinds';
import { type ApiError, fromCombinedError } from '../../lib/errors';
import { isObject } from '../../lib/jsonDoc';

interface Chosen {
  bundle: Record<string, unknown[]>;
  skipped: { path: string; why: string }[];
  from: string;
}

async function readFiles(list: FileList | null): Promise<{ path: string; text: string }[]> {
  const files = [...(list ?? [])];
  return Promise.all(files.map(async (f) => ({ path: f.webkitRelativePath || f.name, text: await f.text() })));
}

export function Component() {
  const { who } = useSession();
  const [chosen, setChosen] = useState<Chosen>();
  const [pasted, setPasted] = useState('');
  const [pasteError, setPasteError] = useState<string>();
  const [errors, setErrors] = useState<ApiError[]>([]);
  const [{ data, fetching }, importCatalog] = useMutation(ImportCatalogDocument);
  const [done, setDone] = useState(false);

  const choose = async (list: FileList | null, from: string) => {
    const files = await readFiles(list);
    setChosen({ ...bundleFromFiles(files), from });
    setDone(false);
    setErrors([]);
  };

  // Shared kinds are the superadmin's: a tenant admin's import leaves them out.
  const dropped =
    chosen && !who.superadmin ? catalogKinds.filter((k) => k.shared && chosen.bundle[k.slug]?.length) : [];
  const document = chosen
    ? Object.fromEntries(Object.entries(chosen.bundle).filter(([k]) => !dropped.some((d) => d.slug === k)))
    : undefined;
  const total = document ? Object.values(document).reduce((n, l) => n + l.length, 0) : 0;
  const result = done ? data?.importCatalog : undefined;

  return (
    <>
      <Breadcrumbs mb="xs">
        <Anchor component={Link} to="/admin/catalog" size="sm">
          Catalog
        </Anchor>
        <Text size="sm">Import</Text>
      </Breadcrumbs>
      <PageHeader
        title="Import a catalog"
        description="Replace your tenant's catalog with one from files: entities it lacks are deleted, changed ones get a new version, the same ones stay as they are."
      />
      <Stack maw={900}>
        <Paper withBorder radius="md" p="lg">
          <Stack>
            <Title order={2} fz="md">
              1. Choose the catalog
            </Title>
            <Group grow align="flex-start">
              <Input.Wrapper
                label="A catalog directory"
                description="Its kind directories (services/, providers/, clustertemplates/, …) hold one JSON file per entity."
              >
                <input
                  type="file"
                  aria-label="A catalog directory"
                  data-testid="catalog-directory"
                  // @ts-expect-error webkitdirectory is not in React's types; every current browser has it.
                  webkitdirectory=""
                  multiple
                  onChange={(e) => void choose(e.currentTarget.files, 'directory')}
                  style={{ marginTop: 8 }}
                />
              </Input.Wrapper>
              <Input.Wrapper
                label="Bundle files"
                description='JSON documents such as {"services": [...], "providers": [...]}.'
              >
                <input
                  type="file"
                  aria-label="Bundle files"
                  accept=".json,application/json"
                  multiple
                  onChange={(e) => void choose(e.currentTarget.files, 'files')}
                  style={{ marginTop: 8 }}
                />
              </Input.Wrapper>
            </Group>
            <JsonInput
              label="Or paste a bundle"
              placeholder='{"services": [...], "clustertemplates": [...]}'
              value={pasted}
              onChange={(t) => {
                setPasted(t);
                if (!t.trim()) return setPasteError(undefined);
                try {
                  const v: unknown = JSON.parse(t);
                  if (!isObject(v)) throw new Error('a bundle is an object');
                  setPasteError(undefined);
                  setChosen({ ...bundleFromFiles([{ path: 'pasted.json', text: t }]), from: 'pasted' });
                  setDone(false);
                } catch (e) {
                  setPasteError(`Not a bundle yet: ${e instanceof Error ? e.message : String(e)}`);
                }
              }}
              error={pasteError}
              autosize
              minRows={3}
              maxRows={12}
            />
          </Stack>
        </Paper>

        {chosen && (
          <Paper withBorder radius="md" p="lg" data-testid="import-summary">
            <Stack>
              <Title order={2} fz="md">
                2. Check and import
              </Title>
              <Table withTableBorder>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Kind</Table.Th>
                    <Table.Th ta="right">Entities</Table.Th>
                    <Table.Th>Names</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {catalogKinds
                    .filter((k) => chosen.bundle[k.slug]?.length)
                    .map((k) => (
                      <Table.Tr key={k.slug} data-kind={k.slug}>
                        <Table.Td>{k.label}</Table.Td>
                        <Table.Td ta="right">{chosen.bundle[k.slug]!.length}</Table.Td>
                        <Table.Td>
                          <Text size="sm" ff="monospace">
                            {chosen.bundle[k.slug]!.map((e) => (isObject(e) ? String(e.name) : '?')).join(', ')}
                          </Text>
                        </Table.Td>
                      </Table.Tr>
                    ))}
                </Table.Tbody>
              </Table>
              {dropped.length > 0 && (
                <Alert variant="light" color="blue" title="Left out">
                  {dropped.map((k) => k.label).join(' and ')} are shared by every tenant and only the superadmin imports
                  them; the import leaves them out.
                </Alert>
              )}
              {chosen.skipped.length > 0 && (
                <Alert variant="light" color="yellow" title={`${chosen.skipped.length} files skipped`}>
                  <IssueList
                    issues={chosen.skipped.map((s) => ({ path: s.path, message: s.why, severity: 'WARNING' }))}
                  />
                </Alert>
              )}
              <ApiErrorAlert error={errors} title="Not imported" />
              {result && (
                <Alert variant="light" color="green" title="Imported" data-testid="import-result">
                  <Text size="sm">
                    {result.created} created, {result.updated} updated, {result.unchanged} unchanged, {result.deleted}{' '}
                    deleted.
                  </Text>
                  {result.warnings.length > 0 && (
                    <IssueList
                      issues={result.warnings.map((w) => ({ path: w.path, message: w.message, severity: 'WARNING' }))}
                    />
                  )}
                </Alert>
              )}
              <Group justify="flex-end">
                <ConfirmButton
                  leftSection={<IconFileImport size={16} />}
                  disabled={total === 0}
                  loading={fetching}
                  title="Replace your catalog?"
                  message={`Your tenant's catalog becomes these ${total} entities: any entity not among them is deleted. Clusters keep what they were made from.`}
                  confirm="Import"
                  onConfirm={async () => {
                    const r = await importCatalog({ document }, catalogChanged);
                    if (r.error) {
                      setErrors(fromCombinedError(r.error));
                      setDone(false);
                      return;
                    }
                    setErrors([]);
                    setDone(true);
                  }}
                >
                  Import {total} entities
                </ConfirmButton>
              </Group>
            </Stack>
          </Paper>
        )}
      </Stack>
    </>
  );
}
