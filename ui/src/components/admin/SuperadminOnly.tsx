import { IconLock } from '@tabler/icons-react';
import type { ReactNode } from 'react';
import { EmptyState } from '../atomic/EmptyState';
import { PageHeader } from '../atomic/PageHeader';
import { useSession } from '../auth/session';

/** SuperadminOnly shows its children to the superadmin; the server refuses everyone else anyway. */
export function SuperadminOnly({ title, children }: { title: string; children: ReactNode }) {
  const { who } = useSession();
  if (who.superadmin) return children;
  return (
    <>
      <PageHeader title={title} />
      <EmptyState icon={<IconLock size={24} />} title="For the superadmin">
        Only the admin of the superadmin tenant manages {title.toLowerCase()}.
      </EmptyState>
    </>
  );
}
