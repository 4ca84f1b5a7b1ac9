import { Center, Group, Loader, Text } from '@mantine/core';

/** Loading stands in for a view or a section while its data comes. */
export function Loading({ label }: { label: string }) {
  return (
    <Center py={48} role="status" aria-live="polite">
      <Group gap="sm">
        <Loader size="sm" />
        <Text c="dimmed" size="sm">
          {label}
        </Text>
      </Group>
    </Center>
  );
}
