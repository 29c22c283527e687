// Buying tone packs with drops: one transaction through the ledger, never below zero, never
// twice, idempotent retries, concurrent requests, and what buyers keep when a pack is deleted.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, sql, test, type TestUser } from './_helpers.ts'
import { createPack } from './_tone_packs.ts'

const buy = (u: TestUser, packId: string, key?: string) =>
  api(`/api/tone-packs/${packId}/purchase`, {
    method: 'POST',
    token: u.token,
    headers: key ? { 'idempotency-key': key } : {},
  })

async function ledger(userId: string) {
  return (await sql`select amount, type, item_id, item_type from public.drops_transactions
                     where user_id = ${userId} and type = 'purchase' order by id`).map((r) => ({ ...r }))
}
async function balanceOf(userId: string) {
  const [row] =
    await sql`select drops_balance, (select coalesce(sum(amount), 0)::int from public.drops_transactions
                            where user_id = ${userId}) as ledger from public.profiles where id = ${userId}`
  assert.equal(row.drops_balance, row.ledger, 'the balance is the sum of the ledger')
  return row.drops_balance as number
}

test('purchase: the price leaves the balance as one purchase ledger row naming the pack; the seller gets nothing', async () => {
  const [seller, buyer] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(seller, { is_public: true, price_drops: 20 })
  const res = await buy(buyer, pack.id)
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.equal(res.body.balance, 30)
  assert.equal(res.body.replayed, false)
  assert.equal(res.body.purchase.pack_id, pack.id)
  assert.equal(res.body.purchase.price_drops, 20)
  assert.deepEqual(await ledger(buyer.id), [{
    amount: -20,
    type: 'purchase',
    item_id: pack.id,
    item_type: 'tone_pack',
  }])
  assert.equal(await balanceOf(buyer.id), 30)
  assert.equal(await balanceOf(seller.id), 50, 'buying is a drops sink')
  const [tx] =
    await sql`select id from public.drops_transactions where user_id = ${buyer.id} and type = 'purchase'`
  assert.equal(res.body.purchase.transaction_id, Number(tx.id))
  const history = await api('/api/drops/transactions?type=purchase', { token: buyer.token })
  assert.equal(history.body.transactions[0].amount, -20)

  const again = await buy(buyer, pack.id)
  assertError(again, 409, 'already')
  assert.equal(await balanceOf(buyer.id), 30, 'nothing charged the second time')
})

test('purchase refusals write nothing: too few drops 402 naming balance and price, own 409, private 404', async () => {
  const [seller, buyer, friend] = await Promise.all([createUser(), createUser(), createUser()])
  const dear = await createPack(seller, { is_public: true, price_drops: 60 })
  const poor = await buy(buyer, dear.id)
  assertError(poor, 402)
  assert.match(poor.body.error, /balance 50/)
  assert.match(poor.body.error, /price 60/)
  assertError(await buy(seller, dear.id), 409, 'own')
  const privatePack = await createPack(seller, { price_drops: 5 })
  assertError(await buy(buyer, privatePack.id), 404)
  assertError(await buy(buyer, crypto.randomUUID()), 404)
  assertError(await buy(buyer, 'nope'), 400, 'id')
  assertError(await api(`/api/tone-packs/${dear.id}/purchase`, { method: 'POST' }), 401)
  assertError(await buy(buyer, dear.id, 'x'.repeat(201)), 400, 'Idempotency-Key')
  assert.deepEqual(await ledger(buyer.id), [])
  assert.equal(
    (await sql`select count(*)::int as n from public.tone_pack_purchases where user_id = ${buyer.id}`)[0].n,
    0,
  )
  assert.equal(await balanceOf(buyer.id), 50)

  // A private pack shared with someone is for sale to them.
  await api(`/api/tone-packs/${privatePack.id}/share`, { token: seller.token, body: { user_id: friend.id } })
  assert.equal((await buy(friend, privatePack.id)).status, 201)
  assert.equal(await balanceOf(friend.id), 45)

  // PostgREST clients get the same function and the same answers.
  const direct = await clientAs(buyer.token).rpc('purchase_tone_pack', { pack_id: dear.id })
  assert.equal(direct.error?.code, 'PT402')
  const forged = await clientAs(buyer.token).from('tone_pack_purchases')
    .insert({ pack_id: dear.id, user_id: buyer.id, pack_name: 'x', price_drops: 0 })
  assert.ok(forged.error, 'purchases are written only by purchase_tone_pack')
})

test("a free pack is bought without a ledger row and stays the buyer's", async () => {
  const [seller, buyer] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(seller, { is_public: true })
  const res = await buy(buyer, pack.id)
  assert.equal(res.status, 201)
  assert.equal(res.body.purchase.transaction_id, null)
  assert.deepEqual(await ledger(buyer.id), [])
  // The owner makes it private and priced: the buyer keeps using it.
  await api(`/api/tone-packs/${pack.id}`, {
    method: 'PUT',
    token: seller.token,
    body: { is_public: false, price_drops: 99 },
  })
  const got = await api(`/api/tone-packs/${pack.id}`, { token: buyer.token })
  assert.equal(got.body.pack.can_use, true)
  assert.equal(
    (await api(`/api/tone-packs/${pack.id}/activate`, { method: 'POST', token: buyer.token })).status,
    200,
  )
})

test('Idempotency-Key: a retry returns the first purchase and charges nothing; the key is not reused for another pack', async () => {
  const [seller, buyer] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(seller, { is_public: true, price_drops: 10 })
  const other = await createPack(seller, { is_public: true, price_drops: 10 })
  const key = crypto.randomUUID()
  const first = await buy(buyer, pack.id, key)
  assert.equal(first.status, 201)
  const retries = await Promise.all([
    buy(buyer, pack.id, key),
    buy(buyer, pack.id, key),
    buy(buyer, pack.id, key),
  ])
  for (const r of retries) {
    assert.equal(r.status, 201, JSON.stringify(r.body))
    assert.equal(r.body.replayed, true)
    assert.deepEqual(r.body.purchase, first.body.purchase)
  }
  assertError(await buy(buyer, other.id, key), 422, 'Idempotency-Key')
  assert.equal((await ledger(buyer.id)).length, 1)
  assert.equal(await balanceOf(buyer.id), 40)
})

test('concurrent purchases never charge twice and never overdraw', async () => {
  const [seller, buyer, crowd] = await Promise.all([createUser(), createUser(), createUser()])
  // Ten requests for one pack at once: one purchase, one charge.
  const pack = await createPack(seller, { is_public: true, price_drops: 7 })
  const same = await Promise.all(Array.from({ length: 10 }, () => buy(buyer, pack.id)))
  assert.deepEqual(same.map((r) => r.status).sort(), [201, ...Array(9).fill(409)])
  assert.equal(await balanceOf(buyer.id), 43)

  // Five packs of 20 at once with 50 drops: exactly two can be paid for.
  const packs = await Promise.all(
    Array.from({ length: 5 }, () => createPack(seller, { is_public: true, price_drops: 20 })),
  )
  const many = await Promise.all(packs.map((p) => buy(crowd, p.id)))
  assert.deepEqual(many.map((r) => r.status).sort(), [201, 201, 402, 402, 402])
  assert.equal(await balanceOf(crowd.id), 10)
  assert.equal((await ledger(crowd.id)).length, 2)
})

test('deleting a bought pack retires it: buyers keep it, their purchase and ledger rows stay; the others lose it', async () => {
  const [seller, buyer, sharee, stranger] = await Promise.all([
    createUser(),
    createUser(),
    createUser(),
    createUser(),
  ])
  const pack = await createPack(seller, { is_public: true, price_drops: 15 })
  await api(`/api/tone-packs/${pack.id}/share`, { token: seller.token, body: { user_id: sharee.id } })
  await buy(buyer, pack.id)
  await api(`/api/tone-packs/${pack.id}/activate`, { method: 'POST', token: buyer.token })

  const del = await api(`/api/tone-packs/${pack.id}`, { method: 'DELETE', token: seller.token })
  assert.equal(del.status, 200)
  assert.equal(del.body.result, 'retired')
  const kept = await api(`/api/tone-packs/${pack.id}`, { token: buyer.token })
  assert.equal(kept.status, 200)
  assert.equal(kept.body.pack.retired, true)
  assert.equal(kept.body.pack.can_use, true)
  assert.equal(kept.body.pack.is_active, true)
  const list = await api('/api/tone-packs', { token: buyer.token })
  assert.equal(list.body.purchased[0].pack.id, pack.id)
  for (const u of [seller, sharee, stranger]) {
    assertError(await api(`/api/tone-packs/${pack.id}`, { token: u.token }), 404)
  }
  assertError(await buy(stranger, pack.id), 404)
  assertError(
    await api(`/api/tone-packs/${pack.id}`, {
      method: 'PUT',
      token: seller.token,
      body: { is_public: true },
    }),
    404,
  )
  assert.equal((await ledger(buyer.id)).length, 1)
  assert.equal(await balanceOf(buyer.id), 35)
})

// ---------------------------------------------------------------------------------------
// The price the buyer saw.

const buyAt = (u: TestUser, packId: string, expected: number) =>
  api(`/api/tone-packs/${packId}/purchase`, { token: u.token, body: { expected_price_drops: expected } })
const reprice = (owner: TestUser, packId: string, price: number) =>
  api(`/api/tone-packs/${packId}`, { method: 'PUT', token: owner.token, body: { price_drops: price } })
/** Moves a pack's last price change back in time, as if the clock had moved on (the stamp trigger is bypassed). */
const priceChangedAgo = (packId: string, minutes: number) =>
  sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`
    await tx`update public.tone_packs set price_changed_at = now() - make_interval(secs => ${
      minutes * 60
    }) where id = ${packId}`
  })

test('the buyer pays the price they saw: a purchase naming expected_price_drops is refused 409 when the price changed, on /api and PostgREST', async () => {
  const [seller, buyer] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(seller, { is_public: true, price_drops: 1 })
  const seen = await api(`/api/tone-packs/${pack.id}`, { token: buyer.token })
  assert.equal(seen.body.pack.price_drops, 1)
  assert.equal((await reprice(seller, pack.id, 50)).status, 200)

  const refused = await buyAt(buyer, pack.id, 1)
  assertError(refused, 409, 'price')
  assert.match(refused.body.error, /50/, 'the message names the current price')
  const direct = await clientAs(buyer.token).rpc('purchase_tone_pack', {
    pack_id: pack.id,
    expected_price_drops: 1,
  })
  assert.equal(direct.error?.code, 'PT409')
  assert.deepEqual(await ledger(buyer.id), [])
  assert.equal(await balanceOf(buyer.id), 50)

  for (
    const [body, field] of [
      [{ expected_price_drops: -1 }, 'expected_price_drops'],
      [{ expected_price_drops: 1.5 }, 'expected_price_drops'],
      [{ expected_price_drops: '50' }, 'expected_price_drops'],
      [{ price: 50 }, 'price'],
    ] as const
  ) {
    assertError(await api(`/api/tone-packs/${pack.id}/purchase`, { token: buyer.token, body }), 400, field)
  }

  const paid = await buyAt(buyer, pack.id, 50)
  assert.equal(paid.status, 201, JSON.stringify(paid.body))
  assert.equal(paid.body.purchase.price_drops, 50)
  assert.deepEqual(await ledger(buyer.id), [{
    amount: -50,
    type: 'purchase',
    item_id: pack.id,
    item_type: 'tone_pack',
  }])
  assert.equal(await balanceOf(buyer.id), 0)
})

test('a purchase naming no price is accepted only while the price never changed: 409 naming the price however long ago it changed, on /api and PostgREST', async () => {
  const [seller, buyer, other] = await Promise.all([createUser(), createUser(), createUser()])
  // The buyer saw 1; the owner set 50; ten and a half minutes later, no price named.
  const pack = await createPack(seller, { is_public: true, price_drops: 1 })
  assert.equal((await api(`/api/tone-packs/${pack.id}`, { token: buyer.token })).body.pack.price_drops, 1)
  await reprice(seller, pack.id, 50)
  for (const minutes of [0, 10.5, 60 * 24 * 30]) {
    await priceChangedAgo(pack.id, minutes)
    const refused = await buy(buyer, pack.id)
    assertError(refused, 409, 'price')
    assert.match(refused.body.error, /50 drops/, 'the message names the current price')
    assert.match(refused.body.error, /expected_price_drops/, 'and how to confirm it')
    const direct = await clientAs(buyer.token).rpc('purchase_tone_pack', { pack_id: pack.id })
    assert.equal(direct.error?.code, 'PT409', 'the RPC as clients naming no price call it')
    const empty = await api(`/api/tone-packs/${pack.id}/purchase`, { token: buyer.token, body: {} })
    assertError(empty, 409, 'price')
  }
  assert.deepEqual(await ledger(buyer.id), [])
  assert.equal(await balanceOf(buyer.id), 50)
  // Confirmed, it is charged exactly the named price.
  const paid = await buyAt(buyer, pack.id, 50)
  assert.equal(paid.status, 201, JSON.stringify(paid.body))
  assert.equal(paid.body.purchase.price_drops, 50)

  // Changed and changed back is still a change: the buyer may have seen 50.
  const back = await createPack(seller, { is_public: true, price_drops: 2 })
  await reprice(seller, back.id, 50)
  await reprice(seller, back.id, 2)
  assertError(await buy(other, back.id), 409, 'now 2 drops')

  // The owner cannot clear the mark: the column is not theirs to write, on any path.
  const cleared = await clientAs(seller.token).from('tone_packs').update({ price_changed_at: null } as never)
    .eq('id', back.id).select('id')
  assert.ok(cleared.error, 'price_changed_at is not writable by clients')
  await clientAs(seller.token).from('tone_packs').update({ name: 'Renamed' }).eq('id', back.id)
  assertError(await buy(other, back.id), 409, 'price')
  assert.equal(await balanceOf(other.id), 50)

  // A pack whose price never changed is bought as before, with no body (SPEC's request).
  const steady = await createPack(seller, { is_public: true, price_drops: 3 })
  assert.equal((await buy(other, steady.id)).status, 201)
  // Editing something else, or setting the same price again, is not a price change.
  const renamed = await createPack(seller, { is_public: true, price_drops: 4 })
  await api(`/api/tone-packs/${renamed.id}`, {
    method: 'PUT',
    token: seller.token,
    body: { name: 'Renamed', price_drops: 4 },
  })
  assert.equal((await buy(other, renamed.id)).status, 201)
  assert.equal(await balanceOf(other.id), 43)
})

test('a price change racing purchases: every purchase is charged exactly the price its buyer named (or, naming none, the price it was created with), or refused', async () => {
  const seller = await createUser()
  const buyers = await Promise.all(Array.from({ length: 12 }, () => createUser()))
  const pack = await createPack(seller, { is_public: true, price_drops: 1 })
  const results = await Promise.all([
    ...buyers.slice(0, 6).map((b) => buyAt(b, pack.id, 1)),
    ...buyers.slice(6).map((b) => buy(b, pack.id)),
    reprice(seller, pack.id, 50),
    ...buyers.slice(0, 3).map((b) => buyAt(b, pack.id, 1)),
    ...buyers.slice(6, 9).map((b) => buy(b, pack.id)),
  ])
  const purchases = results.filter((r) => r.body?.purchase)
  for (const r of results) {
    assert.ok([200, 201, 409].includes(r.status), `${r.status} ${JSON.stringify(r.body)}`)
  }
  for (const p of purchases) assert.equal(p.body.purchase.price_drops, 1)
  for (const b of buyers) {
    const charges = await ledger(b.id)
    assert.ok(charges.length <= 1)
    for (const c of charges) assert.equal(c.amount, -1, 'nobody paid a price they did not name')
    assert.equal(await balanceOf(b.id), 50 - charges.length)
  }
  assert.equal(
    (await sql`select price_drops from public.tone_packs where id = ${pack.id}`)[0].price_drops,
    50,
  )
  // After the race, naming no price is refused for good.
  const late = await createUser()
  assertError(await buy(late, pack.id), 409, 'now 50 drops')
})
