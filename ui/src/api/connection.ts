// The state of the live connection (the GraphQL websocket), for the top
// bar's indicator and for views that re-read what they show after a
// reconnect (a subscription's first event after one is a fresh SNAPSHOT,
// but a query's result may have gone stale meanwhile).
import { useEffect, useRef, useSyncExternalStore } from 'react';

export type ConnectionState = 'connecting' | 'connected' | 'reconnecting';

export class ConnectionStatus {
  private state: ConnectionState = 'connecting';
  /** How many times the connection came back after it was lost. */
  private reconnects = 0;
  private readonly listeners = new Set<() => void>();

  get = (): ConnectionState => this.state;
  reconnected = (): number => this.reconnects;

  subscribe = (l: () => void): (() => void) => {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  };

  set(state: ConnectionState, wasRetry = false): void {
    if (state === 'connected' && wasRetry) this.reconnects++;
    if (state === this.state && !(state === 'connected' && wasRetry)) return;
    this.state = state;
    for (const l of this.listeners) l();
  }
}

/** useConnectionState is the live connection's state, re-rendering on change. */
export function useConnectionState(status: ConnectionStatus): ConnectionState {
  return useSyncExternalStore(status.subscribe, status.get);
}

/** useOnReconnect calls f each time the live connection comes back after a loss. */
export function useOnReconnect(status: ConnectionStatus, f: () => void): void {
  const n = useSyncExternalStore(status.subscribe, status.reconnected);
  const first = useRef(n);
  const latest = useRef(f);
  latest.current = f;
  useEffect(() => {
    if (n !== first.current) latest.current();
  }, [n]);
}
