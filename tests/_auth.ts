// Shared pieces for the Auth tests (tests/auth_*_test.ts): supabase-js clients as an app sets
// them up, the local inbox's Mailpit-like API, and fresh addresses.
import postgres from 'postgres'
import { createClient, type SupabaseClient } from '@supabase/supabase-js'
import { ANON_KEY, API_URL, env, SERVICE_ROLE_KEY } from './_helpers.ts'

export const INBOX_URL = env('INBOX_URL')

/** A client exactly as an app creates it (sessions kept in memory, no timers left running). */
export function appClient(flowType: 'implicit' | 'pkce' = 'implicit'): SupabaseClient {
  return createClient(API_URL, ANON_KEY, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false, flowType },
  })
}

/** The service-role client a server uses for supabase.auth.admin.*. */
export function adminClient(): SupabaseClient {
  return createClient(API_URL, SERVICE_ROLE_KEY, { auth: { persistSession: false, autoRefreshToken: false } })
}

export const freshEmail = (prefix = 'auth') => `${prefix}-${crypto.randomUUID().slice(0, 8)}@test.local`

/**
 * The Auth stand-in's own tables (local_auth) as it reaches them, as their owner
 * supabase_auth_admin: postgres, which the tests' `sql` is, may not (nor on hosted).
 */
const authDbUrl = new URL(env('SUPABASE_DB_URL'))
authDbUrl.username = 'supabase_auth_admin'
export const authStandInSql = postgres(authDbUrl.toString(), { max: 1, onnotice: () => {}, idle_timeout: 5 })

/** Forgets Auth's rate-limit counters, so one test's sign-ups do not count against the next. */
export async function resetAuthRateLimits() {
  await authStandInSql`delete from local_auth.rate_limit_hits`
}

export interface InboxMessage {
  ID: string
  Subject: string
  To: { Address: string }[]
  HTML: string
  Text: string
}

/** The newest e-mails to an address, newest first, read through the inbox's HTTP API. */
export async function mailsTo(address: string): Promise<InboxMessage[]> {
  const res = await fetch(`${INBOX_URL}/api/v1/search?query=${encodeURIComponent(`to:"${address}"`)}`)
  if (!res.ok) throw new Error(`inbox search: ${res.status}`)
  const list = await res.json()
  const out: InboxMessage[] = []
  for (const m of list.messages) out.push(await (await fetch(`${INBOX_URL}/api/v1/message/${m.ID}`)).json())
  return out
}

export async function lastMailTo(address: string, subject?: string): Promise<InboxMessage> {
  const mails = (await mailsTo(address)).filter((m) => !subject || m.Subject === subject)
  if (!mails.length) throw new Error(`no e-mail${subject ? ` "${subject}"` : ''} to ${address}`)
  return mails[0]
}

/** The link in an e-mail (GoTrue's {{ .ConfirmationURL }}). */
export const linkIn = (m: InboxMessage) => m.HTML.match(/href="([^"]+)"/)![1].replace(/&amp;/g, '&')

/** The code in an e-mail ({{ .Token }}). */
export const codeIn = (m: InboxMessage) => m.HTML.match(/enter the code: (\d+)/)![1]

/** Opens an e-mail link as a browser would and returns where it redirects, with its fragment. */
export async function followLink(link: string) {
  const res = await fetch(link, { redirect: 'manual' })
  await res.body?.cancel()
  const location = res.headers.get('location') ?? ''
  const [beforeFragment, fragment = ''] = location.split('#')
  const [base, query = ''] = beforeFragment.split('?')
  return {
    status: res.status,
    base,
    params: Object.fromEntries(new URLSearchParams(fragment)), // the implicit flow's tokens
    query: Object.fromEntries(new URLSearchParams(query)), // the PKCE flow's ?code=
  }
}

/** Decodes a JWT's claims (no verification: the tests check what Auth put in them). */
export function claimsOf(jwt: string): Record<string, any> {
  const part = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')
  return JSON.parse(atob(part + '='.repeat((4 - (part.length % 4)) % 4)))
}
