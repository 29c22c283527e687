import process from 'node:process'
import { postWebPush, prepareWebPush } from '../../functions/_shared/web_push.ts'
const { env, sub } = JSON.parse(Deno.readTextFileSync('/tmp/mb/fake.json'))
for (const [k, v] of Object.entries(env)) Deno.env.set(k, v as string)
const vapid = { publicKey: env.WEB_PUSH_VAPID_PUBLIC_KEY, privateKey: env.WEB_PUSH_VAPID_PRIVATE_KEY, subject: env.WEB_PUSH_SUBJECT }
const N = 4000
const reqs = []
let c0 = process.cpuUsage()
for (let i = 0; i < N; i++) reqs.push(await prepareWebPush(vapid, { endpoint: `${env.WEB_PUSH_FAKE_URL}/push/${crypto.randomUUID()}`, p256dh: sub.keys.p256dh, auth: sub.keys.auth }, '{"title":"Step 1","body":"x","path":"/labs","notification_id":"' + crypto.randomUUID() + '","type":"labs.step_prompt"}', { ttlSeconds: 60, urgency: 'normal', topic: crypto.randomUUID().replace(/-/g, '') }))
let c = process.cpuUsage(c0); console.log('prepare', ((c.user + c.system) / N).toFixed(0), 'µs')
c0 = process.cpuUsage(); const t0 = performance.now()
let next = 0
await Promise.all(Array.from({ length: 50 }, async () => { while (next < N) { const r = reqs[next++]; const o = await postWebPush(r as any); if (!o.ok) throw new Error(JSON.stringify(o)) } }))
c = process.cpuUsage(c0); console.log('post', ((c.user + c.system) / N).toFixed(0), 'µs cpu', ((performance.now() - t0) / N * 1000).toFixed(0), 'µs wall')
