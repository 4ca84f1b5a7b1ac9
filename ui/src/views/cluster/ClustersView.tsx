import { Button, Group, MultiSelect, Paper, Select, Text } from '@mantine/core';
import { IconChevronLeft, IconChevronRight, IconFilterOff, IconPlus, IconServer2 } from '@tabler/icons-react';
import { useCallback, useEffect, useMemo, useRef } from 'react';
import { Link, useLocation, useNavigate, useSearchParams } from 'react-router';
import { useQuery } from 'urql';
import { useOnReconnect } from '../../api/connection';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { EmptyState } from '../../components/atomic/EmptyState';
import { Loading } from '../../components/atomic/Loading';
import { PageHeader } from '../../components/atomic/PageHeader';
import { useIsAdmin, useSession } from '../../components/auth/session';
import { ClusterTable } from '../../components/cluster/ClusterTable';
import { useClusterChanges } from '../../components/cluster/useClusterChanges';
import { graphql } from '../../gql';
import type { ClusterStatus } from '../../gql/graphql';
import {
  clusterStatuses,
  type ListParams,
  listSearch,
  nextPage,
  type PageHistory,
  pageNumber,
  pageSizes,
  parseListParams,
  previousPage,
  readHistory,
} from '../../lib/clusterList';

const ClusterListDocument = graphql(`
  query ClusterList($first: Int!, $after: String, $status: [ClusterStatus!], $template: String) {
    clusters(first: $first, after: $after, status: $status, template: $template) {
      nodes {
        id
        name
        status
        template
        owner
        size
        expireTime
        createdAt
        latestJob {
          id
          action
          state
        }
      }
      endCursor
      hasNextPage
    }
  }
`);

const TemplateNamesDocument = graphql(`
  query TemplateNames {
    catalog {
      entities(kind: CLUSTERTEMPLATES) {
        name
      }
    }
  }
`);

/** refetchDelay gathers the changes of a burst (a create finishing several clusters) into one re-read. */
const refetchDelay = 400;

export function Component() {
  const [search] = useSearchParams();
  const location = useLocation();
  const navigate = useNavigate();
  const admin = useIsAdmin();
  const { api } = useSession();
  const params = useMemo(() => parseListParams(search), [search]);
  const history = readHistory(location.state);

  const go = useCallback(
    (p: ListParams, h: PageHistory = []) => {
      const q = listSearch(p).toString();
      void navigate({ search: q ? `?${q}` : '' }, { state: { pages: h } });
    },
    [navigate],
  );

  const [{ data, fetching, error }, reexecute] = useQuery({
    query: ClusterListDocument,
    variables: {
      first: params.first,
      after: params.after,
      status: params.statuses.length > 0 ? params.statuses : null,
      template: params.template,
    },
  });
  const [templates] = useQuery({ query: TemplateNamesDocument });

  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const refetch = useCallback(() => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => reexecute({ requestPolicy: 'network-only' }), refetchDelay);
  }, [reexecute]);
  useEffect(() => () => clearTimeout(timer.current), []);
  useOnReconnect(api.status, refetch);

  const filtered = params.statuses.length > 0 || params.template !== null;
  const page = data?.clusters;
  // Rows follow their own clusters; this catches the rest: a cluster made
  // elsewhere (the CLI, another tab), or a change that moves a cluster into
  // or out of the filters.
  const shown = useMemo(() => new Set((page?.nodes ?? []).map((c) => c.id)), [page]);
  useClusterChanges((id) => {
    if (id === null || filtered || !shown.has(id)) refetch();
  });
  const number = pageNumber(params, history);
  const templateNames = (templates.data?.catalog.entities ?? []).map((e) => e.name);
  if (params.template && !templateNames.includes(params.template)) templateNames.push(params.template);

  return (
    <>
      <PageHeader
        title="Clusters"
        description={
          admin
            ? 'Every cluster of your tenant, newest first. Status updates live.'
            : 'Your clusters, newest first. Status updates live.'
        }
        actions={
          <Button component={Link} to="/clusters/new" leftSection={<IconPlus size={16} />}>
            New cluster
          </Button>
        }
      />
      <Paper withBorder radius="md" p="md" mb="md">
        <Group gap="md" align="flex-end" wrap="wrap">
          <MultiSelect
            label="Status"
            placeholder={params.statuses.length > 0 ? undefined : 'Any status'}
            data={clusterStatuses.map((s) => ({ value: s, label: s.charAt(0) + s.slice(1).toLowerCase() }))}
            value={params.statuses}
            onChange={(v) => go({ ...params, statuses: v as ClusterStatus[], after: null })}
            clearable
            w={300}
          />
          <Select
            label="Template"
            placeholder="Any template"
            data={templateNames}
            value={params.template}
            onChange={(v) => go({ ...params, template: v, after: null })}
            clearable
            searchable
            nothingFoundMessage="No such template"
            w={220}
          />
          <Select
            label="Per page"
            data={pageSizes.map(String)}
            value={String(params.first)}
            onChange={(v) => go({ ...params, first: Number(v ?? params.first), after: null })}
            allowDeselect={false}
            w={100}
          />
          {filtered && (
            <Button
              variant="subtle"
              leftSection={<IconFilterOff size={16} />}
              onClick={() => go({ ...params, statuses: [], template: null, after: null })}
            >
              Clear filters
            </Button>
          )}
        </Group>
      </Paper>

      <ApiErrorAlert error={error} title="Loading clusters failed" />
      {!page && fetching && <Loading label="Loading clusters…" />}
      {page && page.nodes.length === 0 && (
        <EmptyState
          icon={<IconServer2 size={24} />}
          title={filtered ? 'No clusters match these filters' : params.after ? 'No more clusters' : 'No clusters yet'}
          action={
            filtered ? (
              <Button variant="light" onClick={() => go({ ...params, statuses: [], template: null, after: null })}>
                Clear filters
              </Button>
            ) : (
              <Button component={Link} to="/templates" variant="light">
                See the templates
              </Button>
            )
          }
        >
          {filtered
            ? 'Try another status or template.'
            : 'A cluster is made from one of the templates your admins published.'}
        </EmptyState>
      )}
      {page && page.nodes.length > 0 && (
        <Paper withBorder radius="md">
          <ClusterTable clusters={page.nodes} showOwner={admin} onChange={refetch} />
        </Paper>
      )}
      {page && (params.after !== null || page.hasNextPage) && (
        <Group justify="space-between" mt="md">
          <Button
            variant="default"
            leftSection={<IconChevronLeft size={16} />}
            disabled={params.after === null}
            onClick={() => {
              const p = previousPage(params, history);
              go(p.params, p.history);
            }}
          >
            {number === null ? 'First page' : 'Previous'}
          </Button>
          <Text size="sm" c="dimmed" aria-live="polite" data-testid="page-number">
            {number === null ? 'A later page' : `Page ${number}`}
          </Text>
          <Button
            variant="default"
            rightSection={<IconChevronRight size={16} />}
            disabled={!page.hasNextPage || !page.endCursor}
            onClick={() => {
              if (!page.endCursor) return;
              const p = nextPage(params, history, page.endCursor);
              go(p.params, p.history);
            }}
          >
            Next
          </Button>
        </Group>
      )}
    </>
  );
}
