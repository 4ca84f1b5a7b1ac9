// The editor of one catalog entity other than a cluster template (the
// template builder edits those): its name and description, the fields
// that matter for its kind (a provider's admin fields, a hardware or image
// type's per-provider values), and the whole document as JSON for the
// rest. Errors land on the field whose path they name.
import {
  Alert,
  Badge,
  Button,
  Group,
  JsonInput,
  Paper,
  PasswordInput,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { IconDeviceFloppy } from '@tabler/icons-react';
import { useEffect, useMemo, useRef, useState } from 'react';
import { useQuery } from 'urql';
import type { CatalogKind } from '../../gql/graphql';
import { type KindInfo, REDACTED } from '../../lib/catalogKinds';
import { getIn, isObject } from '../../lib/jsonDoc';
import { ApiErrorAlert } from '../atomic/ApiErrorAlert';
import { EntityListDocument } from './catalogApi';
import { DocSelect, DocText, DocTextarea, fieldError, type FieldErrors } from './docFields';
import { type SavedEntity, useDocForm } from './useDocForm';
import { IssueList } from './IssueList';

export interface EntityEditorProps {
  info: KindInfo;
  initial: Record<string, unknown>;
  isNew: boolean;
  onSaved: (e: SavedEntity) => void;
}

function useNames(kind: CatalogKind) {
  const [{ data }] = useQuery({ query: EntityListDocument, variables: { kind } });
  return data?.catalog.entities ?? [];
}

interface AdminField {
  key: string;
  label: string;
  tip: string;
  sensitive: boolean;
  options: string[];
}

/** adminFields reads a provider type's admin fields from its document. */
export function adminFields(providerType: unknown): AdminField[] {
  const fields = getIn(providerType, 'parameters.admin.fields');
  if (!isObject(fields)) return [];
  return Object.entries(fields).map(([key, f]) => ({
    key,
    label: typeof getIn(f, 'label') === 'string' ? (getIn(f, 'label') as string) : key,
    tip: typeof getIn(f, 'tip') === 'string' ? (getIn(f, 'tip') as string) : '',
    sensitive: getIn(f, 'sensitive') === true,
    options: Array.isArray(getIn(f, 'options')) ? (getIn(f, 'options') as string[]) : [],
  }));
}

/** SensitiveField shows whether a write-only value is set, never the value, and takes a new one. */
function SensitiveField({
  field,
  wasSet,
  value,
  error,
  onChange,
}: {
  field: AdminField;
  wasSet: boolean;
  value: unknown;
  error?: string;
  onChange: (v: unknown) => void;
}) {
  const typed = typeof value === 'string' && value !== REDACTED ? value : '';
  const state = value === REDACTED ? 'set' : typed ? 'new value' : 'unset';
  return (
    <Stack gap={4}>
      <PasswordInput
        label={
          <Group gap={6} component="span">
            {field.label}
            <Badge
              size="xs"
              variant="light"
              color={state === 'unset' ? 'gray' : 'teal'}
              data-testid={`sensitive-${field.key}`}
            >
              {state}
            </Badge>
          </Group>
        }
        description={`${field.tip ? field.tip + '. ' : ''}Write-only: coopr never shows it. ${
          wasSet ? 'Leave empty to keep the stored value.' : ''
        }`}
        placeholder={value === REDACTED ? 'Stored — type to replace' : 'Not set'}
        value={typed}
        onChange={(e) => onChange(e.currentTarget.value || (wasSet ? REDACTED : undefined))}
        error={error}
        autoComplete="new-password"
      />
      {value === REDACTED && (
        <Button size="compact-xs" variant="subtle" color="red" onClick={() => onChange(undefined)} w="fit-content">
          Remove the stored value
        </Button>
      )}
    </Stack>
  );
}

function ProviderFields({
  doc,
  initial,
  errors,
  change,
}: {
  doc: Record<string, unknown>;
  initial: Record<string, unknown>;
  errors: FieldErrors;
  change: (p: string, v: unknown) => void;
}) {
  const types = useNames('PROVIDERTYPES');
  const typeName = getIn(doc, 'providertype');
  const type = types.find((t) => t.name === typeName);
  const fields = adminFields(type?.document);
  return (
    <Stack gap="sm">
      <DocSelect
        doc={doc}
        path="providertype"
        label="Provider type"
        description="The driver that makes this provider's machines; its admin fields follow."
        options={types.map((t) => t.name)}
        errors={errors}
        onChange={change}
      />
      {fields.length > 0 && (
        <Title order={2} fz="sm" mt="xs">
          Admin fields of {String(typeName)}
        </Title>
      )}
      {fields.map((f) =>
        f.sensitive ? (
          <SensitiveField
            key={f.key}
            field={f}
            wasSet={getIn(initial, `provisioner.${f.key}`) === REDACTED}
            value={getIn(doc, `provisioner.${f.key}`)}
            error={fieldError(errors, `provisioner.${f.key}`)}
            onChange={(v) => change(`provisioner.${f.key}`, v)}
          />
        ) : f.options.length > 0 ? (
          <DocSelect
            key={f.key}
            doc={doc}
            path={`provisioner.${f.key}`}
            label={f.label}
            description={f.tip}
            options={f.options}
            errors={errors}
            onChange={change}
          />
        ) : (
          <DocText
            key={f.key}
            doc={doc}
            path={`provisioner.${f.key}`}
            label={f.label}
            description={f.tip}
            errors={errors}
            onChange={change}
          />
        ),
      )}
    </Stack>
  );
}

/** MachineTypeMap edits a hardware or image type's value per provider (providermap.<provider>.flavor or .image). */
function MachineTypeMap({
  doc,
  errors,
  change,
  key_,
}: {
  doc: Record<string, unknown>;
  errors: FieldErrors;
  change: (p: string, v: unknown) => void;
  key_: 'flavor' | 'image';
}) {
  const providers = useNames('PROVIDERS').map((p) => p.name);
  const mapped = Object.keys(isObject(doc.providermap) ? doc.providermap : {});
  const all = [...new Set([...providers, ...mapped])].sort();
  return (
    <Stack gap={4}>
      <Title order={2} fz="sm">
        Per provider
      </Title>
      <Text size="xs" c="dimmed">
        The {key_} each provider uses for it; a provider left empty cannot make nodes of this type.
      </Text>
      <Table withTableBorder>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Provider</Table.Th>
            <Table.Th>{key_ === 'flavor' ? 'Flavor' : 'Image'}</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {all.map((p) => {
            const path = `providermap.${p}.${key_}`;
            return (
              <Table.Tr key={p}>
                <Table.Td>
                  <Text size="sm" ff="monospace">
                    {p}
                  </Text>
                </Table.Td>
                <Table.Td>
                  <TextInput
                    aria-label={`${key_} for ${p}`}
                    size="xs"
                    value={typeof getIn(doc, path) === 'string' ? (getIn(doc, path) as string) : ''}
                    onChange={(e) => change(path, e.currentTarget.value)}
                    error={fieldError(errors, path) ?? fieldError(errors, `providermap.${p}`)}
                  />
                </Table.Td>
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}

/** JsonDocument edits the whole document as JSON, kept in step with the fields. */
export function JsonDocument({
  doc,
  setDoc,
  error,
}: {
  doc: Record<string, unknown>;
  setDoc: (d: Record<string, unknown>) => void;
  error?: string;
}) {
  const pretty = useMemo(() => JSON.stringify(doc, null, 2), [doc]);
  const [text, setText] = useState(pretty);
  const [parseError, setParseError] = useState<string>();
  const mine = useRef(false);
  useEffect(() => {
    // A change from the fields above rewrites the text; one from here does not.
    if (mine.current) mine.current = false;
    else setText(pretty);
  }, [pretty]);
  return (
    <JsonInput
      label="Document (JSON)"
      description="The whole entity as coopr stores it; the fields above edit the same document."
      value={text}
      onChange={(t) => {
        setText(t);
        try {
          const v: unknown = JSON.parse(t);
          if (!isObject(v)) throw new Error('the document must be an object');
          setParseError(undefined);
          mine.current = true;
          setDoc(v);
        } catch (e) {
          setParseError(`Not saved until it is a JSON object: ${e instanceof Error ? e.message : String(e)}`);
        }
      }}
      error={parseError ?? error}
      autosize
      minRows={6}
      maxRows={24}
      styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 12 } }}
    />
  );
}

export function EntityEditor({ info, initial, isNew, onSaved }: EntityEditorProps) {
  const form = useDocForm(info.kind, initial, isNew);
  const { doc, change, errors } = form;
  const providerTypes = useNames('PROVIDERTYPES');
  const providers = useNames('PROVIDERS');
  // The paths that have an input: errors naming one go on it, the rest above the button.
  const fields = ['name', 'description'];
  if (info.kind === 'PROVIDERS') {
    const type = providerTypes.find((t) => t.name === getIn(doc, 'providertype'));
    fields.push('providertype', ...adminFields(type?.document).map((f) => `provisioner.${f.key}`));
  }
  if (info.kind === 'HARDWARETYPES' || info.kind === 'IMAGETYPES') {
    const key = info.kind === 'HARDWARETYPES' ? 'flavor' : 'image';
    const mapped = Object.keys(isObject(doc.providermap) ? doc.providermap : {});
    for (const p of new Set([...providers.map((x) => x.name), ...mapped])) fields.push(`providermap.${p}.${key}`);
  }
  return (
    <Paper withBorder radius="md" p="lg">
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const saved = await form.save(fields);
          if (saved) onSaved(saved);
        }}
      >
        <Stack>
          <Group grow align="flex-start">
            <DocText
              doc={doc}
              path="name"
              label="Name"
              description={isNew ? 'Unique within the kind; it cannot change later.' : 'Saving makes a new version.'}
              disabled={!isNew}
              errors={errors}
              onChange={change}
            />
            <DocTextarea doc={doc} path="description" label="Description" errors={errors} onChange={change} />
          </Group>
          {info.kind === 'PROVIDERS' && <ProviderFields doc={doc} initial={initial} errors={errors} change={change} />}
          {info.kind === 'HARDWARETYPES' && <MachineTypeMap doc={doc} errors={errors} change={change} key_="flavor" />}
          {info.kind === 'IMAGETYPES' && <MachineTypeMap doc={doc} errors={errors} change={change} key_="image" />}
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
    </Paper>
  );
}
