import { start as startWebPush } from '../../tests/fakes/web_push.ts'
const web = await startWebPush({ latencyMs: 50, countOnly: true })
const sub = await (await fetch(`${web.env.WEB_PUSH_FAKE_URL}/__control/subscribe`, { method: 'POST', body: '{"shared": true}' })).json()
Deno.writeTextFileSync('/tmp/mb/fake.json', JSON.stringify({ env: web.env, sub }))
await new Promise(() => {})
