// The fields a provider asks a user for at create (docs/catalog.md#provider-and-automator-types):
// its provider type's user fields, and the admin fields marked override.

export interface ProviderField {
  name: string;
  label: string;
  type: string;
  tip?: string;
  options: string[];
  default?: string;
  sensitive: boolean;
  /** An admin field the user may override: it has a value already. */
  override: boolean;
}

export interface ProviderAsk {
  fields: ProviderField[];
  /** Alternatives: every field of any one is enough. Empty: nothing is required. */
  required: string[][];
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function readFields(section: unknown, overrideOnly: boolean): ProviderField[] {
  const out: ProviderField[] = [];
  for (const [name, raw] of Object.entries(obj(obj(section).fields))) {
    const f = obj(raw);
    if (overrideOnly && f.override !== true) continue;
    const def = f.default === undefined || f.default === null ? undefined : String(f.default);
    const tip = text(f.tip);
    out.push({
      name,
      label: text(f.label) ?? name,
      type: text(f.type) ?? 'text',
      ...(tip ? { tip } : {}),
      options: Array.isArray(f.options) ? f.options.map((o) => String(text(obj(o).value) ?? o)) : [],
      ...(def !== undefined ? { default: def } : {}),
      sensitive: f.sensitive === true,
      override: overrideOnly,
    });
  }
  return out;
}

/** providerAsk reads what a provider type's descriptor asks of users. */
export function providerAsk(providerType: unknown): ProviderAsk {
  const params = obj(obj(providerType).parameters);
  const user = obj(params.user);
  const required = Array.isArray(user.required)
    ? user.required
        .filter(Array.isArray)
        .map((alt: unknown[]) => alt.filter((x): x is string => typeof x === 'string'))
        .filter((alt) => alt.length > 0)
    : [];
  return { fields: [...readFields(user, false), ...readFields(params.admin, true)], required };
}

/** missingRequired names the fields still needed, or [] when some alternative is complete. */
export function missingRequired(ask: ProviderAsk, values: Record<string, string>): string[] {
  if (ask.required.length === 0) return [];
  // The alternative nearest completion; on a tie, the one the user started.
  let best: { missing: string[]; given: number } | undefined;
  for (const alt of ask.required) {
    const missing = alt.filter((f) => !values[f]);
    if (missing.length === 0) return [];
    const given = alt.length - missing.length;
    if (!best || missing.length < best.missing.length || (missing.length === best.missing.length && given > best.given))
      best = { missing, given };
  }
  return best?.missing ?? [];
}

/** providerFieldValues keeps the fields given, as the API takes them; undefined when none. */
export function providerFieldValues(values: Record<string, string>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(values)) if (v !== '') out[k] = v;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** parseConfig reads the config editor: undefined when empty, an error message when not a JSON object. */
export function parseConfig(s: string): { value?: Record<string, unknown>; error?: string } {
  if (s.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(s);
  } catch (e) {
    return { error: `Not valid JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return { error: 'The config must be a JSON object: {...}' };
  return { value: v as Record<string, unknown> };
}
