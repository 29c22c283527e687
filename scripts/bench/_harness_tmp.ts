// Temporary: sender CPU per channel on a kept bench stack.
import postgres from 'postgres'
import { start as startExpo } from '../../tests/fakes/expo.ts'
import { start as startWebPush } from '../../tests/fakes/web_push.ts'
import { LOCAL_ANON_KEY, LOCAL_SERVICE_ROLE_KEY } from '../lib/keys.ts'
const users = Number(Deno.env.get('H_USERS') ?? 20000)
const channel = Deno.env.get('H_CHANNEL') ?? 'web_push'
const senders = Number(Deno.env.get('H_SENDERS') ?? 1)
const db = postgres('postgresql://postgres:postgres@127.0.0.1:28322/postgres', { max: 2, onnotice: () => {} })
const expo = await startExpo({ latencyMs: 50, countOnly: true })
const web = await startWebPush({ latencyMs: 50, countOnly: true })
await db`delete from public.notifications where user_id::text like 'b24a0000-%'`
await db`delete from public.notification_devices where user_id::text like 'b24a0000-%'`
await db`update public.notification_preferences set quiet_hours_start = null, quiet_hours_end = null, daily_cap = 500 where user_id::text like 'b24a0000-%'`
const sub = await (await fetch(`${web.env.WEB_PUSH_FAKE_URL}/__control/subscribe`, { method: 'POST', body: '{"shared": true}' })).json()
if (channel === 'expo') {
  await db`insert into public.notification_devices (user_id, kind, address)
    select ('b24a0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'expo', 'ExponentPushToken[bench-' || i || ']' from generate_series(1, ${users}::int) i`
} else {
  await db`insert into public.notification_devices (user_id, kind, address, key_p256dh, key_auth)
    select ('b24a0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'web_push', ${web.env.WEB_PUSH_FAKE_URL} || '/push/' || gen_random_uuid(), ${sub.keys.p256dh}, ${sub.keys.auth}
      from generate_series(1, ${users}::int) i`
}
await db`insert into public.notifications (user_id, type, payload)
  select ('b24a0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'labs.step_prompt', jsonb_build_object('title', 'Step 1') from generate_series(1, ${users}::int) i`
await db`vacuum analyze private.notification_deliveries`
const env = { ...expo.env, ...web.env, SUPABASE_URL: 'http://127.0.0.1:28321', SUPABASE_REST_URL: 'http://127.0.0.1:28330',
  SUPABASE_SERVICE_ROLE_KEY: LOCAL_SERVICE_ROLE_KEY, SUPABASE_ANON_KEY: LOCAL_ANON_KEY, BENCH_SENDER_PROFILE: '1', BENCH_SENDER_LEASE_S: '60' }
const pgPid = Number(Deno.readTextFileSync('/tmp/journal-bench-187cfa955ad91864/db/postmaster.pid').split('\n')[0])
const pgCpu = () => { let t = 0; for (const e of Deno.readDirSync('/proc')) { if (!/^\d+$/.test(e.name)) continue; try { const s = Deno.readTextFileSync(`/proc/${e.name}/stat`); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); if (Number(f[1]) === pgPid || Number(e.name) === pgPid) t += Number(f[11]) + Number(f[12]) } catch { /**/ } } return t / 100 }
const p0 = pgCpu(); const c0 = Deno.cpuUsage?.() ?? null
const t0 = performance.now()
await Promise.all(Array.from({ length: senders }, () => new Deno.Command(`${Deno.cwd()}/node_modules/.bin/deno`, { args: ['run', '-A', 'scripts/bench/_notification_sender.ts'], env, stdout: 'inherit', stderr: 'inherit' }).spawn().status))
console.log(`${channel}: ${users} in ${((performance.now() - t0) / 1000).toFixed(1)} s; received expo ${expo.counts.size} web ${web.counts.size}; postgres backends CPU ${(pgCpu() - p0).toFixed(1)} s (live backends only)`)
await expo.stop(); await web.stop(); await db.end()
