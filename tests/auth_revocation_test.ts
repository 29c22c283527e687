// What ends access, through supabase-js: a banned user gets no session or auth code by any
// e-mailed code or link (every verify type, the PKCE exchange); a password change signs out
// the user's other sessions (all of them when an admin sets it) and voids pending e-mailed
// links; an e-mail change code is matched by its hash, so another user's pending change to
// the same address neither blocks it nor is completed in its place.
import { strict as assert } from 'node:assert'
import { sql, test } from './_helpers.ts'
import {
  adminClient,
  appClient,
  codeIn,
  followLink,
  freshEmail,
  lastMailTo,
  linkIn,
  resetAuthRateLimits,
} from './_auth.ts'

const PASSWORD = 'correct horse'
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** Waits out [auth.email] max_frequency (1 s) between two e-mails of one kind to one user. */
const nextMail = () => pause(1100)

async function confirmedUser(prefix: string) {
  const email = freshEmail(prefix)
  const { data, error } = await adminClient().auth.admin.createUser({
    email,
    password: PASSWORD,
    email_confirm: true,
  })
  assert.equal(error, null)
  return { email, id: data.user!.id }
}

const sessionsOf = async (id: string) =>
  (await sql`select count(*)::int as n from auth.sessions where user_id = ${id}`)[0].n

test('a banned user gets no session from e-mail codes or links (every type) nor from a PKCE code', async () => {
  await resetAuthRateLimits()
  const admin = adminClient()
  const { email, id } = await confirmedUser('banned')

  // An auth code obtained before the ban.
  const pkce = appClient('pkce')
  assert.equal((await pkce.auth.signInWithOtp({ email, options: { shouldCreateUser: false } })).error, null)
  const beforeBan = await followLink(linkIn(await lastMailTo(email, 'Your Magic Link')))
  assert.ok(beforeBan.query.code)

  assert.equal((await admin.auth.admin.updateUserById(id, { ban_duration: '24h' })).error, null)
  const exchanged = await pkce.auth.exchangeCodeForSession(beforeBan.query.code)
  assert.equal(exchanged.error?.code, 'user_banned')
  assert.equal(exchanged.error?.status, 403)

  // Magic link / e-mail code: GoTrue still sends it (as hosted does); using it is refused.
  await nextMail()
  const client = appClient()
  assert.equal((await client.auth.signInWithOtp({ email, options: { shouldCreateUser: false } })).error, null)
  const magic = await lastMailTo(email, 'Your Magic Link')
  for (const type of ['email', 'magiclink'] as const) {
    const byCode = await client.auth.verifyOtp({ email, token: codeIn(magic), type })
    assert.equal(byCode.error?.code, 'user_banned', type)
    assert.equal(byCode.error?.status, 403)
    assert.equal(byCode.data.session, null)
  }
  const hash = new URL(linkIn(magic)).searchParams.get('token')!
  const byHash = await client.auth.verifyOtp({ token_hash: hash, type: 'magiclink' })
  assert.equal(byHash.error?.code, 'user_banned')
  const link = await followLink(linkIn(magic))
  assert.equal(link.params.error_code, 'user_banned')
  assert.equal(link.params.access_token, undefined)

  // A PKCE link gives no auth code either.
  await nextMail()
  assert.equal((await pkce.auth.signInWithOtp({ email, options: { shouldCreateUser: false } })).error, null)
  const pkceLink = await followLink(linkIn(await lastMailTo(email, 'Your Magic Link')))
  assert.equal(pkceLink.params.error_code, 'user_banned')
  assert.equal(pkceLink.query.code, undefined)

  // Recovery: the link and the code.
  await nextMail()
  assert.equal((await client.auth.resetPasswordForEmail(email)).error, null)
  const recovery = await lastMailTo(email, 'Reset Your Password')
  assert.equal(
    (await client.auth.verifyOtp({ email, token: codeIn(recovery), type: 'recovery' })).error?.code,
    'user_banned',
  )
  const recoveryLink = await followLink(linkIn(recovery))
  assert.equal(recoveryLink.params.error_code, 'user_banned')
  assert.equal(recoveryLink.params.access_token, undefined)

  // E-mail change (a code to the new address).
  const newEmail = freshEmail('banned-new')
  const change = await admin.auth.admin.generateLink({ type: 'email_change_new', email, newEmail })
  assert.equal(change.error, null)
  const changed = await client.auth.verifyOtp({
    email: newEmail,
    token: change.data.properties!.email_otp,
    type: 'email_change',
  })
  assert.equal(changed.error?.code, 'user_banned')
  assert.equal((await sql`select email from auth.users where id = ${id}`)[0].email, email)

  // Sign-up confirmation and invitation of a banned, unconfirmed user.
  const pending = freshEmail('banned-signup')
  const signupLink = await admin.auth.admin.generateLink({
    type: 'signup',
    email: pending,
    password: PASSWORD,
  })
  const pendingId = signupLink.data.user!.id
  await admin.auth.admin.updateUserById(pendingId, { ban_duration: '24h' })
  const confirmed = await client.auth.verifyOtp({
    email: pending,
    token: signupLink.data.properties!.email_otp,
    type: 'signup',
  })
  assert.equal(confirmed.error?.code, 'user_banned')
  const invited = freshEmail('banned-invite')
  const invite = await admin.auth.admin.generateLink({ type: 'invite', email: invited })
  await admin.auth.admin.updateUserById(invite.data.user!.id, { ban_duration: '24h' })
  assert.equal((await followLink(invite.data.properties!.action_link)).params.error_code, 'user_banned')

  assert.equal(await sessionsOf(id), 0)
  assert.equal(await sessionsOf(pendingId), 0)
  assert.equal(await sessionsOf(invite.data.user!.id), 0)
  assert.equal(
    (await sql`select email_confirmed_at from auth.users where id = ${pendingId}`)[0].email_confirmed_at,
    null,
    'nothing of a refused verify is kept',
  )

  // Lifted: the same code works again.
  await admin.auth.admin.updateUserById(id, { ban_duration: 'none' })
  const lifted = await client.auth.verifyOtp({ email, token: codeIn(recovery), type: 'recovery' })
  assert.equal(lifted.error, null)
  assert.equal(lifted.data.user?.id, id)
})

test("updateUser({password}) signs out the user's other sessions and voids pending e-mailed links", async () => {
  await resetAuthRateLimits()
  const { email, id } = await confirmedUser('pw-change')
  const here = appClient()
  const stolen = appClient()
  assert.equal((await here.auth.signInWithPassword({ email, password: PASSWORD })).error, null)
  const { data: stolenSignIn } = await stolen.auth.signInWithPassword({ email, password: PASSWORD })
  const stolenAccess = stolenSignIn.session!.access_token
  assert.equal((await appClient().auth.resetPasswordForEmail(email)).error, null)
  const recovery = await lastMailTo(email, 'Reset Your Password')

  assert.equal((await here.auth.updateUser({ password: 'battery staple' })).error, null)

  const refused = await stolen.auth.refreshSession()
  assert.equal(refused.error?.code, 'refresh_token_not_found')
  assert.equal(refused.data.session, null)
  const access = await appClient().auth.getUser(stolenAccess)
  // auth-js reports Auth's 403 session_not_found as AuthSessionMissingError.
  assert.equal(access.error?.name, 'AuthSessionMissingError', 'its access token is refused by Auth too')
  assert.equal(access.data.user, null)
  // The session that changed it goes on.
  const kept = await here.auth.refreshSession()
  assert.equal(kept.error, null)
  assert.equal((await here.auth.getUser()).data.user?.id, id)
  assert.equal(await sessionsOf(id), 1)

  const link = await followLink(linkIn(recovery))
  assert.equal(link.params.error_code, 'otp_expired')
  assert.equal(link.params.access_token, undefined)
  const code = await appClient().auth.verifyOtp({ email, token: codeIn(recovery), type: 'recovery' })
  assert.equal(code.error?.code, 'otp_expired')
  const [row] = await sql`select recovery_token, recovery_sent_at from auth.users where id = ${id}`
  assert.deepEqual({ ...row }, { recovery_token: '', recovery_sent_at: null })
})

test('admin.updateUserById with a password signs out every session and voids pending links', async () => {
  await resetAuthRateLimits()
  const admin = adminClient()
  const { email, id } = await confirmedUser('pw-admin')
  const a = appClient()
  const b = appClient()
  assert.equal((await a.auth.signInWithPassword({ email, password: PASSWORD })).error, null)
  assert.equal((await b.auth.signInWithPassword({ email, password: PASSWORD })).error, null)
  assert.equal((await a.auth.resetPasswordForEmail(email)).error, null)
  const recovery = await lastMailTo(email, 'Reset Your Password')
  const newEmail = freshEmail('pw-admin-new')
  assert.equal((await a.auth.updateUser({ email: newEmail })).error, null)
  const changeCode = codeIn(await lastMailTo(newEmail, 'Confirm Email Change'))

  // Metadata alone signs nobody out.
  assert.equal((await admin.auth.admin.updateUserById(id, { user_metadata: { n: 1 } })).error, null)
  assert.equal(await sessionsOf(id), 2)

  assert.equal((await admin.auth.admin.updateUserById(id, { password: 'battery staple' })).error, null)
  for (const client of [a, b]) {
    assert.equal((await client.auth.refreshSession()).error?.code, 'refresh_token_not_found')
  }
  assert.equal(await sessionsOf(id), 0)
  assert.equal((await followLink(linkIn(recovery))).params.error_code, 'otp_expired')
  const change = await appClient().auth.verifyOtp({
    email: newEmail,
    token: changeCode,
    type: 'email_change',
  })
  assert.equal(change.error?.code, 'otp_expired')
  assert.equal((await appClient().auth.signInWithPassword({ email, password: 'battery staple' })).error, null)
})

test("e-mail change codes: another user's pending change to the same address does not block it; a taken address is email_exists", async () => {
  await resetAuthRateLimits()
  const victim = await confirmedUser('ec-victim')
  const other = await confirmedUser('ec-other')
  const target = freshEmail('ec-target')
  const v = appClient()
  const o = appClient()
  await v.auth.signInWithPassword({ email: victim.email, password: PASSWORD })
  await o.auth.signInWithPassword({ email: other.email, password: PASSWORD })

  // The other user's change is asked for first: theirs is the row a lookup by address finds first.
  assert.equal((await o.auth.updateUser({ email: target })).error, null)
  const otherNew = codeIn(await lastMailTo(target, 'Confirm Email Change'))
  const otherCurrent = codeIn(await lastMailTo(other.email, 'Confirm Email Change'))
  assert.equal((await v.auth.updateUser({ email: target })).error, null)
  const victimNew = codeIn(await lastMailTo(target, 'Confirm Email Change'))
  const victimCurrent = codeIn(await lastMailTo(victim.email, 'Confirm Email Change'))

  // Each code is its own user's, whoever else has the address pending.
  const half = await appClient().auth.verifyOtp({ email: target, token: victimNew, type: 'email_change' })
  assert.equal(half.error, null)
  const [vRow] = await sql`select email_change_token_new, email_change_confirm_status from auth.users
                           where id = ${victim.id}`
  assert.deepEqual({ ...vRow }, { email_change_token_new: '', email_change_confirm_status: 1 })

  // The other user completes first: the address is theirs.
  assert.equal(
    (await appClient().auth.verifyOtp({ email: target, token: otherNew, type: 'email_change' })).error,
    null,
  )
  const done = await appClient().auth.verifyOtp({
    email: other.email,
    token: otherCurrent,
    type: 'email_change',
  })
  assert.equal(done.error, null)
  assert.equal(done.data.user?.email, target)

  // The victim's last code now answers GoTrue's email_exists, not a server error.
  const late = await appClient().auth.verifyOtp({
    email: victim.email,
    token: victimCurrent,
    type: 'email_change',
  })
  assert.equal(late.error?.code, 'email_exists')
  assert.equal(late.error?.status, 422)
  assert.equal((await sql`select email from auth.users where id = ${victim.id}`)[0].email, victim.email)
})
