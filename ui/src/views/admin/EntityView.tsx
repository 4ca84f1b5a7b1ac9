// One catalog entity: its editor (the template builder for templates),
// its versions with the differences between any two, and deletion. At
// /admin/catalog/<kind>/new it makes a new one.
import { Anchor, Badge, Breadcrumbs, Code, Group, Stack, Tabs, Text } from '@mantine/core';
import { IconBooks, IconTrash } from '@tabler/icons-react';
import { useCallback, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { ConfirmButton } from '../../components/admin/ConfirmButton';
import { catalogChanged, DeleteEntityDocument, EntityDocument } from '../../components/admin/catalogApi';
import { EntityEditor } from '../../components/admin/EntityEditor';
import { TemplateBuilder } from '../../components/admin/TemplateBuilder';
import { VersionHistory } from '../../components/admin/VersionHistory';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { EmptyState } from '../../components/atomic/EmptyState';
import { Loading } from '../../components/atomic/Loading';
import { PageHeader } from '../../components/atomic/PageHeader';
import { useSession } from '../../components/auth/session';
import { entityPath, kindBySlug, type KindInfo } from '../../lib/catalogKinds';
import { fromCombinedError, type ApiError } from '../../lib/errors';
import { isObject } from '../../lib/jsonDoc';

function Editor({
  info,
  initial,
  isNew,
  readOnly,
  onSaved,
}: {
  info: KindInfo;
  initial: Record<string, unknown>;
  isNew: boolean;
  readOnly: boolean;
  onSaved: (name: string) => void;
}) {
  if (readOnly) {
    return (
      <Stack gap="sm">
        <Text size="sm" c="dimmed">
          {info.label} are shared by every tenant: only the superadmin changes them.
        </Text>
        <Code block>{JSON.stringify(initial, null, 2)}</Code>
      </Stack>
    );
  }
  const props = { info, initial, isNew, onSaved: (e: { name: string }) => onSaved(e.name) };
  return info.kind === 'CLUSTERTEMPLATES' || info.kind === 'PARTIALTEMPLATES' ? (
    <TemplateBuilder {...props} />
  ) : (
    <EntityEditor {...props} />
  );
}

function crumbs(info: KindInfo, name: string) {
  return (
    <Breadcrumbs mb="xs">
      <Anchor component={Link} to="/admin/catalog" size="sm">
        Catalog
      </Anchor>
      <Anchor component={Link} to={`/admin/catalog?kind=${info.slug}`} size="sm">
        {info.label}
      </Anchor>
      <Text size="sm">{name}</Text>
    </Breadcrumbs>
  );
}

export function Component() {
  const { kind: slug, name = '' } = useParams();
  const info = kindBySlug(slug);
  const { who } = useSession();
  const navigate = useNavigate();
  const isNew = name === 'new';
  const [tab, setTab] = useState<string | null>('edit');
  const [{ data, fetching, error }, reexecute] = useQuery({
    query: EntityDocument,
    variables: { kind: info?.kind ?? 'SERVICES', name },
    pause: !info || isNew,
  });
  const refetch = useCallback(() => reexecute({ requestPolicy: 'network-only' }), [reexecute]);
  const [, del] = useMutation(DeleteEntityDocument);
  const [delError, setDelError] = useState<ApiError[]>([]);

  if (!info) {
    return (
      <EmptyState icon={<IconBooks size={24} />} title="No such catalog kind">
        <Anchor component={Link} to="/admin/catalog">
          Back to the catalog
        </Anchor>
      </EmptyState>
    );
  }
  const readOnly = info.shared && !who.superadmin;
  if (isNew) {
    return (
      <>
        {crumbs(info, 'new')}
        <PageHeader title={`New ${info.singular}`} />
        <Editor
          info={info}
          initial={{}}
          isNew
          readOnly={readOnly}
          onSaved={(n) => navigate(entityPath(info, n), { replace: true })}
        />
      </>
    );
  }
  if (error) return <ApiErrorAlert error={error} title={`Loading ${info.singular} ${name} failed`} />;
  const e = data?.catalog.entity;
  if (!e) {
    if (fetching || !data) return <Loading label={`Loading ${name}…`} />;
    return (
      <>
        {crumbs(info, name)}
        <EmptyState icon={<IconBooks size={24} />} title={`No ${info.singular} ${name}`}>
          It may have been deleted.{' '}
          <Anchor component={Link} to={`/admin/catalog?kind=${info.slug}`}>
            Back to the {info.label.toLowerCase()}
          </Anchor>
        </EmptyState>
      </>
    );
  }
  const doc = isObject(e.document) ? e.document : {};
  return (
    <>
      {crumbs(info, e.name)}
      <PageHeader
        title={
          <Group gap="sm" component="span">
            {e.name}
            <Badge variant="light" color="gray" tt="none" size="lg">
              v{e.version}
            </Badge>
          </Group>
        }
        description={`${info.singular[0]!.toUpperCase()}${info.singular.slice(1)}, ${e.versions.length} version${e.versions.length === 1 ? '' : 's'}.`}
        actions={
          !readOnly && (
            <ConfirmButton
              variant="light"
              color="red"
              leftSection={<IconTrash size={16} />}
              title={`Delete ${info.singular} ${e.name}?`}
              message={`Every version of ${e.name} is deleted. Clusters made from it keep their own copy.`}
              confirm={`Delete ${e.name}`}
              onConfirm={async () => {
                const r = await del({ kind: info.kind, name: e.name }, catalogChanged);
                if (r.error) return setDelError(fromCombinedError(r.error));
                navigate(`/admin/catalog?kind=${info.slug}`);
              }}
            >
              Delete
            </ConfirmButton>
          )
        }
      />
      <ApiErrorAlert error={delError} title="Not deleted" />
      <Tabs value={tab} onChange={setTab} keepMounted={false}>
        <Tabs.List mb="md">
          <Tabs.Tab value="edit">{readOnly ? 'Document' : 'Edit'}</Tabs.Tab>
          <Tabs.Tab value="versions">Versions ({e.versions.length})</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="edit">
          {/* A new version remounts the editor with what was stored. */}
          <Editor key={e.version} info={info} initial={doc} isNew={false} readOnly={readOnly} onSaved={refetch} />
        </Tabs.Panel>
        <Tabs.Panel value="versions">
          <VersionHistory
            key={e.versions.join(',')}
            kind={info.kind}
            name={e.name}
            versions={e.versions}
            onChanged={refetch}
          />
        </Tabs.Panel>
      </Tabs>
    </>
  );
}
