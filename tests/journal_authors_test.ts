// Authors and the levels that apply, on every read of an entry: /api (GET /api/journal and
// /api/journal/:id), the feed RPC and journal_entry_details through PostgREST, as each kind of
// viewer. The author shows exactly where the entry's metadata does; "Deleted user" once the
// author's account is being deleted; effective_*_visibility say what applies (an entry at
// user inherits its notebook's levels; the text never reaches further than the metadata).
import { strict as assert } from 'node:assert'
import {
  api,
  avatarUrl,
  clientAs,
  createUser,
  orgWith,
  postEntry,
  postNotebook,
  sharingWorld,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'
import { rnd } from './_journal.ts'

type Viewer = { name: string; user?: TestUser }

/** The entry as each read path gives it to the viewer (undefined where it is not seen), checked alike. */
async function readAll(v: Viewer, id: string, tag: string) {
  const client = clientAs(v.user?.token)
  const detail = await client.from('journal_entry_details').select('*').eq('id', id)
  assert.equal(detail.error, null, `${v.name}: ${JSON.stringify(detail.error)}`)
  const feed = await client.rpc('journal_feed', { scope: 'visible', tag })
  assert.equal(feed.error, null, `${v.name}: ${JSON.stringify(feed.error)}`)
  const fromFeed = (feed.data as any[]).find((e) => e.id === id)
  const viaDetail = detail.data![0]
  assert.deepEqual(strip(fromFeed), strip(viaDetail), `${v.name}: the feed and the view agree`)
  if (v.user) {
    const one = await api(`/api/journal/${id}`, { token: v.user.token })
    const page = await api(`/api/journal?scope=visible&tag=${tag}`, { token: v.user.token })
    assert.equal(page.status, 200, JSON.stringify(page.body))
    const fromPage = page.body.entries.find((e: any) => e.id === id)
    assert.deepEqual(strip(one.status === 200 ? one.body.entry : undefined), strip(viaDetail), `${v.name}: /api/journal/:id`)
    assert.deepEqual(strip(fromPage), strip(viaDetail), `${v.name}: /api/journal`)
  }
  return viaDetail
}
// The tone icon is the viewer's and read differently per path; the rest must match.
const strip = (e: any) => e && { ...e, tone_icon_url: undefined }

const people = (label: string) => `${label} ${rnd()}`

test('authors: where the metadata is visible, and only there, on every path', async () => {
  const w = await sharingWorld()
  const otherOrgOwner = await createUser({ prefix: 'elsewhere' })
  const otherOrgMember = await createUser({ prefix: 'elsewhere-member' })
  await orgWith(otherOrgOwner, [otherOrgMember])
  const ownerName = people('Olga Owner')
  await sql`update public.profiles set full_name = ${ownerName}, avatar_url = ${avatarUrl(w.owner.id)} where id = ${w.owner.id}`
  const tag = `authors-${rnd()}`
  const teamEntry = await postEntry(w.owner, {
    title: 'team', tags: [tag], metadata_visibility: 'team', content_visibility: 'team', team_id: w.teamId,
  })
  const publicEntry = await postEntry(w.owner, {
    title: 'public', tags: [tag], metadata_visibility: 'public', content_visibility: 'org', org_id: w.orgId,
  })
  const author = { author_name: ownerName, author_avatar_url: avatarUrl(w.owner.id) }
  const cases: [Viewer, boolean][] = [
    [{ name: 'owner', user: w.owner }, true],
    [{ name: 'teammate', user: w.teammate }, true],
    [{ name: 'org member', user: w.orgmate }, false],
    [{ name: 'stranger', user: w.stranger }, false],
    [{ name: 'member of another org', user: otherOrgMember }, false],
    [{ name: 'super admin', user: w.superAdmin }, true],
    [{ name: 'anonymous' }, false],
  ]
  for (const [viewer, seesTeamEntry] of cases) {
    const team = await readAll(viewer, teamEntry.id, tag)
    if (seesTeamEntry) {
      assert.deepEqual({ author_name: team.author_name, author_avatar_url: team.author_avatar_url }, author, viewer.name)
    } else {
      assert.equal(team, undefined, `${viewer.name} sees neither the team entry nor its author`)
    }
    // Public metadata: everyone sees the author, anonymous readers too, with or without the text.
    const pub = await readAll(viewer, publicEntry.id, tag)
    assert.deepEqual({ author_name: pub.author_name, author_avatar_url: pub.author_avatar_url }, author, viewer.name)
  }
})

test('authors: "Deleted user" once the account is being deleted; a name never set stays null', async () => {
  const w = await sharingWorld()
  const tag = `deleted-${rnd()}`
  await sql`update public.profiles set full_name = 'Tim Teammate', avatar_url = ${avatarUrl(w.teammate.id)} where id = ${w.teammate.id}`
  const byTeammate = await postEntry(w.teammate, {
    title: 'mine', tags: [tag], metadata_visibility: 'team', content_visibility: 'team', team_id: w.teamId,
  })
  const byOrgmate = await postEntry(w.orgmate, { title: 'unnamed', tags: [tag], metadata_visibility: 'org', org_id: w.orgId })
  const before = await readAll({ name: 'owner', user: w.owner }, byTeammate.id, tag)
  assert.equal(before.author_name, 'Tim Teammate')
  assert.equal((await readAll({ name: 'owner', user: w.owner }, byOrgmate.id, tag)).author_name, null)
  // Auth's soft delete: the deletion is recorded and its rows step follows (the job).
  await sql`update auth.users set deleted_at = now() where id = ${w.teammate.id}`
  for (const viewer of [{ name: 'owner', user: w.owner }, { name: 'super admin', user: w.superAdmin }]) {
    const after = await readAll(viewer, byTeammate.id, tag)
    assert.equal(after.author_name, 'Deleted user', viewer.name)
    assert.equal(after.author_avatar_url, null, viewer.name)
  }
})

test('effective levels: inherited from the notebook, and the text never wider than the metadata', async () => {
  const w = await sharingWorld()
  const tag = `levels-${rnd()}`
  const notebook = await postNotebook(w.owner, {
    name: `Org book ${rnd()}`, metadata_visibility: 'org', content_visibility: 'org', org_id: w.orgId,
  })
  const inherits = await postEntry(w.owner, { title: 'inherits', tags: [tag], notebook_id: notebook.id })
  assert.deepEqual(
    [inherits.metadata_visibility, inherits.content_visibility, inherits.effective_metadata_visibility, inherits.effective_content_visibility],
    ['user', 'user', 'org', 'org'],
    'stored user/user, the organization sees it: the reply says so',
  )
  const seen = await readAll({ name: 'org member', user: w.orgmate }, inherits.id, tag)
  assert.equal(seen.effective_metadata_visibility, 'org')
  assert.equal(seen.content_hidden, false)
  // Metadata narrower than content (user metadata, public content): accepted, and explained: the
  // text goes no further than the metadata, so what applies is user/user.
  const narrow = await postEntry(w.owner, { title: 'narrow', tags: [tag], metadata_visibility: 'user', content_visibility: 'public' })
  assert.deepEqual([narrow.effective_metadata_visibility, narrow.effective_content_visibility], ['user', 'user'])
  assert.equal(await readAll({ name: 'anonymous' }, narrow.id, tag), undefined)
  assert.equal(await readAll({ name: 'org member', user: w.orgmate }, narrow.id, tag), undefined)
  // Team metadata, org content: the text reaches the team only.
  const teamMeta = await postEntry(w.owner, {
    title: 'team meta', tags: [tag], metadata_visibility: 'team', content_visibility: 'org', team_id: w.teamId, org_id: w.orgId,
  })
  assert.deepEqual([teamMeta.effective_metadata_visibility, teamMeta.effective_content_visibility], ['team', 'team'])
  // Public metadata, org content: as stored.
  const open = await postEntry(w.owner, {
    title: 'open', tags: [tag], metadata_visibility: 'public', content_visibility: 'org', org_id: w.orgId,
  })
  const anon = await readAll({ name: 'anonymous' }, open.id, tag)
  assert.deepEqual([anon.effective_metadata_visibility, anon.effective_content_visibility, anon.content_hidden], ['public', 'org', true])
  // A change of the notebook's levels changes what applies at once.
  const put = await api(`/api/notebooks/${notebook.id}`, {
    method: 'PUT', token: w.owner.token, body: { metadata_visibility: 'org', content_visibility: 'user', org_id: w.orgId },
  })
  assert.equal(put.status, 200, JSON.stringify(put.body))
  const after = await readAll({ name: 'owner', user: w.owner }, inherits.id, tag)
  assert.deepEqual([after.effective_metadata_visibility, after.effective_content_visibility], ['org', 'user'])
})
