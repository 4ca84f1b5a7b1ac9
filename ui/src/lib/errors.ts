// How the API reports errors, and how the UI shows them: every error has a
// code (extensions.code, see docs/api.md#errors); INVALID_INPUT names the
// argument in extensions.field ("input.numMachines") or lists catalog
// issues in extensions.issues, each with a path. Forms show those next to
// the field they name; the rest goes in an alert. Nothing is shown as raw
// JSON.
import type { CombinedError } from '@urql/core';

export interface ApiIssue {
  path: string;
  message: string;
  severity: 'ERROR' | 'WARNING';
}

export interface ApiError {
  /** extensions.code; NETWORK when the server could not be reached. */
  code: string;
  /** What to tell the user: without the "field: " prefix when field is set. */
  message: string;
  /** The argument it is about, as the API names it (input.numMachines). */
  field?: string;
  issues: ApiIssue[];
  /** For INTERNAL: the reference the server logged the details under. */
  ref?: string;
  /**
   * The solver's explanation of a refusal (extensions.reasons, one line per
   * broken rule); message then joins them after a "kind: " prefix.
   */
  reasons?: string[];
}

interface RawError {
  message?: unknown;
  extensions?: Record<string, unknown> | null;
}

/** sentence starts a message (the server's start lower case, as Go errors do) with a capital. */
export function sentence(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** fromGraphQLError reads one error of a GraphQL response. */
export function fromGraphQLError(e: RawError): ApiError {
  const ext = e.extensions ?? {};
  const code = str(ext.code) ?? 'INTERNAL';
  const field = str(ext.field);
  let message = str(e.message) ?? 'the server gave no reason';
  if (field && message.startsWith(field + ': ')) {
    message = message.slice(field.length + 2);
  }
  const issues: ApiIssue[] = [];
  if (Array.isArray(ext.issues)) {
    for (const i of ext.issues as unknown[]) {
      if (i && typeof i === 'object') {
        const o = i as Record<string, unknown>;
        issues.push({
          path: str(o.path) ?? '',
          message: sentence(str(o.message) ?? ''),
          severity: o.severity === 'WARNING' ? 'WARNING' : 'ERROR',
        });
      }
    }
  }
  const reasons = Array.isArray(ext.reasons)
    ? (ext.reasons as unknown[]).filter((r): r is string => typeof r === 'string' && r !== '')
    : [];
  const kind = str(ext.kind);
  if (reasons.length > 0) {
    // The reasons are listed one by one; the message's run-on join of them
    // ("no_layout: a; b") says nothing more.
    message = kind ? (reasonLeads[kind] ?? 'the solver refused it') : 'the solver refused it';
  }
  message = sentence(message);
  const ref = code === 'INTERNAL' ? /\(ref ([0-9a-f]+)\)/.exec(message)?.[1] : undefined;
  return {
    code,
    message,
    issues,
    ...(field ? { field } : {}),
    ...(ref ? { ref } : {}),
    ...(reasons.length > 0 ? { reasons } : {}),
  };
}

/** What a solver refusal with reasons says before them, by extensions.kind. */
const reasonLeads: Record<string, string> = {
  no_layout: 'no layout satisfies the template’s rules',
  incompatible_services: 'the template does not allow these services',
  missing_dependency: 'a service needs another the cluster lacks',
  conflict: 'services conflict',
};

/** fromCombinedError turns urql's error into the API's errors. */
export function fromCombinedError(err: CombinedError): ApiError[] {
  if (err.graphQLErrors.length > 0) {
    return err.graphQLErrors.map((g) => fromGraphQLError(g));
  }
  const net = err.networkError;
  // Refusals before GraphQL runs (CSRF, body limits, rate limits) still
  // come as {"errors": [...]}; urql reports them as network errors whose
  // response it read.
  const response = (err as { response?: { status?: number } }).response;
  const status = response?.status;
  if (status && status !== 200) {
    return [{ code: `HTTP_${status}`, message: net?.message || `the server answered ${status}`, issues: [] }];
  }
  return [networkError(net)];
}

export function networkError(e?: unknown): ApiError {
  const detail = e instanceof Error && e.message ? ` (${e.message})` : '';
  return {
    code: 'NETWORK',
    message: `The coopr server could not be reached${detail}. Check that it is running, then try again.`,
    issues: [],
  };
}

/** fromResponse reads a non-GraphQL endpoint's error body ({"errors": [...]}). */
export function fromResponseBody(status: number, body: unknown): ApiError[] {
  if (body && typeof body === 'object' && Array.isArray((body as { errors?: unknown }).errors)) {
    const errs = (body as { errors: RawError[] }).errors;
    if (errs.length > 0) return errs.map(fromGraphQLError);
  }
  return [{ code: `HTTP_${status}`, message: `the server answered ${status}`, issues: [] }];
}

/** hasCode reports whether any error has code. */
export function hasCode(errors: readonly ApiError[], code: string): boolean {
  return errors.some((e) => e.code === code);
}

const titles: Record<string, string> = {
  UNAUTHENTICATED: 'Not signed in',
  FORBIDDEN: 'Not allowed',
  NOT_FOUND: 'Not found',
  INVALID_INPUT: 'Check the input',
  MISSING_FIELDS: 'Provider fields missing',
  CONFLICT: 'Conflict',
  QUOTA_EXCEEDED: 'Quota exceeded',
  LIMIT_EXCEEDED: 'Request too large',
  COMPLEXITY_LIMIT_EXCEEDED: 'Request too complex',
  RATE_LIMITED: 'Too many requests',
  INTERNAL: 'Server error',
  NETWORK: 'Cannot reach the server',
};

/** errorTitle is a short heading for an error's code. */
export function errorTitle(code: string): string {
  return titles[code] ?? (code.startsWith('HTTP_') ? `Request failed (${code.slice(5)})` : 'Request failed');
}

/** toFormPath turns an API path (services[3].name) into a form path (services.3.name). */
export function toFormPath(apiPath: string): string {
  return apiPath.replace(/\[(\d+)\]/g, '.$1');
}

export interface FieldMapping {
  /** Stripped from API paths first, e.g. "input." for a mutation's input object. */
  prefix?: string;
  /** The form's fields: only errors naming one of these (or something below one) go on a field. */
  fields: readonly string[];
}

export interface SplitErrors {
  /** Form path to message, for form.setErrors. */
  byField: Record<string, string>;
  /** Errors no field shows: for an alert above the form. */
  rest: ApiError[];
}

function fieldFor(apiPath: string, m: FieldMapping): string | undefined {
  let p = apiPath;
  if (m.prefix) {
    if (!p.startsWith(m.prefix)) return undefined;
    p = p.slice(m.prefix.length);
  }
  const path = toFormPath(p);
  // The deepest known field at or above the path.
  let best: string | undefined;
  for (const f of m.fields) {
    if ((path === f || path.startsWith(f + '.')) && (!best || f.length > best.length)) best = f;
  }
  return best;
}

/**
 * splitFieldErrors puts each INVALID_INPUT error (and each ERROR issue)
 * that names one of the form's fields on that field, and returns the rest.
 * Warnings are never field errors: they do not stop anything.
 */
export function splitFieldErrors(errors: readonly ApiError[], m: FieldMapping): SplitErrors {
  const byField: Record<string, string> = {};
  const rest: ApiError[] = [];
  const add = (field: string, msg: string) => {
    byField[field] = byField[field] ? `${byField[field]}; ${msg}` : msg;
  };
  for (const e of errors) {
    if (e.code !== 'INVALID_INPUT') {
      rest.push(e);
      continue;
    }
    if (e.field) {
      const f = fieldFor(e.field, m);
      if (f) add(f, e.message);
      else rest.push(e);
      continue;
    }
    if (e.issues.length === 0) {
      rest.push(e);
      continue;
    }
    const unplaced: ApiIssue[] = [];
    for (const i of e.issues) {
      const f = i.severity === 'ERROR' ? fieldFor(i.path, m) : undefined;
      if (f) add(f, f === toFormPath(i.path) ? i.message : `${i.path}: ${i.message}`);
      else unplaced.push(i);
    }
    if (unplaced.length > 0) rest.push({ ...e, issues: unplaced });
  }
  return { byField, rest };
}
