// The tenant's users and API tokens. A new token's secret is shown once,
// here, and never again: coopr keeps only its hash.
import {
  Alert,
  Badge,
  Button,
  Code,
  CopyButton,
  Group,
  Modal,
  Paper,
  Select,
  Stack,
  Switch,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { IconKey, IconUserPlus } from '@tabler/icons-react';
import { useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { ConfirmButton } from '../../components/admin/ConfirmButton';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { Loading } from '../../components/atomic/Loading';
import { PageHeader } from '../../components/atomic/PageHeader';
import { TimeText } from '../../components/atomic/TimeText';
import { useSession } from '../../components/auth/session';
import { graphql } from '../../gql';
import type { Role } from '../../gql/graphql';
import { type ApiError, fromCombinedError, splitFieldErrors } from '../../lib/errors';

const UsersDocument = graphql(`
  query AdminUsers {
    users {
      name
      role
      createdAt
    }
    me {
      tenant {
        id
        adminSSHKeys
      }
    }
    apiTokens {
      id
      name
      kind
      user
      createdAt
      lastUsedAt
      revokedAt
    }
  }
`);

const SetAdminSSHKeysDocument = graphql(`
  mutation AdminSetTenantAdminSSHKeys($enabled: Boolean!) {
    setTenantAdminSSHKeys(enabled: $enabled) {
      id
      adminSSHKeys
    }
  }
`);

/**
 * The tenant's adminSSHKeys switch: the tenant admins' SSH keys let in on
 * every cluster of the tenant. A change starts a key update on every live
 * cluster, which the description says.
 */
function AdminSSHKeys({ enabled }: { enabled: boolean }) {
  const [state, set] = useMutation(SetAdminSSHKeysDocument);
  const [err, setErr] = useState<ApiError[]>([]);
  return (
    <Stack gap="xs">
      <Switch
        label="Let the tenant admins' SSH keys in on every cluster"
        description="Beside each cluster owner's keys. Changing this updates the keys on every active or inconsistent cluster of the tenant (an update SSH keys job on each)."
        checked={enabled}
        disabled={state.fetching}
        data-testid="admin-ssh-keys"
        onChange={async (e) => {
          setErr([]);
          const r = await set({ enabled: e.currentTarget.checked });
          if (r.error) setErr(fromCombinedError(r.error));
        }}
      />
      <ApiErrorAlert error={err} title="Not changed" />
    </Stack>
  );
}

const CreateUserDocument = graphql(`
  mutation AdminCreateUser($name: String!, $role: Role!) {
    createUser(name: $name, role: $role) {
      name
      role
      createdAt
    }
  }
`);

const CreateTokenDocument = graphql(`
  mutation AdminCreateToken($input: APITokenInput!) {
    createAPIToken(input: $input) {
      token {
        id
        name
        kind
        user
        createdAt
        lastUsedAt
        revokedAt
      }
      secret
    }
  }
`);

const RevokeTokenDocument = graphql(`
  mutation AdminRevokeToken($id: ID!) {
    revokeAPIToken(id: $id)
  }
`);

function NewUser() {
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('USER');
  const [{ fetching }, create] = useMutation(CreateUserDocument);
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<ApiError[]>([]);
  return (
    <form
      onSubmit={async (e) => {
        e.preventDefault();
        const r = await create({ name, role }, { additionalTypenames: ['User'] });
        if (r.error) {
          const { byField, rest } = splitFieldErrors(fromCombinedError(r.error), { fields: ['name', 'role'] });
          setFieldErrors(byField);
          setErrors(rest);
          return;
        }
        setFieldErrors({});
        setErrors([]);
        setName('');
      }}
    >
      <Stack gap="xs">
        <Group align="flex-start">
          <TextInput
            label="New user"
            placeholder="name"
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            error={fieldErrors.name}
          />
          <Select
            label="Role"
            data={[
              { value: 'USER', label: 'User' },
              { value: 'ADMIN', label: 'Tenant admin' },
            ]}
            value={role}
            onChange={(v) => v && setRole(v as Role)}
            allowDeselect={false}
            w={160}
          />
          <Button type="submit" mt={25} loading={fetching} disabled={!name} leftSection={<IconUserPlus size={16} />}>
            Add user
          </Button>
        </Group>
        <ApiErrorAlert error={errors} title="Not added" />
      </Stack>
    </form>
  );
}

function NewToken({ users, me }: { users: string[]; me: string }) {
  const [name, setName] = useState('');
  const [user, setUser] = useState(me);
  const [{ fetching }, create] = useMutation(CreateTokenDocument);
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<ApiError[]>([]);
  const [secret, setSecret] = useState<{ name: string; user: string; secret: string }>();
  return (
    <>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const r = await create({ input: { name, user } }, { additionalTypenames: ['APIToken'] });
          if (r.error || !r.data) {
            const { byField, rest } = splitFieldErrors(r.error ? fromCombinedError(r.error) : [], {
              prefix: 'input.',
              fields: ['name', 'user'],
            });
            setFieldErrors(byField);
            setErrors(rest);
            return;
          }
          setFieldErrors({});
          setErrors([]);
          setName('');
          setSecret({ name, user, secret: r.data.createAPIToken.secret });
        }}
      >
        <Stack gap="xs">
          <Group align="flex-start">
            <TextInput
              label="New token"
              placeholder="what it is for, e.g. laptop"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              error={fieldErrors.name}
            />
            <Select
              label="For user"
              data={users}
              value={user}
              onChange={(v) => v && setUser(v)}
              allowDeselect={false}
              searchable
              w={180}
              error={fieldErrors.user}
            />
            <Button type="submit" mt={25} loading={fetching} disabled={!name} leftSection={<IconKey size={16} />}>
              Create token
            </Button>
          </Group>
          <ApiErrorAlert error={errors} title="No token made" />
        </Stack>
      </form>
      <Modal
        opened={!!secret}
        onClose={() => setSecret(undefined)}
        title="Copy the new token now"
        centered
        size="lg"
        lockScroll={false}
        closeButtonProps={{ 'aria-label': 'Close' }}
      >
        {secret && (
          <Stack>
            <Alert color="orange" variant="light" title="Shown once">
              This is the only time coopr shows the token {secret.name} for {secret.user}: it keeps only a hash. Copy it
              now; if it is lost, revoke it and make another.
            </Alert>
            <Code block data-testid="new-token-secret" style={{ wordBreak: 'break-all', whiteSpace: 'pre-wrap' }}>
              {secret.secret}
            </Code>
            <Group justify="flex-end">
              <CopyButton value={secret.secret}>
                {({ copied, copy }) => (
                  <Button variant="light" onClick={copy}>
                    {copied ? 'Copied' : 'Copy'}
                  </Button>
                )}
              </CopyButton>
              <Button onClick={() => setSecret(undefined)}>Done</Button>
            </Group>
          </Stack>
        )}
      </Modal>
    </>
  );
}

export function Component() {
  const { who } = useSession();
  const [{ data, error, fetching }] = useQuery({ query: UsersDocument });
  const [, revoke] = useMutation(RevokeTokenDocument);
  const [revokeErrors, setRevokeErrors] = useState<ApiError[]>([]);
  if (error) return <ApiErrorAlert error={error} title="Loading users failed" />;
  if (!data && fetching) return <Loading label="Loading users…" />;
  const users = data?.users ?? [];
  const tokens = data?.apiTokens ?? [];
  return (
    <>
      <PageHeader
        title="Users and tokens"
        description={`The people of ${who.tenant} and the API tokens they sign in and script with.`}
      />
      <Stack>
        <Paper withBorder radius="md" p="md">
          <Stack>
            <Title order={2} fz="lg">
              Users
            </Title>
            <Table verticalSpacing="xs" data-testid="user-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Role</Table.Th>
                  <Table.Th>Since</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {users.map((u) => (
                  <Table.Tr key={u.name} data-user={u.name}>
                    <Table.Td ff="monospace">{u.name}</Table.Td>
                    <Table.Td>
                      <Badge variant="light" color={u.role === 'ADMIN' ? 'grape' : 'gray'} tt="none">
                        {u.role === 'ADMIN' ? 'tenant admin' : 'user'}
                      </Badge>
                    </Table.Td>
                    <Table.Td>
                      <TimeText iso={u.createdAt} size="sm" />
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
            <NewUser />
          </Stack>
        </Paper>
        <Paper withBorder radius="md" p="md">
          <Stack>
            <Title order={2} fz="lg">
              SSH access to clusters
            </Title>
            <AdminSSHKeys enabled={data?.me.tenant.adminSSHKeys ?? false} />
          </Stack>
        </Paper>
        <Paper withBorder radius="md" p="md">
          <Stack>
            <Title order={2} fz="lg">
              API tokens
            </Title>
            <ApiErrorAlert error={revokeErrors} title="Not revoked" />
            <Table.ScrollContainer minWidth={700}>
              <Table verticalSpacing="xs" data-testid="token-table">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>User</Table.Th>
                    <Table.Th>Made</Table.Th>
                    <Table.Th>Last used</Table.Th>
                    <Table.Th>State</Table.Th>
                    <Table.Th>
                      <Text span size="sm" fw={700}>
                        Action
                      </Text>
                    </Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {tokens.map((t) => (
                    <Table.Tr key={t.id} data-token={`${t.user ?? 'agent'}/${t.name}`} data-revoked={!!t.revokedAt}>
                      <Table.Td>{t.name}</Table.Td>
                      <Table.Td ff="monospace">{t.user ?? 'agent'}</Table.Td>
                      <Table.Td>
                        <TimeText iso={t.createdAt} size="sm" />
                      </Table.Td>
                      <Table.Td>
                        {t.lastUsedAt ? (
                          <TimeText iso={t.lastUsedAt} size="sm" />
                        ) : (
                          <Text size="sm" c="dimmed">
                            never
                          </Text>
                        )}
                      </Table.Td>
                      <Table.Td>
                        <Badge variant="light" color={t.revokedAt ? 'red' : 'teal'} tt="none">
                          {t.revokedAt ? 'revoked' : 'active'}
                        </Badge>
                      </Table.Td>
                      <Table.Td>
                        {!t.revokedAt && (
                          <ConfirmButton
                            size="compact-sm"
                            variant="light"
                            color="red"
                            aria-label={`Revoke ${t.name} of ${t.user ?? 'agent'}`}
                            title={`Revoke ${t.name}?`}
                            message={`The token stops working at once, and every session signed in with it ends.`}
                            confirm="Revoke"
                            onConfirm={async () => {
                              const r = await revoke({ id: t.id }, { additionalTypenames: ['APIToken'] });
                              setRevokeErrors(r.error ? fromCombinedError(r.error) : []);
                            }}
                          >
                            Revoke
                          </ConfirmButton>
                        )}
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <NewToken users={users.map((u) => u.name)} me={who.user} />
          </Stack>
        </Paper>
      </Stack>
    </>
  );
}
