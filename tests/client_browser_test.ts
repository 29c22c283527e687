// A web app in headless Chromium against the local stack: a page on http://localhost:<port>
// using supabase-js's browser bundle signs up, confirms through the local inbox (the e-mail's
// link sends the browser back with the session in the fragment), signs in, refreshes, reads
// under RLS, uploads and transforms an image, receives its own notification through Realtime,
// and buys a tone pack with an Idempotency-Key. Every request crosses origins, so CORS on each
// service is part of what is tested. The page: tests/_client_app/.
import { strict as assert } from 'node:assert'
import { CLIENT_TEST } from '../scripts/lib/ports.ts'
import { ROOT } from '../scripts/lib/proc.ts'
import { ANON_KEY, API_URL, sql, test } from './_helpers.ts'
import { claimsOf, freshEmail, lastMailTo, linkIn, resetAuthRateLimits } from './_auth.ts'
import { launchBrowser, servePage } from './_browser.ts'
import { PACK_PRICE, PASSWORD, sellerSharesPackWith } from './_client.ts'

const js = 'text/javascript; charset=utf-8'
const appFiles = () => ({
  '/': {
    body: Deno.readTextFileSync(`${ROOT}/tests/_client_app/index.html`),
    type: 'text/html; charset=utf-8',
  },
  '/app.js': { body: Deno.readTextFileSync(`${ROOT}/tests/_client_app/app.js`), type: js },
  '/supabase.js': {
    body: Deno.readTextFileSync(`${ROOT}/node_modules/@supabase/supabase-js/dist/umd/supabase.js`),
    type: js,
  },
  '/config.js': {
    body: `window.APP_CONFIG = ${JSON.stringify({ supabaseUrl: API_URL, anonKey: ANON_KEY })}`,
    type: js,
  },
})

test('client (browser): sign-up, inbox confirmation, sign-in, refresh, storage, Realtime and /api from a page', async () => {
  await resetAuthRateLimits()
  const page = servePage(CLIENT_TEST.pagePort, appFiles())
  const browser = await launchBrowser(CLIENT_TEST.browserDebugPort).catch(async (e) => {
    await page.stop()
    throw e
  })
  const call = <T = any>(fn: string, ...args: unknown[]) =>
    browser.evaluate<T>(`app.${fn}(${args.map((a) => JSON.stringify(a)).join(', ')})`)
  try {
    await browser.goto(`${page.origin}/`)
    assert.equal(await browser.evaluate('typeof window.app'), 'object', browser.log.join('\n'))

    // Sign-up with confirmations on: a user, no session, an e-mail.
    const email = freshEmail('client-browser')
    const up = await call('signUp', email, PASSWORD)
    assert.equal(up.error, null, JSON.stringify(up))
    assert.equal(up.hasSession, false)
    const early = await call('signIn', email, PASSWORD)
    assert.equal(early.error?.code, 'email_not_confirmed')

    // The link in the e-mail, opened in the browser, returns to the page (an allowed redirect)
    // with the session in the fragment; supabase-js takes it, stores it and clears the fragment.
    const link = linkIn(await lastMailTo(email, 'Confirm Your Signup'))
    assert.equal(new URL(link).searchParams.get('redirect_to'), `${page.origin}/`)
    await browser.goto(link)
    assert.equal(await browser.evaluate('location.origin'), page.origin)
    await browser.waitFor(`app.events.some((e) => e.event === 'SIGNED_IN')`, 'the session from the link')
    const confirmed = await call('currentSession')
    assert.equal(confirmed.userId, up.userId)
    assert.ok(confirmed.confirmedAt, 'the address is confirmed')
    assert.equal(confirmed.userError, null)
    assert.ok(!confirmed.hash.includes('access_token'), 'the tokens left the URL')
    assert.equal(confirmed.stored.length, 1, 'the session is in localStorage')

    // Sign out, sign in with the password, refresh: each reported by onAuthStateChange.
    assert.deepEqual(await call('signOut'), { error: null, hasSession: false })
    const signedIn = await call('signIn', email, PASSWORD)
    assert.equal(signedIn.error, null)
    const claims = claimsOf(signedIn.accessToken)
    assert.equal(claims.sub, up.userId)
    assert.equal(claims.user_role, 'user', 'the access-token hook ran')
    const refreshed = await call('refresh')
    assert.equal(refreshed.error, null)
    assert.notEqual(refreshed.refreshToken, signedIn.refreshToken, 'the refresh token rotates')
    assert.equal(claimsOf(refreshed.accessToken).session_id, claims.session_id, 'the same session')
    const events: string[] = (await browser.evaluate('app.events')).map((e: any) => e.event)
    for (const e of ['SIGNED_IN', 'SIGNED_OUT', 'TOKEN_REFRESHED']) {
      assert.ok(events.includes(e), `${e} in ${events}`)
    }
    assert.ok(events.lastIndexOf('TOKEN_REFRESHED') > events.lastIndexOf('SIGNED_OUT'))

    // REST under RLS with the refreshed session: only the caller's profile, with the signup bonus.
    const profiles = await call('myProfiles')
    assert.deepEqual(profiles, { error: null, rows: [{ id: up.userId, drops_balance: 50 }] })

    // Realtime: subscribed to the caller's notifications before anything is sent.
    const listening = await call('listenToNotifications', up.userId)
    assert.ok(listening.status.includes('SUBSCRIBED'), JSON.stringify(listening))
    assert.equal(listening.system[0]?.status, 'ok', JSON.stringify(listening))

    // An image uploaded through /api (FormData), then shown at icon size by Storage's transforms.
    const uploaded = await call('uploadToneImage', 256)
    assert.equal(uploaded.error, undefined, JSON.stringify(uploaded))
    const shown = await call('showImage', uploaded.url, uploaded.packId, up.userId)
    assert.deepEqual(shown.original, { ok: true, width: 256, height: 256 }, JSON.stringify(shown))
    assert.deepEqual(shown.icon, { ok: true, width: 64, height: 64 }, `the <img> of ${shown.iconUrl}`)
    assert.match(shown.iconUrl, /\/storage\/v1\/render\/image\/public\/tone-packs\/.+\?width=64&height=64$/)
    assert.deepEqual(
      shown.fetched,
      { status: 200, type: 'image/png', size: [64, 64] },
      'fetch() of the transform (CORS)',
    )
    assert.equal(shown.signed.error, null)
    assert.match(shown.signed.url, /\/storage\/v1\/render\/image\/sign\/tone-packs\/.+\?token=/)
    assert.deepEqual(shown.signed.size, [32, 32])
    assert.deepEqual(shown.listed, { error: null, names: [shown.path.split('/').pop()] })

    // Another user shares a priced pack: the page is told through Realtime, and only about itself.
    const packId = await sellerSharesPackWith(email)
    await browser.waitFor('app.notifications.length > 0', 'the notification through Realtime')
    const [note] = await browser.evaluate('app.notifications')
    assert.equal(note.eventType, 'INSERT')
    assert.equal(note.new.user_id, up.userId)
    assert.equal(note.new.type, 'tone_pack.shared')
    assert.equal(note.new.payload.pack_id, packId)

    // Buying it twice with one Idempotency-Key charges once.
    const key = crypto.randomUUID()
    const first = await call('buy', packId, PACK_PRICE, key)
    assert.equal(first.error, null, JSON.stringify(first))
    assert.equal(first.data.replayed, false)
    assert.equal(first.data.balance, 50 - PACK_PRICE)
    const again = await call('buy', packId, PACK_PRICE, key)
    assert.equal(again.error, null, JSON.stringify(again))
    assert.equal(again.data.replayed, true)
    assert.equal(again.data.purchase.id, first.data.purchase.id)
    assert.equal(again.data.balance, 50 - PACK_PRICE)
    const [{ n }] = await sql`select count(*)::int as n from public.drops_transactions
                               where user_id = ${up.userId} and type = 'purchase'`
    assert.equal(n, 1, 'one ledger row')
    assert.deepEqual((await call('myProfiles')).rows, [{ id: up.userId, drops_balance: 50 - PACK_PRICE }])
  } catch (e) {
    ;(e as Error).message += `\n-- the page's log:\n${browser.log.slice(-30).join('\n')}`
    throw e
  } finally {
    await browser.close()
    await page.stop()
  }
})
