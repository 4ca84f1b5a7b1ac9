// Create a cluster: the form, then the preview of exactly what would be
// made (layout, plan, room), then the create, pinned to the previewed
// plan's hash so that a catalog changed in between is a conflict, not a
// surprise. Any change to the form drops the preview.
import {
  Alert,
  Anchor,
  Breadcrumbs,
  Button,
  Group,
  JsonInput,
  List,
  MultiSelect,
  NumberInput,
  Paper,
  PasswordInput,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useForm } from '@mantine/form';
import { IconEye, IconRocket } from '@tabler/icons-react';
import type { CombinedError } from '@urql/core';
import { useEffect, useMemo, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { Loading } from '../../components/atomic/Loading';
import { PageHeader } from '../../components/atomic/PageHeader';
import {
  LayoutTable,
  PlanStages,
  PreviewSection,
  type Quota,
  RoomUse,
  Warnings,
} from '../../components/cluster/PlanPreview';
import { graphql } from '../../gql';
import type { ClusterInput, PreviewClusterMutation } from '../../gql/graphql';
import { type ApiError, fromCombinedError, splitFieldErrors } from '../../lib/errors';
import { formatDuration, sizeRange } from '../../lib/format';
import { missingRequired, parseConfig, providerAsk, providerFieldValues } from '../../lib/providerFields';
import { describeLease, summarizeTemplate } from '../../lib/template';

const CreateCatalogDocument = graphql(`
  query CreateCatalog {
    catalog {
      templates: entities(kind: CLUSTERTEMPLATES) {
        name
        document
      }
      providers: entities(kind: PROVIDERS) {
        name
        document
      }
      providerTypes: entities(kind: PROVIDERTYPES) {
        name
        document
      }
    }
  }
`);

const PreviewClusterDocument = graphql(`
  mutation PreviewCluster($input: ClusterInput!) {
    previewCluster(input: $input) {
      template
      provider
      services
      nodes {
        nodenum
        hostname
        services
        hardwaretype
        imagetype
        flavor
        image
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
      warnings
      capacity {
        provider
        pool
        nodes
        used
        free
        requested
      }
      quota {
        maxClusters
        maxNodes
        clusters
        nodes
        addClusters
        addNodes
      }
    }
  }
`);

const CreateClusterDocument = graphql(`
  mutation CreateCluster($input: ClusterInput!, $hash: String) {
    createCluster(input: $input, expectedPlanHash: $hash) {
      id
      latestJob {
        id
      }
    }
  }
`);

interface FormValues {
  clusterTemplate: string;
  name: string;
  numMachines: number | string;
  services: string[];
  provider: string;
  config: string;
  initialLeaseDuration: string;
  providerFields: Record<string, string>;
}

const formFields = [
  'name',
  'clusterTemplate',
  'numMachines',
  'services',
  'provider',
  'config',
  'initialLeaseDuration',
  'providerFields',
  'dnsSuffix',
  'hardwaretype',
  'imagetype',
];

/** fieldErrors puts API errors on the form's fields; the API names them bare (numMachines) or under input. */
function fieldErrors(errors: ApiError[]): { byField: Record<string, string>; rest: ApiError[] } {
  const norm = errors.map((e) => {
    if (e.code === 'MISSING_FIELDS') return { ...e, code: 'INVALID_INPUT', field: 'providerFields' };
    if (!e.field && /^NumMachines /.test(e.message)) return { ...e, field: 'numMachines' };
    return e.field?.startsWith('input.') ? { ...e, field: e.field.slice(6) } : e;
  });
  return splitFieldErrors(norm, { fields: formFields });
}

/** The solver's own account of why no layout exists: the INVALID_INPUT errors carrying a kind. */
function solverExplanation(err: CombinedError | undefined): { kind: string; reasons: string[] } | null {
  for (const g of err?.graphQLErrors ?? []) {
    const kind = g.extensions?.kind;
    // A size outside the template's range is the size field's error, not a layout's.
    if (typeof kind === 'string' && kind !== 'invalid_input' && kind !== 'size_constraint') {
      const reasons = Array.isArray(g.extensions?.reasons)
        ? (g.extensions.reasons as unknown[]).map(String)
        : g.message.split('; ');
      return { kind, reasons };
    }
  }
  return null;
}

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

export function Component() {
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [{ data, fetching, error }] = useQuery({ query: CreateCatalogDocument });
  const [previewState, runPreview] = useMutation(PreviewClusterDocument);
  const [createState, runCreate] = useMutation(CreateClusterDocument);
  const [preview, setPreview] = useState<{
    input: ClusterInput;
    result: PreviewClusterMutation['previewCluster'];
  } | null>(null);
  const [alert, setAlert] = useState<ApiError[]>([]);
  const [explanation, setExplanation] = useState<{ kind: string; reasons: string[] } | null>(null);

  const templates = useMemo(
    () =>
      (data?.catalog.templates ?? []).map((t) => ({ summary: summarizeTemplate(t.name, t.document), doc: t.document })),
    [data],
  );
  const form = useForm<FormValues>({
    initialValues: {
      clusterTemplate: '',
      name: '',
      numMachines: 1,
      services: [],
      provider: '',
      config: '',
      initialLeaseDuration: '',
      providerFields: {},
    },
    validate: {
      name: (v) => (v.trim() === '' ? 'Give the cluster a name' : null),
      clusterTemplate: (v) => (v === '' ? 'Choose a template' : null),
      numMachines: (v) => (typeof v === 'number' && v >= 1 ? null : 'At least 1 node'),
      config: (v) => parseConfig(v).error ?? null,
    },
  });
  const chosen = templates.find((t) => t.summary.name === form.values.clusterTemplate);

  // Choosing a template fills in its defaults: size, services, config.
  const pick = (name: string | null) => {
    const t = templates.find((x) => x.summary.name === name);
    if (!t) return;
    const defaults = obj(obj(t.doc).defaults);
    form.setValues({
      clusterTemplate: t.summary.name,
      numMachines: Math.max(t.summary.size.min, 1),
      services: t.summary.services,
      provider: t.summary.provider ?? '',
      config: defaults.config ? JSON.stringify(defaults.config, null, 2) : '',
      providerFields: {},
    });
  };
  const wanted = params.get('template');
  useEffect(() => {
    if (wanted && templates.length > 0 && form.values.clusterTemplate === '') pick(wanted);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [wanted, templates]);

  const providerName = form.values.provider || chosen?.summary.provider || '';
  const providerDoc = data?.catalog.providers.find((p) => p.name === providerName)?.document;
  const ptName = typeof obj(providerDoc).providertype === 'string' ? (obj(providerDoc).providertype as string) : '';
  const ask = useMemo(
    () => providerAsk(data?.catalog.providerTypes.find((p) => p.name === ptName)?.document),
    [data, ptName],
  );

  // Any change after a preview drops it: the create must run what was shown.
  const values = form.values;
  // By content: the form's values object may be new on any render.
  const valuesKey = JSON.stringify(values);
  const [explainedFor, setExplainedFor] = useState('');
  useEffect(() => {
    if (explainedFor !== valuesKey) setExplanation(null);
  }, [valuesKey, explainedFor]);

  const toInput = (v: FormValues): ClusterInput => {
    const config = parseConfig(v.config).value;
    const pf = providerFieldValues(v.providerFields);
    return {
      name: v.name.trim(),
      clusterTemplate: v.clusterTemplate,
      numMachines: Number(v.numMachines),
      ...(v.provider ? { provider: v.provider } : {}),
      ...(v.services.length > 0 ? { services: v.services } : {}),
      // The field holds the whole config, filled in from the template's:
      // sent whole, so a key deleted there is not merged back in.
      ...(config ? { config } : {}),
      ...(v.initialLeaseDuration.trim() ? { initialLeaseDuration: v.initialLeaseDuration.trim() } : {}),
      ...(pf ? { providerFields: pf } : {}),
    };
  };

  const showErrors = (err: CombinedError) => {
    const { byField, rest } = fieldErrors(fromCombinedError(err));
    form.setErrors(byField);
    const ex = solverExplanation(err);
    setExplanation(ex);
    setExplainedFor(JSON.stringify(form.getValues()));
    setAlert(ex ? rest.filter((e) => e.code !== 'INVALID_INPUT' || e.field) : rest);
  };

  const onPreview = form.onSubmit(async (v) => {
    const missing = missingRequired(ask, v.providerFields);
    if (missing.length > 0) {
      form.setFieldError('providerFields', `The provider needs ${missing.join(', ')}`);
      return;
    }
    setAlert([]);
    const input = toInput(v);
    const r = await runPreview({ input });
    if (r.error) {
      showErrors(r.error);
      return;
    }
    if (r.data) setPreview({ input, result: r.data.previewCluster });
  });

  const onCreate = async () => {
    if (!preview) return;
    setAlert([]);
    const r = await runCreate({ input: preview.input, hash: preview.result.planHash });
    if (r.error) {
      showErrors(r.error);
      setPreview(null);
      return;
    }
    const c = r.data?.createCluster;
    if (c) navigate(c.latestJob ? `/clusters/${c.id}/jobs/${c.latestJob.id}` : `/clusters/${c.id}`);
  };

  if (!data && fetching) return <Loading label="Loading the templates…" />;
  const t = chosen?.summary;
  // A preview stands only for the input it was made from: any edit hides it.
  const p = preview && JSON.stringify(preview.input) === JSON.stringify(toInput(values)) ? preview.result : undefined;
  const quotas: Quota[] = p
    ? [
        { label: 'clusters', used: p.quota.clusters, requested: p.quota.addClusters, max: p.quota.maxClusters ?? null },
        { label: 'nodes', used: p.quota.nodes, requested: p.quota.addNodes, max: p.quota.maxNodes ?? null },
      ]
    : [];

  return (
    <>
      <Breadcrumbs mb="sm">
        <Anchor component={Link} to="/clusters" size="sm">
          Clusters
        </Anchor>
        <Text size="sm">New cluster</Text>
      </Breadcrumbs>
      <PageHeader
        title="New cluster"
        description="Choose a template and a size. Preview shows exactly what would be made; nothing is made until you create it."
      />
      <ApiErrorAlert error={error} title="Loading the catalog failed" />
      <form onSubmit={onPreview} noValidate>
        <Paper withBorder radius="md" p="lg">
          <Stack gap="md">
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <Select
                label="Template"
                placeholder="Choose a template"
                required
                searchable
                data={templates.map((x) => ({ value: x.summary.name, label: x.summary.label }))}
                {...form.getInputProps('clusterTemplate')}
                onChange={pick}
              />
              <TextInput
                label="Name"
                required
                description="Node host names are made from it"
                {...form.getInputProps('name')}
              />
              <NumberInput
                label="Size"
                required
                description={t ? `Nodes: ${sizeRange(t.size.min, t.size.max)}` : 'Nodes'}
                min={1}
                {...(t?.size.max ? { max: t.size.max } : {})}
                allowDecimal={false}
                {...form.getInputProps('numMachines')}
              />
              <TextInput
                label="Lease"
                placeholder={t && t.lease.initial > 0 ? formatDuration(t.lease.initial) : 'the template’s'}
                description={
                  t ? describeLease(t.lease, formatDuration).join(', ') : 'How long the cluster lives, e.g. 2h'
                }
                {...form.getInputProps('initialLeaseDuration')}
              />
            </SimpleGrid>
            {t && (
              <MultiSelect
                label="Services"
                description="The template's defaults are chosen; add any it allows"
                data={[...new Set([...t.services, ...t.compatibleServices, ...values.services])]}
                {...form.getInputProps('services')}
              />
            )}
            {t && ask.fields.length > 0 && (
              <Stack gap="xs" data-testid="provider-fields">
                <Title order={2} fz="md">
                  Provider {providerName}
                </Title>
                <SimpleGrid cols={{ base: 1, sm: 2 }}>
                  {ask.fields.map((f) => {
                    const props = {
                      key: f.name,
                      label: f.label,
                      description: f.tip ?? (f.override ? 'Overrides the provider’s value' : undefined),
                      value: values.providerFields[f.name] ?? '',
                      placeholder: f.default,
                      onChange: (e: { currentTarget: { value: string } }) =>
                        form.setFieldValue(`providerFields.${f.name}`, e.currentTarget.value),
                    };
                    if (f.sensitive || f.type === 'password') return <PasswordInput {...props} />;
                    if (f.type === 'select' && f.options.length > 0)
                      return (
                        <Select
                          key={f.name}
                          label={f.label}
                          description={f.tip}
                          data={f.options}
                          value={values.providerFields[f.name] ?? null}
                          onChange={(v) => form.setFieldValue(`providerFields.${f.name}`, v ?? '')}
                        />
                      );
                    return <TextInput {...props} />;
                  })}
                </SimpleGrid>
                {form.errors.providerFields && (
                  <Text size="sm" c="red" role="alert">
                    {form.errors.providerFields}
                  </Text>
                )}
              </Stack>
            )}
            {t && ask.fields.length === 0 && form.errors.providerFields && (
              <Text size="sm" c="red" role="alert">
                {form.errors.providerFields}
              </Text>
            )}
            {t && (
              <JsonInput
                label="Config"
                description="The cluster's whole config, filled in from the template's: it replaces the template's as it stands here, so a key deleted here is gone"
                autosize
                minRows={4}
                maxRows={18}
                formatOnBlur
                validationError="Not valid JSON"
                {...form.getInputProps('config')}
              />
            )}
            <Group justify="flex-end">
              <Button type="submit" leftSection={<IconEye size={16} />} loading={previewState.fetching} variant="light">
                Preview
              </Button>
            </Group>
          </Stack>
        </Paper>
      </form>
      <Stack gap="md" mt="lg">
        <ApiErrorAlert error={alert} title="The cluster cannot be made" />
        {explanation && (
          <Alert color="red" variant="light" title="No layout fits" data-testid="solver-explanation" role="alert">
            <Text size="sm" mb="xs">
              The solver found no way to place these services on {String(values.numMachines)} nodes (
              {explanation.kind.replaceAll('_', ' ')}):
            </Text>
            <List size="sm">
              {explanation.reasons.map((r, i) => (
                <List.Item key={i}>{r}</List.Item>
              ))}
            </List>
          </Alert>
        )}
        {p && (
          <Stack gap="md" data-testid="cluster-preview">
            <Title order={2} fz="lg">
              Preview
            </Title>
            <Text size="sm">
              {p.nodes.length} {p.nodes.length === 1 ? 'node' : 'nodes'} from template {p.template} on provider{' '}
              {p.provider}, with {p.services.join(', ')}.
            </Text>
            <Warnings warnings={p.warnings} />
            <PreviewSection title="Layout">
              <LayoutTable nodes={p.nodes} caption="Nodes by services, hardware and image" />
            </PreviewSection>
            <PreviewSection title="Plan">
              <PlanStages tasks={p.tasks} edges={p.edges} />
            </PreviewSection>
            <PreviewSection title="Room">
              <RoomUse capacity={p.capacity} quotas={quotas} />
              {!p.capacity && (
                <Text size="sm" c="dimmed">
                  The provider declares no capacity of its own.
                </Text>
              )}
            </PreviewSection>
            <Group justify="flex-end">
              <Text size="xs" c="dimmed" ff="monospace">
                plan {p.planHash.slice(0, 12)}
              </Text>
              <Button leftSection={<IconRocket size={16} />} onClick={onCreate} loading={createState.fetching}>
                Create cluster
              </Button>
            </Group>
          </Stack>
        )}
      </Stack>
    </>
  );
}
