import {
  Avatar,
  Button,
  Divider,
  Group,
  Popover,
  Stack,
  Text,
  UnstyledButton,
  useMantineColorScheme,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { IconChevronDown, IconKey, IconLogout, IconMoon, IconSun } from '@tabler/icons-react';
import { Link } from 'react-router';
import { SessionError } from '../../api/session';
import { formatDateTime } from '../../lib/format';
import { useSession } from '../auth/session';

export function roleName(who: { role: string; superadmin: boolean }): string {
  if (who.superadmin) return 'superadmin';
  return who.role === 'ADMIN' ? 'tenant admin' : 'user';
}

/**
 * UserMenu shows who is signed in (user, tenant, role) and signs out. A
 * popover rather than a menu: it holds text as well as actions.
 */
export function UserMenu() {
  const { who, signOut } = useSession();
  const { colorScheme, setColorScheme } = useMantineColorScheme();
  const dark = colorScheme === 'dark';
  const out = () =>
    signOut().catch((e: unknown) =>
      notifications.show({
        color: 'red',
        title: 'Signing out failed',
        message: e instanceof SessionError ? e.message : String(e),
      }),
    );
  return (
    <Popover position="bottom-end" width={280} withArrow shadow="md" withinPortal={false}>
      <Popover.Target>
        <UnstyledButton data-testid="user-menu">
          <Group gap="xs" wrap="nowrap">
            <Avatar size={32} radius="xl" color="blue" aria-hidden>
              {who.user.slice(0, 2).toUpperCase()}
            </Avatar>
            <Stack gap={0} visibleFrom="xs">
              <Text size="sm" fw={600} lh={1.2}>
                {who.user}
              </Text>
              <Text size="xs" c="dimmed" lh={1.2}>
                {who.tenant} · {roleName(who)}
              </Text>
            </Stack>
            <IconChevronDown size={14} aria-hidden />
          </Group>
        </UnstyledButton>
      </Popover.Target>
      <Popover.Dropdown aria-label="Account">
        <Stack gap="xs">
          <Text size="sm">
            Signed in as <b>{who.user}</b> of tenant <b>{who.tenant}</b>, {roleName(who)}.
          </Text>
          <Text size="xs" c="dimmed">
            The session ends {formatDateTime(who.expiresAt)} at the latest, or after half a day unused.
          </Text>
          <Divider />
          <Button
            variant="subtle"
            color="gray"
            justify="flex-start"
            leftSection={dark ? <IconSun size={16} /> : <IconMoon size={16} />}
            onClick={() => setColorScheme(dark ? 'light' : 'dark')}
          >
            {dark ? 'Light theme' : 'Dark theme'}
          </Button>
          {who.user !== '' && (
            <Button
              component={Link}
              to="/profile/ssh-keys"
              variant="subtle"
              color="gray"
              justify="flex-start"
              leftSection={<IconKey size={16} />}
            >
              SSH keys
            </Button>
          )}
          <Button variant="light" color="red" justify="flex-start" leftSection={<IconLogout size={16} />} onClick={out}>
            Sign out
          </Button>
        </Stack>
      </Popover.Dropdown>
    </Popover>
  );
}
