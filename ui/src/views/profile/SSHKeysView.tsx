// The signed-in user's SSH public keys: listed, added, removed. A change
// reaches the nodes of the user's live clusters by an update SSH keys job
// on each, which the page says after it.
import { Alert, Anchor, Button, Group, Paper, Stack, Table, Text, TextInput, Textarea, Title } from '@mantine/core';
import { IconKey } from '@tabler/icons-react';
import { useState } from 'react';
import { Link } from 'react-router';
import { useClient, useMutation, useQuery } from 'urql';
import { ConfirmButton } from '../../components/admin/ConfirmButton';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { Loading } from '../../components/atomic/Loading';
import { PageHeader } from '../../components/atomic/PageHeader';
import { TimeText } from '../../components/atomic/TimeText';
import { useSession } from '../../components/auth/session';
import { graphql } from '../../gql';
import { type ApiError, fromCombinedError, splitFieldErrors } from '../../lib/errors';
import { liveClusterCount } from '../../lib/sshKeys';

const SSHKeysDocument = graphql(`
  query MySSHKeys {
    me {
      sshKeys {
        id
        name
        type
        fingerprint
        createdAt
      }
    }
  }
`);

const AddSSHKeyDocument = graphql(`
  mutation AddSSHKey($publicKey: String!, $name: String) {
    addSSHKey(publicKey: $publicKey, name: $name) {
      id
    }
  }
`);

const RemoveSSHKeyDocument = graphql(`
  mutation RemoveSSHKey($id: ID!) {
    removeSSHKey(id: $id)
  }
`);

const LiveClustersDocument = graphql(`
  query MyLiveClusters {
    clusters(first: 200, status: [ACTIVE, INCONSISTENT]) {
      nodes {
        id
        owner
      }
      hasNextPage
    }
  }
`);

export function Component() {
  const { who } = useSession();
  const client = useClient();
  const [{ data, error, fetching }, refetch] = useQuery({ query: SSHKeysDocument });
  const [addState, add] = useMutation(AddSSHKeyDocument);
  const [, remove] = useMutation(RemoveSSHKeyDocument);
  const [publicKey, setPublicKey] = useState('');
  const [name, setName] = useState('');
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<ApiError[]>([]);
  const [updating, setUpdating] = useState<string | null>(null);

  // What a change starts: an update SSH keys job on each of one's live clusters.
  const tellUpdates = async (what: string) => {
    const r = await client.query(LiveClustersDocument, {}, { requestPolicy: 'network-only' }).toPromise();
    const n = r.data ? liveClusterCount(r.data.clusters.nodes, who.user, r.data.clusters.hasNextPage) : null;
    setUpdating(n === null ? `${what}.` : `${what}: updating the keys on ${n}.`);
  };

  if (error) return <ApiErrorAlert error={error} title="Loading your SSH keys failed" />;
  if (!data && fetching) return <Loading label="Loading your SSH keys…" />;
  const keys = data?.me.sshKeys ?? [];
  return (
    <>
      <PageHeader
        title="SSH keys"
        description="The keys that let you log in to the nodes of your clusters, as the cluster page's SSH command does."
      />
      <Stack>
        {updating && (
          <Alert
            color="blue"
            variant="light"
            data-testid="ssh-key-updates"
            withCloseButton
            closeButtonLabel="Dismiss"
            onClose={() => setUpdating(null)}
          >
            {updating} Each gets an update SSH keys job;{' '}
            <Anchor component={Link} to="/clusters" inherit c="inherit" underline="always">
              your clusters
            </Anchor>{' '}
            list them under Jobs.
          </Alert>
        )}
        <Paper withBorder radius="md" p="md">
          <Stack>
            <Title order={2} fz="lg">
              Your keys
            </Title>
            {keys.length === 0 ? (
              <Text size="sm" c="dimmed">
                No keys yet: add one below to log in to your nodes.
              </Text>
            ) : (
              <Table verticalSpacing="xs" data-testid="ssh-key-table">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Fingerprint</Table.Th>
                    <Table.Th>Added</Table.Th>
                    <Table.Th>Action</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {keys.map((k) => (
                    <Table.Tr key={k.id} data-ssh-key={k.name}>
                      <Table.Td>{k.name}</Table.Td>
                      <Table.Td ff="monospace">
                        {k.type} {k.fingerprint}
                      </Table.Td>
                      <Table.Td>
                        <TimeText iso={k.createdAt} size="sm" />
                      </Table.Td>
                      <Table.Td>
                        <ConfirmButton
                          size="xs"
                          variant="light"
                          color="red"
                          aria-label={`Remove ${k.name}`}
                          title={`Remove ${k.name}?`}
                          message="The key no longer lets you in: it is taken off the nodes of your live clusters."
                          confirm="Remove"
                          onConfirm={async () => {
                            setErrors([]);
                            const r = await remove({ id: k.id });
                            if (r.error) return setErrors(fromCombinedError(r.error));
                            refetch({ requestPolicy: 'network-only' });
                            await tellUpdates(`Removed ${k.name}`);
                          }}
                        >
                          Remove
                        </ConfirmButton>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )}
            <ApiErrorAlert error={errors} title="The key was not changed" />
            <form
              onSubmit={async (e) => {
                e.preventDefault();
                setErrors([]);
                setFieldErrors({});
                const r = await add({ publicKey: publicKey.trim(), name: name.trim() || null });
                if (r.error) {
                  const { byField, rest } = splitFieldErrors(fromCombinedError(r.error), {
                    fields: ['publicKey', 'name'],
                  });
                  setFieldErrors(byField);
                  return setErrors(rest);
                }
                setPublicKey('');
                setName('');
                refetch({ requestPolicy: 'network-only' });
                await tellUpdates('Added the key');
              }}
            >
              <Stack gap="xs">
                <Textarea
                  label="Public key"
                  description="One line of a .pub file, e.g. the contents of ~/.ssh/id_ed25519.pub"
                  autosize
                  minRows={2}
                  value={publicKey}
                  error={fieldErrors.publicKey}
                  onChange={(e) => setPublicKey(e.currentTarget.value)}
                />
                <Group align="flex-end">
                  <TextInput
                    label="Name"
                    placeholder="the key's comment"
                    value={name}
                    error={fieldErrors.name}
                    onChange={(e) => setName(e.currentTarget.value)}
                  />
                  <Button
                    type="submit"
                    leftSection={<IconKey size={16} />}
                    loading={addState.fetching}
                    disabled={publicKey.trim() === ''}
                  >
                    Add key
                  </Button>
                </Group>
              </Stack>
            </form>
          </Stack>
        </Paper>
      </Stack>
    </>
  );
}
