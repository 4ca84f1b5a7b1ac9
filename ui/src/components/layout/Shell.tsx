import { AppShell, Box, Burger, Group, NavLink, ScrollArea, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import {
  IconBooks,
  IconBuilding,
  IconPackage,
  IconRobot,
  IconServer2,
  IconTemplate,
  IconUsers,
} from '@tabler/icons-react';
import type { ReactNode } from 'react';
import { NavLink as RouterLink, Outlet, useLocation } from 'react-router';
import { Provider } from 'urql';
import { useIsAdmin, useSession } from '../auth/session';
import { ConnectionIndicator } from './ConnectionIndicator';
import { Logo } from './Logo';
import { UserMenu } from './UserMenu';

interface NavItem {
  to: string;
  label: string;
  icon: ReactNode;
  /** Only for the superadmin. */
  superadmin?: boolean;
}

const userNav: NavItem[] = [
  { to: '/clusters', label: 'Clusters', icon: <IconServer2 size={18} /> },
  { to: '/templates', label: 'Templates', icon: <IconTemplate size={18} /> },
];

// Admin sections; agents and tenants are the superadmin's.
const adminNav: NavItem[] = [
  { to: '/admin/catalog', label: 'Catalog', icon: <IconBooks size={18} /> },
  { to: '/admin/resources', label: 'Resources', icon: <IconPackage size={18} /> },
  { to: '/admin/users', label: 'Users and tokens', icon: <IconUsers size={18} /> },
  { to: '/admin/agents', label: 'Agents', icon: <IconRobot size={18} />, superadmin: true },
  { to: '/admin/tenants', label: 'Tenants', icon: <IconBuilding size={18} />, superadmin: true },
];

function NavItems({ items, onNavigate }: { items: NavItem[]; onNavigate: () => void }) {
  const { pathname } = useLocation();
  return items.map((item) => (
    <NavLink
      key={item.to}
      component={RouterLink}
      to={item.to}
      label={item.label}
      leftSection={item.icon}
      active={pathname === item.to || pathname.startsWith(item.to + '/')}
      onClick={onNavigate}
      style={{ borderRadius: 'var(--mantine-radius-md)' }}
    />
  ));
}

/** Shell is the signed-in layout: top bar, navigation, and the current view. */
export function Shell() {
  const { api, who } = useSession();
  const admin = useIsAdmin();
  const [opened, { toggle, close }] = useDisclosure();
  return (
    <Provider value={api.client}>
      <AppShell
        header={{ height: 60 }}
        navbar={{ width: 230, breakpoint: 'sm', collapsed: { mobile: !opened } }}
        padding="lg"
      >
        <AppShell.Header>
          <Group h="100%" px="md" justify="space-between" wrap="nowrap">
            <Group gap="sm" wrap="nowrap">
              <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Navigation" />
              <RouterLink to="/" aria-label="coopr home" style={{ color: 'inherit', textDecoration: 'none' }}>
                <Logo />
              </RouterLink>
            </Group>
            <Group gap="md" wrap="nowrap">
              <ConnectionIndicator />
              <UserMenu />
            </Group>
          </Group>
        </AppShell.Header>
        <AppShell.Navbar p="sm" aria-label="Main">
          <AppShell.Section grow component={ScrollArea}>
            <NavItems items={userNav} onNavigate={close} />
            {admin && (
              <nav aria-label="Admin" data-testid="admin-nav">
                <Text size="xs" fw={700} c="dimmed" tt="uppercase" lts={0.5} px="sm" mt="lg" mb={4}>
                  Admin
                </Text>
                <NavItems items={adminNav.filter((i) => !i.superadmin || who.superadmin)} onNavigate={close} />
              </nav>
            )}
          </AppShell.Section>
        </AppShell.Navbar>
        <AppShell.Main>
          <Box maw={1280} mx="auto">
            <Outlet />
          </Box>
        </AppShell.Main>
      </AppShell>
    </Provider>
  );
}
