// The e-mail flows through supabase-js and the local inbox: magic link and e-mail code
// (signInWithOtp + verifyOtp), password recovery, e-mail change (both addresses confirm),
// an anonymous user adding an address, resend; and the inbox's page and API.
import { strict as assert } from 'node:assert'
import { sql, test } from './_helpers.ts'
import {
  appClient,
  claimsOf,
  codeIn,
  followLink,
  freshEmail,
  INBOX_URL,
  lastMailTo,
  linkIn,
  mailsTo,
  resetAuthRateLimits,
} from './_auth.ts'

async function confirmedUser(password = 'correct horse') {
  await resetAuthRateLimits()
  const email = freshEmail('mail')
  const { data } = await appClient().auth.signUp({ email, password })
  await followLink(linkIn(await lastMailTo(email)))
  return { email, id: data.user!.id, password }
}

test('signInWithOtp + verifyOtp: the e-mailed code signs in; a wrong or reused code is otp_expired', async () => {
  const { email, id } = await confirmedUser()
  const client = appClient()
  const sent = await client.auth.signInWithOtp({ email })
  assert.equal(sent.error, null)
  assert.equal(sent.data.session, null)
  const mail = await lastMailTo(email, 'Your Magic Link')
  const code = codeIn(mail)
  assert.match(code, /^\d{6}$/, 'otp_length 6')

  const wrong = await client.auth.verifyOtp({
    email,
    token: code === '000000' ? '111111' : '000000',
    type: 'email',
  })
  assert.equal(wrong.error?.code, 'otp_expired')
  assert.equal(wrong.error?.status, 403)

  const { data, error } = await client.auth.verifyOtp({ email, token: code, type: 'email' })
  assert.equal(error, null)
  assert.equal(data.user?.id, id)
  assert.equal(claimsOf(data.session!.access_token).amr[0].method, 'otp')
  assert.equal((await client.auth.getUser()).data.user?.id, id)

  const reused = await appClient().auth.verifyOtp({ email, token: code, type: 'email' })
  assert.equal(reused.error?.code, 'otp_expired')
})

test('magic link: the link signs in and redirects to an allowed redirect_to; a foreign one falls back to site_url', async () => {
  const { email } = await confirmedUser()
  await appClient().auth.signInWithOtp({
    email,
    options: { emailRedirectTo: 'http://localhost:3000/welcome' },
  })
  const link = linkIn(await lastMailTo(email, 'Your Magic Link'))
  const out = await followLink(link)
  assert.equal(out.base, 'http://localhost:3000/welcome')
  assert.equal(out.params.type, 'magiclink')
  assert.ok(out.params.access_token)

  await new Promise((r) => setTimeout(r, 1100)) // [auth.email] max_frequency = 1s
  await appClient().auth.signInWithOtp({ email, options: { emailRedirectTo: 'https://evil.example/steal' } })
  const foreign = await followLink(linkIn(await lastMailTo(email, 'Your Magic Link')))
  assert.equal(
    foreign.base,
    'http://127.0.0.1:3000',
    'never to a site outside site_url and additional_redirect_urls',
  )
})

test('signInWithOtp for a new address signs it up (confirmation e-mail); shouldCreateUser false refuses', async () => {
  await resetAuthRateLimits()
  const email = freshEmail('otp-new')
  const client = appClient()
  assert.equal(
    (await client.auth.signInWithOtp({ email, options: { data: { full_name: 'Otp New' } } })).error,
    null,
  )
  const mail = await lastMailTo(email, 'Confirm Your Signup')
  const { data, error } = await client.auth.verifyOtp({ email, token: codeIn(mail), type: 'email' })
  assert.equal(error, null)
  assert.ok(data.user?.email_confirmed_at)
  const [p] = await sql`select full_name, drops_balance from public.profiles where id = ${data.user!.id}`
  assert.deepEqual({ ...p }, { full_name: 'Otp New', drops_balance: 50 })

  const refused = await appClient().auth.signInWithOtp({
    email: freshEmail('otp-none'),
    options: { shouldCreateUser: false },
  })
  assert.equal(refused.error?.code, 'otp_disabled')
  assert.equal(refused.error?.status, 422)
})

test('resetPasswordForEmail: the recovery link signs in (PASSWORD_RECOVERY type) and updateUser sets the new password', async () => {
  const { email } = await confirmedUser()
  const client = appClient()
  assert.equal(
    (await client.auth.resetPasswordForEmail(email, { redirectTo: 'http://localhost:3000/reset' })).error,
    null,
  )
  const mail = await lastMailTo(email, 'Reset Your Password')
  const out = await followLink(linkIn(mail))
  assert.equal(out.base, 'http://localhost:3000/reset')
  assert.equal(out.params.type, 'recovery')
  await client.auth.setSession({
    access_token: out.params.access_token,
    refresh_token: out.params.refresh_token,
  })
  assert.equal((await client.auth.updateUser({ password: 'battery staple' })).error, null)
  assert.equal((await appClient().auth.signInWithPassword({ email, password: 'battery staple' })).error, null)

  // An unknown address gets the same answer and no e-mail (no account discovery).
  const stranger = freshEmail('nobody')
  assert.equal((await appClient().auth.resetPasswordForEmail(stranger)).error, null)
  assert.deepEqual(await mailsTo(stranger), [])
})

test('e-mail change: both the current and the new address confirm; then the address changes', async () => {
  const { email, password, id } = await confirmedUser()
  const client = appClient()
  await client.auth.signInWithPassword({ email, password })
  const newEmail = freshEmail('changed')
  const { data, error } = await client.auth.updateUser({ email: newEmail })
  assert.equal(error, null)
  assert.equal(data.user?.email, email, 'unchanged until confirmed')
  assert.equal(data.user?.new_email, newEmail)

  const toNew = await lastMailTo(newEmail, 'Confirm Email Change')
  const toOld = await lastMailTo(email, 'Confirm Email Change')
  const half = await followLink(linkIn(toNew))
  assert.match(half.params.message, /proceed to confirm link sent to the other email/)
  assert.equal((await sql`select email from auth.users where id = ${id}`)[0].email, email)

  const done = await followLink(linkIn(toOld))
  assert.equal(done.params.type, 'email_change')
  const [row] = await sql`select email, email_change from auth.users where id = ${id}`
  assert.deepEqual({ ...row }, { email: newEmail, email_change: '' })
  assert.equal((await appClient().auth.signInWithPassword({ email: newEmail, password })).error, null)

  const taken = await client.auth.updateUser({ email: (await confirmedUser()).email })
  assert.equal(taken.error?.code, 'email_exists')
})

test('an anonymous user adds an e-mail: one confirmation to the new address, then it is a regular user', async () => {
  await resetAuthRateLimits()
  const client = appClient()
  const { data: anon } = await client.auth.signInAnonymously()
  const email = freshEmail('upgrade')
  assert.equal((await client.auth.updateUser({ email })).error, null)
  const mail = await lastMailTo(email, 'Confirm Email Change')
  const { data, error } = await client.auth.verifyOtp({ email, token: codeIn(mail), type: 'email_change' })
  assert.equal(error, null)
  assert.equal(data.user?.id, anon.user!.id)
  assert.equal(data.user?.is_anonymous, false)
  assert.equal(data.user?.email, email)
  assert.equal(claimsOf(data.session!.access_token).is_anonymous, false)
  assert.deepEqual(data.user?.app_metadata, { provider: 'email', providers: ['email'] })
  assert.equal(data.user?.identities?.[0]?.provider, 'email')
  assert.equal((await client.auth.updateUser({ password: 'correct horse' })).error, null)
  assert.equal((await appClient().auth.signInWithPassword({ email, password: 'correct horse' })).error, null)
})

test('resend sends a new sign-up code; e-mails to one user are spaced by max_frequency', async () => {
  await resetAuthRateLimits()
  const email = freshEmail('resend')
  const client = appClient()
  await client.auth.signUp({ email, password: 'correct horse' })
  const tooSoon = await client.auth.resend({ type: 'signup', email })
  assert.equal(tooSoon.error?.code, 'over_email_send_rate_limit')
  assert.equal(tooSoon.error?.status, 429)
  await new Promise((r) => setTimeout(r, 1100))
  assert.equal((await client.auth.resend({ type: 'signup', email })).error, null)
  const mails = await mailsTo(email)
  assert.equal(mails.length, 2)
  assert.notEqual(codeIn(mails[0]), codeIn(mails[1]))
  // Only the newest code works.
  const old = await client.auth.verifyOtp({ email, token: codeIn(mails[1]), type: 'signup' })
  assert.equal(old.error?.code, 'otp_expired')
  assert.equal((await client.auth.verifyOtp({ email, token: codeIn(mails[0]), type: 'signup' })).error, null)
})

test('the inbox: a page for the browser, Mailpit-like JSON to list, read, search and delete', async () => {
  await resetAuthRateLimits()
  const email = freshEmail('inbox')
  await appClient().auth.signUp({ email, password: 'correct horse' })
  const page = await fetch(`${INBOX_URL}/`)
  assert.match(page.headers.get('content-type') ?? '', /text\/html/)
  const html = await page.text()
  assert.ok(html.includes(email), 'the page lists the e-mail')
  const list = await (await fetch(`${INBOX_URL}/api/v1/messages?limit=5`)).json()
  assert.ok(list.total >= 1)
  assert.ok(list.messages.length <= 5)
  const mine = list.messages.find((m: any) => m.To[0].Address === email)
  assert.equal(mine.Subject, 'Confirm Your Signup')
  const full = await (await fetch(`${INBOX_URL}/api/v1/message/${mine.ID}`)).json()
  assert.match(full.HTML, /\/auth\/v1\/verify\?token=[0-9a-f]{56}&amp;type=signup/)
  assert.match(full.Text, /Confirm your mail/)
  assert.equal(full.Read, true)
  const del = await fetch(`${INBOX_URL}/api/v1/messages`, {
    method: 'DELETE',
    body: JSON.stringify({ IDs: [mine.ID] }),
  })
  await del.body?.cancel()
  assert.deepEqual(await mailsTo(email), [])
  const missing = await fetch(`${INBOX_URL}/api/v1/message/${mine.ID}`)
  await missing.body?.cancel()
  assert.equal(missing.status, 404)
})

test('PKCE (flowType pkce, as @supabase/ssr): links redirect with ?code=, exchangeCodeForSession signs in', async () => {
  await resetAuthRateLimits()
  const client = appClient('pkce')
  const email = freshEmail('pkce')
  const up = await client.auth.signUp({
    email,
    password: 'correct horse',
    options: { emailRedirectTo: 'http://localhost:3000/callback' },
  })
  assert.equal(up.error, null)
  const link = linkIn(await lastMailTo(email, 'Confirm Your Signup'))
  assert.match(link, /token=pkce_[0-9a-f]{56}/)
  const out = await followLink(link)
  assert.equal(out.base, 'http://localhost:3000/callback')
  assert.deepEqual(out.params, {}, 'no tokens in the URL')
  assert.ok(out.query.code)

  // Only the client holding the code verifier can trade the code.
  const thief = await appClient('pkce').auth.exchangeCodeForSession(out.query.code)
  assert.equal(thief.error?.code, 'validation_failed')
  const raw = await fetch(`${Deno.env.get('SUPABASE_URL')}/auth/v1/token?grant_type=pkce`, {
    method: 'POST',
    headers: {
      apikey: Deno.env.get('SUPABASE_ANON_KEY')!,
      'content-type': 'application/json',
      'x-supabase-api-version': '2024-01-01',
    },
    body: JSON.stringify({ auth_code: out.query.code, code_verifier: 'x'.repeat(43) }),
  })
  assert.equal(raw.status, 400)
  assert.equal((await raw.json()).code, 'bad_code_verifier')

  const { data, error } = await client.auth.exchangeCodeForSession(out.query.code)
  assert.equal(error, null)
  assert.equal(data.user?.email, email)
  assert.ok(data.user?.email_confirmed_at)
  assert.equal((await client.auth.getUser()).data.user?.id, up.data.user!.id)
  const again = await appClient('pkce').auth.exchangeCodeForSession(out.query.code)
  assert.ok(again.error, 'a code is used once')

  // Recovery in the PKCE flow: the code exchange reports the recovery.
  await client.auth.signOut()
  await client.auth.resetPasswordForEmail(email, { redirectTo: 'http://localhost:3000/reset' })
  const rec = await followLink(linkIn(await lastMailTo(email, 'Reset Your Password')))
  const exchanged = await client.auth.exchangeCodeForSession(rec.query.code)
  assert.equal(exchanged.error, null)
  assert.equal((exchanged.data as { redirectType?: string }).redirectType, 'PASSWORD_RECOVERY')
  assert.equal((await client.auth.updateUser({ password: 'battery staple' })).error, null)
})
