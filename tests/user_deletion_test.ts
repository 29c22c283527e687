// Deleting an account (DELETE /api/user/account, the support variant, the RPC and the job).
// The main case deletes a user who touched every area (tests/_account_fixture.ts) and checks
// each invariant: no column that names a user still names them (the list in
// private.account_deletion_columns(), itself checked against the catalog so a new user column
// without a rule fails), kept records carry the tombstone, other users' ledgers, chains,
// organizations, received drops and notifications stay whole, platform AI totals do not move,
// no object of the user is left in storage, and Stripe and the music provider were told.
import { strict as assert } from 'node:assert'
import { encode } from 'fast-png'
import { seedEveryArea } from './_account_fixture.ts'
import { adminClient } from './_auth.ts'
import {
  api,
  API_URL,
  assertError,
  clientAs,
  createUser,
  env,
  insertAuthUser,
  JWT_SECRET,
  orgWith,
  signClaims,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'
import { stripeControl } from './_stripe.ts'

const CRON = { 'x-cron-secret': 'local-frontend-cron-secret' }
const png = encode({ width: 4, height: 4, data: new Uint8Array(4 * 4 * 3).fill(90), channels: 3 })

// The account-deletions pg_cron job (every 5 minutes) would claim these tests' deletions
// between their steps; the tests call its endpoint themselves, so it is paused for this file.
await sql`select cron.alter_job(jobid, active := false) from cron.job where jobname = 'account-deletions' and active`
// Deletions other files left queued (the Auth tests delete throwaway users) come first in the
// job's oldest-first claim of 10: finish them now, so each test's run reaches its own deletion.
for (let i = 0; i < 40; i++) {
  const run = await api('/api/cron/account-deletions', { method: 'POST', headers: CRON, body: { limit: 25 } })
  if (run.status !== 200 || !run.body.results.remaining) break
}

/** A token for `u` issued `minutesAgo` minutes ago (still unexpired). */
async function tokenIssuedAgo(u: TestUser, minutesAgo: number, extra: Record<string, unknown> = {}) {
  const iat = Math.floor(Date.now() / 1000) - minutesAgo * 60
  return await signClaims({
    sub: u.id,
    aud: 'authenticated',
    role: 'authenticated',
    email: u.email,
    iat,
    exp: iat + 3 * 3600,
    session_id: crypto.randomUUID(),
    ...extra,
  }, JWT_SECRET)
}

async function storeObject(bucket: string, name: string, ownerId?: string) {
  const key = env('SUPABASE_SERVICE_ROLE_KEY')
  const res = await fetch(`${API_URL}/storage/v1/object/${bucket}/${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, apikey: key, 'content-type': 'image/png' },
    body: png as Uint8Array<ArrayBuffer>,
  })
  assert.ok(res.ok, `storing ${bucket}/${name}: ${res.status} ${await res.text()}`)
  if (ownerId) {
    await sql`update storage.objects set owner_id = ${ownerId} where bucket_id = ${bucket} and name = ${name}`
  }
}

async function revocationsOf(token: string): Promise<number> {
  const url = `${env('MUSIC_FAKE_CONTROL_URL')}/revocations?token=${encodeURIComponent(token)}`
  return (await (await fetch(url)).json()).revocations.length
}

async function statusOf(url: string) {
  const res = await fetch(url)
  await res.body?.cancel()
  return res.status
}

const deleteAccount = (token: string, body: unknown = { confirm: 'DELETE' }) =>
  api('/api/user/account', { method: 'DELETE', token, body })

/** Rows of each listed user column that still hold `id`. */
async function columnsNaming(id: string) {
  const columns = await sql`select table_name, column_name, handling from private.account_deletion_columns()
                             where handling <> 'kept a day'`
  const left: string[] = []
  for (const c of columns) {
    const [table, column] = [c.table_name as string, c.column_name as string]
    const [{ n }] = await sql.unsafe(`select count(*)::int as n from ${table} where ${column} = $1`, [id])
    if (n > 0) left.push(`${table}.${column} (${c.handling}): ${n}`)
  }
  return left
}

test('every column that names a user has a rule for account deletion, and the foreign keys agree with it', async () => {
  const listed = await sql`select table_name, column_name, handling from private.account_deletion_columns()`
  const rule = new Map(listed.map((r) => [`${r.table_name}.${r.column_name}`, r.handling as string]))
  // Foreign keys to a user, and uuid columns named like a user (no foreign key: audit columns).
  const found = await sql`
    select format('%s.%s', n.nspname, c.relname) as table_name, a.attname as column_name,
           (select k.confdeltype from pg_constraint k
             where k.contype = 'f' and k.conrelid = c.oid and a.attnum = any (k.conkey) limit 1) as on_delete
      from pg_attribute a
      join pg_class c on c.oid = a.attrelid and c.relkind in ('r', 'p') and not c.relispartition
      join pg_namespace n on n.oid = c.relnamespace
     where n.nspname in ('public', 'private', 'auth') and a.attnum > 0 and not a.attisdropped
       and a.atttypid = 'uuid'::regtype
       and (exists (select 1 from pg_constraint k where k.contype = 'f' and k.conrelid = c.oid
                      and a.attnum = any (k.conkey)
                      and k.confrelid in ('public.profiles'::regclass, 'auth.users'::regclass))
            or (n.nspname = 'auth' and a.attname = 'user_id')
            or (n.nspname <> 'auth'
                and a.attname ~ '^(user|owner|admin|target|sender|recipient|submitter|applicant|member|mentioned_user|before_user|after_user|user_[0-9])(_id)?$|_by$'))`
  const missing = found.filter((f) => !rule.has(`${f.table_name}.${f.column_name}`))
  assert.deepEqual(
    missing.map((f) => `${f.table_name}.${f.column_name}`),
    [],
    'user columns without a deletion rule',
  )
  for (const f of found) {
    const handling = rule.get(`${f.table_name}.${f.column_name}`)
    if (handling === 'cascade') {
      assert.equal(f.on_delete, 'c', `${f.table_name}.${f.column_name} must cascade`)
    }
    if (handling === 'set null') {
      assert.equal(f.on_delete, 'n', `${f.table_name}.${f.column_name} must set null`)
    }
    if (f.on_delete === 'a' || f.on_delete === 'r') {
      assert.equal(
        handling,
        'deleted',
        `${f.table_name}.${f.column_name} blocks a delete: delete_account_rows must clear it`,
      )
    }
  }
  // Each listed column exists (a renamed column cannot hide behind a stale rule).
  const stale = []
  for (const r of listed) {
    const [table, column] = [r.table_name as string, r.column_name as string]
    const [{ ok }] = await sql`select exists (select 1 from pg_attribute
                                 where attrelid = to_regclass(${table}) and attname = ${column} and not attisdropped) as ok`
    if (!ok) stale.push(`${table}.${column}`)
  }
  assert.deepEqual(stale, [], 'rules for columns that do not exist')
})

/** How an account goes: through the pipeline's own entry, or by deleting the auth user directly
 *  (Auth's admin API, which the dashboard uses, or SQL), which must end the same way. */
type Removal = 'api' | 'auth admin' | 'sql'

async function removeAuthUser(how: Exclude<Removal, 'api'>, userId: string) {
  if (how === 'auth admin') {
    const { error } = await adminClient().auth.admin.deleteUser(userId)
    if (error) throw error
  } else {
    await sql`delete from auth.users where id = ${userId}`
  }
}

for (const how of ['api', 'auth admin', 'sql'] as const) {
  test(`deleting a user who touched every area (${how}) leaves nothing that names them and keeps every other user whole`, () =>
    deleteUserOfEveryArea(how))
}

/**
 * Runs the account-deletions job until `userId`'s deletion has every step done (or 20 runs): the
 * job claims with `skip locked`, so a run beside it (another test file's, pg_cron's) may hold
 * this deletion while ours passes it by.
 */
async function jobFinishes(userId: string) {
  let d: any
  for (let run = 0; run < 20; run++) {
    const res = await api('/api/cron/account-deletions', { method: 'POST', headers: CRON, body: {} })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    ;[{ d }] = await sql`select private.account_deletion(${userId}) as d`
    if (d && Object.values(d.steps).every(Boolean)) break
    await new Promise((r) => setTimeout(r, 250))
  }
  return d
}

async function deleteUserOfEveryArea(how: Removal) {
  const [subject, neighbour1, neighbour2, friend] = await Promise.all(
    ['subject', 'neighbour1', 'neighbour2', 'friend'].map((prefix) => createUser({ prefix })),
  )
  const admin = await createUser({ prefix: 'deladmin', superAdmin: true })
  const f = await seedEveryArea(sql, {
    subject: subject.id,
    neighbour1: neighbour1.id,
    neighbour2: neighbour2.id,
    friend: friend.id,
    admin: admin.id,
  })

  // Stripe knows the customer and a live subscription; the database names them.
  const customer = await (await fetch(`${env('STRIPE_API_BASE')}/v1/customers`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${env('STRIPE_SECRET_KEY')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: `email=${encodeURIComponent(subject.email)}&metadata[user_id]=${subject.id}`,
  })).json()
  const subscriptionId = `sub_del_${crypto.randomUUID().slice(0, 12)}`
  await stripeControl('subscription', {
    object: { id: subscriptionId, customer: customer.id, status: 'active' },
  })
  await sql`update public.subscriptions set stripe_customer_id = ${customer.id}, stripe_subscription_id = ${subscriptionId}
             where id = ${f.payments.subscriptionId}`
  await sql`update private.stripe_customers set stripe_customer_id = ${customer.id} where user_id = ${subject.id}`
  const [music] =
    await sql`select private.music_decrypt(refresh_token) as refresh from private.music_tokens where user_id = ${subject.id}`
  // The fixture's token is the same in every run of this test: count this run's revocation.
  const revokedBefore = await revocationsOf(music.refresh)

  // Files: the subject's folder in two buckets, one owned object elsewhere, and a pack image
  // `friend` bought (friend's purchase points into the subject's folder).
  const bought = `${subject.id}/${f.tonePacks.subjectPackId}/happy-1.png`
  await Promise.all([
    storeObject('entry-backgrounds', `${subject.id}/bg-1.png`),
    storeObject('workout-checkins', `${subject.id}/photo-1.png`),
    storeObject('workout-mosaics', `loose-${subject.id.slice(0, 8)}.png`, subject.id),
    storeObject('tone-packs', bought),
  ])
  await sql`insert into public.tone_pack_purchase_images (purchase_id, tone, object_name, url, updated_at)
            values (${f.tonePacks.friendsPurchaseId}, 'happy', ${bought}, ${`${API_URL}/storage/v1/object/public/tone-packs/${bought}`}, now())
            on conflict (purchase_id, tone) do update set object_name = excluded.object_name, url = excluded.url`
  // The subject's own purchase holds a copy made when its seller was deleted: it goes too.
  const boughtCopy = `purchases/${f.tonePacks.subjectsPurchaseId}/calm-1.png`
  await storeObject('tone-packs', boughtCopy)
  await sql`insert into public.tone_pack_purchase_images (purchase_id, tone, object_name, url, updated_at)
            values (${f.tonePacks.subjectsPurchaseId}, 'calm', ${boughtCopy}, ${`${API_URL}/storage/v1/object/public/tone-packs/${boughtCopy}`}, now())
            on conflict (purchase_id, tone) do update set object_name = excluded.object_name, url = excluded.url`

  // A PKCE sign-in in flight (GoTrue's flow_state has no foreign key to the user).
  await sql`insert into auth.flow_state (id, user_id, auth_code, code_challenge_method, code_challenge, provider_type, authentication_method)
            values (gen_random_uuid(), ${subject.id}, 'code', 's256', 'challenge', 'email', 'magiclink')`
  const platformBefore = await sql`select * from public.ai_usage_platform_totals() order by month, usage_type`
  const auditBefore =
    await sql`select count(*)::int as n from public.impersonation_audit where target_id = ${subject.id} or admin_id = ${subject.id}`

  const publicImage = `${API_URL}/storage/v1/object/public/tone-packs/${bought}`
  if (how === 'api') {
    const res = await deleteAccount(subject.token)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal(res.body.deletion.status, 'deleted', JSON.stringify(res.body))
    assert.deepEqual(res.body.deletion.steps, { stripe: true, music: true, storage: true, rows: true })
  } else {
    await removeAuthUser(how, subject.id)
    // The rows went in the deleting transaction; the rest waits for the worker.
    const queued = await api(`/api/admin/users/${subject.id}/deletion`, { token: admin.token })
    assert.equal(queued.body.deletion?.requested_via, 'auth', JSON.stringify(queued.body))
    assert.deepEqual(queued.body.deletion.steps, { stripe: false, music: false, storage: false, rows: true })
    const received = await api(`/api/encouragement-drops/received`, { token: friend.token })
    assert.ok(received.body.drops.some((d: { id: string }) => d.id === f.encouragement.dropFriendReceived))
    assert.equal(await statusOf(publicImage), 200, 'served until the worker runs')
    const done = await jobFinishes(subject.id)
    assert.deepEqual(done.steps, { stripe: true, music: true, storage: true, rows: true }, JSON.stringify(done))
  }
  assert.equal(await statusOf(publicImage), 404, 'the public image is no longer served')

  // Nothing names the user any more.
  assert.deepEqual(await columnsNaming(subject.id), [])
  assert.equal((await sql`select 1 from auth.users where id = ${subject.id}`).length, 0)
  const [{ tombstone_id: tomb }] =
    await sql`select tombstone_id from private.account_deletions where user_id = ${subject.id}`
  const [{ n: auditAfter }] =
    await sql`select count(*)::int as n from public.impersonation_audit where target_id = ${tomb} or admin_id = ${tomb}`
  assert.equal(auditAfter, auditBefore[0].n, 'the impersonation audit is kept under the tombstone')
  assert.equal((await sql`select 1 from public.role_changes where user_id = ${tomb}`).length > 0, true)
  const [adjustment] =
    await sql`select user_id, created_by from public.drops_transactions where id = ${f.drops.adjustmentToFriendId}`
  assert.deepEqual(
    [adjustment.user_id, adjustment.created_by],
    [friend.id, tomb],
    "friend's adjustment stays, by the tombstone",
  )
  const [kept] =
    await sql`select user_id, stripe_subscription_id from public.subscriptions where id = ${f.payments.subscriptionId}`
  assert.deepEqual(
    [kept.user_id, kept.stripe_subscription_id],
    [null, subscriptionId],
    'the payment record stays without the user',
  )
  const [email] = await sql`select email from private.account_deletions where user_id = ${subject.id}`
  assert.equal(email.email, null, 'the deletion record keeps no e-mail')

  // Other users: ledgers add up, chains join up, the shared organization and its team stay.
  const drift = await sql`select p.id from public.profiles p
                           where p.id in ${sql([neighbour1.id, neighbour2.id, friend.id, admin.id])}
                             and p.drops_balance <> (select coalesce(sum(t.amount), 0) from public.drops_transactions t where t.user_id = p.id)`
  assert.deepEqual(drift.map((r) => r.id), [], 'every remaining balance is the sum of its ledger')
  for (const date of [f.workout.today, f.workout.pastDate]) {
    const links = await sql`select user_id, before_user_id, after_user_id from public.workout_chains
                             where date = ${date} and user_id in ${
      sql([neighbour1.id, neighbour2.id])
    } order by user_id`
    const byUser = new Map(links.map((l) => [l.user_id, l]))
    assert.equal(
      byUser.get(neighbour1.id)?.after_user_id,
      neighbour2.id,
      `${date}: neighbour1 passes to neighbour2`,
    )
    assert.equal(
      byUser.get(neighbour2.id)?.before_user_id,
      neighbour1.id,
      `${date}: neighbour2 follows neighbour1`,
    )
  }
  assert.equal(
    (await sql`select 1 from public.organizations where id = ${f.orgAlone}`).length,
    0,
    'the org the user was alone in is gone',
  )
  const [team] = await sql`select admin_id from public.teams where id = ${f.teamAdminned}`
  assert.equal(team.admin_id, friend.id, "the team passes to the organization's owner")

  // What friend received stays, from a deleted user; friend's notification no longer names them.
  const received = await api(`/api/encouragement-drops/received`, { token: friend.token })
  assert.equal(received.status, 200)
  const drop = received.body.drops.find((d: { id: string }) => d.id === f.encouragement.dropFriendReceived)
  assert.ok(drop, "the drop is still in the recipient's history")
  assert.equal(drop.sender_id, null)
  assert.equal(drop.sender_name, 'Deleted user')
  const [note] =
    await sql`select payload from public.notifications where id = ${f.notifications.naming.friend}`
  assert.ok(!JSON.stringify(note.payload).includes(subject.id), JSON.stringify(note.payload))

  // Platform AI totals do not move.
  const platformAfter = await sql`select * from public.ai_usage_platform_totals() order by month, usage_type`
  assert.deepEqual(platformAfter.map((r) => ({ ...r })), platformBefore.map((r) => ({ ...r })))

  // Storage: nothing of the user is left; friend's bought image lives on outside the folder.
  const leftObjects = await sql`select bucket_id, name from storage.objects where name like ${
    subject.id + '/%'
  } or owner_id = ${subject.id}`
  assert.deepEqual(leftObjects.map((o) => `${o.bucket_id}/${o.name}`), [])
  assert.equal((await sql`select 1 from storage.objects where name = ${boughtCopy}`).length, 0, 'the copy it bought is gone')
  const [image] =
    await sql`select object_name, url from public.tone_pack_purchase_images where purchase_id = ${f.tonePacks.friendsPurchaseId} and tone = 'happy'`
  assert.ok(!image.object_name.startsWith(subject.id), image.object_name)
  const served = await fetch(image.url)
  assert.equal(served.status, 200)
  assert.deepEqual(new Uint8Array(await served.arrayBuffer()), png)

  // The providers were told.
  const deletions = await stripeControl<{ path: string; status: number }[]>('deletions')
  assert.ok(
    deletions.some((d) => d.path === `/v1/subscriptions/${subscriptionId}` && d.status === 200),
    JSON.stringify(deletions),
  )
  assert.ok(
    deletions.some((d) => d.path === `/v1/customers/${customer.id}` && d.status === 200),
    JSON.stringify(deletions),
  )
  assert.equal(await revocationsOf(music.refresh), revokedBefore + 1, 'the refresh token was revoked at the provider')

  // The old token opens nothing: /api, PostgREST and Storage refuse it.
  assertError(await api('/api/user/profile', { token: subject.token }), 401)
  const rest = await clientAs(subject.token).from('notifications').select('id')
  assert.equal(rest.status, 401, JSON.stringify(rest.error))
  assertError(await deleteAccount(subject.token), 401)
}

test("Auth's soft delete deletes the account too: the job runs every step and the auth user goes", async () => {
  const [leaving, friend] = await Promise.all([createUser({ prefix: 'soft' }), createUser({ prefix: 'softfriend' })])
  const [drop] = await sql`insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, content)
                           values (${leaving.id}, ${friend.id}, 'encouragement', 'Keep going') returning id`
  await storeObject('entry-backgrounds', `${leaving.id}/bg.png`)
  const { error } = await adminClient().auth.admin.deleteUser(leaving.id, true)
  assert.equal(error, null, JSON.stringify(error))
  const [asked] = await sql`select private.account_deletion(${leaving.id}) as d`
  assert.equal(asked.d?.status, 'pending', JSON.stringify(asked.d))
  assertError(await api('/api/user/profile', { token: leaving.token }), 401)
  // Banned until a date Auth can read ('infinity' is no Go time: Auth's user list failed with 500).
  const [{ banned_until }] = await sql`select banned_until from auth.users where id = ${leaving.id}`
  assert.ok(banned_until instanceof Date && banned_until.getTime() > Date.now() + 50 * 365 * 86_400_000)
  const { data: listed, error: listError } = await adminClient().auth.admin.getUserById(leaving.id)
  assert.equal(listError, null, JSON.stringify(listError))
  assert.ok(Date.parse((listed.user as { banned_until?: string }).banned_until ?? "") > Date.now())

  const done = await jobFinishes(leaving.id)
  assert.deepEqual(done.steps, { stripe: true, music: true, storage: true, rows: true }, JSON.stringify(done))
  assert.equal((await sql`select 1 from auth.users where id = ${leaving.id}`).length, 0)
  assert.equal((await sql`select 1 from storage.objects where name like ${leaving.id + '/%'}`).length, 0)
  const received = await api('/api/encouragement-drops/received', { token: friend.token })
  const kept = received.body.drops.find((d: { id: string }) => d.id === drop.id)
  assert.equal(kept?.sender_name, 'Deleted user', JSON.stringify(received.body))
})

test('deleting needs a sign-in from the last 10 minutes and the word DELETE; nothing is written otherwise', async () => {
  const u = await createUser({ prefix: 'stale' })
  assertError(await deleteAccount(u.token, {}), 400, 'confirm')
  assertError(await deleteAccount(u.token, { confirm: 'delete' }), 400, 'confirm')
  const stale = await tokenIssuedAgo(u, 11)
  assertError(await deleteAccount(stale), 401, /sign in again/i)
  // A token refreshed a minute ago from a sign-in of an hour ago is not fresh either (amr).
  const refreshed = await tokenIssuedAgo(u, 1, {
    amr: [{ method: 'password', timestamp: Math.floor(Date.now() / 1000) - 3600 }],
  })
  assertError(await deleteAccount(refreshed), 401, /sign in again/i)
  const rpc = await clientAs(stale).rpc('delete_my_account', { confirm: 'DELETE' })
  assert.equal(rpc.status, 401, JSON.stringify(rpc.error))
  assert.equal((await sql`select 1 from private.account_deletions where user_id = ${u.id}`).length, 0)
  assert.equal((await api('/api/user/profile', { token: u.token })).status, 200, 'the account still works')
})

test('an owner of an organization with other members is refused (409 naming it) until ownership passes', async () => {
  const [owner, member] = await Promise.all([
    createUser({ prefix: 'owner' }),
    createUser({ prefix: 'member' }),
  ])
  const orgId = await orgWith(owner, [member])
  await sql`update public.organizations set name = 'Rowing Club' where id = ${orgId}`
  const refused = await deleteAccount(owner.token)
  assertError(refused, 409, /Rowing Club: 1 other member/)
  // Deleting the auth user directly is refused too (the organization would be left ownerless):
  // Auth's admin API answers its database error, SQL raises the same 409.
  const { error: authRefused } = await adminClient().auth.admin.deleteUser(owner.id)
  assert.equal(authRefused?.status, 500, JSON.stringify(authRefused))
  assert.match(authRefused?.message ?? '', /Database error deleting user/)
  await assert.rejects(removeAuthUser('sql', owner.id), /Rowing Club: 1 other member/)
  assert.equal((await sql`select 1 from auth.users where id = ${owner.id}`).length, 1)
  assert.equal((await sql`select 1 from private.account_deletions where user_id = ${owner.id}`).length, 0)
  const moved = await api(`/api/organizations/${orgId}/transfer-ownership`, {
    method: 'POST',
    token: owner.token,
    body: { new_owner_id: member.id },
  })
  assert.equal(moved.status, 200, JSON.stringify(moved.body))
  const done = await deleteAccount(owner.token)
  assert.equal(done.status, 200, JSON.stringify(done.body))
  const [org] = await sql`select owner_id from public.organizations where id = ${orgId}`
  assert.equal(org.owner_id, member.id)
  assert.equal((await sql`select 1 from public.organization_members where user_id = ${owner.id}`).length, 0)
})

test('support deletes an account for a user; other users may not, and an impersonation session may not', async () => {
  const [admin, target, stranger] = await Promise.all([
    createUser({ prefix: 'support', superAdmin: true }),
    createUser({ prefix: 'leaving' }),
    createUser({ prefix: 'stranger' }),
  ])
  assertError(
    await api(`/api/admin/users/${target.id}`, {
      method: 'DELETE',
      token: stranger.token,
      body: { confirm: 'DELETE' },
    }),
    403,
  )
  const rpc = await clientAs(stranger.token).rpc('admin_delete_account', {
    user_id: target.id,
    confirm: 'DELETE',
  })
  assert.equal(rpc.status, 403, JSON.stringify(rpc.error))
  assertError(await api(`/api/admin/users/${target.id}/deletion`, { token: admin.token }), 404)

  // Impersonating the target, the admin cannot delete the account as the user.
  const started = await api('/api/admin/impersonation', {
    method: 'POST',
    token: admin.token,
    body: { user_id: target.id, reason: 'ticket 1234: account question' },
  })
  assert.equal(started.status, 201, JSON.stringify(started.body))
  assertError(await deleteAccount(started.body.access_token), 403, /impersonating/)
  await api('/api/admin/impersonation/stop', {
    method: 'POST',
    token: admin.token,
    body: { session_id: started.body.session_id },
  })

  const res = await api(`/api/admin/users/${target.id}`, {
    method: 'DELETE',
    token: admin.token,
    body: { confirm: 'DELETE' },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.deletion.requested_via, 'support')
  assert.equal(res.body.deletion.status, 'deleted')
  const status = await api(`/api/admin/users/${target.id}/deletion`, { token: admin.token })
  assert.equal(status.body.deletion.status, 'deleted')
  assert.equal((await sql`select 1 from public.profiles where id = ${target.id}`).length, 0)
  assertError(await api('/api/user/profile', { token: target.token }), 401)
})

test('a Stripe outage leaves the deletion pending; the job finishes it, and the final sweep closes it a day later', async () => {
  const u = await createUser({ prefix: 'outage' })
  const customer = await (await fetch(`${env('STRIPE_API_BASE')}/v1/customers`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${env('STRIPE_SECRET_KEY')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: `metadata[user_id]=${u.id}`,
  })).json()
  await sql`insert into private.stripe_customers (user_id, stripe_customer_id) values (${u.id}, ${customer.id})`
  await stripeControl('fail', { user_id: customer.id, status: 500, type: 'api_error', times: 10 })

  // Through PostgREST: the RPC asks; the account stops working at once.
  const asked = await clientAs(u.token).rpc('delete_my_account', { confirm: 'DELETE' })
  assert.equal(asked.error, null, JSON.stringify(asked.error))
  assert.equal(asked.data.status, 'pending')
  assert.equal((await clientAs(u.token).from('profiles').select('id')).status, 401)
  // /api changes that reach a provider with the service role are refused before they start.
  assertError(await api('/api/music/sync', { method: 'POST', token: u.token }), 401)
  assertError(
    await api('/api/payment/create-checkout-session', {
      method: 'POST',
      token: u.token,
      body: { priceId: 'price_premium_monthly' },
    }),
    401,
  )
  const [profile] = await sql`select is_active from public.profiles where id = ${u.id}`
  assert.equal(profile.is_active, false, 'jobs skip the account until its rows go')

  const run = await api('/api/cron/account-deletions', { method: 'POST', headers: CRON, body: {} })
  assert.equal(run.status, 200, JSON.stringify(run.body))
  const mine = run.body.results.errors.find((e: { user_id: string }) => e.user_id === u.id)
  assert.match(mine?.errors.join(' ') ?? '', /stripe/)
  const [row] =
    await sql`select stripe_done_at, rows_done_at, last_error, next_attempt_at > now() as backing_off
                            from private.account_deletions where user_id = ${u.id}`
  assert.equal(row.stripe_done_at, null)
  assert.notEqual(row.rows_done_at, null, 'the rows go without waiting for Stripe')
  assert.equal(row.backing_off, true)
  assert.match(row.last_error, /^stripe:/)

  await stripeControl('fail', { user_id: customer.id, status: 500, type: 'api_error', times: 0 })
  await sql`update private.account_deletions set next_attempt_at = now() where user_id = ${u.id}`
  const again = await api('/api/cron/account-deletions', { method: 'POST', headers: CRON, body: {} })
  assert.equal(again.status, 200)
  const [after] = await sql`select stripe_done_at from private.account_deletions where user_id = ${u.id}`
  assert.notEqual(after.stripe_done_at, null)
  const deletions = await stripeControl<{ path: string; status: number }[]>('deletions')
  assert.ok(deletions.some((d) => d.path === `/v1/customers/${customer.id}` && d.status === 200))

  // A day later: a file that raced the first sweep goes, then the deletion record.
  await storeObject('entry-backgrounds', `${u.id}/late.png`)
  await sql`update private.account_deletions set rows_done_at = now() - interval '25 hours' where user_id = ${u.id}`
  const sweep = await api('/api/cron/account-deletions', { method: 'POST', headers: CRON, body: {} })
  assert.equal(sweep.status, 200)
  assert.equal((await sql`select 1 from storage.objects where name like ${u.id + '/%'}`).length, 0)
  assert.equal((await sql`select 1 from private.account_deletions where user_id = ${u.id}`).length, 0)
  const [logged] =
    await sql`select succeeded, failed from private.job_runs where job = 'account-deletions' order by id desc limit 1`
  assert.ok(logged.succeeded + logged.failed >= 1)
})

test("deleting an account whose address was never confirmed keeps that address's suppression and mail; a confirmed one's go", async () => {
  const suppressed = async (address: string) =>
    (await sql`select count(*)::int as n from private.email_suppressions where address = ${address}`)[0].n
  for (const confirmed of [false, true]) {
    const email = `someone-else-${crypto.randomUUID().slice(0, 8)}@test.local`
    const id = await insertAuthUser(sql, { email, ...(confirmed ? { email_confirmed_at: new Date().toISOString() } : {}) })
    await sql`insert into private.email_suppressions (address, reason, svix_id)
              values (${email}, 'complained', ${'msg_' + crypto.randomUUID()})`
    await sql`delete from auth.users where id = ${id}`
    assert.equal(await suppressed(email), confirmed ? 0 : 1, `confirmed: ${confirmed}`)
    await sql`delete from private.email_suppressions where address = ${email}`
  }
})
