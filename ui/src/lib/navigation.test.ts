import { expect, it } from 'vitest';
import { safeNext } from './navigation';

it.each([
  [null, '/'],
  ['', '/'],
  ['/clusters?status=ACTIVE', '/clusters?status=ACTIVE'],
  ['//evil.example/x', '/'],
  ['/\\evil.example', '/'],
  ['https://evil.example/', '/'],
  ['clusters', '/'],
])('safeNext(%j) is %j', (next, want) => {
  expect(safeNext(next)).toBe(want);
});
