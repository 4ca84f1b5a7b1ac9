import { CombinedError } from '@urql/core';
import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import {
  errorTitle,
  fromCombinedError,
  fromGraphQLError,
  fromResponseBody,
  splitFieldErrors,
  toFormPath,
} from './errors';

describe('fromGraphQLError', () => {
  it('drops the field prefix the server puts in the message', () => {
    expect(
      fromGraphQLError({
        message: 'input.numMachines: must be at least 2 (template web-cluster)',
        extensions: { code: 'INVALID_INPUT', field: 'input.numMachines' },
      }),
    ).toEqual({
      code: 'INVALID_INPUT',
      field: 'input.numMachines',
      message: 'Must be at least 2 (template web-cluster)',
      issues: [],
    });
  });

  it('reads catalog issues', () => {
    const e = fromGraphQLError({
      message: 'catalog has 2 problems',
      extensions: {
        code: 'INVALID_INPUT',
        issues: [
          { path: 'services[3].provisioner', message: 'unknown action type', severity: 'ERROR' },
          { path: 'description', message: 'empty', severity: 'WARNING' },
          'junk',
        ],
      },
    });
    expect(e.issues).toEqual([
      { path: 'services[3].provisioner', message: 'Unknown action type', severity: 'ERROR' },
      { path: 'description', message: 'Empty', severity: 'WARNING' },
    ]);
  });

  it('keeps the reference of an internal error and never leaks more', () => {
    const e = fromGraphQLError({
      message: 'internal error (ref 0a1b2c3d4e5f); the server log has the details',
      extensions: { code: 'INTERNAL' },
    });
    expect(e.ref).toBe('0a1b2c3d4e5f');
  });

  it('lists the solver’s reasons for a refusal instead of their run-on join', () => {
    const e = fromGraphQLError({
      message: 'no_layout: mysql-server is on 1 nodes, outside 2..∞; lb is on 2 nodes, outside 1..1',
      extensions: {
        code: 'INVALID_INPUT',
        kind: 'no_layout',
        reasons: ['mysql-server is on 1 nodes, outside 2..∞', 'lb is on 2 nodes, outside 1..1'],
      },
    });
    expect(e.message).toBe('No layout satisfies the template’s rules');
    expect(e.reasons).toEqual(['mysql-server is on 1 nodes, outside 2..∞', 'lb is on 2 nodes, outside 1..1']);
    const plain = fromGraphQLError({ message: 'conflict: up to date', extensions: { code: 'CONFLICT' } });
    expect(plain.reasons).toBeUndefined();
    expect(plain.message).toBe('Conflict: up to date');
  });

  it('gives an error without extensions a code', () => {
    expect(fromGraphQLError({ message: 'boom' }).code).toBe('INTERNAL');
    expect(fromGraphQLError({}).message).toBe('The server gave no reason');
  });
});

describe('fromCombinedError', () => {
  it('maps GraphQL errors', () => {
    const err = new CombinedError({
      graphQLErrors: [new GraphQLError('cluster x: not found', { extensions: { code: 'NOT_FOUND' } })],
    });
    expect(fromCombinedError(err).map((e) => e.code)).toEqual(['NOT_FOUND']);
  });

  it('says the server could not be reached on a network error', () => {
    const err = new CombinedError({ networkError: new TypeError('Failed to fetch') });
    const [e] = fromCombinedError(err);
    expect(e?.code).toBe('NETWORK');
    expect(e?.message).toContain('could not be reached');
    expect(e?.message).toContain('Failed to fetch');
  });
});

describe('fromResponseBody', () => {
  it('reads the sign-in endpoint errors', () => {
    expect(
      fromResponseBody(401, {
        errors: [{ message: 'that API token is not valid', extensions: { code: 'UNAUTHENTICATED' } }],
      }),
    ).toEqual([{ code: 'UNAUTHENTICATED', message: 'That API token is not valid', issues: [] }]);
  });
  it('copes with a body that is not the API', () => {
    expect(fromResponseBody(502, '<html>bad gateway</html>')[0]?.code).toBe('HTTP_502');
  });
});

describe('splitFieldErrors', () => {
  const fields = ['name', 'numMachines', 'config', 'providerFields', 'services'];

  it('puts an INVALID_INPUT field error on its form field', () => {
    const { byField, rest } = splitFieldErrors(
      [
        { code: 'INVALID_INPUT', field: 'input.numMachines', message: 'must be at least 2', issues: [] },
        { code: 'INVALID_INPUT', field: 'input.providerFields.api_key', message: 'required', issues: [] },
        { code: 'QUOTA_EXCEEDED', message: 'tenant acme may have 10 nodes', issues: [] },
      ],
      { prefix: 'input.', fields },
    );
    expect(byField).toEqual({ numMachines: 'must be at least 2', providerFields: 'required' });
    expect(rest.map((e) => e.code)).toEqual(['QUOTA_EXCEEDED']);
  });

  it('leaves errors about arguments the form does not have for the alert', () => {
    const { byField, rest } = splitFieldErrors(
      [
        { code: 'INVALID_INPUT', field: 'expectedPlanHash', message: 'stale', issues: [] },
        { code: 'INVALID_INPUT', field: 'input.dnsSuffix', message: 'bad', issues: [] },
        { code: 'INVALID_INPUT', message: 'Syntax Error: Unexpected Name', issues: [] },
      ],
      { prefix: 'input.', fields },
    );
    expect(byField).toEqual({});
    expect(rest).toHaveLength(3);
  });

  it('places catalog issues by path, deepest field first, and keeps warnings off fields', () => {
    const { byField, rest } = splitFieldErrors(
      [
        {
          code: 'INVALID_INPUT',
          message: 'invalid',
          issues: [
            { path: 'defaults.services[1]', message: 'unknown service', severity: 'ERROR' },
            { path: 'constraints.size.min', message: 'must be at least 1', severity: 'ERROR' },
            { path: 'name', message: 'looks odd', severity: 'WARNING' },
            { path: 'links', message: 'bad', severity: 'ERROR' },
          ],
        },
      ],
      { fields: ['name', 'defaults.services', 'constraints.size', 'constraints.size.min'] },
    );
    expect(byField).toEqual({
      'defaults.services': 'defaults.services[1]: unknown service',
      'constraints.size.min': 'must be at least 1',
    });
    expect(rest).toHaveLength(1);
    expect(rest[0]?.issues.map((i) => i.path)).toEqual(['name', 'links']);
  });

  it('joins two errors on one field', () => {
    const { byField } = splitFieldErrors(
      [
        { code: 'INVALID_INPUT', field: 'input.name', message: 'too long', issues: [] },
        { code: 'INVALID_INPUT', field: 'input.name', message: 'not printable', issues: [] },
      ],
      { prefix: 'input.', fields },
    );
    expect(byField).toEqual({ name: 'too long; not printable' });
  });
});

it('toFormPath turns indexes into path segments', () => {
  expect(toFormPath('services[3].provisioner.actions[0]')).toBe('services.3.provisioner.actions.0');
});

it('errorTitle names codes and HTTP statuses', () => {
  expect(errorTitle('QUOTA_EXCEEDED')).toBe('Quota exceeded');
  expect(errorTitle('HTTP_403')).toBe('Request failed (403)');
  expect(errorTitle('SOMETHING_NEW')).toBe('Request failed');
});
