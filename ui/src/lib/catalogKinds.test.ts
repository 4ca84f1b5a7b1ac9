import { describe, expect, it } from 'vitest';
import { bundleFromFiles, entityPath, fileKind, kindBySlug } from './catalogKinds';

describe('catalog kinds', () => {
  it('reads a file kind from its directory', () => {
    expect(fileKind('catalog/services/web.json')?.kind).toBe('SERVICES');
    expect(fileKind('x/clustertemplates/sub/y.json')?.kind).toBe('CLUSTERTEMPLATES');
    expect(fileKind('web.json')).toBeUndefined();
  });
  it('makes entity paths', () => {
    expect(entityPath(kindBySlug('services')!, 'a b')).toBe('/admin/catalog/services/a%20b');
    expect(entityPath(kindBySlug('providers')!)).toBe('/admin/catalog/providers/new');
  });
  it('bundles files by directory and merges bundles', () => {
    const { bundle, skipped } = bundleFromFiles([
      { path: 'catalog/services/web.json', text: '{"name":"web"}' },
      { path: 'catalog/services/lb.json', text: '{"name":"lb"}' },
      { path: 'more.json', text: '{"providers":[{"name":"p"}],"services":[{"name":"db"}]}' },
      { path: 'catalog/README.md', text: '#' },
      { path: 'catalog/stray.json', text: '{"name":"x"}' },
      { path: 'catalog/hardwaretypes/bad.json', text: '{' },
    ]);
    expect(bundle).toEqual({
      services: [{ name: 'web' }, { name: 'lb' }, { name: 'db' }],
      providers: [{ name: 'p' }],
    });
    expect(skipped.map((s) => s.path)).toEqual([
      'catalog/README.md',
      'catalog/stray.json',
      'catalog/hardwaretypes/bad.json',
    ]);
  });
});
