import { describe, expect, it } from 'vitest';
import {
  formatDuration,
  formatRelative,
  nodes,
  relativeRefresh,
  parseCatalogDuration,
  sizeRange,
  words,
} from './format';

describe('parseCatalogDuration', () => {
  it.each([
    [undefined, 0],
    [null, 0],
    [0, 0],
    [90000, 90000],
    ['90000', 90000],
    ['45s', 45000],
    ['90m', 5_400_000],
    ['2h', 7_200_000],
    ['30d', 2_592_000_000],
    [' 1d ', 86_400_000],
  ])('%j is %d ms', (v, ms) => {
    expect(parseCatalogDuration(v)).toBe(ms);
  });
  it.each([[-1], [1.5], ['1w'], ['h'], ['-2h'], ['2 h'], [{}], [true]])('%j is not a duration', (v) => {
    expect(parseCatalogDuration(v)).toBeUndefined();
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0 s'],
    [999, '0 s'],
    [45_000, '45 s'],
    [61_000, '1 min 1 s'],
    [5_400_000, '1 h 30 min'],
    [7_200_000, '2 h'],
    [86_400_000 + 300_000, '1 d'],
    [2 * 86_400_000 + 4 * 3_600_000, '2 d 4 h'],
    [30 * 86_400_000, '30 d'],
  ])('%d ms is %s', (ms, s) => {
    expect(formatDuration(ms)).toBe(s);
  });
});

describe('formatRelative', () => {
  const now = Date.parse('2026-11-24T12:00:00Z');
  it.each([
    ['2026-11-24T15:00:00Z', 'in 3 hours'],
    ['2026-11-24T11:55:00Z', '5 minutes ago'],
    ['2026-11-24T12:00:03Z', 'just now'],
    ['2026-11-25T12:00:00Z', 'tomorrow'],
    ['2026-12-24T12:00:00Z', 'next month'],
    ['2026-11-24T11:59:30Z', '30 seconds ago'],
    ['2026-11-24T13:59:00Z', 'in 2 hours'],
  ])('%s is %s', (iso, s) => {
    expect(formatRelative(iso, now)).toBe(s);
  });
});

describe('relativeRefresh', () => {
  const now = Date.parse('2026-11-24T12:00:00Z');
  it.each([
    ['2026-11-24T11:59:48Z', 1_000],
    ['2026-11-24T12:00:30Z', 1_000],
    ['2026-11-24T11:55:00Z', 5_000],
    ['2026-11-24T15:00:00Z', 60_000],
    ['not a time', 60_000],
  ])('%s refreshes every %d ms', (iso, ms) => {
    expect(relativeRefresh(iso, now)).toBe(ms);
  });
});

it('sizeRange and nodes', () => {
  expect(sizeRange(1, null)).toBe('any size');
  expect(sizeRange(2, null)).toBe('2 or more nodes');
  expect(sizeRange(1, 1)).toBe('exactly 1 node');
  expect(sizeRange(3, 10)).toBe('3–10 nodes');
  expect(nodes(1)).toBe('1 node');
  expect(nodes(0)).toBe('0 nodes');
});

it('words', () => {
  expect(words('CLUSTER_CREATE')).toBe('cluster create');
  expect(words('RUNNING')).toBe('running');
});
