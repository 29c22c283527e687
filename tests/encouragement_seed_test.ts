// Issue 39, part 8: a new project can encourage. The migrations seed approved templates of each
// SPEC type, so the custom cap's 429 ("send a template instead") can be followed by a new user;
// the seed is idempotent. The leaderboard scoped to an organization (?org_id=, and the RPC's
// org_id): only its members are ranked, only its members may ask, through /api and PostgREST.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, orgWith, sql, test, type TestUser } from './_helpers.ts'

const P = '/api/encouragement-drops'
const SEED = new URL('../supabase/migrations/20261206222002_encouragement_seed_templates.sql', import.meta.url)
const seededIds = async () =>
  (await sql`select id from public.encouragement_templates where id::text like '5eed0000-%' and is_approved order by id`)
    .map((r) => r.id as string)

test('encouragement seed: approved templates of every type, seen by a new user through /api and PostgREST', async () => {
  const user = await createUser({ prefix: 'seed-reader' })
  const listed = await api(`${P}/templates`, { token: user.token })
  assert.equal(listed.status, 200)
  const seeded = listed.body.templates.filter((t: any) => t.id.startsWith('5eed0000-'))
  for (const type of ['encouragement', 'media', 'science_tidbit']) {
    assert.ok(seeded.filter((t: any) => t.type === type).length >= 3, `seeded ${type} templates`)
  }
  assert.ok(seeded.filter((t: any) => t.type === 'media').every((t: any) => t.media_type))
  const rest = await clientAs(user.token).from('encouragement_templates').select('id').in('id', seeded.map((t: any) => t.id))
  assert.equal(rest.error, null)
  assert.equal(rest.data!.length, seeded.length)
})

test('encouragement seed: a new user over the custom cap follows the 429 and sends a seeded template', async () => {
  const [sender, recipient] = await Promise.all([createUser({ prefix: 'seed-send' }), createUser({ prefix: 'seed-to' })])
  const [{ max_custom_per_day }] = await sql`select max_custom_per_day from public.encouragement_config`
  for (let i = 0; i < max_custom_per_day; i++) {
    const sent = await api(`${P}/send`, {
      token: sender.token,
      body: { recipient_id: recipient.id, drop_type: 'encouragement', content: `custom ${i}` },
    })
    assert.equal(sent.status, 201, JSON.stringify(sent.body))
  }
  const over = await api(`${P}/send`, {
    token: sender.token,
    body: { recipient_id: recipient.id, drop_type: 'encouragement', content: 'one more' },
  })
  assertError(over, 429, 'send a template instead')

  const templates = (await api(`${P}/templates?type=science_tidbit`, { token: sender.token })).body.templates
  const tidbit = templates.find((t: any) => t.id.startsWith('5eed0000-'))
  assert.ok(tidbit, 'a seeded science tidbit is offered')
  const sent = await api(`${P}/send`, {
    token: sender.token,
    body: { recipient_id: recipient.id, drop_type: 'science_tidbit', template_id: tidbit.id },
  })
  assert.equal(sent.status, 201, JSON.stringify(sent.body))
  assert.deepEqual([sent.body.drop.is_custom, sent.body.drop.content], [false, tidbit.content])
})

test('encouragement seed: running the seed again adds nothing and keeps what a super admin changed', async () => {
  const before = await seededIds()
  const [first] = before
  await sql`update public.encouragement_templates set title = 'Edited by support' where id = ${first}`
  try {
    await sql.unsafe(await Deno.readTextFile(SEED))
    assert.deepEqual(await seededIds(), before)
    const [{ title }] = await sql`select title from public.encouragement_templates where id = ${first}`
    assert.equal(title, 'Edited by support')
  } finally {
    await sql`update public.encouragement_templates set title = 'Keep going' where id = ${first}`
  }
})

test('encouragement leaderboard by organization: members only, ranked among members, /api and PostgREST alike', async () => {
  const [owner, member, outsider, stranger] = await Promise.all(
    ['lb-owner', 'lb-member', 'lb-outsider', 'lb-stranger'].map((prefix) => createUser({ prefix })),
  )
  const orgId = await orgWith(owner, [member])
  await orgWith(outsider) // in another organization
  const top = 20_000_000 + Math.floor(Math.random() * 1_000_000)
  // The outsider outranks everyone on the platform, and is not on the organization's board.
  for (const [u, n] of [[outsider, top + 9], [member, top + 5], [owner, top + 1]] as const) {
    await sql`insert into public.encouragement_badges (user_id, level, total_sent, engagement_increases, success_rate)
              values (${u.id}, 7, ${n}, ${n}, 50)`
  }
  try {
    await scopedBoards(orgId, owner, member, outsider, stranger)
  } finally {
    // Off the platform board again: other tests rank their own users at the top.
    await sql`delete from public.encouragement_badges where user_id in (${owner.id}, ${member.id}, ${outsider.id})`
  }
})

async function scopedBoards(orgId: string, owner: TestUser, member: TestUser, outsider: TestUser, stranger: TestUser) {
  const board = await api(`${P}/leaderboard?org_id=${orgId}`, { token: member.token })
  assert.equal(board.status, 200)
  assert.deepEqual(board.body.leaderboard.map((r: any) => [r.rank, r.user_id]), [[1, member.id], [2, owner.id]])
  const platform = await api(`${P}/leaderboard?limit=1`, { token: member.token })
  assert.equal(platform.body.leaderboard[0].user_id, outsider.id)

  const rpc = await clientAs(owner.token).rpc('encouragement_leaderboard', { max_rows: 10, org_id: orgId })
  assert.equal(rpc.error, null)
  assert.deepEqual((rpc.data as { user_id: string }[]).map((r) => r.user_id), [member.id, owner.id])

  // Not a member, or no such organization: the same 403, so nothing tells them apart.
  for (const id of [orgId, crypto.randomUUID()]) {
    assertError(await api(`${P}/leaderboard?org_id=${id}`, { token: stranger.token }), 403, 'org_id')
    const refused = await clientAs(stranger.token).rpc('encouragement_leaderboard', { org_id: id })
    assert.equal(refused.error?.code, '42501')
  }
  assertError(await api(`${P}/leaderboard?org_id=nope`, { token: member.token }), 400, 'org_id')
  assertError(await api(`${P}/leaderboard?org_id=${orgId}`), 401)
}
