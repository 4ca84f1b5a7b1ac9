// The template builder's pure helpers: reading and writing the parts of a
// cluster template document whose JSON forms vary.
import { toFormPath } from './errors';
import { isObject } from './jsonDoc';

/** serviceNames reads defaults.services, whose entries are names or {name, config}. */
export function serviceNames(v: unknown): string[] {
  if (!Array.isArray(v)) return [];
  return v.flatMap((x) => (typeof x === 'string' ? [x] : isObject(x) && typeof x.name === 'string' ? [x.name] : []));
}

/** withServices sets defaults.services to names, keeping the config of entries that stay. */
export function withServices(v: unknown, names: string[]): unknown[] {
  const old = Array.isArray(v) ? v : [];
  return names.map((n) => old.find((x) => isObject(x) && x.name === n) ?? n);
}

/** durationValue reads a lease field typed as text: digits are milliseconds, 2h a duration string. */
export function durationValue(text: string): number | string | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  return /^\d+$/.test(t) ? Number(t) : t;
}

/** flatPaths lists every path of a document, objects and arrays included, so errors can go on the deepest field that edits one. */
export function flatPaths(doc: unknown, at = '', out: Record<string, true> = {}): Record<string, true> {
  if (at) out[toFormPath(at)] = true;
  if (Array.isArray(doc)) doc.forEach((x, i) => flatPaths(x, `${at}[${i}]`, out));
  else if (isObject(doc)) for (const [k, v] of Object.entries(doc)) flatPaths(v, at ? `${at}.${k}` : k, out);
  return out;
}
