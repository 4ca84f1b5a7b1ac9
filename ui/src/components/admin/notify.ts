import { notifications } from '@mantine/notifications';

/**
 * notify says briefly that something was done. Message only: a titled
 * notification's text is too faint for axe's contrast rule, and the close
 * button needs a name.
 */
export function notify(message: string) {
  notifications.show({ color: 'green', message, closeButtonProps: { 'aria-label': 'Close' } });
}
