import { Badge, Loader, Tooltip } from '@mantine/core';
import { useConnectionState } from '../../api/connection';
import { useSession } from '../auth/session';

/**
 * ConnectionIndicator says whether the views are live: the websocket that
 * carries every subscription is up, coming up, or down and retrying (with
 * backoff; subscriptions resume by themselves when it is back).
 */
export function ConnectionIndicator() {
  const { api } = useSession();
  const state = useConnectionState(api.status);
  const view = {
    connected: { color: 'teal', text: 'Live', tip: 'Views update as things change.' },
    connecting: { color: 'gray', text: 'Connecting…', tip: 'Opening the live connection to the server.' },
    reconnecting: {
      color: 'red',
      text: 'Disconnected — reconnecting…',
      tip: 'The live connection to the server was lost; what you see may be out of date until it is back.',
    },
  }[state];
  return (
    <Tooltip label={view.tip} withArrow multiline w={260}>
      <Badge
        role="status"
        aria-live="polite"
        data-connection={state}
        variant={state === 'reconnecting' ? 'filled' : 'light'}
        color={view.color}
        size="lg"
        radius="sm"
        tt="none"
        fw={500}
        leftSection={
          state === 'connected' ? (
            <span
              aria-hidden
              style={{
                display: 'block',
                width: 8,
                height: 8,
                borderRadius: 4,
                background: 'var(--mantine-color-teal-6)',
              }}
            />
          ) : (
            <Loader size={10} color={state === 'reconnecting' ? 'white' : 'gray'} aria-hidden />
          )
        }
      >
        {view.text}
      </Badge>
    </Tooltip>
  );
}
