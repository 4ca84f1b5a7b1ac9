import { Alert, Anchor, Button, Center, Code, Paper, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { IconInfoCircle } from '@tabler/icons-react';
import { useState } from 'react';
import { Navigate, useSearchParams } from 'react-router';
import { SessionError } from '../../api/session';
import { ApiErrorAlert } from '../../components/atomic/ApiErrorAlert';
import { useSessionContext } from '../../components/auth/session';
import { Logo } from '../../components/layout/Logo';
import type { ApiError } from '../../lib/errors';
import { safeNext } from '../../lib/navigation';

export function Component() {
  const { state, signIn } = useSessionContext();
  const [search] = useSearchParams();
  const [errors, setErrors] = useState<ApiError[]>([]);
  const form = useForm({
    initialValues: { token: '' },
    validate: { token: (v) => (v.trim() === '' ? 'Paste an API token' : null) },
  });
  if (state.status === 'signedIn') return <Navigate to={safeNext(search.get('next'))} replace />;

  const submit = form.onSubmit(async ({ token }) => {
    setErrors([]);
    try {
      await signIn(token.trim());
    } catch (e) {
      const errs = e instanceof SessionError ? e.errors : [];
      // A refused token is the field's fault; anything else goes above.
      const onField = errs.filter(
        (x) => x.code === 'UNAUTHENTICATED' || (x.code === 'FORBIDDEN' && /token/.test(x.message)),
      );
      if (onField.length > 0) form.setFieldError('token', onField.map((x) => x.message).join('; '));
      setErrors(errs.filter((x) => !onField.includes(x)));
    }
  });

  return (
    <Center component="main" mih="100vh" p="md" bg="var(--mantine-color-body)">
      <Stack w={420} gap="lg">
        <Center>
          <Logo size={36} />
        </Center>
        <Paper withBorder shadow="sm" radius="md" p="xl">
          <form onSubmit={submit} noValidate>
            <Stack gap="md">
              <div>
                <Title order={1} fz={22}>
                  Sign in
                </Title>
                <Text size="sm" c="dimmed" mt={4}>
                  Paste one of your API tokens. coopr keeps you signed in with a cookie; the token stays yours.
                </Text>
              </div>
              {state.status === 'signedOut' && state.reason && (
                <Alert color="blue" variant="light" icon={<IconInfoCircle size={18} />}>
                  {state.reason}
                </Alert>
              )}
              <ApiErrorAlert error={errors} />
              <PasswordInput
                label="API token"
                placeholder="coopr_…"
                autoComplete="off"
                spellCheck={false}
                data-autofocus
                autoFocus
                {...form.getInputProps('token')}
              />
              <Button type="submit" loading={form.submitting} fullWidth>
                Sign in
              </Button>
            </Stack>
          </form>
        </Paper>
        <Text size="xs" c="dimmed" ta="center">
          No token? An admin of your tenant makes one for you; the first comes from <Code>coopr token create</Code>.{' '}
          <Anchor href="/playground" size="xs" underline="always">
            GraphQL playground
          </Anchor>
        </Text>
      </Stack>
    </Center>
  );
}
