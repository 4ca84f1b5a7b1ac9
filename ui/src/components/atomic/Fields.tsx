import { SimpleGrid, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';

export interface Field {
  label: string;
  value: ReactNode;
}

/** Fields lays out label and value pairs, as a description list. */
export function Fields({ fields, cols = 3 }: { fields: Field[]; cols?: number }) {
  return (
    <SimpleGrid component="dl" cols={{ base: 1, xs: 2, md: cols }} spacing="lg" verticalSpacing="md" m={0}>
      {fields.map((f) => (
        <Stack key={f.label} gap={2}>
          <Text component="dt" size="xs" c="dimmed" tt="uppercase" fw={600} lts={0.4}>
            {f.label}
          </Text>
          <Text component="dd" size="sm" m={0}>
            {f.value}
          </Text>
        </Stack>
      ))}
    </SimpleGrid>
  );
}
