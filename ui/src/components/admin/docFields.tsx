// Inputs bound to one path of a JSON document: each shows the error the
// API names for that path (an INVALID_INPUT issue), so a form of these
// needs no mapping table. errors is keyed by form path (toFormPath).
import { MultiSelect, NumberInput, Select, Textarea, TextInput } from '@mantine/core';
import { toFormPath } from '../../lib/errors';
import { getIn } from '../../lib/jsonDoc';

export type FieldErrors = Record<string, string>;

export interface DocFieldProps {
  doc: unknown;
  path: string;
  label: string;
  description?: string;
  errors: FieldErrors;
  onChange: (path: string, value: unknown) => void;
  placeholder?: string;
  disabled?: boolean;
}

export function fieldError(errors: FieldErrors, path: string): string | undefined {
  return errors[toFormPath(path)];
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
}

export function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

export function DocText({ doc, path, label, description, errors, onChange, placeholder, disabled }: DocFieldProps) {
  return (
    <TextInput
      label={label}
      description={description}
      placeholder={placeholder}
      disabled={disabled}
      value={str(getIn(doc, path))}
      onChange={(e) => onChange(path, e.currentTarget.value)}
      error={fieldError(errors, path)}
    />
  );
}

export function DocTextarea({ doc, path, label, description, errors, onChange, placeholder }: DocFieldProps) {
  return (
    <Textarea
      label={label}
      description={description}
      placeholder={placeholder}
      autosize
      minRows={1}
      maxRows={4}
      value={str(getIn(doc, path))}
      onChange={(e) => onChange(path, e.currentTarget.value)}
      error={fieldError(errors, path)}
    />
  );
}

/** DocNumber keeps a number or, when cleared, nothing (the catalog's default). Durations may also be text such as 2h. */
export function DocNumber({
  doc,
  path,
  label,
  description,
  errors,
  onChange,
  placeholder,
  min,
}: DocFieldProps & { min?: number }) {
  const v = getIn(doc, path);
  return (
    <NumberInput
      label={label}
      description={description}
      placeholder={placeholder}
      min={min}
      allowDecimal={false}
      value={typeof v === 'number' ? v : ''}
      onChange={(n) => onChange(path, typeof n === 'number' ? n : undefined)}
      error={fieldError(errors, path)}
    />
  );
}

export function DocSelect({
  doc,
  path,
  label,
  description,
  errors,
  onChange,
  placeholder,
  options,
}: DocFieldProps & { options: string[] }) {
  const v = str(getIn(doc, path));
  return (
    <Select
      label={label}
      description={description}
      placeholder={placeholder}
      data={v && !options.includes(v) ? [...options, v] : options}
      value={v || null}
      onChange={(x) => onChange(path, x ?? undefined)}
      clearable
      searchable
      error={fieldError(errors, path)}
    />
  );
}

export function DocMulti({
  doc,
  path,
  label,
  description,
  errors,
  onChange,
  placeholder,
  options,
}: DocFieldProps & { options: string[] }) {
  const v = strings(getIn(doc, path));
  const data = [...new Set([...options, ...v])];
  return (
    <MultiSelect
      label={label}
      description={description}
      placeholder={v.length === 0 ? placeholder : undefined}
      data={data}
      value={v}
      onChange={(x) => onChange(path, x)}
      searchable
      clearable
      error={fieldError(errors, path)}
    />
  );
}
