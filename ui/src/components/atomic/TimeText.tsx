import { Text, type TextProps, Tooltip } from '@mantine/core';
import { useEffect, useState } from 'react';
import { formatDateTime, formatRelative, relativeRefresh } from '../../lib/format';

/** useNow is the time, updated every interval ms, for relative times that stay true. */
export function useNow(interval = 30_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), interval);
    return () => clearInterval(t);
  }, [interval]);
  return now;
}

/** useRelativeNow is the time, updated as often as iso's relative text can change. */
function useRelativeNow(iso: string): number {
  const [tick, setTick] = useState(() => ({ iso, now: Date.now() }));
  if (tick.iso !== iso) {
    // A new time reads against the clock now, not the last tick of the
    // old one, which may be a minute back.
    setTick({ iso, now: Date.now() });
  }
  const now = tick.now;
  useEffect(() => {
    const t = setTimeout(() => setTick({ iso, now: Date.now() }), relativeRefresh(iso, now));
    return () => clearTimeout(t);
  }, [iso, now]);
  return now;
}

export interface TimeTextProps extends TextProps {
  iso: string;
}

/** TimeText shows a time relative to now ("in 3 hours"), the exact time on hover. */
export function TimeText({ iso, ...props }: TimeTextProps) {
  const now = useRelativeNow(iso);
  return (
    <Tooltip label={formatDateTime(iso)} withArrow openDelay={300}>
      <Text component="time" dateTime={iso} size="sm" {...props}>
        {formatRelative(iso, now)}
      </Text>
    </Tooltip>
  );
}
