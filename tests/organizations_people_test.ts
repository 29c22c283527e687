// Finding teammates: GET /api/organizations/:id/members?q= (a page of members by name) and the
// public profiles (name, avatar) of people who share an organization with the caller, through
// /api (GET /api/profiles/:id) and PostgREST (rpc search_organization_members, profile_cards).
import { strict as assert } from 'node:assert'
import { avatarUrl, api, assertError, clientAs, createUser, orgWith, sql, test } from './_helpers.ts'
import { cast, MEMBER_FIELDS } from './_organizations.ts'

const named = async (id: string, full_name: string) =>
  await sql`update public.profiles set full_name = ${full_name}, avatar_url = ${avatarUrl(id)} where id = ${id}`

test('members?q= finds the members whose name contains q, for members and super admins alike', async () => {
  const c = await cast()
  const other = await createUser({ prefix: 'elsewhere' })
  await orgWith(other, [c.outsider])
  await named(c.owner.id, 'Olga Owner')
  await named(c.admin.id, 'Ada Admin')
  await named(c.member.id, 'Mia Member')
  await named(other.id, 'Mia Elsewhere') // same name, another organization: never found
  for (const u of [c.owner, c.admin, c.member, c.superAdmin]) {
    const res = await api(`/api/organizations/${c.orgId}/members?q=mIA`, { token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(res.body.members.map((m: any) => m.user_id), [c.member.id])
    assert.deepEqual(Object.keys(res.body.members[0]).sort(), MEMBER_FIELDS)
    assert.equal(res.body.members[0].full_name, 'Mia Member')
    assert.equal(res.body.next_cursor, null)
    // The same through PostgREST.
    const { data, error } = await clientAs(u.token).rpc('search_organization_members', { target_org: c.orgId, q: 'mia' })
    assert.equal(error, null)
    assert.deepEqual(data!.map((m: any) => m.user_id), [c.member.id])
  }
  // Wildcards are literal: '%' matches no name here.
  const wild = await api(`/api/organizations/${c.orgId}/members?q=%25`, { token: c.member.token })
  assert.deepEqual(wild.body.members, [])
  // A member of another organization and a stranger: 404, through both paths.
  assertError(await api(`/api/organizations/${c.orgId}/members?q=mia`, { token: c.outsider.token }), 404)
  assertError(await api(`/api/organizations/${c.orgId}/members?q=mia`, { token: other.token }), 404)
  const refused = await clientAs(c.outsider.token).rpc('search_organization_members', { target_org: c.orgId, q: 'mia' })
  assert.equal(refused.error?.code, 'PT404')
  // Anonymous: 401 on /api; PostgREST does not grant the function to anon.
  assertError(await api(`/api/organizations/${c.orgId}/members?q=mia`), 401)
  const anon = await clientAs().rpc('search_organization_members', { target_org: c.orgId, q: 'mia' })
  assert.ok(anon.error, 'anon may not search')
})

test('members: pages of limit, owner first, then by joining; bad input is 400 naming the field', async () => {
  const c = await cast()
  const pages: string[][] = []
  let before: string | null = null
  do {
    const res: any = await api(
      `/api/organizations/${c.orgId}/members?limit=1${before ? `&before=${before}` : ''}`,
      { token: c.member.token },
    )
    assert.equal(res.status, 200, JSON.stringify(res.body))
    pages.push(res.body.members.map((m: any) => m.user_id))
    before = res.body.next_cursor
  } while (before && pages.length < 10)
  assert.deepEqual(pages, [[c.owner.id], [c.member.id], [c.admin.id]])
  const path = `/api/organizations/${c.orgId}/members`
  assertError(await api(`${path}?limit=0`, { token: c.member.token }), 400, 'limit')
  assertError(await api(`${path}?limit=101`, { token: c.member.token }), 400, 'limit')
  assertError(await api(`${path}?before=nope`, { token: c.member.token }), 400, 'before')
  assertError(await api(`${path}?q=${'x'.repeat(201)}`, { token: c.member.token }), 400, 'q')
  assertError(await api(`${path}?before=${c.outsider.id}`, { token: c.member.token }), 400, 'before')
  assertError(await api(`${path}?sort=name`, { token: c.member.token }), 400, 'sort')
})

test('public profiles: readable by whoever shares an organization, never by a stranger, both paths', async () => {
  const c = await cast()
  const other = await createUser({ prefix: 'elsewhere' })
  await orgWith(other, [c.outsider])
  await named(c.member.id, 'Mia Member')
  const card = { id: c.member.id, full_name: 'Mia Member', avatar_url: avatarUrl(c.member.id) }
  for (const u of [c.owner, c.admin, c.member, c.superAdmin]) {
    const res = await api(`/api/profiles/${c.member.id}`, { token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(res.body, { profile: card })
    const { data, error } = await clientAs(u.token).from('profile_cards').select('*').eq('id', c.member.id)
    assert.equal(error, null)
    assert.deepEqual(data, [card])
  }
  // A stranger and a member of another organization: nothing, and not a hint that it exists.
  for (const u of [c.outsider, other]) {
    assertError(await api(`/api/profiles/${c.member.id}`, { token: u.token }), 404)
    const { data } = await clientAs(u.token).from('profile_cards').select('*').eq('id', c.member.id)
    assert.deepEqual(data, [])
  }
  // All of profile_cards for the outsider: their own card and their organization's people only.
  const { data: seen } = await clientAs(c.outsider.token).from('profile_cards').select('id')
  assert.deepEqual(seen!.map((r) => r.id).sort(), [c.outsider.id, other.id].sort())
  // The private columns stay private: profiles itself still shows only one's own row.
  const { data: rows } = await clientAs(c.member.token).from('profiles').select('id, drops_balance').eq('id', c.owner.id)
  assert.deepEqual(rows, [])
  // Anonymous: 401 on /api, nothing through PostgREST.
  assertError(await api(`/api/profiles/${c.member.id}`), 401)
  const anon = await clientAs().from('profile_cards').select('*')
  assert.ok(anon.error || anon.data?.length === 0, 'anon reads no card')
  // Leaving the organization ends it.
  await sql`delete from public.organization_members where org_id = ${c.orgId} and user_id = ${c.admin.id}`
  assertError(await api(`/api/profiles/${c.member.id}`, { token: c.admin.token }), 404)
  assertError(await api('/api/profiles/xyz', { token: c.member.token }), 400, 'id')
})

test('an account being deleted shows as "Deleted user" without avatar in member lists, search and profile cards', async () => {
  const c = await cast()
  await named(c.member.id, 'Mia Member')
  // Auth's soft delete: the deletion is recorded (private.account_deletions) and its job follows.
  await sql`update auth.users set deleted_at = now() where id = ${c.member.id}`
  const masked = { full_name: 'Deleted user', avatar_url: null }
  for (const u of [c.owner, c.superAdmin]) {
    const db = clientAs(u.token)
    const all = await db.rpc('search_organization_members', { target_org: c.orgId })
    assert.equal(all.error, null)
    const row = all.data!.find((m: any) => m.user_id === c.member.id)
    assert.deepEqual({ full_name: row.full_name, avatar_url: row.avatar_url }, masked)
    const listed = (await db.rpc('list_organization_members', { target_org: c.orgId })).data!
      .find((m: any) => m.user_id === c.member.id)
    assert.deepEqual({ full_name: listed.full_name, avatar_url: listed.avatar_url }, masked)
    // The real name finds nobody any more.
    const byName = await db.rpc('search_organization_members', { target_org: c.orgId, q: 'Mia' })
    assert.deepEqual(byName.data, [])
    const api_ = await api(`/api/organizations/${c.orgId}/members?q=mia`, { token: u.token })
    assert.deepEqual(api_.body.members, [])
    const { data: cards } = await db.from('profile_cards').select('*').eq('id', c.member.id)
    assert.deepEqual(cards, [{ id: c.member.id, ...masked }])
    const res = await api(`/api/profiles/${c.member.id}`, { token: u.token })
    assert.deepEqual(res.body, { profile: { id: c.member.id, ...masked } })
  }
})
