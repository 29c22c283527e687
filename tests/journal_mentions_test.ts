// Mentions in journal texts: indexed on create, and the backfill of unindexed texts.
import { strict as assert } from 'node:assert'
import { api, createUser, postEntry, sharingWorld, sql, test } from './_helpers.ts'

test('mentions written as @[Name](<uuid>) are indexed on create', async () => {
  const w = await sharingWorld()
  const mentions = async (id: string) =>
    (await sql`select mentioned_user_id from public.journal_entry_mentions where entry_id = ${id} order by 1`)
      .map((r) => r.mentioned_user_id)
  const e = await postEntry(w.owner, {
    title: 'Shout-outs',
    content:
      `thanks @[Tea Mate](${w.teammate.id}) and @[Org](${w.orgmate.id.toUpperCase()}), again @[T](${w.teammate.id}), ` +
      `not @[Ghost](${crypto.randomUUID()}) nor @Plain or [x](${w.stranger.id})`,
  })
  assert.deepEqual(await mentions(e.id), [w.teammate.id, w.orgmate.id].sort())
  // Changing other fields keeps them.
  const upd = await api(`/api/journal/${e.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { title: 'title only' },
  })
  assert.equal(upd.status, 200)
  assert.deepEqual(await mentions(e.id), [w.teammate.id, w.orgmate.id].sort())
  const [{ at }] =
    await sql`select mentions_indexed_at as at from public.journal_entry_contents where entry_id = ${e.id}`
  assert.ok(at instanceof Date, 'new texts are marked as indexed')
})

test("POST /api/journal/backfill-mentions: indexes the caller's unindexed texts; {remaining: 0}; idempotent", async () => {
  const w = await sharingWorld()
  const a = await postEntry(w.owner, { title: 'a', content: `hi @[Tea](${w.teammate.id})` })
  const b = await postEntry(w.owner, {
    title: 'b',
    content: `hi @[Org](${w.orgmate.id}) and @[Tea](${w.teammate.id})`,
  })
  const c = await postEntry(w.owner, { title: 'c', content: 'no mentions' })
  const theirs = await postEntry(w.stranger, { title: 'd', content: `hi @[Owner](${w.owner.id})` })
  const all = [a.id, b.id, c.id, theirs.id]
  // Texts written before the index existed: no mentions, never indexed.
  await sql`delete from public.journal_entry_mentions where entry_id in ${sql(all)}`
  await sql`update public.journal_entry_contents set mentions_indexed_at = null where entry_id in ${sql(all)}`
  const snapshot = async () =>
    (await sql`select entry_id, mentioned_user_id from public.journal_entry_mentions where entry_id in ${
      sql(all)
    } order by 1, 2`)
      .map((r) => `${r.entry_id}:${r.mentioned_user_id}`)
  assert.deepEqual(await snapshot(), [])

  const first = await api('/api/journal/backfill-mentions', { method: 'POST', token: w.owner.token })
  assert.equal(first.status, 200, JSON.stringify(first.body))
  assert.deepEqual(first.body, { remaining: 0 })
  const expected = [`${a.id}:${w.teammate.id}`, `${b.id}:${w.orgmate.id}`, `${b.id}:${w.teammate.id}`].sort()
  assert.deepEqual((await snapshot()).sort(), expected)
  const [{ unindexed }] = await sql`select count(*)::int as unindexed from public.journal_entry_contents
                                    where entry_id in ${
    sql([a.id, b.id, c.id])
  } and mentions_indexed_at is null`
  assert.equal(unindexed, 0)
  // Another user's texts are theirs to backfill.
  const [{ at }] =
    await sql`select mentions_indexed_at as at from public.journal_entry_contents where entry_id = ${theirs.id}`
  assert.equal(at, null)

  const again = await api('/api/journal/backfill-mentions', { method: 'POST', token: w.owner.token })
  assert.deepEqual(again.body, { remaining: 0 })
  assert.deepEqual((await snapshot()).sort(), expected)

  const other = await api('/api/journal/backfill-mentions', { method: 'POST', token: w.stranger.token })
  assert.deepEqual(other.body, { remaining: 0 })
  assert.deepEqual((await snapshot()).sort(), [...expected, `${theirs.id}:${w.owner.id}`].sort())
})

test('POST /api/journal/backfill-mentions: works in batches; repeat until remaining is 0', async () => {
  const u = await createUser()
  const friend = await createUser()
  await sql`
    with e as (
      insert into public.journal_entries (user_id, title) select ${u.id}, 'old ' || g from generate_series(1, 230) g returning id)
    insert into public.journal_entry_contents (entry_id, content) select id, ${`hello @[F](${friend.id})`} from e`
  await sql`delete from public.journal_entry_mentions where entry_id in (select id from public.journal_entries where user_id = ${u.id})`
  await sql`update public.journal_entry_contents set mentions_indexed_at = null where user_id = ${u.id}`
  const counts: number[] = []
  for (let i = 0; i < 10; i++) {
    const res = await api('/api/journal/backfill-mentions', { method: 'POST', token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal(typeof res.body.remaining, 'number')
    counts.push(res.body.remaining)
    if (res.body.remaining === 0) break
  }
  assert.equal(counts.at(-1), 0)
  assert.ok(counts.length >= 2, `230 texts take more than one batch: ${counts}`)
  assert.ok(counts.every((n, i) => i === 0 || n < counts[i - 1]), `remaining decreases: ${counts}`)
  const [{ n }] = await sql`select count(*)::int as n from public.journal_entry_mentions m
                            join public.journal_entries e on e.id = m.entry_id where e.user_id = ${u.id} and m.mentioned_user_id = ${friend.id}`
  assert.equal(n, 230)
})
