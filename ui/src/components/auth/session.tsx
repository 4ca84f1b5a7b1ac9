// The signed-in session, for every component: who is signed in, the
// session's API clients, and sign-in and sign-out. The session comes from
// the cookie at load (GET /auth/session); it ends when the user signs out,
// or when the server says it has (UNAUTHENTICATED, or the websocket closed
// with 4403), and the app then shows the sign-in page with a reason.
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useRef, useState } from 'react';
import { type Api, createApi } from '../../api/client';
import {
  currentSession,
  SessionError,
  signIn as postSignIn,
  signOut as deleteSession,
  type Who,
} from '../../api/session';
import type { ApiError } from '../../lib/errors';

export type SessionState =
  | { status: 'loading' }
  | { status: 'failed'; errors: ApiError[] }
  /** signedOut: reason says why the session ended when the user did not end it. */
  | { status: 'signedOut'; reason?: string; byUser?: boolean }
  | { status: 'signedIn'; who: Who; api: Api };

interface SessionContextValue {
  state: SessionState;
  signIn(token: string): Promise<void>;
  signOut(): Promise<void>;
  retry(): void;
}

const SessionContext = createContext<SessionContextValue | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<SessionState>({ status: 'loading' });
  const current = useRef<Api | null>(null);
  // While the user signs out, the server ends the session's websocket
  // (4403) before the sign-out's answer arrives: that is not a session
  // lost, and must not send the next sign-in back to this page.
  const signingOut = useRef(false);

  const ended = useCallback((reason?: string, byUser = false) => {
    current.current?.dispose();
    current.current = null;
    setState({ status: 'signedOut', ...(reason ? { reason } : {}), ...(byUser ? { byUser } : {}) });
  }, []);

  const start = useCallback(
    (who: Who) => {
      current.current?.dispose();
      let over = false;
      // A disposed session's clients may still report (a socket's close or
      // a request's answer already on its way): only the current one ends
      // the session.
      const api: Api = createApi(() => {
        if (over || signingOut.current || current.current !== api) return;
        over = true;
        ended('Your session has ended. Sign in again to go on.');
      });
      current.current = api;
      setState({ status: 'signedIn', who, api });
    },
    [ended],
  );

  const load = useCallback(() => {
    setState({ status: 'loading' });
    currentSession().then(
      (who) => (who ? start(who) : ended()),
      (e: unknown) => setState({ status: 'failed', errors: e instanceof SessionError ? e.errors : [] }),
    );
  }, [start, ended]);

  useEffect(() => {
    load();
    return () => current.current?.dispose();
  }, [load]);

  const value = useMemo<SessionContextValue>(
    () => ({
      state,
      signIn: async (token) => start(await postSignIn(token)),
      signOut: async () => {
        signingOut.current = true;
        try {
          await deleteSession();
          ended(undefined, true);
        } finally {
          signingOut.current = false;
        }
      },
      retry: load,
    }),
    [state, start, ended, load],
  );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSessionContext(): SessionContextValue {
  const v = useContext(SessionContext);
  if (!v) throw new Error('useSessionContext outside SessionProvider');
  return v;
}

/** useSession is the signed-in session; only for components under the signed-in layout. */
export function useSession(): { who: Who; api: Api; signOut(): Promise<void> } {
  const { state, signOut } = useSessionContext();
  if (state.status !== 'signedIn') throw new Error('useSession while not signed in');
  return { who: state.who, api: state.api, signOut };
}

/** useIsAdmin: tenant admins (and the superadmin) see the admin views. */
export function useIsAdmin(): boolean {
  return useSession().who.role === 'ADMIN';
}
