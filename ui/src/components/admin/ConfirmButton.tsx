import { Button, type ButtonProps, Group, Modal, Stack, Text } from '@mantine/core';
import { type ReactNode, useState } from 'react';

export interface ConfirmButtonProps extends ButtonProps {
  /** The dialog's title, e.g. "Delete provider pool?". */
  title: string;
  /** What will happen, said plainly. */
  message: ReactNode;
  /** The confirming button's label, e.g. "Delete". */
  confirm: string;
  onConfirm: () => Promise<unknown> | void;
  children: ReactNode;
}

/** ConfirmButton asks before doing something that cannot be undone. */
export function ConfirmButton({ title, message, confirm, onConfirm, children, ...props }: ConfirmButtonProps) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  return (
    <>
      <Button {...props} onClick={() => setOpen(true)}>
        {children}
      </Button>
      <Modal
        opened={open}
        onClose={() => setOpen(false)}
        title={title}
        centered
        // Locking the page's scroll injects a <style> without the page's nonce.
        lockScroll={false}
        closeButtonProps={{ 'aria-label': 'Close' }}
      >
        <Stack>
          <Text size="sm">{message}</Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setOpen(false)}>
              Cancel
            </Button>
            <Button
              color="red"
              loading={busy}
              onClick={async () => {
                setBusy(true);
                try {
                  await onConfirm();
                } finally {
                  setBusy(false);
                  setOpen(false);
                }
              }}
            >
              {confirm}
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}
