import process from 'node:process'
import { encryptWebPush, prepareWebPush, webPushEndpointProblem } from '../../functions/_shared/web_push.ts'
const { env, sub } = JSON.parse(Deno.readTextFileSync('/tmp/mb/fake.json'))
for (const [k, v] of Object.entries(env)) Deno.env.set(k, v as string)
const vapid = { publicKey: env.WEB_PUSH_VAPID_PUBLIC_KEY, privateKey: env.WEB_PUSH_VAPID_PRIVATE_KEY, subject: env.WEB_PUSH_SUBJECT }
const N = 3000
async function cpu(label: string, f: () => unknown) {
  const c0 = process.cpuUsage(); const t0 = performance.now()
  for (let i = 0; i < N; i++) await f()
  const c = process.cpuUsage(c0)
  console.log(label, ((c.user + c.system) / N).toFixed(1), 'µs cpu', ((performance.now()-t0)*1000/N).toFixed(1), 'µs wall')
}
const pl = new TextEncoder().encode('{"title":"Step 1"}')
await cpu('encrypt', () => encryptWebPush({ p256dh: sub.keys.p256dh, auth: sub.keys.auth }, pl))
await cpu('problem', () => webPushEndpointProblem(`${env.WEB_PUSH_FAKE_URL}/push/abc`))
await cpu('prepare', () => prepareWebPush(vapid, { endpoint: `${env.WEB_PUSH_FAKE_URL}/push/abc`, p256dh: sub.keys.p256dh, auth: sub.keys.auth }, '{"title":"Step 1"}', { ttlSeconds: 60, urgency: 'normal' }))
await cpu('encrypt', () => encryptWebPush({ p256dh: sub.keys.p256dh, auth: sub.keys.auth }, pl))
