import { List, Text } from '@mantine/core';
import type { ApiIssue } from '../../lib/errors';

/** IssueList shows catalog issues (warnings, or errors no field took), each with its path. */
export function IssueList({ issues }: { issues: readonly ApiIssue[] }) {
  return (
    <List size="sm" spacing={2}>
      {issues.map((i, n) => (
        <List.Item key={n}>
          {i.path && (
            <Text span ff="monospace" size="sm">
              {i.path}:{' '}
            </Text>
          )}
          {i.message}
        </List.Item>
      ))}
    </List>
  );
}
