import { describe, expect, it } from 'vitest';
import { diff, getIn, parsePath, pathString, setIn } from './jsonDoc';

describe('paths', () => {
  it('parses and joins the API form', () => {
    expect(parsePath('constraints.services.web.quantities.min')).toEqual([
      'constraints',
      'services',
      'web',
      'quantities',
      'min',
    ]);
    expect(parsePath('compatibility.services[2]')).toEqual(['compatibility', 'services', 2]);
    expect(parsePath('layout.mustcoexist[1][0]')).toEqual(['layout', 'mustcoexist', 1, 0]);
    expect(pathString(['layout', 'mustcoexist', 1, 0])).toBe('layout.mustcoexist[1][0]');
    expect(pathString([])).toBe('');
  });
});

describe('setIn', () => {
  const doc = { name: 't', links: [{ label: 'x' }], constraints: { size: { min: 2 } } };
  it('sets deep values and keeps what it does not touch', () => {
    const d = setIn(doc, 'constraints.size.max', 5);
    expect(d).toEqual({ name: 't', links: [{ label: 'x' }], constraints: { size: { min: 2, max: 5 } } });
    expect(doc.constraints.size).toEqual({ min: 2 }); // not mutated
  });
  it('drops empty values and the objects they leave empty', () => {
    expect(setIn(doc, 'constraints.size.min', undefined)).toEqual({ name: 't', links: [{ label: 'x' }] });
    expect(setIn(doc, 'links', [])).toEqual({ name: 't', constraints: { size: { min: 2 } } });
    expect(setIn({}, 'description', '')).toEqual({});
  });
  it('reads what it set', () => {
    const d = setIn({}, 'compatibility.services', ['a', 'b']);
    expect(getIn(d, 'compatibility.services[1]')).toBe('b');
    expect(getIn(d, 'compatibility.hardwaretypes')).toBeUndefined();
  });
});

describe('diff', () => {
  it('lists changes path by path, lists of names whole', () => {
    const a = { name: 't', description: 'old', compatibility: { services: ['a'] }, gone: 1 };
    const b = { name: 't', description: 'new', compatibility: { services: ['a', 'b'] }, added: { x: 1 } };
    expect(diff(a, b)).toEqual([
      { path: 'added', kind: 'added', new: { x: 1 } },
      { path: 'compatibility.services', kind: 'changed', old: ['a'], new: ['a', 'b'] },
      { path: 'description', kind: 'changed', old: 'old', new: 'new' },
      { path: 'gone', kind: 'removed', old: 1 },
    ]);
  });
  it('compares lists of objects element by element', () => {
    expect(diff({ links: [{ label: 'a', url: 'u' }] }, { links: [{ label: 'b', url: 'u' }, { label: 'c' }] })).toEqual([
      { path: 'links[0].label', kind: 'changed', old: 'a', new: 'b' },
      { path: 'links[1]', kind: 'added', new: { label: 'c' } },
    ]);
  });
  it('finds nothing between equal documents', () => {
    expect(diff({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toEqual([]);
  });
});
