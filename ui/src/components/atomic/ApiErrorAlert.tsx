// The one way the UI shows API errors that no form field took: a titled
// alert per error with its message, a catalog error's issues as a list,
// and an internal error's reference, never the raw response.
import { Alert, List, Stack, Text } from '@mantine/core';
import { IconAlertTriangle, IconPlugConnectedX } from '@tabler/icons-react';
import type { CombinedError } from '@urql/core';
import { type ApiError, errorTitle, fromCombinedError } from '../../lib/errors';

export interface ApiErrorAlertProps {
  error: CombinedError | readonly ApiError[] | null | undefined;
  /** What was being done, e.g. "Loading clusters failed". */
  title?: string;
}

function toErrors(error: ApiErrorAlertProps['error']): readonly ApiError[] {
  if (!error) return [];
  return Array.isArray(error) ? error : fromCombinedError(error as CombinedError);
}

export function ApiErrorAlert({ error, title }: ApiErrorAlertProps) {
  const errors = toErrors(error);
  if (errors.length === 0) return null;
  return (
    <Stack gap="xs">
      {errors.map((e, i) => (
        <Alert
          key={i}
          role="alert"
          variant="light"
          color={e.code === 'CONFLICT' || e.code === 'QUOTA_EXCEEDED' ? 'orange' : 'red'}
          icon={e.code === 'NETWORK' ? <IconPlugConnectedX size={18} /> : <IconAlertTriangle size={18} />}
          title={title ? `${title}: ${errorTitle(e.code).toLowerCase()}` : errorTitle(e.code)}
        >
          <Text size="sm">
            {e.field ? (
              <>
                <Text span ff="monospace" size="sm">
                  {e.field}
                </Text>
                : {e.message}
              </>
            ) : (
              e.message
            )}
          </Text>
          {e.reasons && (
            <List size="sm" mt="xs" spacing={2} data-testid="error-reasons">
              {e.reasons.map((r, j) => (
                <List.Item key={j}>{r}</List.Item>
              ))}
            </List>
          )}
          {e.issues.length > 0 && (
            <List size="sm" mt="xs" spacing={2}>
              {e.issues.map((i, j) => (
                <List.Item key={j}>
                  {i.path && (
                    <Text span ff="monospace" size="sm">
                      {i.path}
                    </Text>
                  )}
                  {i.path ? ': ' : ''}
                  {i.message}
                  {i.severity === 'WARNING' ? ' (warning)' : ''}
                </List.Item>
              ))}
            </List>
          )}
          {e.ref && (
            <Text size="xs" c="dimmed" mt={4}>
              Reference {e.ref}: an administrator finds the details in the server log.
            </Text>
          )}
        </Alert>
      ))}
    </Stack>
  );
}
