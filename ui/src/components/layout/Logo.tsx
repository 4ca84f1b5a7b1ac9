import { Group, Text } from '@mantine/core';

/** Logo is coopr's mark and name. */
export function Logo({ size = 28 }: { size?: number }) {
  return (
    <Group gap={8} wrap="nowrap">
      <svg width={size} height={size} viewBox="0 0 32 32" aria-hidden="true">
        <rect width="32" height="32" rx="7" fill="var(--mantine-color-blue-6)" />
        <g fill="#fff">
          <rect x="7" y="7" width="8" height="8" rx="2" />
          <rect x="17" y="7" width="8" height="8" rx="2" opacity=".75" />
          <rect x="7" y="17" width="8" height="8" rx="2" opacity=".75" />
          <rect x="17" y="17" width="8" height="8" rx="2" opacity=".5" />
        </g>
      </svg>
      <Text fw={700} fz={size * 0.68} lh={1}>
        coopr
      </Text>
    </Group>
  );
}
