import { Button, Center, Loader, Stack } from '@mantine/core';
import { IconLock } from '@tabler/icons-react';
import { Navigate, Outlet, useLocation } from 'react-router';
import { ApiErrorAlert } from '../atomic/ApiErrorAlert';
import { EmptyState } from '../atomic/EmptyState';
import { PageHeader } from '../atomic/PageHeader';
import { Shell } from '../layout/Shell';
import { useIsAdmin, useSessionContext } from './session';

/** SignedIn renders the app's shell for a session, and sends everyone else to the sign-in page. */
export function SignedIn() {
  const { state, retry } = useSessionContext();
  const location = useLocation();
  switch (state.status) {
    case 'loading':
      return (
        <Center h="100vh" role="status" aria-label="Loading">
          <Loader />
        </Center>
      );
    case 'failed':
      return (
        <Center h="100vh" p="lg">
          <Stack maw={520}>
            <ApiErrorAlert error={state.errors} title="Checking the session failed" />
            <Button variant="light" onClick={retry} style={{ alignSelf: 'flex-start' }}>
              Try again
            </Button>
          </Stack>
        </Center>
      );
    case 'signedOut': {
      // After an expired session, back to where the user was; after
      // signing out, a fresh start (the next user may be someone else).
      const next = location.pathname + location.search;
      const to = state.byUser || next === '/' ? '/signin' : `/signin?next=${encodeURIComponent(next)}`;
      return <Navigate to={to} replace />;
    }
    case 'signedIn':
      return <Shell />;
  }
}

/** AdminOnly shows its child routes to tenant admins; the server refuses the rest anyway. */
export function AdminOnly() {
  const admin = useIsAdmin();
  if (admin) return <Outlet />;
  return (
    <>
      <PageHeader title="Admin" />
      <EmptyState icon={<IconLock size={24} />} title="For tenant admins">
        This part of coopr is for your tenant's admins. Ask one if you need something here.
      </EmptyState>
    </>
  );
}
