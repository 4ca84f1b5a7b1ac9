// What the template gallery shows of a cluster template's Coopr JSON
// (docs/catalog.md#cluster-templates). The document is the template as
// stored: a template that extends another or includes partials shows its
// own fields; the gallery says what it builds on.
import { parseCatalogDuration } from './format';

export interface Lease {
  /** Milliseconds; 0 is unlimited. */
  initial: number;
  max: number;
  step: number;
}

export interface TemplateSummary {
  name: string;
  label: string;
  description: string;
  services: string[];
  compatibleServices: string[];
  provider?: string;
  hardwaretype?: string;
  imagetype?: string;
  size: { min: number; max: number | null };
  lease: Lease;
  extends?: string;
  includes: string[];
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function text(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v : undefined;
}

function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}

function nameOf(v: unknown): string | undefined {
  return text(v) ?? text(obj(v).name);
}

/** summarizeTemplate reads what it can of document; nothing in it is trusted to be well formed. */
export function summarizeTemplate(name: string, document: unknown): TemplateSummary {
  const doc = obj(document);
  const defaults = obj(doc.defaults);
  const size = obj(obj(doc.constraints).size);
  const lease = obj(obj(doc.administration).leaseduration);
  const provider = text(defaults.provider);
  const hardwaretype = text(defaults.hardwaretype);
  const imagetype = text(defaults.imagetype);
  const ext = nameOf(doc.extends);
  return {
    name,
    label: text(doc.label) ?? name,
    description: text(doc.description) ?? '',
    services: strings(defaults.services),
    compatibleServices: strings(obj(doc.compatibility).services),
    ...(provider ? { provider } : {}),
    ...(hardwaretype ? { hardwaretype } : {}),
    ...(imagetype ? { imagetype } : {}),
    size: { min: Math.max(1, count(size.min) ?? 1), max: count(size.max) ?? null },
    lease: {
      initial: parseCatalogDuration(lease.initial) ?? 0,
      max: parseCatalogDuration(lease.max) ?? 0,
      step: parseCatalogDuration(lease.step) ?? 0,
    },
    ...(ext ? { extends: ext } : {}),
    includes: Array.isArray(doc.includes) ? doc.includes.map(nameOf).filter((x): x is string => !!x) : [],
  };
}

/** serviceDescriptions maps service names to their descriptions. */
export function serviceDescriptions(services: readonly { name: string; document: unknown }[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const s of services) {
    const d = text(obj(s.document).description);
    if (d) m.set(s.name, d);
  }
  return m;
}

/** describeLease says how long clusters from a template live, in a few short phrases. */
export function describeLease(lease: Lease, fmt: (ms: number) => string): string[] {
  if (lease.initial === 0 && lease.max === 0) return ['No lease: clusters live until deleted'];
  const out: string[] = [];
  out.push(lease.initial === 0 ? 'No initial lease limit' : `Initial lease ${fmt(lease.initial)}`);
  if (lease.max > 0) out.push(`at most ${fmt(lease.max)} in all`);
  if (lease.step > 0) out.push(`extended by up to ${fmt(lease.step)} at a time`);
  else if (lease.max > 0 || lease.initial > 0) out.push('extensions of any length');
  return out;
}
