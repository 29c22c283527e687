// The web app of the client tests (tests/client_browser_test.ts): a page on
// http://localhost:<port> that uses supabase-js (its browser bundle) against the local stack
// exactly as against `supabase start`. Each step is a function the test calls and checks; what
// Auth and Realtime push is kept in `app.events` and `app.notifications`.
/* global supabase, APP_CONFIG */

// As an app creates its client: sessions kept in localStorage, refreshed automatically, and
// picked up from the URL fragment when an e-mail link sends the browser back here.
const client = supabase.createClient(APP_CONFIG.supabaseUrl, APP_CONFIG.anonKey)

const events = []
client.auth.onAuthStateChange((event, session) => {
  events.push({ event, userId: session?.user?.id ?? null, accessToken: session?.access_token ?? null })
})

/** A function's error as data: its status and `{error}` body. */
async function invokeError(error) {
  if (!error) return null
  const res = error.context
  let body = null
  try {
    body = res && (await res.clone().json())
  } catch { /* not JSON */ }
  return { name: error.name, message: error.message, status: res?.status ?? null, body }
}

/** A PNG drawn in the page: a size x size square, two colours so a resize shows. */
async function drawPng(size) {
  const canvas = new OffscreenCanvas(size, size)
  const g = canvas.getContext('2d')
  g.fillStyle = '#2a6f97'
  g.fillRect(0, 0, size, size)
  g.fillStyle = '#f4a261'
  g.fillRect(size / 4, size / 4, size / 2, size / 2)
  return await canvas.convertToBlob({ type: 'image/png' })
}

/** Loads a URL into an <img>, as a page shows an icon. */
function loadImage(url) {
  return new Promise((resolve) => {
    const img = new Image()
    img.onload = () => resolve({ ok: true, width: img.naturalWidth, height: img.naturalHeight })
    img.onerror = () => resolve({ ok: false })
    img.src = url
    document.body.append(img)
  })
}

globalThis.app = {
  events,
  notifications: [],
  channelStatus: [],
  channelSystem: [],

  async signUp(email, password) {
    const { data, error } = await client.auth.signUp({
      email,
      password,
      options: { emailRedirectTo: `${location.origin}/` },
    })
    return {
      error: error && { code: error.code, message: error.message },
      userId: data.user?.id,
      hasSession: !!data.session,
    }
  },

  async signIn(email, password) {
    const { data, error } = await client.auth.signInWithPassword({ email, password })
    return {
      error: error && { code: error.code, status: error.status, message: error.message },
      userId: data.user?.id ?? null,
      accessToken: data.session?.access_token ?? null,
      refreshToken: data.session?.refresh_token ?? null,
    }
  },

  /** The session the client holds now (after the e-mail link: the one from the fragment). */
  async currentSession() {
    const { data: { session } } = await client.auth.getSession()
    const { data: { user }, error } = await client.auth.getUser() // asks /auth/v1/user
    return {
      hash: location.hash,
      stored: Object.keys(localStorage).filter((k) => k.startsWith('sb-')),
      userId: session?.user?.id ?? null,
      accessToken: session?.access_token ?? null,
      refreshToken: session?.refresh_token ?? null,
      confirmedAt: user?.email_confirmed_at ?? null,
      userError: error?.message ?? null,
    }
  },

  async signOut() {
    const { error } = await client.auth.signOut()
    const { data: { session } } = await client.auth.getSession()
    return { error: error?.message ?? null, hasSession: !!session }
  },

  async refresh() {
    const { data, error } = await client.auth.refreshSession()
    return {
      error: error?.message ?? null,
      accessToken: data.session?.access_token ?? null,
      refreshToken: data.session?.refresh_token ?? null,
    }
  },

  /** REST under RLS: the profiles the caller may read (only their own). */
  async myProfiles() {
    const { data, error } = await client.from('profiles').select('id, drops_balance')
    return { error: error?.message ?? null, rows: data }
  },

  /** Subscribes to the caller's notifications; resolves once Realtime said it is subscribed. */
  async listenToNotifications(userId) {
    await client.realtime.setAuth() // the signed-in user's token, not the anon key
    client.channel(`user:${userId}:notifications`, { config: { private: true } })
      .on('postgres_changes', {
        event: 'INSERT',
        schema: 'public',
        table: 'notifications',
        filter: `user_id=eq.${userId}`,
      }, (p) => this.notifications.push(p))
      .on('system', {}, (p) => this.channelSystem.push(p))
      .subscribe((status, err) => this.channelStatus.push(err ? `${status}: ${err.message}` : status))
    const deadline = Date.now() + 10_000
    while (!this.channelSystem.length && !this.channelStatus.some((s) => /ERROR|TIMED_OUT|CLOSED/.test(s))) {
      if (Date.now() > deadline) break
      await new Promise((r) => setTimeout(r, 50))
    }
    return { status: this.channelStatus, system: this.channelSystem }
  },

  /** Creates a pack and uploads a PNG drawn here as its image for a tone (FormData through
   *  functions.invoke); returns the image's public URL. */
  async uploadToneImage(size) {
    const created = await client.functions.invoke('api/tone-packs', {
      body: { name: 'Browser pack', theme: 'origami' },
    })
    if (created.error) return { step: 'create', error: await invokeError(created.error) }
    const form = new FormData()
    form.append('file', await drawPng(size), 'joyful.png')
    const { data, error } = await client.functions.invoke(
      `api/tone-packs/${created.data.pack.id}/images/joyful`,
      {
        method: 'PUT',
        body: form,
      },
    )
    if (error) return { step: 'upload', error: await invokeError(error) }
    return { packId: created.data.pack.id, url: data.image.url }
  },

  /** The stored image as a page shows it: its public URL and a 64x64 transform in <img>s, the
   *  transform fetched (CORS), a signed 32x32 transform decoded, and the owner's folder listed. */
  async showImage(publicUrl, packId, userId) {
    const bucket = client.storage.from('tone-packs')
    const path = decodeURIComponent(publicUrl.split('/object/public/tone-packs/')[1])
    const original = await loadImage(publicUrl)
    const icon = bucket.getPublicUrl(path, { transform: { width: 64, height: 64 } }).data.publicUrl
    const shown = await loadImage(icon)
    const fetched = await fetch(icon)
    const fetchedType = fetched.headers.get('content-type')
    const fetchedBitmap = await createImageBitmap(await fetched.blob())
    const signed = await bucket.createSignedUrl(path, 60, {
      transform: { width: 32, height: 32, resize: 'contain' },
    })
    let signedSize = null
    if (signed.data) {
      const bitmap = await createImageBitmap(await (await fetch(signed.data.signedUrl)).blob())
      signedSize = [bitmap.width, bitmap.height]
    }
    const listed = await bucket.list(`${userId}/${packId}`)
    return {
      path,
      original,
      iconUrl: icon,
      icon: shown,
      fetched: {
        status: fetched.status,
        type: fetchedType,
        size: [fetchedBitmap.width, fetchedBitmap.height],
      },
      signed: { error: signed.error?.message ?? null, url: signed.data?.signedUrl ?? null, size: signedSize },
      listed: { error: listed.error?.message ?? null, names: (listed.data ?? []).map((o) => o.name) },
    }
  },

  /** Buys a pack with drops, retry-safe: the Idempotency-Key header through functions.invoke. */
  async buy(packId, price, key) {
    const { data, error } = await client.functions.invoke(`api/tone-packs/${packId}/purchase`, {
      body: { expected_price_drops: price },
      headers: { 'Idempotency-Key': key },
    })
    return { error: await invokeError(error), data }
  },
}
