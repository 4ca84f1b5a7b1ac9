// The sign-in endpoint (docs/ui.md#sign-in-and-sessions): POST exchanges an
// API token for an HttpOnly session cookie, GET says who the cookie acts
// as, DELETE ends the session on the server. The page never sees the
// cookie; every request it makes carries CSRF_HEADERS.
import { type ApiError, fromResponseBody, networkError } from '../lib/errors';

/** Every request the UI makes carries this header: the server refuses cookie requests without it. */
export const CSRF_HEADERS: Readonly<Record<string, string>> = { 'X-Coopr-CSRF': '1' };

export interface Who {
  user: string;
  tenant: string;
  role: 'USER' | 'ADMIN';
  superadmin: boolean;
  expiresAt: string;
}

/** SessionError carries the API's errors of a failed sign-in or sign-out. */
export class SessionError extends Error {
  constructor(readonly errors: ApiError[]) {
    super(errors.map((e) => e.message).join('; '));
  }
}

async function call(method: 'GET' | 'POST' | 'DELETE', body?: unknown): Promise<Response> {
  try {
    return await fetch('/auth/session', {
      method,
      credentials: 'same-origin',
      headers: { ...CSRF_HEADERS, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (e) {
    throw new SessionError([networkError(e)]);
  }
}

async function failure(resp: Response): Promise<SessionError> {
  let body: unknown = null;
  try {
    body = await resp.json();
  } catch {
    // not JSON: fromResponseBody names the status
  }
  return new SessionError(fromResponseBody(resp.status, body));
}

/** currentSession is who the cookie acts as, or null when there is no live session. */
export async function currentSession(): Promise<Who | null> {
  const resp = await call('GET');
  if (resp.status === 401) return null;
  if (!resp.ok) throw await failure(resp);
  return (await resp.json()) as Who;
}

export async function signIn(token: string): Promise<Who> {
  const resp = await call('POST', { token });
  if (!resp.ok) throw await failure(resp);
  return (await resp.json()) as Who;
}

export async function signOut(): Promise<void> {
  const resp = await call('DELETE');
  if (!resp.ok) throw await failure(resp);
}
