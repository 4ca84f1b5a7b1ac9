import { SimpleGrid, Skeleton } from '@mantine/core';
import { IconTemplateOff } from '@tabler/icons-react';
import { useMemo } from 'react';
import { useQuery } from 'urql';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { EmptyState } from '../../components/atomic/EmptyState';
import { PageHeader } from '../../components/atomic/PageHeader';
import { useIsAdmin } from '../../components/auth/session';
import { TemplateCard } from '../../components/catalog/TemplateCard';
import { graphql } from '../../gql';
import { serviceDescriptions, summarizeTemplate } from '../../lib/template';

const TemplateGalleryDocument = graphql(`
  query TemplateGallery {
    catalog {
      templates: entities(kind: CLUSTERTEMPLATES) {
        name
        version
        document
      }
      services: entities(kind: SERVICES) {
        name
        document
      }
    }
  }
`);

export function Component() {
  const admin = useIsAdmin();
  const [{ data, fetching, error }] = useQuery({ query: TemplateGalleryDocument });
  const templates = useMemo(
    () => (data?.catalog.templates ?? []).map((t) => summarizeTemplate(t.name, t.document)),
    [data],
  );
  const services = useMemo(() => serviceDescriptions(data?.catalog.services ?? []), [data]);
  return (
    <>
      <PageHeader
        title="Templates"
        description="The kinds of cluster your tenant offers. Each template fixes the services, the size range and how long a cluster may live."
      />
      <ApiErrorAlert error={error} title="Loading the templates failed" />
      {!data && fetching && (
        <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} spacing="lg" aria-busy>
          {[0, 1, 2].map((i) => (
            <Skeleton key={i} h={260} radius="md" />
          ))}
        </SimpleGrid>
      )}
      {data && templates.length === 0 && (
        <EmptyState icon={<IconTemplateOff size={24} />} title="No templates yet">
          {admin
            ? 'Import a catalog (coopr catalog import DIR, or importCatalog through the API) to publish templates.'
            : 'Your tenant has not published any cluster templates. Ask one of its admins.'}
        </EmptyState>
      )}
      {templates.length > 0 && (
        <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} spacing="lg">
          {templates.map((t) => (
            <TemplateCard key={t.name} template={t} services={services} />
          ))}
        </SimpleGrid>
      )}
    </>
  );
}
