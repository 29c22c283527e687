// Invitations by e-mail (docs/invitations.md), as each kind of user: the inviter (organization
// owner, team admin), the invitee with and without an account (signing up from the link through
// the Auth stand-in), a stranger, a member of another organization; bad input, 409, 410, the
// daily limit, no enumeration, the e-mail in the Resend fake and the inviter's notification.
import { strict as assert } from 'node:assert'
import { withApi } from './_api_process.ts'
import { appClient, followLink, lastMailTo, linkIn, resetAuthRateLimits } from './_auth.ts'
import { sentTo, verifiedUser } from './_email.ts'
import {
  API_URL,
  ANON_KEY,
  api,
  assertError,
  clientAs,
  createUser,
  orgWith,
  sql,
  teamWith,
  test,
  type TestUser,
} from './_helpers.ts'

const freshAddress = (prefix = 'invitee') => `${prefix}-${crypto.randomUUID().slice(0, 8)}@test.local`
const inviteToOrg = (owner: TestUser, orgId: string, body: unknown) =>
  api(`/api/organizations/${orgId}/invitations`, { token: owner.token, body })
const inviteToTeam = (admin: TestUser, teamId: string, body: unknown) =>
  api(`/api/teams/${teamId}/invitations`, { token: admin.token, body })

/** The token in the newest invitation e-mail to an address (and the link it came in). */
async function tokenSentTo(address: string) {
  const mails = await sentTo(address)
  assert.ok(mails.length, `an invitation e-mail to ${address}`)
  const link = mails.at(-1).text.match(/https?:\/\/\S+/)![0] as string
  return { link, token: new URL(link).searchParams.get('token')!, mail: mails.at(-1) }
}

const accept = (user: TestUser, token: string) =>
  api(`/api/invitations/${token}/accept`, { method: 'POST', token: user.token })
const decline = (user: TestUser, token: string) =>
  api(`/api/invitations/${token}/decline`, { method: 'POST', token: user.token })
const roleIn = async (orgId: string, userId: string) =>
  (await sql`select role from public.organization_members where org_id = ${orgId} and user_id = ${userId}`)[0]?.role
const invitationRows = async (orgId: string) =>
  (await sql`select email, status from public.invitations where org_id = ${orgId} order by created_at`).map((r) => ({
    ...r,
  }))

test('an owner invites an address: the e-mail carries the link, the reply never the token; the invitee accepts and the inviter is told', async () => {
  const owner = await verifiedUser()
  await sql`update public.profiles set full_name = 'Olive Owner' where id = ${owner.id}`
  const orgId = await orgWith(owner)
  const invitee = await verifiedUser()
  const res = await inviteToOrg(owner, orgId, { email: invitee.email.toUpperCase(), role: 'admin' })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.equal(res.body.invitation.email, invitee.email, 'stored lower case')
  assert.equal(res.body.invitation.role, 'admin')
  assert.ok(!JSON.stringify(res.body).includes('token'), 'the token goes only by e-mail')
  const days = (Date.parse(res.body.invitation.expires_at) - Date.now()) / 86_400_000
  assert.ok(days > 6.99 && days <= 7, 'expires after 7 days')

  const { link, token, mail } = await tokenSentTo(invitee.email)
  assert.ok(link.startsWith('http://127.0.0.1:3000/invitations/accept?token='), link)
  assert.match(mail.subject, /Olive Owner invited you/)
  assert.ok(mail.html.includes(link.replace(/&/g, '&amp;')))
  const [{ token_hash }] = await sql`select encode(token_hash, 'hex') as token_hash from public.invitations where id = ${res.body.invitation.id}`
  assert.notEqual(token_hash, token, 'stored hashed')

  // The list (owners), never with the token; PostgREST refuses the hash column.
  const list = await api(`/api/organizations/${orgId}/invitations`, { token: owner.token })
  assert.equal(list.status, 200)
  assert.deepEqual(list.body.invitations.map((i: any) => [i.email, i.inviter_name]), [[invitee.email, 'Olive Owner']])
  assert.equal((await clientAs(owner.token).from('invitations').select('token_hash')).error?.code, '42501')

  // Anyone holding the token reads what the e-mail said, signed in or not.
  const details = await api(`/api/invitations/${token}`)
  assert.equal(details.status, 200)
  assert.equal(details.body.inviter_name, 'Olive Owner')
  assert.equal(details.body.team_name, null)
  assert.equal(details.body.email, invitee.email)
  assert.deepEqual(Object.keys(details.body).sort(), [
    'add_to_organization',
    'email',
    'expires_at',
    'inviter_name',
    'organization_name',
    'role',
    'team_name',
  ])
  const anon = await clientAs().rpc('invitation_details', { token })
  assert.equal(anon.error, null)
  assert.equal(anon.data[0].organization_name, details.body.organization_name)

  const accepted = await accept(invitee, token)
  assert.equal(accepted.status, 200, JSON.stringify(accepted.body))
  assert.deepEqual(accepted.body, { status: 'accepted', org_id: orgId, team_id: null, role: 'admin' })
  assert.equal(await roleIn(orgId, invitee.id), 'admin')
  const told = await clientAs(owner.token).from('notifications').select('type, payload').eq('type', 'invitation.accepted')
  assert.equal(told.data?.length, 1)
  assert.equal(told.data![0].payload.by, invitee.id)
  assert.equal(told.data![0].payload.organization_id, orgId)

  // Single use: the link is now a 410 for everyone, in words.
  assertError(await accept(invitee, token), 410, 'already been used')
  assertError(await api(`/api/invitations/${token}`), 410, 'already been used')
  assert.deepEqual((await api(`/api/organizations/${orgId}/invitations`, { token: owner.token })).body.invitations, [])
})

test('an invitee without an account signs up from the link (emailRedirectTo), confirms, signs in and accepts', async () => {
  await resetAuthRateLimits()
  const owner = await verifiedUser()
  const orgId = await orgWith(owner)
  const address = freshAddress('newcomer')
  assert.equal((await inviteToOrg(owner, orgId, { email: address, role: 'member' })).status, 201)
  const { link, token } = await tokenSentTo(address)
  const appLink = link.replace('127.0.0.1', 'localhost') // an allowed redirect (config.toml)

  const client = appClient()
  const up = await client.auth.signUp({
    email: address,
    password: 'correct horse',
    options: { emailRedirectTo: appLink },
  })
  assert.equal(up.error, null)
  const back = await followLink(linkIn(await lastMailTo(address)))
  assert.equal(`${back.base}?${new URLSearchParams(back.query)}`, appLink, 'the confirmation lands on the link')
  const signedIn = await client.auth.signInWithPassword({ email: address, password: 'correct horse' })
  assert.equal(signedIn.error, null)

  // The page reads the token from its URL and accepts, through supabase-js.
  const { data, error } = await client.functions.invoke(`api/invitations/${back.query.token}/accept`, {
    method: 'POST',
  })
  assert.equal(error, null)
  assert.equal(data.status, 'accepted')
  assert.equal(back.query.token, token)
  assert.equal(await roleIn(orgId, up.data.user!.id), 'member')
})

test('only the invited, confirmed address accepts or declines; strangers and other organizations cannot invite or list', async () => {
  const owner = await verifiedUser()
  const orgAdmin = await verifiedUser()
  const member = await verifiedUser()
  const orgId = await orgWith(owner, [member], [orgAdmin])
  const elsewhere = await verifiedUser()
  await orgWith(elsewhere)
  const stranger = await verifiedUser()
  const unconfirmed = await createUser()
  const invitee = await verifiedUser()

  for (const who of [orgAdmin, member]) {
    assertError(await inviteToOrg(who, orgId, { email: freshAddress(), role: 'member' }), 403, 'owner')
    assertError(await api(`/api/organizations/${orgId}/invitations`, { token: who.token }), 403)
  }
  for (const who of [stranger, elsewhere]) {
    assertError(await inviteToOrg(who, orgId, { email: freshAddress(), role: 'member' }), 404)
    assertError(await api(`/api/organizations/${orgId}/invitations`, { token: who.token }), 404)
    const direct = await clientAs(who.token).rpc('create_organization_invitation', {
      target_org: orgId,
      email: freshAddress(),
      role: 'member',
    })
    assert.equal(direct.error?.code, 'PT404', 'PostgREST answers alike')
  }
  const invited = await inviteToOrg(owner, orgId, { email: invitee.email, role: 'member' })
  const { token } = await tokenSentTo(invitee.email)
  for (const who of [stranger, elsewhere, member]) {
    assertError(await accept(who, token), 403, 'another address')
    assertError(await decline(who, token), 403, 'another address')
    assert.deepEqual((await clientAs(who.token).from('invitations').select('id')).data, [])
  }
  // An unconfirmed account of the invited address cannot use it.
  await inviteToOrg(owner, orgId, { email: unconfirmed.email, role: 'member' })
  assertError(await accept(unconfirmed, (await tokenSentTo(unconfirmed.email)).token), 403, 'Confirm your e-mail')
  assertError(await api(`/api/organizations/${orgId}/invitations/${invited.body.invitation.id}`, {
    method: 'DELETE',
    token: stranger.token,
  }), 404)
  assertError(await api(`/api/organizations/${orgId}/invitations/${invited.body.invitation.id}`, {
    method: 'DELETE',
    token: member.token,
  }), 403)
  assert.equal(await roleIn(orgId, stranger.id), undefined)

  const declined = await decline(invitee, token)
  assert.deepEqual(declined.body, { status: 'declined', org_id: orgId, team_id: null, role: 'member' })
  assertError(await accept(invitee, token), 410, 'declined')
  assert.equal(await roleIn(orgId, invitee.id), undefined)
})

test('bad input is a 400 naming the field, through /api and PostgREST, and nothing is written or sent', async () => {
  const owner = await verifiedUser()
  const orgId = await orgWith(owner)
  const teamId = await teamWith(orgId, owner)
  const cases: [unknown, string][] = [
    [{ role: 'member' }, 'email: '],
    [{ email: 'not-an-address', role: 'member' }, 'email: '],
    [{ email: `${'a'.repeat(320)}@x.io`, role: 'member' }, 'email: '],
    [{ email: freshAddress() }, 'role: '],
    [{ email: freshAddress(), role: 'owner' }, 'role: '],
    [{ email: freshAddress(), role: 'member', add_to_organization: true }, 'add_to_organization'],
  ]
  for (const [body, field] of cases) assertError(await inviteToOrg(owner, orgId, body), 400, field)
  assertError(await inviteToTeam(owner, teamId, { email: freshAddress(), role: 'member', add_to_organization: 'yes' }), 400, 'add_to_organization: ')
  assertError(await api('/api/organizations/not-a-uuid/invitations', { token: owner.token, body: { email: freshAddress(), role: 'member' } }), 400, 'id: ')
  assertError(await api('/api/invitations/short'), 400, 'token: ')
  assertError(await api(`/api/invitations/${'A'.repeat(43)}`), 404, 'not valid')

  const db = clientAs(owner.token)
  const badEmail = await db.rpc('create_organization_invitation', { target_org: orgId, email: 'nope', role: 'member' })
  assert.equal(badEmail.error?.code, '22023')
  assert.match(badEmail.error!.message, /^email: /)
  const badRole = await db.rpc('create_organization_invitation', { target_org: orgId, email: freshAddress(), role: 'owner' })
  assert.match(badRole.error!.message, /^role: /)
  const badToken = await clientAs().rpc('invitation_details', { token: 'x' })
  assert.match(badToken.error!.message, /^token: /)
  assert.deepEqual(await invitationRows(orgId), [])
})

test('an address already a member is a 409; a new invitation replaces the pending one; enumeration: the same reply with or without an account', async () => {
  const owner = await verifiedUser()
  const member = await verifiedUser()
  const orgId = await orgWith(owner, [member])
  const teamId = await teamWith(orgId, owner, [member])
  assertError(await inviteToOrg(owner, orgId, { email: member.email.toUpperCase(), role: 'member' }), 409, 'already a member')
  assertError(await inviteToOrg(owner, orgId, { email: owner.email, role: 'admin' }), 409, 'already a member')
  assertError(await inviteToTeam(owner, teamId, { email: member.email, role: 'member' }), 409, 'already a member')
  const direct = await clientAs(owner.token).rpc('create_organization_invitation', { target_org: orgId, email: member.email, role: 'member' })
  assert.equal(direct.error?.code, 'PT409')

  const known = await verifiedUser()
  const unknown = freshAddress('nobody')
  const replies = []
  for (const address of [known.email, unknown]) {
    const res = await inviteToOrg(owner, orgId, { email: address, role: 'member' })
    assert.equal(res.status, 201)
    const { id: _id, email: _email, created_at: _c, expires_at: _e, ...rest } = res.body.invitation
    replies.push({ status: res.status, message: res.body.message, rest, keys: Object.keys(res.body.invitation).sort() })
    const { mail } = await tokenSentTo(address)
    replies.push({ subject: mail.subject })
  }
  assert.deepEqual(replies[0], replies[2], 'the reply does not tell whether the address has an account')
  assert.deepEqual(replies[1], replies[3], 'nor does the e-mail')

  // Again to the same address: the old link is withdrawn (410), the new one works.
  const { token: first } = await tokenSentTo(unknown)
  assert.equal((await inviteToOrg(owner, orgId, { email: unknown, role: 'admin' })).status, 201)
  assertError(await api(`/api/invitations/${first}`), 410, 'withdrawn')
  const { token: second } = await tokenSentTo(unknown)
  assert.equal((await api(`/api/invitations/${second}`)).body.role, 'admin')
})

test('expired and revoked links are a 410 in words; revoking is for the inviter and owners', async () => {
  const owner = await verifiedUser()
  const orgId = await orgWith(owner)
  const invitee = await verifiedUser()
  await inviteToOrg(owner, orgId, { email: invitee.email, role: 'member' })
  const { token } = await tokenSentTo(invitee.email)
  await sql`update public.invitations set created_at = now() - interval '8 days', expires_at = now() - interval '1 day' where email = ${invitee.email}`
  assertError(await api(`/api/invitations/${token}`), 410, /expired on .*Ask the person who invited you/)
  assertError(await accept(invitee, token), 410, 'expired')
  assert.deepEqual((await api(`/api/organizations/${orgId}/invitations`, { token: owner.token })).body.invitations, [])

  const other = await verifiedUser()
  const res = await inviteToOrg(owner, orgId, { email: other.email, role: 'member' })
  const { token: otherToken } = await tokenSentTo(other.email)
  const revoked = await api(`/api/organizations/${orgId}/invitations/${res.body.invitation.id}`, {
    method: 'DELETE',
    token: owner.token,
  })
  assert.equal(revoked.status, 200)
  assertError(await accept(other, otherToken), 410, 'withdrawn')
  assertError(await api(`/api/organizations/${orgId}/invitations/${res.body.invitation.id}`, {
    method: 'DELETE',
    token: owner.token,
  }), 409)
  assert.equal(await roleIn(orgId, other.id), undefined)
})

test('team invitations: team admins invite; without add_to_organization an outsider cannot accept (said plainly); the owner may add them to the organization', async () => {
  const owner = await verifiedUser()
  const teamAdmin = await verifiedUser()
  const orgId = await orgWith(owner, [teamAdmin])
  const teamId = await teamWith(orgId, teamAdmin)
  const outsider = await verifiedUser()
  const plainMember = await verifiedUser()
  await sql`insert into public.organization_members (org_id, user_id, role) values (${orgId}, ${plainMember.id}, 'member')`

  assertError(await inviteToTeam(plainMember, teamId, { email: freshAddress(), role: 'member' }), 403, "team's admins")
  assertError(
    await inviteToTeam(teamAdmin, teamId, { email: outsider.email, role: 'member', add_to_organization: true }),
    403,
    'add_to_organization',
  )
  const res = await inviteToTeam(teamAdmin, teamId, { email: outsider.email, role: 'member' })
  assert.equal(res.status, 201)
  const { token, mail } = await tokenSentTo(outsider.email)
  assert.match(mail.text, /You need to be a member of/)
  assertError(await accept(outsider, token), 403, 'Ask its owner to invite you to the organization first')
  assert.equal(await roleIn(orgId, outsider.id), undefined)
  const teamList = await api(`/api/teams/${teamId}/invitations`, { token: teamAdmin.token })
  assert.deepEqual(teamList.body.invitations.map((i: any) => i.email), [outsider.email], 'still pending')
  assert.deepEqual((await api(`/api/organizations/${orgId}/invitations`, { token: owner.token })).body.invitations, [])

  // The same person, invited by the owner (also a team admin here) with add_to_organization.
  await sql`insert into public.team_members (team_id, user_id, role) values (${teamId}, ${owner.id}, 'admin')`
  const both = await inviteToTeam(owner, teamId, { email: outsider.email, role: 'admin', add_to_organization: true })
  assert.equal(both.status, 201)
  const { token: bothToken } = await tokenSentTo(outsider.email)
  assertError(await accept(outsider, token), 410, 'withdrawn')
  const accepted = await accept(outsider, bothToken)
  assert.deepEqual(accepted.body, { status: 'accepted', org_id: orgId, team_id: teamId, role: 'admin' })
  assert.equal(await roleIn(orgId, outsider.id), 'member')
  const [{ role }] = await sql`select role from public.team_members where team_id = ${teamId} and user_id = ${outsider.id}`
  assert.equal(role, 'admin')

  // A plain team invitation to someone already in the organization works.
  const [{ token: t3 }] = [await (async () => {
    await inviteToTeam(teamAdmin, teamId, { email: plainMember.email, role: 'member' })
    return await tokenSentTo(plainMember.email)
  })()]
  assert.equal((await accept(plainMember, t3)).status, 200)
})

test('the daily limit per inviter (a table row): 429 with Retry-After, through /api and PostgREST', async () => {
  const owner = await verifiedUser()
  const orgId = await orgWith(owner)
  await sql`insert into private.invitation_limits (subject, max_per_day) values (${owner.id}, 2)`
  for (let i = 0; i < 2; i++) {
    assert.equal((await inviteToOrg(owner, orgId, { email: freshAddress(), role: 'member' })).status, 201)
  }
  const address = freshAddress()
  const refused = await inviteToOrg(owner, orgId, { email: address, role: 'member' })
  assertError(refused, 429, 'at most 2 invitations per 24 hours')
  const retry = Number(refused.headers.get('retry-after'))
  assert.ok(retry > 86_000 && retry <= 86_400, `Retry-After ${retry}`)
  assert.deepEqual(await sentTo(address), [])

  const direct = await fetch(`${API_URL}/rest/v1/rpc/create_organization_invitation`, {
    method: 'POST',
    headers: { apikey: ANON_KEY, authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ target_org: orgId, email: address, role: 'member' }),
  })
  assert.equal(direct.status, 429)
  assert.ok(Number(direct.headers.get('retry-after')) > 86_000)
  assert.equal((await direct.json()).code, 'PT429')
  assert.equal((await invitationRows(orgId)).length, 2)
})

test('without e-mail configured: input is checked first (400), then 503 and nothing written', async () => {
  const owner = await verifiedUser()
  const orgId = await orgWith(owner)
  await withApi({ SITE_URL: 'http://127.0.0.1:3000' }, async (base) => {
    const post = (body: unknown) =>
      fetch(`${base}/api/organizations/${orgId}/invitations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
        body: JSON.stringify(body),
      })
    let res = await post({ email: 'nope', role: 'member' })
    assert.equal(res.status, 400)
    await res.body?.cancel()
    res = await post({ email: freshAddress(), role: 'member' })
    assert.equal(res.status, 503)
    assert.match((await res.json()).error, /RESEND_API_KEY/)
  })
  assert.deepEqual(await invitationRows(orgId), [])
})
