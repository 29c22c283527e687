// PostgREST clients. userDb() carries the caller's token so RLS decides; serviceDb() is for
// work no user is the caller of (jobs, webhooks, checked super-admin operations), and for the
// bookkeeping the api does on a caller's behalf: inside a request made with an impersonation
// token it sends the session's header, so those writes are audited as the session's too.
// userDb() calls also carry /api's write pass: the request was counted against the caller's write
// rate limit once, by the credential middleware (write_limit.ts), so PostgREST does not count it again.
// A PostgrestClient (the REST part of supabase-js) is cheap to make per request.
import { PostgrestClient } from '@supabase/postgrest-js'
import type { Database } from './database.ts'
import { optionalEnv, requiredEnv } from './env.ts'
import { fetchActingFor } from './impersonation.ts'
import { fetchWithWritePass } from './write_limit.ts'

/** A client of the public schema, typed by the migrated database (database.ts). */
export type Db = PostgrestClient<Database>

/** PostgREST's address: SUPABASE_URL/rest/v1, unless SUPABASE_REST_URL names a closer one. */
function restUrl() {
  return optionalEnv('SUPABASE_REST_URL') ?? `${requiredEnv('SUPABASE_URL')}/rest/v1`
}

/** What a request as the caller carries: the anon key and the caller's token. */
const userHeaders = (token: string) => ({ apikey: requiredEnv('SUPABASE_ANON_KEY'), Authorization: `Bearer ${token}` })

export function userDb(token: string): Db {
  return new PostgrestClient<Database>(restUrl(), { headers: userHeaders(token), fetch: fetchWithWritePass })
}

/**
 * An RPC as the caller, its reply left unread: a large reply (the sync pull) can be streamed
 * through instead of parsed. The same credentials and write pass as userDb().
 */
export function userRpcResponse(token: string, fn: string, args: Record<string, unknown>): Promise<Response> {
  return fetchWithWritePass(`${restUrl()}/rpc/${fn}`, {
    method: 'POST',
    headers: { ...userHeaders(token), 'content-type': 'application/json' },
    body: JSON.stringify(args),
  })
}

let service: Db | undefined
export function serviceDb(): Db {
  const key = requiredEnv('SUPABASE_SERVICE_ROLE_KEY')
  service ??= new PostgrestClient<Database>(restUrl(), {
    headers: { apikey: key, Authorization: `Bearer ${key}` },
    fetch: fetchActingFor,
  })
  return service
}

/**
 * The RPC arguments that have a value: for SQL functions whose omitted arguments default to
 * null. PostgREST then reads, binds and plans only those (about 0.05 ms less on the feed).
 */
export function givenArgs(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined && v !== null))
}
