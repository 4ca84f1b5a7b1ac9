// The template builder: a cluster template's compatibility lists,
// defaults, layout and per-service constraints, size, lease and the
// templates it builds on, edited as a form over the template's document;
// beside it the solver's answer for the draft at a size the admin picks,
// asked again (debounced) after every change, so the effect of a
// constraint shows before anything is saved. The draft's catalog errors
// show on their fields as the admin types.
import {
  ActionIcon,
  Alert,
  Badge,
  Button,
  Grid,
  Group,
  JsonInput,
  List,
  MultiSelect,
  NumberInput,
  Paper,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { IconDeviceFloppy, IconPlus, IconTrash } from '@tabler/icons-react';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { useQuery } from 'urql';
import type { CatalogKind } from '../../gql/graphql';
import { fromCombinedError, splitFieldErrors, toFormPath } from '../../lib/errors';
import { getIn, isObject } from '../../lib/jsonDoc';
import { durationValue, flatPaths, serviceNames, withServices } from '../../lib/templateDraft';
import { type KindInfo } from '../../lib/catalogKinds';
import { ApiErrorAlert } from '../atomic/ApiErrorAlert';
import { EntityListDocument, SolveTemplateDocument } from './catalogApi';
import {
  DocMulti,
  DocNumber,
  DocSelect,
  DocText,
  DocTextarea,
  fieldError,
  type FieldErrors,
  strings,
} from './docFields';
import { JsonDocument } from './EntityEditor';
import { IssueList } from './IssueList';
import { type SavedEntity, useDocForm } from './useDocForm';

function useNames(kind: CatalogKind): string[] {
  const [{ data }] = useQuery({ query: EntityListDocument, variables: { kind } });
  return (data?.catalog.entities ?? []).map((e) => e.name);
}

function Section({ title, description, children }: { title: string; description?: string; children: React.ReactNode }) {
  return (
    <Paper withBorder radius="md" p="md">
      <Stack gap="sm">
        <div>
          <Title order={2} fz="md">
            {title}
          </Title>
          {description && (
            <Text size="xs" c="dimmed">
              {description}
            </Text>
          )}
        </div>
        {children}
      </Stack>
    </Paper>
  );
}

/** Groups edits constraints.layout.mustcoexist or .cantcoexist: lists of services. */
function Groups({
  doc,
  path,
  label,
  services,
  errors,
  change,
}: {
  doc: unknown;
  path: string;
  label: string;
  services: string[];
  errors: FieldErrors;
  change: (p: string, v: unknown) => void;
}) {
  const groups = (Array.isArray(getIn(doc, path)) ? (getIn(doc, path) as unknown[]) : []).map(strings);
  const [next, setNext] = useState<string[]>([]);
  return (
    <Stack gap={6} data-testid={path}>
      <Text size="sm" fw={500}>
        {label}
      </Text>
      {groups.map((g, i) => (
        <Group key={i} gap="xs" align="flex-start" wrap="nowrap">
          <MultiSelect
            aria-label={`${label} group ${i + 1}`}
            data={[...new Set([...services, ...g])]}
            value={g}
            onChange={(v) => change(`${path}[${i}]`, v)}
            searchable
            style={{ flex: 1 }}
            error={fieldError(errors, `${path}[${i}]`)}
          />
          <ActionIcon
            variant="subtle"
            color="red"
            aria-label={`Remove ${label.toLowerCase()} group ${i + 1}`}
            onClick={() =>
              change(
                path,
                groups.filter((_, j) => j !== i),
              )
            }
            mt={4}
          >
            <IconTrash size={16} />
          </ActionIcon>
        </Group>
      ))}
      <Group gap="xs" align="flex-start" wrap="nowrap">
        <MultiSelect
          aria-label={`New ${label.toLowerCase()} group`}
          placeholder={groups.length === 0 ? 'None yet: pick two or more services' : 'Another group: pick services'}
          data={services}
          value={next}
          onChange={setNext}
          searchable
          style={{ flex: 1 }}
        />
        <Button
          variant="light"
          leftSection={<IconPlus size={14} />}
          disabled={next.length < 2}
          onClick={() => {
            change(path, [...groups, next]);
            setNext([]);
          }}
        >
          Add group
        </Button>
      </Group>
    </Stack>
  );
}

function ServiceConstraints({
  doc,
  services,
  hardware,
  images,
  errors,
  change,
}: {
  doc: unknown;
  services: string[];
  hardware: string[];
  images: string[];
  errors: FieldErrors;
  change: (p: string, v: unknown) => void;
}) {
  const cs = getIn(doc, 'constraints.services');
  const names = isObject(cs) ? Object.keys(cs) : [];
  const [adding, setAdding] = useState<string | null>(null);
  return (
    <Stack gap="xs">
      {names.map((s) => {
        const base = `constraints.services.${s}`;
        const q = (k: 'min' | 'max') => getIn(doc, `${base}.quantities.${k}`);
        return (
          <Paper key={s} withBorder radius="sm" p="sm" data-service={s}>
            <Stack gap="xs">
              <Group justify="space-between">
                <Text size="sm" fw={600} ff="monospace">
                  {s}
                </Text>
                <ActionIcon
                  variant="subtle"
                  color="red"
                  aria-label={`Remove the constraints on ${s}`}
                  onClick={() => change(base, undefined)}
                >
                  <IconTrash size={16} />
                </ActionIcon>
              </Group>
              {fieldError(errors, base) && (
                <Text size="xs" c="red">
                  {fieldError(errors, base)}
                </Text>
              )}
              <Group grow align="flex-start">
                <MultiSelect
                  label={`Hardware types for ${s}`}
                  size="xs"
                  placeholder="Any compatible"
                  data={[...new Set([...hardware, ...strings(getIn(doc, `${base}.hardwaretypes`))])]}
                  value={strings(getIn(doc, `${base}.hardwaretypes`))}
                  onChange={(v) => change(`${base}.hardwaretypes`, v)}
                  error={fieldError(errors, `${base}.hardwaretypes`)}
                />
                <MultiSelect
                  label={`Image types for ${s}`}
                  size="xs"
                  placeholder="Any compatible"
                  data={[...new Set([...images, ...strings(getIn(doc, `${base}.imagetypes`))])]}
                  value={strings(getIn(doc, `${base}.imagetypes`))}
                  onChange={(v) => change(`${base}.imagetypes`, v)}
                  error={fieldError(errors, `${base}.imagetypes`)}
                />
              </Group>
              <Group grow align="flex-start">
                {(['min', 'max'] as const).map((k) => (
                  <NumberInput
                    key={k}
                    label={`${k === 'min' ? 'Minimum' : 'Maximum'} nodes with ${s}`}
                    size="xs"
                    min={0}
                    allowDecimal={false}
                    placeholder={k === 'min' ? '0' : 'Any number'}
                    value={typeof q(k) === 'number' ? (q(k) as number) : ''}
                    onChange={(n) => change(`${base}.quantities.${k}`, typeof n === 'number' ? n : undefined)}
                    error={
                      fieldError(errors, `${base}.quantities.${k}`) ??
                      (k === 'min' ? fieldError(errors, `${base}.quantities`) : undefined)
                    }
                  />
                ))}
              </Group>
            </Stack>
          </Paper>
        );
      })}
      <Group gap="xs" align="flex-end">
        <Select
          label="Constrain a service"
          placeholder="Service"
          data={services.filter((s) => !names.includes(s))}
          value={adding}
          onChange={setAdding}
          searchable
          w={220}
        />
        <Button
          variant="light"
          leftSection={<IconPlus size={14} />}
          disabled={!adding}
          onClick={() => {
            // An empty constraint would vanish: start from min 0, which means no minimum.
            if (adding) change(`constraints.services.${adding}`, { quantities: { min: 0 } });
            setAdding(null);
          }}
        >
          Add
        </Button>
      </Group>
    </Stack>
  );
}

/** SolvePanel shows what the solver makes of the draft at a size, asking again as the draft changes. */
function SolvePanel({ doc, onIssues }: { doc: Record<string, unknown>; onIssues: (byField: FieldErrors) => void }) {
  const min = getIn(doc, 'constraints.size.min');
  const [size, setSize] = useState<number>(typeof min === 'number' && min > 0 ? min : 3);
  const key = JSON.stringify(doc);
  const [debounced] = useDebouncedValue({ key, size }, 400);
  const template = useMemo(() => JSON.parse(debounced.key) as unknown, [debounced.key]);
  const ready = typeof getIn(template, 'name') === 'string' && getIn(template, 'name') !== '' && debounced.size >= 1;
  const [{ data, error, fetching }] = useQuery({
    query: SolveTemplateDocument,
    variables: { template, size: debounced.size },
    pause: !ready,
  });
  const pending = key !== debounced.key || size !== debounced.size || fetching;
  const errs = useMemo(() => (error ? fromCombinedError(error) : []), [error]);
  // The draft's catalog errors go on the builder's fields as the admin types.
  const { byField, rest } = useMemo(
    () => splitFieldErrors(errs, { fields: [...staticFields.map(toFormPath), ...Object.keys(flatPaths(template))] }),
    [errs, template],
  );
  useEffect(() => onIssues(byField), [byField, onIssues]);
  const s = data?.solveTemplate;
  return (
    <Paper withBorder radius="md" p="md" pos="sticky" top={76} data-testid="solve-panel" aria-busy={pending}>
      <Stack gap="sm">
        <Group justify="space-between" align="flex-end">
          <Title order={2} fz="md">
            Solve at size
          </Title>
          <Badge variant="light" color={pending ? 'gray' : s?.failure || errs.length ? 'red' : s ? 'teal' : 'gray'}>
            {pending ? 'solving…' : errs.length ? 'invalid' : s?.failure ? 'no layout' : s ? 'solved' : 'waiting'}
          </Badge>
        </Group>
        <NumberInput
          label="Nodes"
          description="The layout coopr would build from this draft, solved as you edit; nothing is saved."
          min={1}
          allowDecimal={false}
          value={size}
          onChange={(n) => setSize(typeof n === 'number' ? n : 0)}
        />
        {!ready && (
          <Text size="sm" c="dimmed">
            Give the template a name to solve it.
          </Text>
        )}
        {errs.length > 0 &&
          (rest.length > 0 ? (
            <ApiErrorAlert error={rest} title="The draft is not valid yet" />
          ) : (
            <Alert color="red" variant="light" title="The draft is not valid yet">
              <Text size="sm">Fix the fields marked in red.</Text>
            </Alert>
          ))}
        {s?.failure && (
          <Alert color="orange" variant="light" title={`No layout (${s.failure.code})`} data-testid="solve-failure">
            {s.failure.reasons.length > 0 ? (
              <List size="sm">
                {s.failure.reasons.map((r) => (
                  <List.Item key={r}>{r}</List.Item>
                ))}
              </List>
            ) : (
              <Text size="sm">{s.failure.message}</Text>
            )}
          </Alert>
        )}
        {s && !s.failure && (
          <Table withTableBorder verticalSpacing={6} data-testid="solve-layout">
            <Table.Thead>
              <Table.Tr>
                <Table.Th ta="right">Nodes</Table.Th>
                <Table.Th>Hardware</Table.Th>
                <Table.Th>Image</Table.Th>
                <Table.Th>Services</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {s.layout.map((l, i) => (
                <Table.Tr key={i} data-layout={`${l.count} ${l.services.join('+')}`}>
                  <Table.Td ta="right">{l.count}</Table.Td>
                  <Table.Td>{l.hardwaretype}</Table.Td>
                  <Table.Td>{l.imagetype}</Table.Td>
                  <Table.Td>
                    <Group gap={4}>
                      {l.services.map((x) => (
                        <Badge key={x} size="sm" variant="outline" color="gray" tt="none">
                          {x}
                        </Badge>
                      ))}
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
        {s && s.warnings.length > 0 && (
          <Alert color="yellow" variant="light" title="Warnings">
            <IssueList
              issues={s.warnings.map((w) => ({ path: w.path, message: w.message, severity: 'WARNING' as const }))}
            />
          </Alert>
        )}
      </Stack>
    </Paper>
  );
}

export interface TemplateBuilderProps {
  info: KindInfo;
  initial: Record<string, unknown>;
  isNew: boolean;
  onSaved: (e: SavedEntity) => void;
}

// The builder's fields by path: save errors naming one of these go on it.
const staticFields = [
  'name',
  'description',
  'extends',
  'includes',
  'compatibility.hardwaretypes',
  'compatibility.imagetypes',
  'compatibility.services',
  'defaults.services',
  'defaults.provider',
  'defaults.hardwaretype',
  'defaults.imagetype',
  'defaults.dnsSuffix',
  'defaults.config',
  'constraints.layout.mustcoexist',
  'constraints.layout.cantcoexist',
  'constraints.services',
  'constraints.size.min',
  'constraints.size.max',
  'administration.leaseduration.initial',
  'administration.leaseduration.max',
  'administration.leaseduration.step',
];

export function TemplateBuilder({ info, initial, isNew, onSaved }: TemplateBuilderProps) {
  const form = useDocForm(info.kind, initial, isNew);
  const { doc, change } = form;
  const [live, setLive] = useState<FieldErrors>({});
  const onIssues = useCallback((byField: FieldErrors) => setLive(byField), []);
  const errors = { ...live, ...form.errors };
  const hardware = useNames('HARDWARETYPES');
  const images = useNames('IMAGETYPES');
  const services = useNames('SERVICES');
  const providers = useNames('PROVIDERS');
  const templates = useNames('CLUSTERTEMPLATES').filter((n) => n !== getIn(doc, 'name'));
  const partials = useNames('PARTIALTEMPLATES');
  const compatServices = strings(getIn(doc, 'compatibility.services'));
  const partial = info.kind === 'PARTIALTEMPLATES';
  const leaseText = (k: string) => {
    const v = getIn(doc, `administration.leaseduration.${k}`);
    return typeof v === 'number' || typeof v === 'string' ? String(v) : '';
  };
  const config = getIn(doc, 'defaults.config');
  const [configText, setConfigText] = useState(config === undefined ? '' : JSON.stringify(config, null, 2));
  const [configError, setConfigError] = useState<string>();
  const configJSON = config === undefined ? '' : JSON.stringify(config);
  useEffect(() => {
    // The document's JSON editor changed the config: show it here too.
    setConfigText((t) => {
      try {
        if (JSON.stringify(t.trim() === '' ? undefined : JSON.parse(t)) === (configJSON || undefined)) return t;
      } catch {
        // the text is being typed; the document's change wins
      }
      return configJSON === '' ? '' : JSON.stringify(JSON.parse(configJSON), null, 2);
    });
  }, [configJSON]);

  const fields = [...staticFields, ...Object.keys(flatPaths(getIn(doc, 'constraints'), 'constraints'))];
  return (
    <Grid gap="lg">
      <Grid.Col span={{ base: 12, lg: 7 }}>
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            const saved = await form.save(fields);
            if (saved) onSaved(saved);
          }}
        >
          <Stack>
            <Section title="Template">
              <Group grow align="flex-start">
                <DocText
                  doc={doc}
                  path="name"
                  label="Name"
                  description={isNew ? 'It cannot change later.' : 'Saving makes a new version.'}
                  disabled={!isNew}
                  errors={errors}
                  onChange={change}
                />
                <DocTextarea doc={doc} path="description" label="Description" errors={errors} onChange={change} />
              </Group>
              {!partial && (
                <Group grow align="flex-start">
                  <Select
                    label="Extends"
                    description="A cluster template this one starts from."
                    data={templates}
                    value={
                      typeof getIn(doc, 'extends.name') === 'string' ? (getIn(doc, 'extends.name') as string) : null
                    }
                    onChange={(v) => change('extends', v ? { name: v } : undefined)}
                    clearable
                    searchable
                    error={fieldError(errors, 'extends') ?? fieldError(errors, 'extends.name')}
                  />
                  <MultiSelect
                    label="Includes"
                    description="Partial templates merged in, in order."
                    data={partials}
                    value={(Array.isArray(doc.includes) ? doc.includes : []).flatMap((x) =>
                      isObject(x) && typeof x.name === 'string' ? [x.name] : [],
                    )}
                    onChange={(v) =>
                      change(
                        'includes',
                        v.map((name) => ({ name })),
                      )
                    }
                    searchable
                    error={fieldError(errors, 'includes')}
                  />
                </Group>
              )}
            </Section>

            <Section title="Compatibility" description="What clusters of this template may have. Empty: anything.">
              <DocMulti
                doc={doc}
                path="compatibility.services"
                label="Compatible services"
                options={services}
                errors={errors}
                onChange={change}
                placeholder="Any service"
              />
              <Group grow align="flex-start">
                <DocMulti
                  doc={doc}
                  path="compatibility.hardwaretypes"
                  label="Compatible hardware types"
                  options={hardware}
                  errors={errors}
                  onChange={change}
                  placeholder="Any"
                />
                <DocMulti
                  doc={doc}
                  path="compatibility.imagetypes"
                  label="Compatible image types"
                  options={images}
                  errors={errors}
                  onChange={change}
                  placeholder="Any"
                />
              </Group>
            </Section>

            <Section title="Defaults" description="What a create gets when the request does not say.">
              <MultiSelect
                label="Default services"
                data={[
                  ...new Set([
                    ...(compatServices.length ? compatServices : services),
                    ...serviceNames(getIn(doc, 'defaults.services')),
                  ]),
                ]}
                value={serviceNames(getIn(doc, 'defaults.services'))}
                onChange={(v) => change('defaults.services', withServices(getIn(doc, 'defaults.services'), v))}
                searchable
                error={fieldError(errors, 'defaults.services')}
              />
              <Group grow align="flex-start">
                <DocSelect
                  doc={doc}
                  path="defaults.provider"
                  label="Default provider"
                  options={providers}
                  errors={errors}
                  onChange={change}
                />
                <DocSelect
                  doc={doc}
                  path="defaults.hardwaretype"
                  label="Default hardware type"
                  options={hardware}
                  errors={errors}
                  onChange={change}
                />
                <DocSelect
                  doc={doc}
                  path="defaults.imagetype"
                  label="Default image type"
                  options={images}
                  errors={errors}
                  onChange={change}
                />
              </Group>
              <DocText
                doc={doc}
                path="defaults.dnsSuffix"
                label="DNS suffix"
                placeholder="local"
                errors={errors}
                onChange={change}
              />
              <JsonInput
                label="Config"
                description="The cluster's default config, JSON; macros such as %ip.service.web% are expanded on the nodes."
                value={configText}
                onChange={(t) => {
                  setConfigText(t);
                  if (t.trim() === '') {
                    setConfigError(undefined);
                    change('defaults.config', undefined);
                    return;
                  }
                  try {
                    const v: unknown = JSON.parse(t);
                    if (!isObject(v)) throw new Error('it must be an object');
                    setConfigError(undefined);
                    change('defaults.config', v);
                  } catch (e) {
                    setConfigError(`Not JSON yet: ${e instanceof Error ? e.message : String(e)}`);
                  }
                }}
                autosize
                minRows={3}
                maxRows={14}
                error={configError ?? fieldError(errors, 'defaults.config')}
                styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 12 } }}
              />
            </Section>

            <Section title="Layout constraints" description="Which services must, or must not, share a node.">
              <Groups
                doc={doc}
                path="constraints.layout.mustcoexist"
                label="Must coexist"
                services={compatServices.length ? compatServices : services}
                errors={errors}
                change={change}
              />
              <Groups
                doc={doc}
                path="constraints.layout.cantcoexist"
                label="Can't coexist"
                services={compatServices.length ? compatServices : services}
                errors={errors}
                change={change}
              />
            </Section>

            <Section title="Service constraints" description="Where a service may go and on how many nodes.">
              <ServiceConstraints
                doc={doc}
                services={compatServices.length ? compatServices : services}
                hardware={hardware}
                images={images}
                errors={errors}
                change={change}
              />
            </Section>

            <Section
              title="Size and lease"
              description="Lease durations: milliseconds, or a number with s, m, h or d (2h, 30d). Empty: no limit."
            >
              <Group grow align="flex-start">
                <DocNumber
                  doc={doc}
                  path="constraints.size.min"
                  label="Minimum nodes"
                  min={0}
                  placeholder="1"
                  errors={errors}
                  onChange={change}
                />
                <DocNumber
                  doc={doc}
                  path="constraints.size.max"
                  label="Maximum nodes"
                  min={0}
                  placeholder="No maximum"
                  errors={errors}
                  onChange={change}
                />
              </Group>
              <Group grow align="flex-start">
                {(['initial', 'max', 'step'] as const).map((k) => (
                  <TextInput
                    key={k}
                    label={k === 'initial' ? 'Initial lease' : k === 'max' ? 'Longest lease' : 'Extension step'}
                    placeholder="No limit"
                    value={leaseText(k)}
                    onChange={(e) => change(`administration.leaseduration.${k}`, durationValue(e.currentTarget.value))}
                    error={fieldError(errors, `administration.leaseduration.${k}`)}
                  />
                ))}
              </Group>
            </Section>

            <JsonDocument doc={doc} setDoc={form.setDoc} />
            <ApiErrorAlert error={form.alert} title="Not saved" />
            {form.warnings.length > 0 && (
              <Alert color="yellow" variant="light" title="Saved with warnings">
                <IssueList issues={form.warnings} />
              </Alert>
            )}
            <Group justify="flex-end">
              <Button type="submit" loading={form.saving} leftSection={<IconDeviceFloppy size={16} />}>
                {isNew ? `Create ${info.singular}` : 'Save new version'}
              </Button>
            </Group>
          </Stack>
        </form>
      </Grid.Col>
      <Grid.Col span={{ base: 12, lg: 5 }}>
        {partial ? (
          <Paper withBorder radius="md" p="md">
            <Text size="sm" c="dimmed">
              A partial template is solved as part of the cluster templates that include it.
            </Text>
          </Paper>
        ) : (
          <SolvePanel doc={doc} onIssues={onIssues} />
        )}
      </Grid.Col>
    </Grid>
  );
}
