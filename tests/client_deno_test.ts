// The browser journey (tests/client_browser_test.ts) from a Deno script with supabase-js, set up
// as a server-side app does (PKCE, the session in memory): sign-up, confirmation through the
// local inbox (the link's ?code= exchanged for the session), sign-in, refresh, reads under RLS,
// an image uploaded with FormData and transformed by Storage, the caller's notification through
// Realtime, and a purchase retried with its Idempotency-Key.
import { strict as assert } from 'node:assert'
import { createClient, FunctionsHttpError, type SupabaseClient } from '@supabase/supabase-js'
import { encode } from 'fast-png'
import { ANON_KEY, API_URL, sql, test } from './_helpers.ts'
import { claimsOf, followLink, freshEmail, lastMailTo, linkIn, resetAuthRateLimits } from './_auth.ts'
import { PACK_PRICE, PASSWORD, pngSize, sellerSharesPackWith } from './_client.ts'
import { until } from './_realtime.ts'

/** A size x size PNG, two colours so a resize shows. */
function drawPng(size: number): Uint8Array<ArrayBuffer> {
  const data = new Uint8Array(size * size * 4)
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const inner = x >= size / 4 && x < (3 * size) / 4 && y >= size / 4 && y < (3 * size) / 4
      data.set(inner ? [244, 162, 97, 255] : [42, 111, 151, 255], (y * size + x) * 4)
    }
  }
  return new Uint8Array(encode({ width: size, height: size, data, channels: 4, depth: 8 }))
}

/** A function's error as its status and body, for assertion messages. */
async function describe(error: unknown) {
  if (error instanceof FunctionsHttpError) return `${error.context.status} ${await error.context.text()}`
  return String(error)
}

test('client (Deno): sign-up, inbox confirmation, sign-in, refresh, storage, Realtime and /api through supabase-js', async () => {
  await resetAuthRateLimits()
  const supabase: SupabaseClient = createClient(API_URL, ANON_KEY, {
    auth: { flowType: 'pkce', persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  })
  const events: string[] = []
  const { data: { subscription } } = supabase.auth.onAuthStateChange((event) => {
    events.push(event)
  })
  try {
    // Sign-up with confirmations on: no session until the address is confirmed.
    const email = freshEmail('client-deno')
    const up = await supabase.auth.signUp({
      email,
      password: PASSWORD,
      options: { emailRedirectTo: 'http://127.0.0.1:3000/welcome' },
    })
    assert.equal(up.error, null)
    assert.equal(up.data.session, null)
    const userId = up.data.user!.id
    const early = await supabase.auth.signInWithPassword({ email, password: PASSWORD })
    assert.equal(early.error?.code, 'email_not_confirmed')

    // The e-mail's link (PKCE) redirects with ?code=, which this client exchanges.
    const landed = await followLink(linkIn(await lastMailTo(email, 'Confirm Your Signup')))
    assert.equal(landed.status, 303)
    assert.equal(landed.base, 'http://127.0.0.1:3000/welcome')
    const exchanged = await supabase.auth.exchangeCodeForSession(landed.query.code)
    assert.equal(exchanged.error, null)
    assert.equal(exchanged.data.user?.id, userId)
    assert.ok(exchanged.data.user?.email_confirmed_at)

    // Sign out, sign in with the password, refresh.
    assert.equal((await supabase.auth.signOut()).error, null)
    assert.equal((await supabase.auth.getSession()).data.session, null)
    const signedIn = await supabase.auth.signInWithPassword({ email, password: PASSWORD })
    assert.equal(signedIn.error, null)
    const claims = claimsOf(signedIn.data.session!.access_token)
    assert.equal(claims.sub, userId)
    assert.equal(claims.user_role, 'user', 'the access-token hook ran')
    const refreshed = await supabase.auth.refreshSession()
    assert.equal(refreshed.error, null)
    assert.notEqual(refreshed.data.session!.refresh_token, signedIn.data.session!.refresh_token, 'rotated')
    assert.equal(claimsOf(refreshed.data.session!.access_token).session_id, claims.session_id)
    const user = await supabase.auth.getUser()
    assert.equal(user.data.user?.id, userId)
    assert.deepEqual(events.filter((e) => e !== 'INITIAL_SESSION'), [
      'SIGNED_IN',
      'SIGNED_OUT',
      'SIGNED_IN',
      'TOKEN_REFRESHED',
    ])

    // REST under RLS: only the caller's profile, with the signup bonus.
    const profiles = await supabase.from('profiles').select('id, drops_balance')
    assert.deepEqual(profiles.data, [{ id: userId, drops_balance: 50 }])

    // Realtime as the signed-in user (setAuth hands it the session's token).
    await supabase.realtime.setAuth()
    const notifications: any[] = []
    const status: string[] = []
    const system: any[] = []
    const channel = supabase.channel(`user:${userId}:notifications`, { config: { private: true } })
      .on('postgres_changes', {
        event: 'INSERT',
        schema: 'public',
        table: 'notifications',
        filter: `user_id=eq.${userId}`,
      }, (p) => notifications.push(p))
      .on('system', {}, (p) => system.push(p))
      .subscribe((s) => status.push(s))
    await until(() => system.length > 0 || status.some((s) => s !== 'SUBSCRIBED'), 'the subscription')
    assert.deepEqual(status, ['SUBSCRIBED'])
    assert.equal(system[0].status, 'ok', JSON.stringify(system))

    // An image uploaded through /api with FormData, then transformed by Storage.
    const created = await supabase.functions.invoke('api/tone-packs', {
      body: { name: 'Deno pack', theme: 'origami' },
    })
    assert.equal(created.error, null, await describe(created.error))
    const packId = created.data.pack.id
    const form = new FormData()
    form.append('file', new Blob([drawPng(256)], { type: 'image/png' }), 'joyful.png')
    const uploaded = await supabase.functions.invoke(`api/tone-packs/${packId}/images/joyful`, {
      method: 'PUT',
      body: form,
    })
    assert.equal(uploaded.error, null, await describe(uploaded.error))
    const path = decodeURIComponent(uploaded.data.image.url.split('/object/public/tone-packs/')[1])
    assert.ok(path.startsWith(`${userId}/${packId}/joyful-`), path)

    const bucket = supabase.storage.from('tone-packs')
    const icon = bucket.getPublicUrl(path, { transform: { width: 64, height: 64 } }).data.publicUrl
    const iconRes = await fetch(icon)
    assert.equal(iconRes.status, 200)
    assert.equal(iconRes.headers.get('content-type'), 'image/png')
    assert.deepEqual(pngSize(new Uint8Array(await iconRes.arrayBuffer())), [64, 64])
    const original = await fetch(bucket.getPublicUrl(path).data.publicUrl)
    assert.deepEqual(pngSize(new Uint8Array(await original.arrayBuffer())), [256, 256])
    const signed = await bucket.createSignedUrl(path, 60, { transform: { width: 32, height: 32 } })
    assert.equal(signed.error, null)
    assert.deepEqual(pngSize(new Uint8Array(await (await fetch(signed.data!.signedUrl)).arrayBuffer())), [
      32,
      32,
    ])
    const downloaded = await bucket.download(path, { transform: { width: 48, height: 48 } })
    assert.equal(downloaded.error, null)
    assert.deepEqual(pngSize(new Uint8Array(await downloaded.data!.arrayBuffer())), [48, 48])

    // Another user shares a priced pack: the notification arrives through Realtime.
    const sharedPackId = await sellerSharesPackWith(email)
    await until(() => notifications.length > 0, 'the notification through Realtime')
    assert.equal(notifications[0].new.user_id, userId)
    assert.equal(notifications[0].new.type, 'tone_pack.shared')
    assert.equal(notifications[0].new.payload.pack_id, sharedPackId)

    // Buying it twice with one Idempotency-Key charges once.
    const key = crypto.randomUUID()
    const buy = () =>
      supabase.functions.invoke(`api/tone-packs/${sharedPackId}/purchase`, {
        body: { expected_price_drops: PACK_PRICE },
        headers: { 'Idempotency-Key': key },
      })
    const first = await buy()
    assert.equal(first.error, null, await describe(first.error))
    assert.equal(first.data.replayed, false)
    assert.equal(first.data.balance, 50 - PACK_PRICE)
    const again = await buy()
    assert.equal(again.error, null, await describe(again.error))
    assert.equal(again.data.replayed, true)
    assert.equal(again.data.purchase.id, first.data.purchase.id)
    const [{ n }] = await sql`select count(*)::int as n from public.drops_transactions
                               where user_id = ${userId} and type = 'purchase'`
    assert.equal(n, 1, 'one ledger row')
    assert.deepEqual((await supabase.from('profiles').select('drops_balance')).data, [{
      drops_balance: 50 - PACK_PRICE,
    }])

    await supabase.removeChannel(channel)
  } finally {
    subscription.unsubscribe()
    supabase.realtime.disconnect()
  }
})
