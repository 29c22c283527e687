// Tone packs: create/change/delete, who sees which pack (API and PostgREST alike), the list
// with its purchased section, sharing, activation and the icons entries then carry.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, postEntry, sql, test, type TestUser } from './_helpers.ts'
import { createPack, imageFor } from './_tone_packs.ts'

test('POST creates a pack owned by the caller with defaults; PUT changes it; the owner reads it back', async () => {
  const owner = await createUser()
  const pack = await createPack(owner, { name: '  Paper cranes  ', description: 'folded', theme: 'line-art' })
  assert.equal(pack.name, 'Paper cranes')
  assert.equal(pack.owner_id, owner.id)
  assert.equal(pack.theme, 'line-art')
  assert.equal(pack.is_public, false)
  assert.equal(pack.price_drops, 0)
  assert.deepEqual(pack.images, [])
  assert.equal(pack.is_owner, true)
  assert.equal(pack.can_use, true)
  assert.equal(pack.can_buy, false, 'nobody buys their own pack')

  const put = await api(`/api/tone-packs/${pack.id}`, {
    method: 'PUT',
    token: owner.token,
    body: { is_public: true, price_drops: 25, theme: 'watercolor' },
  })
  assert.equal(put.status, 200, JSON.stringify(put.body))
  assert.equal(put.body.pack.is_public, true)
  assert.equal(put.body.pack.price_drops, 25)
  assert.equal(put.body.pack.theme, 'watercolor')
  assert.equal(put.body.pack.name, 'Paper cranes', 'fields not sent are kept')
  const got = await api(`/api/tone-packs/${pack.id}`, { token: owner.token })
  assert.equal(got.body.pack.price_drops, 25)
})

test('bad pack fields are 400 naming the field, and nothing is written', async () => {
  const owner = await createUser()
  const cases: [Record<string, unknown>, string][] = [
    [{ theme: 'origami' }, 'name'],
    [{ name: '   ', theme: 'origami' }, 'name'],
    [{ name: 'x'.repeat(101), theme: 'origami' }, 'name'],
    [{ name: 'n', theme: 'cubism' }, 'theme'],
    [{ name: 'n' }, 'theme'],
    [{ name: 'n', theme: 'origami', price_drops: 1.5 }, 'price_drops'],
    [{ name: 'n', theme: 'origami', price_drops: -1 }, 'price_drops'],
    [{ name: 'n', theme: 'origami', price_drops: '5' }, 'price_drops'],
    [{ name: 'n', theme: 'origami', is_public: 'yes' }, 'is_public'],
    [{ name: 'n', theme: 'origami', owner_id: owner.id }, 'owner_id'],
    [{ name: 'n', theme: 'origami', colour: 'red' }, 'colour'],
  ]
  for (const [body, field] of cases) {
    assertError(await api('/api/tone-packs', { token: owner.token, body }), 400, field)
  }
  const pack = await createPack(owner)
  assertError(
    await api(`/api/tone-packs/${pack.id}`, { method: 'PUT', token: owner.token, body: { theme: 'cubism' } }),
    400,
    'theme',
  )
  assertError(
    await api(`/api/tone-packs/${pack.id}`, { method: 'PUT', token: owner.token, body: { price_drops: -3 } }),
    400,
    'price_drops',
  )
  assertError(
    await api(`/api/tone-packs/${pack.id}`, { method: 'PUT', token: owner.token, body: { retired: true } }),
    400,
    'retired',
  )
  assertError(await api('/api/tone-packs/not-a-uuid', { token: owner.token }), 400, 'id')
  const [{ n }] = await sql`select count(*)::int as n from public.tone_packs where owner_id = ${owner.id}`
  assert.equal(n, 1)
  assertError(await api('/api/tone-packs'), 401)
})

test("who sees a pack: owner, sharee, buyer and everyone for a public one; another user's private pack is 404", async () => {
  const [owner, sharee, stranger, admin] = await Promise.all([
    createUser(),
    createUser(),
    createUser(),
    createUser({ superAdmin: true }),
  ])
  const privatePack = await createPack(owner)
  const publicPack = await createPack(owner, { is_public: true, price_drops: 10 })
  assert.equal(
    (await api(`/api/tone-packs/${privatePack.id}/share`, {
      token: owner.token,
      body: { user_id: sharee.id },
    })).status,
    201,
  )

  assert.equal(
    (await api(`/api/tone-packs/${privatePack.id}`, { token: sharee.token })).body.pack.is_shared,
    true,
  )
  assertError(await api(`/api/tone-packs/${privatePack.id}`, { token: stranger.token }), 404)
  assertError(await api(`/api/tone-packs/${crypto.randomUUID()}`, { token: stranger.token }), 404)
  const pub = await api(`/api/tone-packs/${publicPack.id}`, { token: stranger.token })
  assert.equal(pub.status, 200)
  assert.equal(pub.body.pack.can_buy, true)
  assert.equal(pub.body.pack.can_use, false, 'a priced public pack is used once bought')
  assert.equal(
    (await api(`/api/tone-packs/${privatePack.id}`, { token: admin.token })).status,
    200,
    'super admins read any pack',
  )

  // PostgREST gives the same answers.
  const direct = async (u: TestUser, id: string) =>
    (await clientAs(u.token).from('tone_packs').select('id').eq('id', id)).data?.length ?? -1
  assert.equal(await direct(sharee, privatePack.id), 1)
  assert.equal(await direct(stranger, privatePack.id), 0)
  assert.equal(await direct(stranger, publicPack.id), 1)
  const anon = await clientAs().from('tone_packs').select('id').eq('id', publicPack.id)
  assert.ok(anon.error || anon.data?.length === 0, 'anonymous callers read no packs')
  const shares = await clientAs(stranger.token).from('tone_pack_shares').select('*').eq(
    'pack_id',
    privatePack.id,
  )
  assert.deepEqual(shares.data, [])
  const ownerShares = await clientAs(owner.token).from('tone_pack_shares').select('user_id').eq(
    'pack_id',
    privatePack.id,
  )
  assert.deepEqual(ownerShares.data, [{ user_id: sharee.id }])
})

test('only the owner changes or deletes a pack: a viewer gets 403, a stranger 404 (API and PostgREST)', async () => {
  const [owner, sharee, stranger] = await Promise.all([createUser(), createUser(), createUser()])
  const pack = await createPack(owner)
  await api(`/api/tone-packs/${pack.id}/share`, { token: owner.token, body: { user_id: sharee.id } })
  assertError(
    await api(`/api/tone-packs/${pack.id}`, { method: 'PUT', token: sharee.token, body: { name: 'mine' } }),
    403,
  )
  assertError(
    await api(`/api/tone-packs/${pack.id}`, { method: 'PUT', token: stranger.token, body: { name: 'mine' } }),
    404,
  )
  assertError(await api(`/api/tone-packs/${pack.id}`, { method: 'DELETE', token: sharee.token }), 403)
  assertError(await api(`/api/tone-packs/${pack.id}`, { method: 'DELETE', token: stranger.token }), 404)

  const patch = await clientAs(sharee.token).from('tone_packs').update({ name: 'mine' }).eq('id', pack.id)
    .select()
  assert.deepEqual(patch.data, [])
  const stolen = await clientAs(stranger.token).from('tone_packs').insert({
    name: 'x',
    theme: 'nature',
    owner_id: owner.id,
  })
  assert.ok(stolen.error, "a pack cannot be created in another user's name")
  const image = await clientAs(owner.token).from('tone_pack_images').insert({
    pack_id: pack.id,
    tone: 'sad',
    object_name: 'x',
    url: 'http://x/x',
  })
  assert.ok(image.error, 'images are written only through set_tone_pack_image')
  const directDelete = await clientAs(owner.token).from('tone_packs').delete().eq('id', pack.id)
  assert.ok(directDelete.error, 'deleting goes through delete_tone_pack')
  assert.equal((await sql`select name from public.tone_packs where id = ${pack.id}`)[0].name, pack.name)

  const del = await api(`/api/tone-packs/${pack.id}`, { method: 'DELETE', token: owner.token })
  assert.equal(del.status, 200)
  assert.equal(del.body.result, 'deleted')
  assertError(await api(`/api/tone-packs/${pack.id}`, { token: owner.token }), 404)
  assert.equal(
    (await sql`select count(*)::int as n from public.tone_pack_shares where pack_id = ${pack.id}`)[0].n,
    0,
  )
})

test('GET /api/tone-packs: owned, shared, bought and public packs once each, paginated; a purchased section', async () => {
  const [me, other, third] = await Promise.all([createUser(), createUser(), createUser()])
  const mine = await createPack(me)
  const sharedWithMe = await createPack(other)
  await api(`/api/tone-packs/${sharedWithMe.id}/share`, { token: other.token, body: { user_id: me.id } })
  const bought = await createPack(other, { is_public: true, price_drops: 5 })
  assert.equal(
    (await api(`/api/tone-packs/${bought.id}/purchase`, { method: 'POST', token: me.token })).status,
    201,
  )
  const hidden = await createPack(third)

  // Public packs of everyone are in the list too: page through it all and find ours.
  const seen: any[] = []
  let cursor: string | null = null
  let purchased: any[] = []
  do {
    const res: any = await api(`/api/tone-packs?limit=3${cursor ? `&before=${cursor}` : ''}`, {
      token: me.token,
    })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.ok(res.body.packs.length <= 3)
    seen.push(...res.body.packs)
    purchased = res.body.purchased
    cursor = res.body.next_cursor
  } while (cursor)
  assert.equal(new Set(seen.map((p) => p.id)).size, seen.length, 'no pack twice across pages')
  const byId = new Map(seen.map((p) => [p.id, p]))
  assert.ok(byId.get(mine.id)?.is_owner)
  assert.ok(byId.get(sharedWithMe.id)?.is_shared)
  assert.ok(byId.get(bought.id)?.is_purchased)
  assert.equal(byId.get(bought.id)?.can_use, true)
  assert.ok(!byId.has(hidden.id), "another user's private pack is not listed")
  for (let i = 1; i < seen.length; i++) {
    assert.ok(seen[i - 1].created_at >= seen[i].created_at, 'newest first')
  }
  assert.deepEqual(purchased.map((b) => [b.pack_id, b.price_drops, b.pack.id]), [[bought.id, 5, bought.id]])
  assert.equal(typeof purchased[0].transaction_id, 'number')

  const theirs = await api('/api/tone-packs', { token: third.token })
  assert.deepEqual(theirs.body.purchased, [])
  assert.ok(theirs.body.packs.some((p: any) => p.id === bought.id), 'public packs are listed for everyone')
  assert.ok(!theirs.body.packs.some((p: any) => p.id === mine.id))
  assertError(await api('/api/tone-packs?limit=0', { token: me.token }), 400, 'limit')
  assertError(await api('/api/tone-packs?purchased_before=zzz', { token: me.token }), 400, 'purchased_before')
})

test('share by user id or e-mail (owner only); oneself 400; unknown user 404 alike; unsharing takes the pack away', async () => {
  const [owner, friend, stranger] = await Promise.all([createUser(), createUser(), createUser()])
  const pack = await createPack(owner)
  const byEmail = await api(`/api/tone-packs/${pack.id}/share`, {
    token: owner.token,
    body: { email: friend.email.toUpperCase() },
  })
  assert.equal(byEmail.status, 201, JSON.stringify(byEmail.body))
  assert.equal(byEmail.body.share.user_id, friend.id)
  assert.equal(byEmail.body.share.created, true)
  const again = await api(`/api/tone-packs/${pack.id}/share`, {
    token: owner.token,
    body: { user_id: friend.id },
  })
  assert.equal(again.body.share.created, false, 'sharing twice is harmless')
  const told = await sql`select type, payload from public.notifications where user_id = ${friend.id}`
  assert.deepEqual(told.map((n) => ({ ...n })), [
    { type: 'tone_pack.shared', payload: { pack_id: pack.id, pack_name: pack.name, shared_by: owner.id } },
  ], 'the sharee is told once')

  assertError(
    await api(`/api/tone-packs/${pack.id}/share`, { token: owner.token, body: { user_id: owner.id } }),
    400,
    'owner',
  )
  assertError(
    await api(`/api/tone-packs/${pack.id}/share`, { token: owner.token, body: { email: owner.email } }),
    400,
    'email',
  )
  const unknownId = await api(`/api/tone-packs/${pack.id}/share`, {
    token: owner.token,
    body: { user_id: crypto.randomUUID() },
  })
  const unknownEmail = await api(`/api/tone-packs/${pack.id}/share`, {
    token: owner.token,
    body: { email: 'nobody-here@test.local' },
  })
  assertError(unknownId, 404)
  assertError(unknownEmail, 404)
  assert.equal(unknownId.body.error, unknownEmail.body.error, 'the same answer for an unknown id and e-mail')
  assertError(await api(`/api/tone-packs/${pack.id}/share`, { token: owner.token, body: {} }), 400, 'user_id')
  assertError(
    await api(`/api/tone-packs/${pack.id}/share`, {
      token: owner.token,
      body: { user_id: friend.id, email: friend.email },
    }),
    400,
    'user_id',
  )
  assertError(
    await api(`/api/tone-packs/${pack.id}/share`, { token: owner.token, body: { email: 'not-an-email' } }),
    400,
    'email',
  )

  // Someone who may not know the pack learns nothing about e-mails: the pack is 404 first.
  const probe = await api(`/api/tone-packs/${pack.id}/share`, {
    token: stranger.token,
    body: { email: friend.email },
  })
  const probeUnknown = await api(`/api/tone-packs/${pack.id}/share`, {
    token: stranger.token,
    body: { email: 'nobody-here@test.local' },
  })
  assertError(probe, 404, 'pack')
  assert.deepEqual(probe.body, probeUnknown.body)
  assertError(
    await api(`/api/tone-packs/${pack.id}/share`, { token: friend.token, body: { user_id: stranger.id } }),
    403,
  )
  const rpc = await clientAs(friend.token).rpc('share_tone_pack', { pack_id: pack.id, user_id: stranger.id })
  assert.equal(rpc.error?.code, '42501', 'PostgREST: the same rule')

  assertError(
    await api(`/api/tone-packs/${pack.id}/share/${friend.id}`, { method: 'DELETE', token: friend.token }),
    403,
  )
  assert.equal(
    (await api(`/api/tone-packs/${pack.id}/share/${friend.id}`, { method: 'DELETE', token: owner.token }))
      .status,
    200,
  )
  assertError(
    await api(`/api/tone-packs/${pack.id}/share/${friend.id}`, { method: 'DELETE', token: owner.token }),
    404,
  )
  assertError(await api(`/api/tone-packs/${pack.id}`, { token: friend.token }), 404)

  // A loop of share and unshare tells the friend once while the first notice is unread, again
  // once it is read.
  const notices = async () =>
    (await sql`select count(*)::int as n from public.notifications where user_id = ${friend.id} and type = 'tone_pack.shared'`)[
      0
    ].n
  for (let i = 0; i < 3; i++) {
    await clientAs(owner.token).rpc('share_tone_pack', { pack_id: pack.id, user_id: friend.id })
    await clientAs(owner.token).rpc('unshare_tone_pack', { pack_id: pack.id, user_id: friend.id })
  }
  assert.equal(await notices(), 1, 'no flood while unread')
  await sql`update public.notifications set read_at = now() where user_id = ${friend.id}`
  await clientAs(owner.token).rpc('share_tone_pack', { pack_id: pack.id, user_id: friend.id })
  assert.equal(await notices(), 2, 'read: the next share is news again')
})

test('activate: a pack the caller may use becomes preferences.active_tone_pack_id; a priced one must be bought', async () => {
  const [owner, user] = await Promise.all([createUser(), createUser()])
  const free = await createPack(owner, { is_public: true })
  const priced = await createPack(owner, { is_public: true, price_drops: 30 })
  const privatePack = await createPack(owner)

  const on = await api(`/api/tone-packs/${free.id}/activate`, { method: 'POST', token: user.token })
  assert.equal(on.status, 200, JSON.stringify(on.body))
  assert.equal(on.body.active_tone_pack_id, free.id)
  assert.equal(on.body.preferences.theme, 'system', 'other preferences are kept')
  assert.equal(
    (await api('/api/user/profile', { token: user.token })).body.preferences.active_tone_pack_id,
    free.id,
  )
  assert.equal((await api(`/api/tone-packs/${free.id}`, { token: user.token })).body.pack.is_active, true)

  assertError(
    await api(`/api/tone-packs/${priced.id}/activate`, { method: 'POST', token: user.token }),
    403,
    'bought',
  )
  assertError(
    await api(`/api/tone-packs/${privatePack.id}/activate`, { method: 'POST', token: user.token }),
    404,
  )
  // The same rule on every path that writes preferences.
  assertError(
    await api('/api/user/profile', {
      method: 'PUT',
      token: user.token,
      body: { preferences: { active_tone_pack_id: priced.id } },
    }),
    400,
    'active_tone_pack_id',
  )
  const patch = await clientAs(user.token).from('profiles')
    .update({ preferences: { theme: 'system', notifications: true, active_tone_pack_id: privatePack.id } })
    .eq('id', user.id)
  assert.equal(patch.error?.code, '22023')
  assert.equal(
    (await api('/api/user/profile', { token: user.token })).body.preferences.active_tone_pack_id,
    free.id,
  )

  assert.equal(
    (await api(`/api/tone-packs/${priced.id}/purchase`, { method: 'POST', token: user.token })).status,
    201,
  )
  assert.equal(
    (await api(`/api/tone-packs/${priced.id}/activate`, { method: 'POST', token: user.token })).status,
    200,
  )
  const off = await api('/api/user/profile', {
    method: 'PUT',
    token: user.token,
    body: { preferences: { active_tone_pack_id: null } },
  })
  assert.equal(off.status, 200)
  assert.equal(off.body.preferences.active_tone_pack_id, null)
})

test("entries carry the icon of the viewer's active pack for their mood, everywhere, while the viewer may use it", async () => {
  const [owner, reader] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(owner)
  const joyfulUrl = await imageFor(pack.id, owner.id, 'joyful')
  await api(`/api/tone-packs/${pack.id}/share`, { token: owner.token, body: { user_id: reader.id } })
  const entry = await postEntry(owner, { title: 'Good day', mood: 'joyful', metadata_visibility: 'public' })
  const sadEntry = await postEntry(owner, { title: 'Bad day', mood: 'sad', metadata_visibility: 'public' })

  const iconVia = async (u: TestUser | null, id: string) => {
    const one = await api(`/api/journal/${id}`, { token: u?.token })
    const view = await clientAs(u?.token).from('journal_entry_details').select('tone_icon_url').eq('id', id)
      .single()
    return { api: one.body?.entry?.tone_icon_url, rest: view.data?.tone_icon_url }
  }
  assert.deepEqual(await iconVia(owner, entry.id), { api: null, rest: null }, 'no active pack: no icon')

  await api(`/api/tone-packs/${pack.id}/activate`, { method: 'POST', token: owner.token })
  await api(`/api/tone-packs/${pack.id}/activate`, { method: 'POST', token: reader.token })
  assert.deepEqual(await iconVia(owner, entry.id), { api: joyfulUrl, rest: joyfulUrl })
  assert.deepEqual(
    await iconVia(reader, entry.id),
    { api: joyfulUrl, rest: joyfulUrl },
    "the viewer's pack decides",
  )
  assert.deepEqual(await iconVia(owner, sadEntry.id), { api: null, rest: null }, 'no image for that tone')
  const anon = await clientAs().from('journal_entry_details').select('tone_icon_url').eq('id', entry.id)
    .single()
  assert.equal(anon.data?.tone_icon_url, null, 'anonymous viewers get no icon')

  const feed = await api('/api/journal?limit=10', { token: owner.token })
  const inFeed = new Map(feed.body.entries.map((e: any) => [e.id, e.tone_icon_url]))
  assert.equal(inFeed.get(entry.id), joyfulUrl)
  assert.equal(inFeed.get(sadEntry.id), null)
  const visible = await api('/api/journal?scope=visible&limit=100', { token: reader.token })
  assert.equal(visible.body.entries.find((e: any) => e.id === entry.id)?.tone_icon_url, joyfulUrl)

  // The share is revoked: the reader's preference still names the pack, but no icon shows.
  await api(`/api/tone-packs/${pack.id}/share/${reader.id}`, { method: 'DELETE', token: owner.token })
  assert.deepEqual(await iconVia(reader, entry.id), { api: null, rest: null })
  assert.deepEqual(await iconVia(owner, entry.id), { api: joyfulUrl, rest: joyfulUrl })
})
