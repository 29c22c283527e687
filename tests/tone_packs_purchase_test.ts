// Buying tone packs with drops: one transaction through the ledger, never below zero, never
// twice, idempotent retries, concurrent requests, and what buyers keep when a pack is deleted.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, sql, test, type TestUser } from './_helpers.ts'
import { createPack } from './_tone_packs.ts'

const buy = (u: TestUser, packId: string, key?: string) =>
  api(`/api/tone-packs/${packId}/purchase`, { method: 'POST', token: u.token, headers: key ? { 'idempotency-key': key } : {} })

async function ledger(userId: string) {
  return (await sql`select amount, type, item_id, item_type from public.drops_transactions
                     where user_id = ${userId} and type = 'purchase' order by id`).map((r) => ({ ...r }))
}
async function balanceOf(userId: string) {
  const [row] = await sql`select drops_balance, (select coalesce(sum(amount), 0)::int from public.drops_transactions
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
  assert.deepEqual(await ledger(buyer.id), [{ amount: -20, type: 'purchase', item_id: pack.id, item_type: 'tone_pack' }])
  assert.equal(await balanceOf(buyer.id), 30)
  assert.equal(await balanceOf(seller.id), 50, 'buying is a drops sink')
  const [tx] = await sql`select id from public.drops_transactions where user_id = ${buyer.id} and type = 'purchase'`
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
  assert.equal((await sql`select count(*)::int as n from public.tone_pack_purchases where user_id = ${buyer.id}`)[0].n, 0)
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

test('a free pack is bought without a ledger row and stays the buyer\'s', async () => {
  const [seller, buyer] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(seller, { is_public: true })
  const res = await buy(buyer, pack.id)
  assert.equal(res.status, 201)
  assert.equal(res.body.purchase.transaction_id, null)
  assert.deepEqual(await ledger(buyer.id), [])
  // The owner makes it private and priced: the buyer keeps using it.
  await api(`/api/tone-packs/${pack.id}`, { method: 'PUT', token: seller.token, body: { is_public: false, price_drops: 99 } })
  const got = await api(`/api/tone-packs/${pack.id}`, { token: buyer.token })
  assert.equal(got.body.pack.can_use, true)
  assert.equal((await api(`/api/tone-packs/${pack.id}/activate`, { method: 'POST', token: buyer.token })).status, 200)
})

test('Idempotency-Key: a retry returns the first purchase and charges nothing; the key is not reused for another pack', async () => {
  const [seller, buyer] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(seller, { is_public: true, price_drops: 10 })
  const other = await createPack(seller, { is_public: true, price_drops: 10 })
  const key = crypto.randomUUID()
  const first = await buy(buyer, pack.id, key)
  assert.equal(first.status, 201)
  const retries = await Promise.all([buy(buyer, pack.id, key), buy(buyer, pack.id, key), buy(buyer, pack.id, key)])
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
  const packs = await Promise.all(Array.from({ length: 5 }, () => createPack(seller, { is_public: true, price_drops: 20 })))
  const many = await Promise.all(packs.map((p) => buy(crowd, p.id)))
  assert.deepEqual(many.map((r) => r.status).sort(), [201, 201, 402, 402, 402])
  assert.equal(await balanceOf(crowd.id), 10)
  assert.equal((await ledger(crowd.id)).length, 2)
})

test('deleting a bought pack retires it: buyers keep it, their purchase and ledger rows stay; the others lose it', async () => {
  const [seller, buyer, sharee, stranger] = await Promise.all([createUser(), createUser(), createUser(), createUser()])
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
  for (const u of [seller, sharee, stranger]) assertError(await api(`/api/tone-packs/${pack.id}`, { token: u.token }), 404)
  assertError(await buy(stranger, pack.id), 404)
  assertError(await api(`/api/tone-packs/${pack.id}`, { method: 'PUT', token: seller.token, body: { is_public: true } }), 404)
  assert.equal((await ledger(buyer.id)).length, 1)
  assert.equal(await balanceOf(buyer.id), 35)
})
