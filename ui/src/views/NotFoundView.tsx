import { Button } from '@mantine/core';
import { IconMapOff } from '@tabler/icons-react';
import { Link } from 'react-router';
import { EmptyState } from '../components/atomic/EmptyState';
import { PageHeader } from '../components/atomic/PageHeader';

export function Component() {
  return (
    <>
      <PageHeader title="Page not found" />
      <EmptyState
        icon={<IconMapOff size={24} />}
        title="Nothing here"
        action={
          <Button component={Link} to="/clusters" variant="light">
            Go to your clusters
          </Button>
        }
      >
        This address is not a page of coopr.
      </EmptyState>
    </>
  );
}
