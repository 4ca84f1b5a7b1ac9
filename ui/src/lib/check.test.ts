import { describe, expect, it } from 'vitest';
import { uncheckedServices } from './check';

describe('uncheckedServices', () => {
  it('lists each service once, sorted', () => {
    expect(
      uncheckedServices([{ unchecked: ['base', 'extra'] }, { unchecked: [] }, { unchecked: ['base', 'aux'] }]),
    ).toEqual(['aux', 'base', 'extra']);
  });
  it('is empty when every service was checked', () => {
    expect(uncheckedServices([{ unchecked: [] }])).toEqual([]);
    expect(uncheckedServices([])).toEqual([]);
  });
});
