// Encouragement drops through /api: today's record, sending (checks, allowance and custom cap,
// concurrency), receiving and reading, templates and configuration for super admins,
// engagement processing and its bonus, badges, milestones and the leaderboard.
import { strict as assert } from 'node:assert'
import {
  api,
  avatarUrl,
  assertError,
  clientAs,
  createUser,
  env,
  postEntry,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'

const P = '/api/encouragement-drops'

async function template(opts: { type?: string; approved?: boolean } = {}) {
  const [row] =
    await sql`insert into public.encouragement_templates (type, title, content, is_approved, media_type)
    values (${opts.type ?? 'encouragement'}, ${'T ' + crypto.randomUUID().slice(0, 6)}, 'You can do it!', ${
      opts.approved ?? true
    },
            ${opts.type === 'media' ? 'image' : null}) returning id`
  return row.id as string
}

const send = (from: TestUser, body: Record<string, unknown>) => api(`${P}/send`, { token: from.token, body })

/** Backdates an account (profiles.created_at is immutable for clients: set with triggers off). */
async function accountAge(user: TestUser, age: string) {
  await sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`
    await tx`update public.profiles set created_at = now() - ${age}::interval where id = ${user.id}`
  })
  return user
}

/** A recipient with a baseline: an account older than the 7-day baseline period that wrote before it. */
async function established(user: TestUser) {
  await accountAge(user, '30 days')
  await sql`insert into public.journal_entries (user_id, title, created_at) values (${user.id}, 'a while ago', now() - interval '10 days')`
  return user
}
const sentBy = async (u: TestUser) =>
  (await sql`select count(*)::int as n from public.encouragement_sent_drops where sender_id = ${u.id}`)[0].n

test('config and my-drops: SPEC defaults and an untouched UTC day for a new user; both need a user', async () => {
  const user = await createUser()
  const config = await api(`${P}/config`, { token: user.token })
  assert.deepEqual(config.body, {
    daily_allowance: 5,
    bonus_per_engagement: 2,
    engagement_window_hours: 24,
    max_custom_per_day: 3,
  })
  const mine = await api(`${P}/my-drops`, { token: user.token })
  assert.equal(mine.status, 200)
  assert.deepEqual(mine.body, {
    day: new Date().toISOString().slice(0, 10),
    daily_allowance: 5,
    drops_used: 0,
    bonus_drops_earned: 0,
    total_available: 5,
    custom_used: 0,
    custom_remaining: 3,
  })
  for (
    const path of [
      'config',
      'my-drops',
      'templates',
      'received',
      'badge',
      'leaderboard',
      'badge-definitions',
      'badge/milestones',
    ]
  ) {
    assertError(await api(`${P}/${path}`), 401)
  }
  assertError(
    await api(`${P}/send`, { body: { recipient_id: user.id, drop_type: 'encouragement', content: 'x' } }),
    401,
  )
})

test("send: a template drop and a custom drop arrive with the sender's name and avatar; unread first-class; read once", async () => {
  const sender = await createUser()
  const recipient = await createUser()
  await sql`update public.profiles set full_name = 'Sam Sender', avatar_url = ${avatarUrl(sender.id)} where id = ${sender.id}`
  const tpl = await template()
  const a = await send(sender, { recipient_id: recipient.id, drop_type: 'encouragement', template_id: tpl })
  assert.equal(a.status, 201, JSON.stringify(a.body))
  assert.equal(a.body.drop.content, 'You can do it!')
  assert.equal(a.body.drop.is_custom, false)
  assert.equal(a.body.drop.read_at, null)
  const entry = await postEntry(recipient, {
    title: 'shared',
    content: 'x',
    metadata_visibility: 'public',
    content_visibility: 'public',
  })
  const b = await send(sender, {
    recipient_id: recipient.id,
    drop_type: 'science_tidbit',
    content: '  Bees dance.  ',
    entry_id: entry.id,
  })
  assert.equal(b.status, 201, JSON.stringify(b.body))
  assert.equal(b.body.drop.content, 'Bees dance.')
  assert.equal(b.body.drop.entry_id, entry.id)
  assert.equal(
    (await sql`select usage_count from public.encouragement_templates where id = ${tpl}`)[0].usage_count,
    1,
  )

  const mine = await api(`${P}/my-drops`, { token: sender.token })
  assert.equal(mine.body.drops_used, 2)
  assert.equal(mine.body.custom_used, 1)
  assert.equal(mine.body.total_available, 3)

  const inbox = await api(`${P}/received`, { token: recipient.token })
  assert.equal(inbox.status, 200)
  assert.equal(inbox.body.unread_count, 2)
  assert.deepEqual(inbox.body.drops.map((d: any) => d.id), [b.body.drop.id, a.body.drop.id], 'newest first')
  assert.equal(inbox.body.drops[0].sender_name, 'Sam Sender')
  assert.equal(inbox.body.drops[0].sender_avatar_url, avatarUrl(sender.id))
  assert.equal(inbox.body.drops[0].is_system, false)

  const read = await api(`${P}/received/${a.body.drop.id}/read`, { method: 'POST', token: recipient.token })
  assert.equal(read.status, 200)
  assert.ok(read.body.read_at)
  const again = await api(`${P}/received/${a.body.drop.id}/read`, { method: 'POST', token: recipient.token })
  assert.equal(again.body.read_at, read.body.read_at, 'the first read time is kept')
  const unread = await api(`${P}/received?unread=true`, { token: recipient.token })
  assert.deepEqual(unread.body.drops.map((d: any) => d.id), [b.body.drop.id])
  assert.equal(unread.body.unread_count, 1)
  // Others: the sender cannot mark it, a stranger sees nothing.
  assertError(await api(`${P}/received/${b.body.drop.id}/read`, { method: 'POST', token: sender.token }), 404)
  assertError(
    await api(`${P}/received/not-a-uuid/read`, { method: 'POST', token: recipient.token }),
    400,
    'id',
  )
  assert.deepEqual((await api(`${P}/received`, { token: sender.token })).body.drops, [])
  // PostgREST gives the same answers.
  const { data } = await clientAs(sender.token).from('encouragement_sent_drops').select('id').eq(
    'recipient_id',
    recipient.id,
  )
  assert.equal(data?.length, 2, 'the sender reads what they sent')
  const stranger = await createUser()
  const { data: none } = await clientAs(stranger.token).from('encouragement_sent_drops').select('id').eq(
    'recipient_id',
    recipient.id,
  )
  assert.deepEqual(none, [])
})

test('received: pages by cursor, newest first; bad limit or cursor is 400', async () => {
  const recipient = await createUser()
  const senders = await Promise.all([1, 2, 3].map(() => createUser()))
  for (const s of senders) {
    for (let i = 0; i < 2; i++) {
      assert.equal(
        (await send(s, { recipient_id: recipient.id, drop_type: 'encouragement', content: `m${i}` })).status,
        201,
      )
    }
  }
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const res: any = await api(`${P}/received?limit=4${cursor ? `&before=${cursor}` : ''}`, {
      token: recipient.token,
    })
    assert.equal(res.status, 200)
    seen.push(...res.body.drops.map((d: any) => d.id))
    cursor = res.body.next_cursor
  } while (cursor)
  const all =
    await sql`select id from public.encouragement_sent_drops where recipient_id = ${recipient.id} order by date_sent desc, id desc`
  assert.deepEqual(seen, all.map((r) => r.id))
  assertError(await api(`${P}/received?limit=0`, { token: recipient.token }), 400, 'limit')
  assertError(await api(`${P}/received?before=garbage`, { token: recipient.token }), 400, 'before')
  assertError(await api(`${P}/received?unread=yes`, { token: recipient.token }), 400, 'unread')
})

test('send: bad input is 400 naming the field, unknown targets 404; nothing is written or used', async () => {
  const sender = await createUser()
  const recipient = await createUser()
  const inactive = await createUser()
  await sql`update public.profiles set is_active = false where id = ${inactive.id}`
  const unapproved = await template({ approved: false })
  const tidbit = await template({ type: 'science_tidbit' })
  const privateEntry = await postEntry(recipient, { title: 'mine only', content: 'secret' })
  const base = { recipient_id: recipient.id, drop_type: 'encouragement' }
  for (
    const [body, field] of [
      [{ drop_type: 'encouragement', content: 'x' }, 'recipient_id'],
      [{ ...base, recipient_id: 'nope', content: 'x' }, 'recipient_id'],
      [{ ...base, drop_type: 'gift', content: 'x' }, 'drop_type'],
      [{ ...base }, 'template_id'],
      [{ ...base, content: 'x', template_id: tidbit }, 'template_id'],
      [{ ...base, content: '   ' }, 'content'],
      [{ ...base, content: 'x'.repeat(1001) }, 'content'],
      [{ ...base, content: 'x', entry_id: 'nope' }, 'entry_id'],
      [{ ...base, content: 'x', sender_id: recipient.id }, 'sender_id'],
      [{ ...base, recipient_id: sender.id, content: 'x' }, 'recipient_id'],
    ] as const
  ) {
    assertError(await send(sender, body), 400, field)
  }
  assertError(await api(`${P}/send`, { token: sender.token, rawBody: '{oops' }), 400)
  for (
    const [body, mention] of [
      [{ ...base, recipient_id: crypto.randomUUID(), content: 'x' }, 'recipient_id'],
      [{ ...base, recipient_id: inactive.id, content: 'x' }, 'recipient_id'],
      [{ ...base, template_id: unapproved }, 'template_id'],
      [{ ...base, template_id: tidbit }, 'template_id'],
      [{ ...base, content: 'x', entry_id: privateEntry.id }, 'entry_id'],
    ] as const
  ) {
    assertError(await send(sender, body), 404, mention)
  }
  assert.equal(await sentBy(sender), 0)
  assert.equal((await api(`${P}/my-drops`, { token: sender.token })).body.drops_used, 0)
})

test('send: the allowance holds under concurrency (12 at once: 5 sent, 7 refused with 429), and the custom cap says so', async () => {
  const sender = await createUser()
  const recipients = await Promise.all([1, 2, 3].map(() => createUser()))
  const tpl = await template()
  const replies = await Promise.all(
    Array.from(
      { length: 12 },
      (_, i) =>
        send(sender, { recipient_id: recipients[i % 3].id, drop_type: 'encouragement', template_id: tpl }),
    ),
  )
  assert.equal(replies.filter((r) => r.status === 201).length, 5)
  const refused = replies.filter((r) => r.status !== 201)
  assert.equal(refused.length, 7)
  for (const r of refused) assertError(r, 429, 'No encouragement drops left today')
  assert.equal(await sentBy(sender), 5)
  const mine = await api(`${P}/my-drops`, { token: sender.token })
  assert.equal(mine.body.drops_used, 5)
  assert.equal(mine.body.total_available, 0)

  // Custom drops: the fourth in a day is refused even with allowance left; concurrently too.
  const writer = await createUser()
  const customs = await Promise.all(
    Array.from(
      { length: 6 },
      (_, i) =>
        send(writer, { recipient_id: recipients[0].id, drop_type: 'encouragement', content: `note ${i}` }),
    ),
  )
  assert.equal(customs.filter((r) => r.status === 201).length, 3)
  for (const r of customs.filter((r) => r.status !== 201)) assertError(r, 429, 'Custom drop limit reached')
  assert.equal(
    (await send(writer, { recipient_id: recipients[0].id, drop_type: 'encouragement', template_id: tpl }))
      .status,
    201,
    'a template drop still goes out',
  )
  assert.deepEqual(
    (await sql`select drops_used, custom_used from public.encouragement_daily_drops where user_id = ${writer.id}`)[
      0
    ],
    { drops_used: 4, custom_used: 3 },
  )
})

test('templates: users see approved ones (optionally one type); super admins manage all; others get 403', async () => {
  const user = await createUser()
  const admin = await createUser({ superAdmin: true })
  const created = await api(`${P}/admin/templates`, {
    token: admin.token,
    body: {
      type: 'media',
      title: 'Sunrise',
      content: 'https://example.test/sunrise.mp4',
      media_type: 'video',
      thumbnail_url: 'https://example.test/t.png',
    },
  })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const id = created.body.template.id
  assert.equal(created.body.template.is_approved, false)
  assert.equal(created.body.template.usage_count, 0)
  const visible = async () =>
    (await api(`${P}/templates?type=media&limit=100`, { token: user.token })).body.templates.map((t: any) =>
      t.id
    )
  assert.ok(!(await visible()).includes(id), 'unapproved: not shown to users')
  const all = await api(`${P}/admin/templates?approved=false&limit=100`, { token: admin.token })
  assert.ok(all.body.templates.some((t: any) => t.id === id))
  const approved = await api(`${P}/admin/templates/${id}`, {
    method: 'PUT',
    token: admin.token,
    body: { is_approved: true },
  })
  assert.equal(approved.status, 200)
  assert.equal(approved.body.template.is_approved, true)
  assert.ok((await visible()).includes(id), 'approved: shown')
  const others = await api(`${P}/templates?type=encouragement&limit=100`, { token: user.token })
  assert.ok(others.body.templates.every((t: any) => t.type === 'encouragement' && t.is_approved))
  assertError(await api(`${P}/templates?type=poem`, { token: user.token }), 400, 'type')

  for (
    const [body, field] of [
      [{ type: 'media', title: 'x', content: 'y' }, 'media_type'],
      [{ type: 'encouragement', title: 'x', content: 'y', media_type: 'image' }, 'media_type'],
      [{ type: 'encouragement', title: '', content: 'y' }, 'title'],
      [
        { type: 'encouragement', title: 'x', content: 'y', thumbnail_url: 'javascript:alert(1)' },
        'thumbnail_url',
      ],
      [{ type: 'encouragement', title: 'x', content: 'y', usage_count: 99 }, 'usage_count'],
    ] as const
  ) {
    assertError(await api(`${P}/admin/templates`, { token: admin.token, body }), 400, field)
  }
  assertError(await api(`${P}/admin/templates/${id}`, { method: 'PUT', token: admin.token, body: {} }), 400)
  assertError(
    await api(`${P}/admin/templates/${crypto.randomUUID()}`, {
      method: 'PUT',
      token: admin.token,
      body: { title: 'x' },
    }),
    404,
  )

  assertError(await api(`${P}/admin/templates`, { token: user.token }), 403)
  assertError(
    await api(`${P}/admin/templates`, {
      token: user.token,
      body: { type: 'encouragement', title: 'x', content: 'y' },
    }),
    403,
  )
  assertError(
    await api(`${P}/admin/templates/${id}`, { method: 'PUT', token: user.token, body: { title: 'mine' } }),
    403,
  )
  assertError(await api(`${P}/admin/templates/${id}`, { method: 'DELETE', token: user.token }), 403)
  assertError(await api(`${P}/admin/templates`), 401)
  // Directly through PostgREST a user cannot write either.
  const direct = await clientAs(user.token).from('encouragement_templates').update({ title: 'mine' }).eq(
    'id',
    id,
  ).select()
  assert.ok(direct.error || direct.data?.length === 0, 'PostgREST updates nothing for a user')
  assert.equal(
    (await sql`select title from public.encouragement_templates where id = ${id}`)[0].title,
    'Sunrise',
  )

  const deleted = await api(`${P}/admin/templates/${id}`, { method: 'DELETE', token: admin.token })
  assert.equal(deleted.status, 200)
  assertError(await api(`${P}/admin/templates/${id}`, { method: 'DELETE', token: admin.token }), 404)
})

test('admin config: super admins read and change bounded values, each change recorded with who; others 403', async () => {
  const admin = await createUser({ superAdmin: true })
  const user = await createUser()
  for (
    const [body, field] of [
      [{ daily_allowance: 0 }, 'daily_allowance'],
      [{ daily_allowance: 101 }, 'daily_allowance'],
      [{ engagement_window_hours: 169 }, 'engagement_window_hours'],
      [{ bonus_per_engagement: 1.5 }, 'bonus_per_engagement'],
      [{ max_custom_per_day: '3' }, 'max_custom_per_day'],
      [{ colour: 1 }, 'colour'],
    ] as const
  ) {
    assertError(await api(`${P}/admin/config`, { method: 'PUT', token: admin.token, body }), 400, field)
  }
  assertError(await api(`${P}/admin/config`, { method: 'PUT', token: admin.token, body: {} }), 400)
  assertError(
    await api(`${P}/admin/config`, { method: 'PUT', token: user.token, body: { daily_allowance: 50 } }),
    403,
  )
  assertError(await api(`${P}/admin/config`, { token: user.token }), 403)
  const { error } = await clientAs(user.token).rpc('update_encouragement_config', {
    patch: { daily_allowance: 50 },
  })
  assert.equal(error?.code, '42501')

  try {
    const changed = await api(`${P}/admin/config`, {
      method: 'PUT',
      token: admin.token,
      body: { daily_allowance: 8 },
    })
    assert.equal(changed.status, 200, JSON.stringify(changed.body))
    assert.equal(changed.body.daily_allowance, 8)
    assert.equal(changed.body.bonus_per_engagement, 2)
    const read = await api(`${P}/admin/config`, { token: admin.token })
    assert.equal(read.body.config.daily_allowance, 8)
    assert.equal(read.body.config.updated_by, admin.id)
    assert.equal(read.body.changes[0].changed_by, admin.id)
    assert.equal(read.body.changes[0].old_values.daily_allowance, 5)
    assert.equal(read.body.changes[0].new_values.daily_allowance, 8)
    const fresh = await createUser()
    assert.equal(
      (await api(`${P}/my-drops`, { token: fresh.token })).body.daily_allowance,
      8,
      "a new day's record takes the new allowance",
    )
  } finally {
    await sql`select public.update_encouragement_config('{"daily_allowance": 5}')`
  }
})

test("engagement: a recipient's entry within the window pays the sender the bonus once (capacity and badge); cron secret rules", async () => {
  const admin = await createUser({ superAdmin: true })
  const sender = await createUser()
  const recipient = await established(await createUser())
  const drop = await send(sender, {
    recipient_id: recipient.id,
    drop_type: 'encouragement',
    content: 'you got this',
  })
  const second = await send(sender, {
    recipient_id: recipient.id,
    drop_type: 'encouragement',
    content: 'and again',
  })
  await sql`update public.encouragement_sent_drops set date_sent = now() - interval '1 hour' where id in (${drop.body.drop.id}, ${second.body.drop.id})`
  await postEntry(recipient, { title: 'I wrote!', content: 'thanks', mood: 'grateful' })

  assertError(await api(`${P}/admin/process-engagement`, { method: 'POST', token: sender.token }), 403)
  assertError(
    await api(`${P}/cron/process-engagement`, { method: 'POST', headers: { 'x-cron-secret': 'wrong' } }),
    401,
  )
  assertError(await api(`${P}/cron/process-engagement`, { method: 'POST' }), 401)

  const run = await api(`${P}/admin/process-engagement`, { method: 'POST', token: admin.token })
  assert.equal(run.status, 200, JSON.stringify(run.body))
  assert.ok(run.body.judged >= 2 && run.body.bonuses_awarded >= 1)
  const rows = await sql`select d.id, d.bonus_drops_awarded,
                     not exists (select 1 from private.encouragement_unjudged_drops q where q.drop_id = d.id) as judged
                from public.encouragement_sent_drops d where d.sender_id = ${sender.id} order by d.date_sent, d.id`
  assert.ok(rows.every((r) => r.judged))
  assert.deepEqual(rows.map((r) => r.bonus_drops_awarded).sort(), [0, 2], 'one bonus for the pair that day')
  const mine = await api(`${P}/my-drops`, { token: sender.token })
  assert.equal(mine.body.bonus_drops_earned, 2)
  assert.equal(mine.body.total_available, 5 + 2 - 2)
  const badge = await api(`${P}/badge`, { token: sender.token })
  assert.equal(badge.body.badge.engagement_increases, 1)
  assert.equal(badge.body.badge.success_rate, 50)
  assert.equal(badge.body.badge.bonus_earned, 2)

  for (const secret of [env('DROPS_CRON_SECRET'), env('CHAT_CRON_SECRET')]) {
    const again = await api(`${P}/cron/process-engagement`, {
      method: 'POST',
      headers: { 'x-cron-secret': secret },
    })
    assert.equal(again.status, 200, JSON.stringify(again.body))
  }
  assert.equal(
    (await api(`${P}/my-drops`, { token: sender.token })).body.bonus_drops_earned,
    2,
    'never paid twice',
  )
  // Concurrent runs pay nothing more either.
  const third = await send(sender, {
    recipient_id: (await established(await createUser())).id,
    drop_type: 'encouragement',
    content: 'new pair',
  })
  await sql`update public.encouragement_sent_drops set date_sent = now() - interval '1 hour' where id = ${third.body.drop.id}`
  const other =
    (await sql`select recipient_id from public.encouragement_sent_drops where id = ${third.body.drop.id}`)[0]
      .recipient_id
  await sql`insert into public.journal_entries (user_id, title) values (${other}, 'engaged')`
  await Promise.all(
    [1, 2, 3].map(() => api(`${P}/admin/process-engagement`, { method: 'POST', token: admin.token })),
  )
  // One more run after them: the hourly pg_cron run may have held the drop (skip locked) with a
  // snapshot older than the entry, leaving it for the next run; paid once either way.
  await api(`${P}/admin/process-engagement`, { method: 'POST', token: admin.token })
  assert.equal((await api(`${P}/my-drops`, { token: sender.token })).body.bonus_drops_earned, 4)
  assert.equal(
    (await sql`select count(*)::int as n from public.drops_transactions where user_id = ${sender.id}`)[0].n,
    1,
    'the drops ledger is untouched',
  )
})

test('engagement needs a baseline: five fresh accounts writing one entry after a drop farm nothing; a genuine return is still rewarded', async () => {
  const admin = await createUser({ superAdmin: true })
  const farmer = await createUser()
  const friend = await createUser()
  const puppets = await Promise.all(
    [1, 2, 3, 4, 5].map(async () => accountAge(await createUser(), '2 hours')),
  )
  const returning = await established(await createUser())
  const tpl = await template()
  const drops: string[] = []
  for (const [from, to] of [...puppets.map((p) => [farmer, p]), [friend, returning]]) {
    const res = await send(from, { recipient_id: to.id, drop_type: 'encouragement', template_id: tpl })
    assert.equal(res.status, 201, JSON.stringify(res.body))
    drops.push(res.body.drop.id)
  }
  await sql`update public.encouragement_sent_drops set date_sent = now() - interval '1 hour' where id in ${
    sql(drops)
  }`
  for (const r of [...puppets, returning]) {
    await postEntry(r, { title: 'I wrote!', content: 'after the drop' })
  }

  const run = await api(`${P}/admin/process-engagement`, { method: 'POST', token: admin.token })
  assert.equal(run.status, 200, JSON.stringify(run.body))
  const farmed =
    await sql`select engaged_at, bonus_drops_awarded from public.encouragement_sent_drops where sender_id = ${farmer.id}`
  assert.equal(farmed.length, 5)
  assert.deepEqual(
    farmed.map((r) => [r.engaged_at, r.bonus_drops_awarded]),
    Array(5).fill([null, 0]),
    'fresh accounts earn the farmer nothing',
  )
  assert.equal((await api(`${P}/my-drops`, { token: farmer.token })).body.bonus_drops_earned, 0)
  const farmerBadge = (await api(`${P}/badge`, { token: farmer.token })).body.badge
  assert.deepEqual([farmerBadge.engagement_increases, farmerBadge.success_rate, farmerBadge.bonus_earned], [
    0,
    0,
    0,
  ])

  assert.equal(
    (await api(`${P}/my-drops`, { token: friend.token })).body.bonus_drops_earned,
    2,
    'an established recipient who wrote again earns the bonus',
  )
  const friendBadge = (await api(`${P}/badge`, { token: friend.token })).body.badge
  assert.deepEqual([friendBadge.engagement_increases, friendBadge.success_rate], [1, 100])
  // PostgREST shows each sender the same judgement.
  const { data } = await clientAs(farmer.token).from('encouragement_sent_drops').select('id').gt(
    'bonus_drops_awarded',
    0,
  )
  assert.deepEqual(data, [])
  const { data: ok } = await clientAs(friend.token).from('encouragement_sent_drops').select(
    'recipient_id, bonus_drops_awarded',
  )
  assert.deepEqual(ok, [{ recipient_id: returning.id, bonus_drops_awarded: 2 }])
})

test("engagement is judged against the baseline frozen when the drop was sent: deleting one's history later does not lower it", async () => {
  const admin = await createUser({ superAdmin: true })
  const sender = await createUser()
  // A regular: an old account that wrote once a day all week (a baseline of 7 in 7 days, so one
  // entry a day is their usual pace and two in the window after a drop is more).
  const regular = await established(await createUser())
  await sql`insert into public.journal_entries (user_id, title, created_at)
            select ${regular.id}, 'daily ' || d, now() - make_interval(days => d) + interval '2 hours' from generate_series(1, 7) d`
  const drop = await send(sender, { recipient_id: regular.id, drop_type: 'encouragement', content: 'go on' })
  assert.equal(drop.status, 201, JSON.stringify(drop.body))
  assert.equal(
    'baseline_activity' in drop.body.drop,
    false,
    "the sender is not shown the recipient's activity",
  )
  await sql`update public.encouragement_sent_drops set date_sent = now() - interval '30 minutes' where id = ${drop.body.drop.id}`
  await postEntry(regular, { title: 'one after the drop', content: 'x' })
  // The recipient deletes their week (PostgREST), which would have made one entry "more than usual".
  const wiped = await clientAs(regular.token).from('journal_entries').delete().like('title', 'daily %')
    .select('id')
  assert.equal(wiped.data?.length, 7, JSON.stringify(wiped))

  const judged = async () => {
    assert.equal(
      (await api(`${P}/admin/process-engagement`, { method: 'POST', token: admin.token })).status,
      200,
    )
    const [row] =
      await sql`select engaged_at, bonus_drops_awarded from public.encouragement_sent_drops where id = ${drop.body.drop.id}`
    return [row.engaged_at !== null, row.bonus_drops_awarded]
  }
  assert.deepEqual(await judged(), [false, 0], 'one entry is still their usual pace')
  await postEntry(regular, { title: 'two after the drop', content: 'y' })
  assert.deepEqual(await judged(), [true, 2], 'two are more than usual')
  // Nobody but the job's functions reads or writes the frozen baseline.
  for (const token of [sender.token, regular.token]) {
    const res = await fetch(`${env('SUPABASE_URL')}/rest/v1/encouragement_drop_baselines`, {
      headers: {
        apikey: env('SUPABASE_ANON_KEY'),
        authorization: `Bearer ${token}`,
        'accept-profile': 'private',
      },
    })
    assert.ok(res.status >= 400, `private schema over PostgREST: ${res.status}`)
    await res.body?.cancel()
  }
})

test("badges: own, another user's, bulk (at most 100), recalculation, milestones, definitions; bad input", async () => {
  const a = await createUser()
  const b = await createUser()
  await sql`update public.profiles set full_name = 'Bea' where id = ${b.id}`
  const fresh = await api(`${P}/badge`, { token: a.token })
  assert.equal(fresh.status, 200)
  assert.deepEqual(
    {
      level: fresh.body.badge.level,
      name: fresh.body.badge.name,
      total_sent: fresh.body.badge.total_sent,
      next: fresh.body.badge.next_level_name,
    },
    { level: 1, name: 'Seedling', total_sent: 0, next: 'Sprout' },
  )
  assert.equal((await send(a, { recipient_id: b.id, drop_type: 'encouragement', content: 'hi' })).status, 201)
  const theirs = await api(`${P}/badge/${a.id}`, { token: b.token })
  assert.equal(theirs.body.badge.total_sent, 1)
  assert.equal(theirs.body.badge.consecutive_days, 1)
  assert.equal(theirs.body.badge.emoji, '🌱')
  assertError(await api(`${P}/badge/${crypto.randomUUID()}`, { token: b.token }), 404)
  assertError(await api(`${P}/badge/nope`, { token: b.token }), 400, 'userId')

  const bulk = await api(`${P}/badges/bulk`, {
    token: a.token,
    body: { user_ids: [a.id, b.id, crypto.randomUUID()] },
  })
  assert.equal(bulk.status, 200)
  assert.deepEqual(bulk.body.badges.map((x: any) => x.user_id).sort(), [a.id, b.id].sort())
  assert.equal(bulk.body.badges.find((x: any) => x.user_id === b.id).full_name, 'Bea')
  assertError(await api(`${P}/badges/bulk`, { token: a.token, body: { user_ids: [] } }), 400, 'user_ids')
  assertError(
    await api(`${P}/badges/bulk`, {
      token: a.token,
      body: { user_ids: Array.from({ length: 101 }, () => crypto.randomUUID()) },
    }),
    400,
    'user_ids',
  )
  assertError(await api(`${P}/badges/bulk`, { token: a.token, body: { user_ids: ['x'] } }), 400, 'user_ids.0')

  // Six successful drops (written directly) and a recalculation: Sprout, with a milestone.
  await sql`insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, content, bonus_drops_awarded)
            select ${a.id}, ${b.id}, 'encouragement', 'ok', 2 from generate_series(1, 6)`
  await sql`delete from private.encouragement_unjudged_drops q using public.encouragement_sent_drops d
             where q.drop_id = d.id and d.sender_id = ${a.id} and d.content = 'ok'`
  const updated = await api(`${P}/badge/update`, { method: 'POST', token: a.token })
  assert.equal(updated.status, 200)
  assert.equal(updated.body.badge.level, 2)
  assert.equal(updated.body.badge.name, 'Sprout')
  assert.equal(updated.body.badge.engagement_increases, 6)
  assert.equal(updated.body.badge.progress_to_next, 0)
  const milestones = await api(`${P}/badge/milestones`, { token: a.token })
  assert.deepEqual(milestones.body.milestones.map((m: any) => m.level), [2, 1])
  assert.equal(milestones.body.milestones[0].stats.engagement_increases, 6)
  assert.deepEqual(
    (await api(`${P}/badge/milestones`, { token: b.token })).body.milestones,
    [],
    "only the caller's own",
  )
  const { data } = await clientAs(b.token).from('encouragement_badge_milestones').select('level').eq(
    'user_id',
    a.id,
  )
  assert.equal(data?.length, 2, 'milestones are visible to every signed-in user')

  const defs = await api(`${P}/badge-definitions`, { token: a.token })
  assert.deepEqual(defs.body.definitions.map((d: any) => d.min_successful_drops), [
    0,
    6,
    21,
    51,
    151,
    501,
    1501,
  ])
  assert.equal(defs.body.definitions[6].name, 'Hive Legend')
})

test('leaderboard: engagement increases, then success rate, ties by user id; limit 1..100', async () => {
  const users = await Promise.all([1, 2, 3, 4].map(() => createUser()))
  const top = 10_000_000 + Math.floor(Math.random() * 1_000_000)
  // [engagement_increases, success_rate] per user, written directly; order: 0, then 2 and 3 (tie: by id), then 1.
  const stats: [number, number][] = [[top + 2, 10], [top, 90], [top + 1, 50], [top + 1, 50]]
  for (const [i, u] of users.entries()) {
    await sql`insert into public.encouragement_badges (user_id, level, total_sent, engagement_increases, success_rate)
              values (${u.id}, 7, ${stats[i][0]}, ${stats[i][0]}, ${stats[i][1]})`
  }
  const board = await api(`${P}/leaderboard?limit=4`, { token: users[0].token })
  assert.equal(board.status, 200)
  const tied = [users[2].id, users[3].id].sort()
  assert.deepEqual(board.body.leaderboard.map((r: any) => r.user_id), [users[0].id, ...tied, users[1].id])
  assert.deepEqual(board.body.leaderboard.map((r: any) => r.rank), [1, 2, 3, 4])
  assert.equal(board.body.leaderboard[0].name, 'Hive Legend')
  assert.equal((await api(`${P}/leaderboard`, { token: users[0].token })).body.leaderboard.length <= 50, true)
  for (const q of ['limit=0', 'limit=101', 'limit=abc', 'order=asc']) {
    assertError(await api(`${P}/leaderboard?${q}`, { token: users[0].token }), 400)
  }
  await sql`delete from public.encouragement_badges where user_id in ${sql(users.map((u) => u.id))}`
})
