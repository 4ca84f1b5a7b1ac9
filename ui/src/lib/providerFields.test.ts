import { describe, expect, it } from 'vitest';
import { missingRequired, parseConfig, providerAsk, providerFieldValues } from './providerFields';

const descriptor = {
  name: 'cloud',
  parameters: {
    admin: {
      fields: {
        region: { label: 'Region', type: 'select', options: ['eu', 'us'], override: true },
        secret: { label: 'Secret', type: 'password', sensitive: true },
      },
    },
    user: {
      fields: {
        key: { label: 'API key', type: 'password', sensitive: true, tip: 'Your own' },
        user: { label: 'User', type: 'text' },
        password: { label: 'Password', type: 'password' },
      },
      required: [['key'], ['user', 'password']],
    },
  },
};

describe('providerAsk', () => {
  it('asks for the user fields and the admin fields users may override', () => {
    const ask = providerAsk(descriptor);
    expect(ask.fields.map((f) => [f.name, f.sensitive, f.override])).toEqual([
      ['key', true, false],
      ['user', false, false],
      ['password', false, false],
      ['region', false, true],
    ]);
    expect(ask.fields[3]!.options).toEqual(['eu', 'us']);
    expect(providerAsk(undefined)).toEqual({ fields: [], required: [] });
  });
  it('names what is missing of the nearest alternative', () => {
    const ask = providerAsk(descriptor);
    expect(missingRequired(ask, {})).toEqual(['key']);
    expect(missingRequired(ask, { user: 'u' })).toEqual(['password']);
    expect(missingRequired(ask, { user: 'u', password: 'p' })).toEqual([]);
    expect(providerFieldValues({ user: 'u', password: '' })).toEqual({ user: 'u' });
    expect(providerFieldValues({ a: '' })).toBeUndefined();
  });
});

describe('parseConfig', () => {
  it('takes an object, nothing, or says what is wrong', () => {
    expect(parseConfig('  ')).toEqual({});
    expect(parseConfig('{"a": 1}')).toEqual({ value: { a: 1 } });
    expect(parseConfig('[1]').error).toMatch(/JSON object/);
    expect(parseConfig('{').error).toMatch(/Not valid JSON/);
  });
});
