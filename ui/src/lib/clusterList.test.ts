import { describe, expect, it } from 'vitest';
import { listSearch, nextPage, pageNumber, parseListParams, previousPage, readHistory } from './clusterList';

describe('list params', () => {
  it('round-trips through the URL, leaving out defaults', () => {
    const p = parseListParams(new URLSearchParams('status=active,PENDING,bogus,ACTIVE&template=web&size=50&after=abc'));
    expect(p).toEqual({ statuses: ['ACTIVE', 'PENDING'], template: 'web', first: 50, after: 'abc' });
    expect(listSearch(p).toString()).toBe('status=ACTIVE%2CPENDING&template=web&size=50&after=abc');
    expect(listSearch(parseListParams(new URLSearchParams(''))).toString()).toBe('');
  });
  it('refuses page sizes the UI does not offer', () => {
    expect(parseListParams(new URLSearchParams('size=100000')).first).toBe(25);
  });
});

describe('paging', () => {
  const first = parseListParams(new URLSearchParams());
  it('goes forward and back through the cursors', () => {
    const p2 = nextPage(first, [], 'c1');
    expect(p2).toEqual({ params: { ...first, after: 'c1' }, history: [null] });
    expect(pageNumber(p2.params, p2.history)).toBe(2);
    const p3 = nextPage(p2.params, p2.history, 'c2');
    expect(p3.history).toEqual([null, 'c1']);
    expect(pageNumber(p3.params, p3.history)).toBe(3);
    const back = previousPage(p3.params, p3.history);
    expect(back).toEqual(p2);
    expect(previousPage(back.params, back.history)).toEqual({ params: first, history: [] });
  });
  it('goes to the first page from a link to a later one, whose number it does not know', () => {
    const linked = { ...first, after: 'c7' };
    expect(pageNumber(linked, [])).toBeNull();
    expect(pageNumber(nextPage(linked, [], 'c8').params, ['c7'])).toBeNull();
    expect(previousPage(linked, [])).toEqual({ params: first, history: [] });
  });
  it('reads only cursors from history state', () => {
    expect(readHistory({ pages: [null, 'a', 3, {}] })).toEqual([null, 'a']);
    expect(readHistory(null)).toEqual([]);
    expect(readHistory({ other: 1 })).toEqual([]);
  });
});
