// Formatting shared by every view: durations as the catalog writes them,
// times relative to now, node counts.

const units: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * parseCatalogDuration reads a catalog duration as coopr does
 * (catalog.ParseDuration): milliseconds as a number or a string, or
 * "<int><s|m|h|d>". 0 means unlimited; absent or null is 0. Anything else
 * is undefined.
 */
export function parseCatalogDuration(v: unknown): number | undefined {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? v : undefined;
  if (typeof v !== 'string') return undefined;
  let s = v.trim();
  let mult = 1;
  const unit = units[s.slice(-1)];
  if (unit !== undefined) {
    mult = unit;
    s = s.slice(0, -1);
  }
  if (!/^\d+$/.test(s)) return undefined;
  return Number(s) * mult;
}

const spans: [number, string][] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'min'],
  [1000, 's'],
];

/**
 * formatDuration writes ms in its largest unit and the next one when that
 * is not zero: "2 d 4 h", "1 h 30 min", "1 d" (for a day and 5 minutes),
 * "45 s"; under a second "0 s".
 */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  for (let i = 0; i < spans.length; i++) {
    const [size, name] = spans[i]!;
    if (total < size) continue;
    const first = `${Math.floor(total / size)} ${name}`;
    const next = spans[i + 1];
    const second = next ? Math.floor((total % size) / next[0]) : 0;
    return second > 0 && next ? `${first} ${second} ${next[1]}` : first;
  }
  return '0 s';
}

const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/** formatRelative says when iso is from now: "in 3 hours", "5 minutes ago". */
export function formatRelative(iso: string, now: number = Date.now()): string {
  const diff = Date.parse(iso) - now;
  const abs = Math.abs(diff);
  const steps: [number, Intl.RelativeTimeFormatUnit][] = [
    [365 * 86_400_000, 'year'],
    [30 * 86_400_000, 'month'],
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
  ];
  for (const [size, unit] of steps) {
    // Rounded, not truncated: a lease of 2 hours set a minute ago ends
    // "in 2 hours", not "in 1 hour".
    if (abs >= size) return relative.format(Math.round(diff / size), unit);
  }
  return abs < 10_000 ? 'just now' : relative.format(Math.trunc(diff / 1000), 'second');
}

/**
 * relativeRefresh is how soon formatRelative's text for iso may change:
 * every second while it counts seconds, every few seconds while it counts
 * minutes, every minute after. A fixed 30 s left "12 seconds ago" standing
 * for half a minute.
 */
export function relativeRefresh(iso: string, now: number = Date.now()): number {
  const abs = Math.abs(Date.parse(iso) - now);
  if (Number.isNaN(abs)) return 60_000;
  if (abs < 60_000) return 1_000;
  if (abs < 3_600_000) return 5_000;
  return 60_000;
}

const dateTime = new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeStyle: 'short' });

/** formatDateTime is an absolute time in the browser's zone. */
export function formatDateTime(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : dateTime.format(t);
}

/** nodes is "1 node", "3 nodes". */
export function nodes(n: number): string {
  return `${n} ${n === 1 ? 'node' : 'nodes'}`;
}

/** sizeRange describes a template's size constraint; max null is unlimited. */
export function sizeRange(min: number, max: number | null): string {
  if (max === null) return min <= 1 ? 'any size' : `${min} or more nodes`;
  if (min === max) return `exactly ${nodes(min)}`;
  return `${min}–${max} nodes`;
}

/** words writes an API constant as words: CLUSTER_CREATE is "cluster create". */
export function words(constant: string): string {
  return constant.toLowerCase().replace(/_/g, ' ');
}

/** shortId is the first block of a UUID, for tight spaces. */
export function shortId(id: string): string {
  return id.split('-')[0] ?? id;
}
