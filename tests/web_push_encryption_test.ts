// The Web Push body and headers as the sender prepares them (RFC 8291 aes128gcm through WebCrypto,
// the VAPID header from web-push): the message must open with the browser's key alone, through
// http_ece's decrypt as a browser would; each message has its own key pair and salt (RFC 8291);
// its layout and headers are those web-push's own encryption produces; keys that cannot be used
// retire the device without a request.
import { strict as assert } from 'node:assert'
import { Buffer } from 'node:buffer'
import nodeCrypto from 'node:crypto'
import ece from 'http_ece'
import webpush from 'web-push'
import {
  ephemeralKeyPair,
  MAX_WEB_PUSH_PAYLOAD,
  prepareWebPush,
  type WebPushRequest,
} from '../functions/_shared/web_push.ts'
import { test } from './_helpers.ts'

const vapidKeys = webpush.generateVAPIDKeys()
const vapid = {
  publicKey: vapidKeys.publicKey,
  privateKey: vapidKeys.privateKey,
  subject: 'mailto:push@example.com',
}
const endpoint = 'https://fcm.googleapis.com/fcm/send/abc:def'

/** A browser's subscription: its P-256 key pair and auth secret. */
function browser() {
  const key = nodeCrypto.createECDH('prime256v1')
  key.generateKeys()
  const auth = nodeCrypto.randomBytes(16)
  return {
    key,
    auth,
    target: { endpoint, p256dh: key.getPublicKey('base64url'), auth: auth.toString('base64url') },
  }
}

const open = (b: ReturnType<typeof browser>, body: Uint8Array) =>
  ece.decrypt(Buffer.from(body), {
    version: 'aes128gcm',
    privateKey: b.key,
    authSecret: b.auth.toString('base64url'),
  })
    .toString()

test('a Web Push message opens with the browser key alone; each message has its own key pair and salt', async () => {
  const b = browser()
  const payload = JSON.stringify({
    title: 'Sam checked in — your turn!',
    body: 'Your window starts at 18:00.',
  })
  const options = { ttlSeconds: 1800, urgency: 'high' as const, topic: 'abc123' }
  const first = await prepareWebPush(vapid, b.target, payload, options) as WebPushRequest
  const second = await prepareWebPush(vapid, b.target, payload, options) as WebPushRequest
  assert.equal(open(b, first.body), payload)
  assert.equal(open(b, second.body), payload)
  // RFC 8188 header: salt (16 bytes), record size (4), key id length (1), the sender's key (65).
  const header = (r: WebPushRequest) => Buffer.from(r.body.subarray(0, 21 + 65))
  assert.notDeepEqual(
    header(first).subarray(0, 16),
    header(second).subarray(0, 16),
    'a fresh salt per message',
  )
  assert.notDeepEqual(header(first).subarray(21), header(second).subarray(21), 'a fresh key pair per message')
  assert.equal(header(first)[20], 65)
  assert.equal(header(first)[21], 0x04, 'the sender key is an uncompressed P-256 point')
  assert.equal(first.method, 'POST')
  assert.equal(first.endpoint, endpoint)
  assert.equal(first.headers['Content-Encoding'], 'aes128gcm')
  assert.equal(first.headers['Content-Type'], 'application/octet-stream')
  assert.equal(first.headers.TTL, '1800')
  assert.equal(first.headers.Urgency, 'high')
  assert.equal(first.headers.Topic, 'abc123')
  assert.match(
    first.headers.Authorization,
    new RegExp(`^vapid t=[\\w-]+\\.[\\w-]+\\.[\\w-]+, k=${vapid.publicKey}$`),
  )
  assert.equal(Object.keys(first.headers).some((h) => h.toLowerCase() === 'content-length'), false)
})

test('subscription keys that cannot be used retire the device, without a request', async () => {
  const good = browser().target
  const options = { ttlSeconds: 60, urgency: 'normal' as const }
  for (
    const [what, target] of [
      ['a key of the wrong length', { ...good, p256dh: good.p256dh.slice(0, 40) }],
      ['a point not on the curve', {
        ...good,
        p256dh: Buffer.from([4, ...new Array(64).fill(7)]).toString('base64url'),
      }],
      ['an auth secret under 16 bytes', { ...good, auth: Buffer.alloc(8).toString('base64url') }],
    ] as const
  ) {
    const r = await prepareWebPush(vapid, target, '{}', options)
    assert.ok('ok' in r && !r.ok, what)
    if ('ok' in r && !r.ok) {
      assert.equal(r.gone, true, what)
      assert.equal(r.reason, 'bad subscription keys', what)
    }
  }
})

test("the message has the layout and headers of web-push's own encryption, and both open alike", async () => {
  const b = browser()
  const payload = JSON.stringify({
    title: 'Ana sent you a drop',
    body: 'Open it in the app.',
    path: '/drops',
  })
  const ours = await prepareWebPush(vapid, b.target, payload, {
    ttlSeconds: 60,
    urgency: 'normal',
  }) as WebPushRequest
  const theirs = webpush.generateRequestDetails(
    { endpoint, keys: { p256dh: b.target.p256dh, auth: b.target.auth } },
    payload,
    {
      vapidDetails: { subject: vapid.subject, publicKey: vapid.publicKey, privateKey: vapid.privateKey },
      TTL: 60,
    },
  )
  const theirBody = new Uint8Array(theirs.body as Uint8Array)
  assert.equal(open(b, theirBody), payload)
  assert.equal(open(b, ours.body), payload)
  assert.equal(ours.body.length, theirBody.length, 'one record, unpadded, as web-push writes it')
  assert.deepEqual(
    ours.body.subarray(16, 21),
    theirBody.subarray(16, 21),
    'record size 4096 and a 65-byte key id',
  )
  const names = (h: Record<string, unknown>) =>
    Object.keys(h).map((k) => k.toLowerCase()).filter((k) => k !== 'content-length').sort()
  assert.deepEqual(names(ours.headers), names(theirs.headers as Record<string, unknown>))
  for (const h of ['TTL', 'Urgency', 'Content-Type', 'Content-Encoding']) {
    assert.equal(ours.headers[h], String((theirs.headers as Record<string, unknown>)[h]), h)
  }
})

test('a payload too large for one record is refused without retiring the device', async () => {
  const b = browser()
  const r = await prepareWebPush(vapid, b.target, 'x'.repeat(MAX_WEB_PUSH_PAYLOAD + 1), {
    ttlSeconds: 60,
    urgency: 'normal',
  })
  assert.ok('ok' in r && !r.ok && !r.gone && !r.retry)
  const fits = await prepareWebPush(vapid, b.target, 'x'.repeat(MAX_WEB_PUSH_PAYLOAD), {
    ttlSeconds: 60,
    urgency: 'normal',
  }) as WebPushRequest
  assert.ok(fits.body.length <= 4096)
  assert.equal(open(b, fits.body), 'x'.repeat(MAX_WEB_PUSH_PAYLOAD))
})

test('the sender key read from the PKCS#8 is the public half of the generated pair', async () => {
  const P256 = { name: 'ECDH', namedCurve: 'P-256' }
  for (let i = 0; i < 20; i++) {
    const mine = await ephemeralKeyPair()
    assert.equal(mine.publicKey.length, 65)
    const other = await crypto.subtle.generateKey(P256, true, ['deriveBits']) as CryptoKeyPair
    const otherRaw = await crypto.subtle.exportKey('raw', other.publicKey)
    const [a, b] = await Promise.all([
      crypto.subtle.deriveBits(
        { name: 'ECDH', public: await crypto.subtle.importKey('raw', mine.publicKey, P256, false, []) },
        other.privateKey,
        256,
      ),
      crypto.subtle.deriveBits(
        { name: 'ECDH', public: await crypto.subtle.importKey('raw', otherRaw, P256, false, []) },
        mine.privateKey,
        256,
      ),
    ])
    assert.deepEqual(new Uint8Array(a), new Uint8Array(b))
  }
})
