// The cluster list's state lives in the URL (?status=ACTIVE,PENDING&
// template=web&size=50&after=…), so a reload or a shared link shows the
// same page; the cursors of the pages before it live in the history
// entry's state, for "Previous".
import type { ClusterStatus } from '../gql/graphql';

export const clusterStatuses: readonly ClusterStatus[] = [
  'PENDING',
  'ACTIVE',
  'INCOMPLETE',
  'INCONSISTENT',
  'TERMINATED',
];
export const pageSizes = [25, 50, 100] as const;
export const defaultPageSize = 25;

export interface ListParams {
  statuses: ClusterStatus[];
  template: string | null;
  first: number;
  after: string | null;
}

function isStatus(s: string): s is ClusterStatus {
  return (clusterStatuses as readonly string[]).includes(s);
}

export function parseListParams(q: URLSearchParams): ListParams {
  const statuses = (q.get('status') ?? '')
    .split(',')
    .map((s) => s.trim().toUpperCase())
    .filter(isStatus);
  const size = Number(q.get('size'));
  return {
    statuses: [...new Set(statuses)],
    template: q.get('template') || null,
    first: (pageSizes as readonly number[]).includes(size) ? size : defaultPageSize,
    after: q.get('after') || null,
  };
}

/** listSearch writes p as a query string, leaving out defaults. */
export function listSearch(p: ListParams): URLSearchParams {
  const q = new URLSearchParams();
  if (p.statuses.length > 0) q.set('status', p.statuses.join(','));
  if (p.template) q.set('template', p.template);
  if (p.first !== defaultPageSize) q.set('size', String(p.first));
  if (p.after) q.set('after', p.after);
  return q;
}

/** PageHistory is the cursors of the pages before the current one: null for the first page. */
export type PageHistory = (string | null)[];

export function readHistory(state: unknown): PageHistory {
  const h = (state as { pages?: unknown } | null)?.pages;
  return Array.isArray(h) ? h.filter((c): c is string | null => c === null || typeof c === 'string') : [];
}

/** nextPage is where "Next" goes: the next cursor, with the current page remembered. */
export function nextPage(
  p: ListParams,
  history: PageHistory,
  endCursor: string,
): { params: ListParams; history: PageHistory } {
  return { params: { ...p, after: endCursor }, history: [...history, p.after] };
}

/** previousPage is where "Previous" goes; without history (a shared link), the first page. */
export function previousPage(p: ListParams, history: PageHistory): { params: ListParams; history: PageHistory } {
  if (history.length === 0) return { params: { ...p, after: null }, history: [] };
  return { params: { ...p, after: history[history.length - 1] ?? null }, history: history.slice(0, -1) };
}

/** The page number, counted from 1; null for a page reached by a link, whose place is unknown. */
export function pageNumber(p: ListParams, history: PageHistory): number | null {
  if (p.after === null) return 1;
  // A chain of pages from the first starts with the first page's null.
  return history.length > 0 && history[0] === null ? history.length + 1 : null;
}
