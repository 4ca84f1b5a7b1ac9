import { Badge, Card, Group, Stack, Text, ThemeIcon, Title, Tooltip, VisuallyHidden } from '@mantine/core';
import type { ReactNode } from 'react';
import { IconClockHour4, IconRuler2, IconServer } from '@tabler/icons-react';
import { formatDuration, sizeRange } from '../../lib/format';
import { describeLease, type TemplateSummary } from '../../lib/template';

export interface TemplateCardProps {
  template: TemplateSummary;
  /** Service name to description, for the services' tooltips. */
  services: Map<string, string>;
}

/** TemplateCard is one cluster template in the gallery. */
export function TemplateCard({ template: t, services }: TemplateCardProps) {
  const lease = describeLease(t.lease, formatDuration);
  const optional = t.compatibleServices.filter((s) => !t.services.includes(s));
  return (
    <Card
      withBorder
      radius="md"
      padding="lg"
      component="article"
      aria-labelledby={`template-${t.name}`}
      data-template={t.name}
    >
      <Stack gap="sm" h="100%">
        <div>
          <Title order={2} fz="lg" id={`template-${t.name}`}>
            {t.label}
          </Title>
          {t.label !== t.name && (
            <Text size="xs" c="dimmed" ff="monospace">
              {t.name}
            </Text>
          )}
        </div>
        <Text size="sm" c={t.description ? undefined : 'dimmed'}>
          {t.description || 'No description.'}
        </Text>
        <div>
          <Text size="xs" fw={600} c="dimmed" tt="uppercase" lts={0.4} mb={6}>
            Services
          </Text>
          <Group gap={6}>
            {t.services.length === 0 && (
              <Text size="sm" c="dimmed">
                chosen at create
              </Text>
            )}
            {t.services.map((s) => (
              <ServiceBadge key={s} name={s} description={services.get(s)} />
            ))}
            {optional.map((s) => (
              <ServiceBadge key={s} name={s} description={services.get(s)} optional />
            ))}
          </Group>
        </div>
        <Stack gap={6} mt="auto" component="ul" p={0} m={0} style={{ listStyle: 'none' }}>
          <Fact icon={<IconRuler2 size={16} />} label="Size">
            {sizeRange(t.size.min, t.size.max)}
          </Fact>
          <Fact icon={<IconClockHour4 size={16} />} label="Lease">
            {lease.join(', ')}
          </Fact>
          {(t.provider || t.hardwaretype || t.imagetype) && (
            <Fact icon={<IconServer size={16} />} label="Machines">
              {[t.provider && `on ${t.provider}`, t.hardwaretype, t.imagetype].filter(Boolean).join(' · ')}
            </Fact>
          )}
        </Stack>
        {(t.extends || t.includes.length > 0) && (
          <Text size="xs" c="dimmed">
            Builds on {[t.extends, ...t.includes].filter(Boolean).join(', ')}: what those add is not shown here.
          </Text>
        )}
      </Stack>
    </Card>
  );
}

function Fact({ icon, label, children }: { icon: ReactNode; label: string; children: ReactNode }) {
  return (
    <Group component="li" gap="xs" wrap="nowrap" align="flex-start">
      <ThemeIcon variant="light" color="gray" size={22} radius="sm" aria-hidden>
        {icon}
      </ThemeIcon>
      <Text size="sm" lh={1.45} pt={1}>
        <VisuallyHidden>{label}: </VisuallyHidden>
        {children}
      </Text>
    </Group>
  );
}

function ServiceBadge({
  name,
  description,
  optional,
}: {
  name: string;
  description?: string | undefined;
  optional?: boolean;
}) {
  const badge = (
    <Badge variant={optional ? 'outline' : 'light'} color={optional ? 'gray' : 'blue'} tt="none" fw={500}>
      {name}
      {optional ? ' (optional)' : ''}
    </Badge>
  );
  if (!description) return badge;
  return (
    <Tooltip label={description} multiline w={280} withArrow>
      {badge}
    </Tooltip>
  );
}
