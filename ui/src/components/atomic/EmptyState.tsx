import { Paper, Stack, Text, ThemeIcon, Title } from '@mantine/core';
import type { ReactNode } from 'react';

export interface EmptyStateProps {
  icon: ReactNode;
  title: string;
  children?: ReactNode;
  action?: ReactNode;
}

/** EmptyState fills a view that has nothing to show, saying why and what to do. */
export function EmptyState({ icon, title, children, action }: EmptyStateProps) {
  return (
    <Paper withBorder radius="md" py={48} px="lg">
      <Stack align="center" gap="sm" maw={480} mx="auto" ta="center">
        <ThemeIcon size={48} radius="xl" variant="light" color="gray" aria-hidden>
          {icon}
        </ThemeIcon>
        <Title order={2} fz="lg">
          {title}
        </Title>
        {children && (
          <Text c="dimmed" size="sm">
            {children}
          </Text>
        )}
        {action}
      </Stack>
    </Paper>
  );
}
