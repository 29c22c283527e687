// Realtime test helpers: supabase-js clients subscribed through the gateway's Realtime stand-in,
// collecting what each receives.
import { createClient, type RealtimeChannel, type SupabaseClient } from '@supabase/supabase-js'
import { ANON_KEY, API_URL, sql } from './_helpers.ts'

export interface Listener {
  client: SupabaseClient
  channel: RealtimeChannel
  changes: any[]
  system: any[]
  status: string[]
  errors: Error[]
}

/** A supabase-js client whose Realtime acts as `token` (supabase-js's `accessToken` option, as a
 *  third-party-auth app sets it up); without one, as anon (the anon key). */
export function realtimeClient(token?: string, vsn?: '1.0.0' | '2.0.0') {
  return createClient(API_URL, ANON_KEY, {
    auth: { persistSession: false, autoRefreshToken: false },
    ...(token ? { accessToken: () => Promise.resolve(token) } : {}),
    ...(vsn ? { realtime: { vsn } } : {}),
  })
}

/** The private channel a user may join for their own row changes (supabase/schemas/realtime.sql). */
export const ownTopic = (userId: string) => `user:${userId}:${crypto.randomUUID().slice(0, 8)}`

/** The subject of the token a client's Realtime acts as ('' for the anon key). */
function subjectOf(client: SupabaseClient) {
  const token = client.realtime.accessTokenValue ?? ''
  try {
    return JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))).sub ?? ''
  } catch {
    return ''
  }
}

/**
 * Broadcast and presence are closed in the product (no policy lets anyone send). The tests of the
 * stand-in's broadcast and presence mechanics use rooms a test-only policy opens to everyone:
 * private channels named `room:...`, as a project that wants them would write its policies.
 */
export async function openTestRooms() {
  await sql`do $$ begin
    if not exists (select 1 from pg_policies where schemaname = 'realtime' and policyname = 'test rooms read') then
      create policy "test rooms read" on realtime.messages for select to anon, authenticated
        using ((select realtime.topic()) like 'room:%');
      create policy "test rooms send" on realtime.messages for insert to anon, authenticated
        with check ((select realtime.topic()) like 'room:%');
    end if;
  end $$`
}

/** Subscribes to postgres_changes on a private channel of the caller's own (`user:<id>:...`, see
 *  ownTopic); resolves once the channel is joined and Realtime said whether it subscribed to
 *  PostgreSQL (the `system` message), or the join failed. */
export async function listen(
  client: SupabaseClient,
  params: { event?: '*' | 'INSERT' | 'UPDATE' | 'DELETE'; schema?: string; table: string; filter?: string },
  topic?: string,
): Promise<Listener> {
  // Settle the token first: a channel joined before supabase-js has its token joins with the
  // anon key (as on hosted), and only a later change of token would upgrade it.
  await client.realtime.setAuth()
  const l: Listener = {
    client,
    channel: client.channel(topic ?? ownTopic(subjectOf(client) || 'anon'), { config: { private: true } }),
    changes: [],
    system: [],
    status: [],
    errors: [],
  }
  const filter = {
    event: params.event ?? '*',
    schema: params.schema ?? 'public',
    table: params.table,
    filter: params.filter,
  }
  if (!filter.filter) delete filter.filter
  l.channel
    .on('postgres_changes', filter as any, (p) => l.changes.push(p))
    .on('system', {}, (p) => l.system.push(p))
    .subscribe((status, err) => {
      l.status.push(status)
      if (err) l.errors.push(err)
    })
  await until(() =>
    l.status.includes('CHANNEL_ERROR') || l.status.includes('TIMED_OUT') || l.system.length > 0
  )
  return l
}

/** Waits (generously) until `ok()` holds; throws with `what` when it never does. */
export async function until(ok: () => boolean, what = 'the condition', ms = 10_000) {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** Lets events that should not arrive have their chance to (changes are delivered in commit order). */
export async function settle(marker: Listener, markerUserId: string) {
  const before = marker.changes.length
  await sql`select private.notify(${markerUserId}, 'test.marker', ${
    sql.json({ marker: crypto.randomUUID() })
  })`
  await until(() => marker.changes.length > before, 'the marker notification')
}

export async function closeAll(...clients: SupabaseClient[]) {
  for (const c of clients) {
    await c.removeAllChannels()
    c.realtime.disconnect()
  }
}
