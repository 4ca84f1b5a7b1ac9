// One signed-in session's API clients: urql for queries and mutations over
// HTTP, and graphql-ws (graphql-transport-ws) for subscriptions. Both are
// authenticated by the session cookie; a new session gets new clients (and
// an empty cache).
import { Client, cacheExchange, fetchExchange, mapExchange, subscriptionExchange } from '@urql/core';
import { type Client as WsClient, createClient as createWsClient } from 'graphql-ws';
import { ConnectionStatus } from './connection';
import { CSRF_HEADERS } from './session';

export interface Api {
  client: Client;
  status: ConnectionStatus;
  dispose(): void;
}

/** The server closes a websocket whose session ended with 4403 (forbidden). */
const sessionEndedCode = 4403;

/**
 * reconnectDelay backs off from half a second to ten seconds, with jitter
 * so that every open tab does not come back at the same instant after a
 * server restart.
 */
export function reconnectDelay(retries: number, random: () => number = Math.random): number {
  return Math.min(10_000, 500 * 2 ** retries) * (0.75 + random() / 2);
}

function isCloseEvent(e: unknown): e is { code: number } {
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'number';
}

export function createApi(onSessionEnded: () => void): Api {
  const status = new ConnectionStatus();
  const ws: WsClient = createWsClient({
    url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`,
    // Connected all the time, not only while something subscribes, so the
    // indicator tells the truth and a lost server is noticed at once.
    lazy: false,
    retryAttempts: Infinity,
    shouldRetry: (e) => !(isCloseEvent(e) && e.code === sessionEndedCode),
    retryWait: (retries) => new Promise((r) => setTimeout(r, reconnectDelay(retries))),
    keepAlive: 10_000,
    onNonLazyError: () => {
      // Only a fatal close ends the retries: the session ended (below).
    },
    on: {
      connected: (_socket, _payload, wasRetry) => status.set('connected', wasRetry),
      closed: (e) => {
        if (isCloseEvent(e) && e.code === sessionEndedCode) {
          onSessionEnded();
          return;
        }
        status.set('reconnecting');
      },
    },
  });
  const client = new Client({
    url: '/graphql',
    // POST for everything: the server wants the CSRF header on every cookie
    // request, and POST bodies keep variables out of logs.
    preferGetMethod: false,
    fetchOptions: { credentials: 'same-origin', headers: { ...CSRF_HEADERS } },
    requestPolicy: 'cache-and-network',
    exchanges: [
      mapExchange({
        onError(error) {
          if (error.graphQLErrors.some((g) => g.extensions?.code === 'UNAUTHENTICATED')) onSessionEnded();
        },
      }),
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription(request) {
          const input = { ...request, query: request.query ?? '' };
          return {
            subscribe(sink) {
              return { unsubscribe: ws.subscribe(input, sink) };
            },
          };
        },
      }),
    ],
  });
  return {
    client,
    status,
    dispose() {
      void ws.dispose();
    },
  };
}
