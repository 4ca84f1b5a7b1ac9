import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatDuration } from './format';
import { describeLease, serviceDescriptions, summarizeTemplate } from './template';

function example(name: string): unknown {
  return JSON.parse(
    readFileSync(new URL(`../../../examples/catalog/clustertemplates/${name}.json`, import.meta.url), 'utf8'),
  );
}

describe('summarizeTemplate', () => {
  it('reads the example web-cluster', () => {
    const t = summarizeTemplate('web-cluster', example('web-cluster'));
    expect(t).toMatchObject({
      name: 'web-cluster',
      label: 'web-cluster',
      description: 'One haproxy load balancer in front of N web servers (size = N + 1)',
      services: ['base', 'lb', 'web'],
      compatibleServices: ['base', 'lb', 'web', 'metrics'],
      provider: 'local',
      hardwaretype: 'small',
      imagetype: 'debian12',
      size: { min: 2, max: null },
      lease: { initial: 0, max: 0, step: 0 },
      includes: [],
    });
    expect(t.extends).toBeUndefined();
  });

  it('reads the example single', () => {
    expect(summarizeTemplate('single', example('single')).size).toEqual({ min: 1, max: 1 });
  });

  it('reads leases in both forms, a label, extends and includes', () => {
    const t = summarizeTemplate('big', {
      label: 'Big Hadoop',
      extends: { name: 'hadoop' },
      includes: [{ name: 'base-partial' }, 'other', 7],
      administration: { leaseduration: { initial: '1d', max: 2_592_000_000, step: '12h' } },
    });
    expect(t.label).toBe('Big Hadoop');
    expect(t.extends).toBe('hadoop');
    expect(t.includes).toEqual(['base-partial', 'other']);
    expect(t.lease).toEqual({ initial: 86_400_000, max: 2_592_000_000, step: 43_200_000 });
  });

  it('survives a document that is not a template', () => {
    for (const doc of [null, 42, 'x', [], { defaults: 'x', constraints: { size: { min: -3, max: 'big' } } }]) {
      const t = summarizeTemplate('odd', doc);
      expect(t.services).toEqual([]);
      expect(t.size).toEqual({ min: 1, max: null });
    }
  });
});

describe('describeLease', () => {
  it('says when there is none', () => {
    expect(describeLease({ initial: 0, max: 0, step: 0 }, formatDuration)).toEqual([
      'No lease: clusters live until deleted',
    ]);
  });
  it('says the initial lease, the maximum and the step', () => {
    expect(describeLease({ initial: 86_400_000, max: 2_592_000_000, step: 43_200_000 }, formatDuration)).toEqual([
      'Initial lease 1 d',
      'at most 30 d in all',
      'extended by up to 12 h at a time',
    ]);
  });
  it('says extensions are unbounded without a step', () => {
    expect(describeLease({ initial: 3_600_000, max: 0, step: 0 }, formatDuration)).toEqual([
      'Initial lease 1 h',
      'extensions of any length',
    ]);
  });
});

it('serviceDescriptions', () => {
  expect(
    serviceDescriptions([
      { name: 'web', document: { description: 'HTTP' } },
      { name: 'base', document: {} },
    ]),
  ).toEqual(new Map([['web', 'HTTP']]));
});
