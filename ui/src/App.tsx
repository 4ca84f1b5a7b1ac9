import { MantineProvider } from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { RouterProvider } from 'react-router/dom';
import { SessionProvider } from './components/auth/session';
import { router } from './routes';
import { cssVariables, styleNonce, theme } from './theme';

const nonce = styleNonce();

export function App() {
  return (
    <MantineProvider
      theme={theme}
      cssVariablesResolver={cssVariables}
      defaultColorScheme="auto"
      getStyleNonce={() => nonce}
    >
      <Notifications position="top-right" />
      <SessionProvider>
        <RouterProvider router={router} />
      </SessionProvider>
    </MantineProvider>
  );
}
