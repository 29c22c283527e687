// The write rate limit (docs/rate_limits.md) through both paths: PostgREST (supabase-js and raw
// requests through the gateway) and /api, one budget per user or anonymous address. The test
// stack raises the default budgets (scripts/lib/write_limits.ts); each test sets rows for its own
// users and addresses.
import { strict as assert } from 'node:assert'
import { LOAD_WRITE_LIMIT } from '../scripts/lib/write_limits.ts'
import { api, ANON_KEY, API_URL, assertError, clientAs, createUser, env, pause, sql, test, type TestUser } from './_helpers.ts'

type Kind = 'user' | 'address'

async function setLimit(kind: Kind, subject: string, maxWrites: number, windowSeconds = 300) {
  await sql`insert into private.write_rate_limits (subject_kind, subject, max_writes, window_seconds)
            values (${kind}, ${subject}, ${maxWrites}, ${windowSeconds})
            on conflict (subject_kind, subject) do update set max_writes = excluded.max_writes,
                                                              window_seconds = excluded.window_seconds`
}

async function forget(kind: Kind, subject: string) {
  await sql`delete from private.write_rate_limits where subject_kind = ${kind} and subject = ${subject}`
  await sql`delete from private.write_rate_counters where subject = ${kind + ':' + subject}`
}

async function counted(kind: Kind, subject: string): Promise<number> {
  const [row] = await sql`select coalesce(sum(writes), 0)::int as n from private.write_rate_counters
                           where subject = ${kind + ':' + subject}`
  return row.n
}

/** A user with a budget of maxWrites writes. */
async function limitedUser(maxWrites: number, windowSeconds = 300): Promise<TestUser> {
  const user = await createUser({ prefix: 'limited' })
  await setLimit('user', user.id, maxWrites, windowSeconds)
  return user
}

const restHeaders = (token: string) => ({
  apikey: ANON_KEY,
  authorization: `Bearer ${token}`,
  'content-type': 'application/json',
})

/** A PostgREST write through the gateway: PATCH of the caller's own profile. */
function restWrite(user: TestUser, fullName = 'Writer') {
  return fetch(`${API_URL}/rest/v1/profiles?id=eq.${user.id}`, {
    method: 'PATCH',
    headers: restHeaders(user.token),
    body: JSON.stringify({ full_name: fullName }),
  })
}

function assertRetryAfter(res: { headers: Headers }, windowSeconds: number): number {
  const retry = Number(res.headers.get('retry-after'))
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= windowSeconds, `Retry-After ${res.headers.get('retry-after')}`)
  return retry
}

test('PostgREST: the limit is hit at exactly the configured count, with 429, Retry-After and when to retry', async () => {
  const user = await limitedUser(3)
  const supabase = clientAs(user.token)
  for (let i = 0; i < 3; i++) {
    const { error } = await supabase.from('profiles').update({ full_name: `Try ${i}` }).eq('id', user.id)
    assert.equal(error, null)
  }
  const refused = await supabase.from('profiles').update({ full_name: 'One too many' }).eq('id', user.id)
  assert.equal(refused.status, 429)
  assert.equal(refused.error?.code, 'PT429')
  assert.match(refused.error?.message ?? '', /at most 3 every 300 seconds\. Try again in \d+ seconds/)

  const raw = await restWrite(user)
  assert.equal(raw.status, 429)
  const retry = assertRetryAfter(raw, 300)
  assert.match((await raw.json()).message, new RegExp(`Try again in ${retry} seconds`))
  const [profile] = await sql`select full_name from public.profiles where id = ${user.id}`
  assert.equal(profile.full_name, 'Try 2', 'a refused write changes nothing')
  assert.equal(await counted('user', user.id), 3)
})

test('PostgREST: reads are never limited, nor a POST to a stable function', async () => {
  const user = await limitedUser(0)
  assert.equal((await restWrite(user)).status, 429)
  const supabase = clientAs(user.token)
  const read = await supabase.from('profiles').select('id').eq('id', user.id)
  assert.equal(read.error, null)
  assert.equal(read.data?.length, 1)
  // postgrest-js calls rpc with POST; a stable function runs in a read-only transaction.
  const rpc = await supabase.rpc('is_super_admin')
  assert.equal(rpc.error, null)
  assert.equal(rpc.data, false)
  const head = await fetch(`${API_URL}/rest/v1/profiles?id=eq.${user.id}`, { method: 'HEAD', headers: restHeaders(user.token) })
  assert.equal(head.status, 200)
})

test('a limited user leaves another user unaffected', async () => {
  const limited = await limitedUser(1)
  const other = await limitedUser(1)
  assert.equal((await restWrite(limited)).status, 204)
  assert.equal((await restWrite(limited)).status, 429)
  assert.equal((await restWrite(other)).status, 204)
})

test('/api: a mutating request counts once in the same budget, then 429 with Retry-After and {error}', async () => {
  const user = await limitedUser(3)
  assert.equal((await restWrite(user)).status, 204)
  // PUT /api/user/profile writes through PostgREST with the user's token: still one count.
  const first = await api('/api/user/profile', { method: 'PUT', token: user.token, body: { full_name: 'Via api' } })
  assert.equal(first.status, 200)
  assert.equal(await counted('user', user.id), 2)
  assert.equal((await api('/api/user/profile', { method: 'PUT', token: user.token, body: { full_name: 'Again' } })).status, 200)

  const refused = await api('/api/user/profile', { method: 'PUT', token: user.token, body: { full_name: 'Over' } })
  assertError(refused, 429, /at most 3 every 300 seconds\. Try again in \d+ seconds/)
  const retry = assertRetryAfter(refused, 300)
  assert.match(refused.body.error, new RegExp(`in ${retry} seconds`))
  assert.equal((await restWrite(user)).status, 429, 'the REST path shares the spent budget')

  const read = await api('/api/user/profile', { token: user.token })
  assert.equal(read.status, 200, 'reads still answer')
  assert.equal(read.body.full_name, 'Again')
})

test('/api: a REST-spent budget refuses /api writes before the route runs', async () => {
  const user = await limitedUser(1)
  assert.equal((await restWrite(user, 'Kept')).status, 204)
  const refused = await api('/api/user/profile', { method: 'PUT', token: user.token, body: { full_name: 'Lost' } })
  assertError(refused, 429, 'Try again in')
  const [profile] = await sql`select full_name from public.profiles where id = ${user.id}`
  assert.equal(profile.full_name, 'Kept')
})

test('anonymous writes are counted per address (as the gateway forwards it)', async () => {
  // Straight to PostgREST, as hosted Supabase's gateway reaches it: the address in x-forwarded-for.
  const address = '203.0.113.7'
  await setLimit('address', address, 2)
  try {
    const signup = (n: number, forwardedFor: string) =>
      fetch(`${env('SUPABASE_REST_URL')}/labs_kit_waitlist`, {
        method: 'POST',
        headers: { apikey: ANON_KEY, authorization: `Bearer ${ANON_KEY}`, 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
        body: JSON.stringify({ email: `anon-${n}-${crypto.randomUUID().slice(0, 8)}@test.local` }),
      })
    assert.equal((await signup(1, address)).status, 201)
    // The last entry is the one the nearest proxy appended; those before it are the client's.
    assert.equal((await signup(2, `198.51.100.1, ${address}`)).status, 201)
    const refused = await signup(3, address)
    assert.equal(refused.status, 429)
    assertRetryAfter(refused, 300)
    assert.equal((await refused.json()).code, 'PT429')
    assert.equal((await signup(4, '203.0.113.99')).status, 201, 'another address is unaffected')
  } finally {
    await forget('address', address)
  }
})

test('the gateway never trusts a client-sent x-forwarded-for or cf-connecting-ip', async () => {
  const spoofed = '203.0.113.8'
  await setLimit('address', spoofed, 0)
  try {
    const res = await fetch(`${API_URL}/rest/v1/labs_kit_waitlist`, {
      method: 'POST',
      headers: {
        apikey: ANON_KEY,
        'content-type': 'application/json',
        'x-forwarded-for': spoofed,
        'cf-connecting-ip': spoofed,
      },
      body: JSON.stringify({ email: `spoof-${crypto.randomUUID().slice(0, 8)}@test.local` }),
    })
    assert.equal(res.status, 201, 'counted against the peer address, not the one the client named')
    assert.equal(await counted('address', spoofed), 0)
  } finally {
    await forget('address', spoofed)
  }
})

test('/api: public mutating routes count the caller address; webhooks and cron routes are not counted', async () => {
  // Every test client is 127.0.0.1: its budget is set here and restored after (files run one by one).
  const local = '127.0.0.1'
  await forget('address', local)
  await setLimit('address', local, 1)
  try {
    const join = () => api('/api/labs/kit-waitlist', { body: { email: `wait-${crypto.randomUUID().slice(0, 8)}@test.local` } })
    assert.equal((await join()).status, 202)
    assert.equal(await counted('address', local), 1, 'the route\'s own anonymous insert is not counted again')
    const refused = await join()
    assertError(refused, 429, 'Try again in')
    assertRetryAfter(refused, 300)
    // A signed webhook is the provider's, never limited (a bad signature is its own answer).
    const webhook = await api('/api/payment/webhook', { rawBody: '{}', headers: { 'stripe-signature': 't=1,v1=bad' } })
    assert.notEqual(webhook.status, 429)
    // Nor are the public POSTs that write nothing a person could flood, called from shared
    // addresses: a token check, and the e-mail's one-click unsubscribe (its token is the credential).
    const verify = await api('/api/auth/verify', { body: { token: 'not-a-token' } })
    assert.equal(verify.status, 401)
    const unsubscribe = await api(`/api/notifications/unsubscribe?token=${crypto.randomUUID()}`, { method: 'POST', body: {} })
    assert.equal(unsubscribe.status, 404)
    assert.equal(await counted('address', local), 1, 'neither was counted')
  } finally {
    await forget('address', local)
  }
})

test('counters expire after the window, and the cleanup job deletes ended windows', async () => {
  const user = await limitedUser(1, 2)
  // Start at the beginning of a 2-second window so the two writes share it.
  await pause(2000 - (Date.now() % 2000) + 50)
  assert.equal((await restWrite(user)).status, 204)
  const refused = await restWrite(user)
  assert.equal(refused.status, 429)
  assertRetryAfter(refused, 2)
  await pause(2100)
  assert.equal((await restWrite(user)).status, 204, 'a new window, a new budget')

  await sql`insert into private.write_rate_counters (subject, window_start, writes)
            values ('user:' || ${user.id}, now() - interval '2 days', 5)`
  await sql`select private.prune_write_rate_counters()`
  const [{ old }] = await sql`select count(*)::int as old from private.write_rate_counters
                               where subject = 'user:' || ${user.id} and window_start < now() - interval '1 day'`
  assert.equal(old, 0)
  const [job] = await sql`select schedule, command from cron.job where jobname = 'write-rate-counters-cleanup'`
  assert.equal(job.schedule, '*/5 * * * *')
  assert.match(job.command, /private\.prune_write_rate_counters\(\)/)
})

test('the service role is never limited', async () => {
  const user = await limitedUser(0)
  const res = await fetch(`${API_URL}/rest/v1/profiles?id=eq.${user.id}`, {
    method: 'PATCH',
    headers: restHeaders(env('SUPABASE_SERVICE_ROLE_KEY')),
    body: JSON.stringify({ full_name: 'By support' }),
  })
  assert.equal(res.status, 204)
})

test('the defaults the migrations deploy: 300 writes per 5 minutes per user, 100 per anonymous address', async () => {
  // The test stack raises them (scripts/lib/write_limits.ts), so they are read from the migrations.
  const inserts: string[] = []
  for (const entry of [...Deno.readDirSync('supabase/migrations')].sort((a, b) => a.name.localeCompare(b.name))) {
    const text = await Deno.readTextFile(`supabase/migrations/${entry.name}`)
    inserts.push(...(text.match(/insert into private\.write_rate_limits[^;]*;/g) ?? []))
  }
  assert.equal(inserts.length, 1)
  assert.match(inserts[0], /values \('user', '\*', 300, 300\), \('address', '\*', 100, 300\)/)
  const [{ raised }] = await sql`select count(*)::int as raised from private.write_rate_limits
                                  where subject = '*' and max_writes = ${LOAD_WRITE_LIMIT}`
  assert.equal(raised, 2, 'the test stack runs with the load budgets')
})

