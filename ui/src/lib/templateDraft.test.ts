import { describe, expect, it } from 'vitest';
import { durationValue, flatPaths, serviceNames, withServices } from './templateDraft';

describe('template drafts', () => {
  it('reads default services in both forms', () => {
    expect(serviceNames(['base', { name: 'web', config: { a: 1 } }, 3, { x: 1 }])).toEqual(['base', 'web']);
    expect(serviceNames(undefined)).toEqual([]);
  });
  it('keeps the config of services that stay', () => {
    const old = ['base', { name: 'web', config: { a: 1 } }];
    expect(withServices(old, ['web', 'lb'])).toEqual([{ name: 'web', config: { a: 1 } }, 'lb']);
  });
  it('reads lease durations as milliseconds or duration strings', () => {
    expect(durationValue('3600000')).toBe(3600000);
    expect(durationValue(' 2h ')).toBe('2h');
    expect(durationValue('')).toBeUndefined();
  });
  it('lists every path of a document as form paths', () => {
    expect(Object.keys(flatPaths({ constraints: { layout: { cantcoexist: [['lb', 'web']] } } }))).toEqual([
      'constraints',
      'constraints.layout',
      'constraints.layout.cantcoexist',
      'constraints.layout.cantcoexist.0',
      'constraints.layout.cantcoexist.0.0',
      'constraints.layout.cantcoexist.0.1',
    ]);
  });
});
