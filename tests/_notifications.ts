// Shared by the notifications tests: the sender's cron call, the fakes' inboxes, devices.
import { strict as assert } from 'node:assert'
import { api, env, sql, test, type TestUser } from './_helpers.ts'

const CRON = { 'x-cron-secret': env('NOTIFICATIONS_CRON_SECRET') }
export const expoFake = env('EXPO_FAKE_URL')
export const webFake = env('WEB_PUSH_FAKE_URL')
const expoToken = (tag = 'ok') => `ExponentPushToken[${tag}-${crypto.randomUUID().slice(0, 12)}]`

export async function deliver(body: Record<string, unknown> = {}) {
  const res = await api('/api/notifications/cron/deliver', {
    headers: CRON,
    body: { receipt_delay_seconds: 0, ...body },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.results
}
export const expoMessages = async (token: string) =>
  await (await fetch(`${expoFake}/__control/messages?token=${encodeURIComponent(token)}`)).json()
export const webMessages = async (endpoint: string) =>
  await (await fetch(`${webFake}/__control/messages?endpoint=${encodeURIComponent(endpoint)}`)).json()
export async function webSubscription(body: Record<string, unknown> = {}) {
  return await (await fetch(`${webFake}/__control/subscribe`, { method: 'POST', body: JSON.stringify(body) }))
    .json()
}
export async function expoDevice(user: TestUser, tag = 'ok') {
  const token = expoToken(tag)
  const res = await api('/api/notifications/devices', { token: user.token, body: { expo_push_token: token } })
  assert.equal(res.status, 201)
  return { token, id: res.body.device.id as string }
}
export async function webDevice(user: TestUser, options: Record<string, unknown> = {}) {
  const sub = await webSubscription(options)
  const res = await api('/api/notifications/devices', {
    token: user.token,
    body: { web_push_subscription: sub },
  })
  assert.equal(res.status, 201)
  return { endpoint: sub.endpoint as string, id: res.body.device.id as string }
}
export const statuses = async (notificationId: string) =>
  (await sql`select d.channel, d.status from private.notification_deliveries d where d.notification_id = ${notificationId} order by d.channel`)
    .map((r) => `${r.channel}:${r.status}`)

/** Quiet hours off, so a test's notification goes out whatever the hour. */
export const quietOff = (user: TestUser) =>
  sql`update public.notification_preferences set quiet_hours_start = null, quiet_hours_end = null where user_id = ${user.id}`

/**
 * Turns the insert kick (private.notification_push_kick) on or off. Tests that drive the sender
 * by hand (`deliver()` at chosen moments, outbox states just after a write) run with it off:
 * otherwise the run it starts at once would take their rows first.
 */
export const setKick = (enabled: boolean) => sql`update private.notification_push_kick set enabled = ${enabled}`

/** A test that drives the sender itself: the kick off while it runs, on again after. */
export function senderTest(name: string, fn: () => Promise<void> | void) {
  test(name, async () => {
    await setKick(false)
    try {
      await fn()
    } finally {
      await setKick(true)
    }
  })
}
