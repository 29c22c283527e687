// The impersonation session a request acts in, for the work the api does on the caller's behalf
// with the service role (ledger calls, stored images, provider bookkeeping): every such call made
// while handling a request with an impersonation token carries the x-impersonation-session
// header, so the database attributes its writes to the session (and refuses them once it has
// ended) exactly as it does for the token's own writes. Set once by the credential middleware;
// async context follows the request into every await and every promise it starts.
import { AsyncLocalStorage } from 'node:async_hooks'
import type { Claims } from './jwt.ts'

/** Honoured by the database from the service role only (private.impersonation_context). */
export const IMPERSONATION_HEADER = 'x-impersonation-session'

const acting = new AsyncLocalStorage<string>()

/** The session id of an impersonation token's claims, or null for any other token. */
export function impersonationSessionOf(claims: Claims): string | null {
  const session = claims.impersonation_session
  return typeof session === 'string' && session ? session : null
}

/** Runs fn (the rest of a request) as acting for the session. */
export function actingFor<T>(session: string, fn: () => T): T {
  return acting.run(session, fn)
}

/** The header to add to a service-role call made for the current request ({} outside a session). */
export function impersonationHeaders(): Record<string, string> {
  const session = acting.getStore()
  return session ? { [IMPERSONATION_HEADER]: session } : {}
}

/** fetch that adds the current request's session header: for clients that use the service role. */
export const fetchActingFor: typeof fetch = (input, init) => {
  const extra = impersonationHeaders()
  if (!Object.keys(extra).length) return fetch(input, init)
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined))
  for (const [k, v] of Object.entries(extra)) headers.set(k, v)
  return fetch(input, { ...init, headers })
}
