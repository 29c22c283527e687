// What the e-mail tests (tests/email_*_test.ts) share: verified senders, sending, and what the
// local Resend server received and the log recorded.
import { api, createUser, env, sql, type TestUser } from './_helpers.ts'

export async function verifiedUser(o: { superAdmin?: boolean } = {}): Promise<TestUser> {
  const user = await createUser(o)
  await sql`update auth.users set email_confirmed_at = now() where id = ${user.id}`
  return user
}

export const send = (user: TestUser, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  api('/api/email/send', { token: user.token, body, headers })

export const mailTo = (to: string, o: Record<string, unknown> = {}) => ({
  to,
  subject: 'Your weekly summary',
  text: 'Hello there',
  ...o,
})

export async function resendControl<T = any>(path: string, body?: unknown): Promise<T> {
  const res = await fetch(
    `${env('RESEND_BASE_URL')}/__control/${path}`,
    body === undefined ? {} : {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    },
  )
  return await res.json()
}
export const sentTo = (address: string) => resendControl<any[]>(`sent?to=${encodeURIComponent(address)}`)
export const logged = async (userId: string) =>
  [...await sql`select to_address, subject, provider_id, status, error from public.email_messages where user_id = ${userId} order by created_at, id`]
    .map((r) => ({ ...r }))
