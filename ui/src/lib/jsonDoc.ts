// Editing catalog documents as JSON values: reading and setting a value at
// a path without losing the fields no form shows, and the differences
// between two versions, path by path. Paths are the API's issue paths
// (constraints.services.web.quantities.min, compatibility.services[2]),
// so an INVALID_INPUT issue lands on the field that edits the same path.

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Segment = string | number;

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** parsePath splits an issue path (a.b[2].c) into segments. */
export function parsePath(path: string): Segment[] {
  const out: Segment[] = [];
  for (const part of path.split('.')) {
    if (part === '') continue;
    const m = /^([^[]*)((?:\[\d+\])*)$/.exec(part);
    if (!m) {
      out.push(part);
      continue;
    }
    if (m[1]) out.push(m[1]);
    for (const i of m[2]!.matchAll(/\[(\d+)\]/g)) out.push(Number(i[1]));
  }
  return out;
}

/** pathString joins segments as the API writes paths. */
export function pathString(segs: readonly Segment[]): string {
  let s = '';
  for (const x of segs) s += typeof x === 'number' ? `[${x}]` : s === '' ? x : `.${x}`;
  return s;
}

/** getIn reads the value at path, or undefined. */
export function getIn(doc: unknown, path: string | readonly Segment[]): unknown {
  const segs = typeof path === 'string' ? parsePath(path) : path;
  let v: unknown = doc;
  for (const s of segs) {
    if (typeof s === 'number') v = Array.isArray(v) ? v[s] : undefined;
    else v = isObject(v) ? v[s] : undefined;
    if (v === undefined) return undefined;
  }
  return v;
}

/** empty values are dropped from documents: the catalog treats an absent field as its default. */
export function isEmpty(v: unknown): boolean {
  return (
    v === undefined || v === '' || (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0)
  );
}

/**
 * setIn returns a copy of doc with value at path; an empty value removes
 * the field, and objects left empty by that go too (never the top).
 */
export function setIn(doc: unknown, path: string | readonly Segment[], value: unknown): Record<string, unknown> {
  const segs = typeof path === 'string' ? parsePath(path) : path;
  const top = isObject(doc) ? doc : {};
  return (setRec(top, segs, value) as Record<string, unknown> | undefined) ?? {};
}

function setRec(node: unknown, segs: readonly Segment[], value: unknown): unknown {
  if (segs.length === 0) return isEmpty(value) ? undefined : value;
  const [head, ...rest] = segs;
  if (typeof head === 'number') {
    const arr = Array.isArray(node) ? [...node] : [];
    const v = setRec(arr[head], rest, value);
    if (v === undefined) arr.splice(head, 1);
    else arr[head] = v;
    return arr.length === 0 ? undefined : arr;
  }
  const obj: Record<string, unknown> = isObject(node) ? { ...node } : {};
  const v = setRec(obj[head!], rest, value);
  if (v === undefined) delete obj[head!];
  else obj[head!] = v;
  return Object.keys(obj).length === 0 ? undefined : obj;
}

export type ChangeKind = 'added' | 'removed' | 'changed';

export interface Change {
  path: string;
  kind: ChangeKind;
  old?: unknown;
  new?: unknown;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * diff lists how b differs from a: objects key by key (keys sorted),
 * arrays of objects element by element, other values (lists of names too)
 * whole, since a list's change reads best as the list before and after.
 */
export function diff(a: unknown, b: unknown, at: Segment[] = []): Change[] {
  if (same(a, b)) return [];
  const path = pathString(at);
  if (a === undefined) return [{ path, kind: 'added', new: b }];
  if (b === undefined) return [{ path, kind: 'removed', old: a }];
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => diff(a[k], b[k], [...at, k]));
  }
  if (Array.isArray(a) && Array.isArray(b) && [...a, ...b].every(isObject)) {
    const n = Math.max(a.length, b.length);
    const out: Change[] = [];
    for (let i = 0; i < n; i++) out.push(...diff(a[i], b[i], [...at, i]));
    return out;
  }
  return [{ path, kind: 'changed', old: a, new: b }];
}

/** show renders a value for a diff or a field: strings bare, the rest as compact JSON. */
export function show(v: unknown): string {
  if (v === undefined) return '';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}
