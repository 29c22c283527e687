// Live data of one's own through Realtime's postgres_changes (supabase-js, through the gateway):
// the encouragement drops one receives and the check-ins of one's chain and squad (the baton
// pass), each delivered only to those whose RLS lets them select the row, whatever filter they
// name; and no event written right after "Subscribed to PostgreSQL" is ever missed.
import { strict as assert } from 'node:assert'
import { RealtimeClient } from '@supabase/supabase-js'
import { clientAs, createUser, env, JWT_SECRET, sql, test, type TestUser } from './_helpers.ts'
import { closeAll, listen, realtimeClient, settle, until } from './_realtime.ts'
import { createRealtime } from '../scripts/lib/realtime/server.ts'

const sendDrop = async (from: TestUser, to: TestUser, content: string) => {
  const { data, error } = await clientAs(from.token).rpc('send_encouragement_drop', {
    recipient_id: to.id,
    drop_type: 'encouragement',
    content,
  })
  assert.equal(error, null, JSON.stringify(error))
  return (data as { id: string }).id
}

test('realtime live: a recipient sees the drops they receive arrive; a filter naming another recipient gets nothing', async () => {
  const [sender, recipient, outsider] = await Promise.all([createUser(), createUser(), createUser()])
  const r = realtimeClient(recipient.token)
  const o = realtimeClient(outsider.token)
  const s = realtimeClient(sender.token)
  try {
    const mine = await listen(r, { event: 'INSERT', table: 'encouragement_sent_drops', filter: `recipient_id=eq.${recipient.id}` })
    const unfiltered = await listen(r, { event: 'INSERT', table: 'encouragement_sent_drops' })
    const spying = await listen(o, { table: 'encouragement_sent_drops', filter: `recipient_id=eq.${recipient.id}` })
    const spyingAll = await listen(o, { table: 'encouragement_sent_drops' })
    const senderView = await listen(s, { event: 'INSERT', table: 'encouragement_sent_drops' })
    const marker = await listen(o, { table: 'notifications', filter: `user_id=eq.${outsider.id}` })
    for (const l of [mine, unfiltered, spying, spyingAll, senderView, marker]) {
      assert.equal(l.system[0]?.status, 'ok', JSON.stringify(l.system))
    }

    const id = await sendDrop(sender, recipient, 'You are doing great')
    await until(() => mine.changes.length === 1 && unfiltered.changes.length === 1, 'the drop at its recipient')
    const got = mine.changes[0]
    assert.equal(got.eventType, 'INSERT')
    assert.equal(got.new.id, id)
    assert.equal(got.new.content, 'You are doing great')
    assert.equal(got.new.recipient_id, recipient.id)
    // What Realtime sends is the row the recipient may select, no more.
    const { data: selected } = await clientAs(recipient.token).from('encouragement_sent_drops').select('*').eq('id', id)
    assert.deepEqual(Object.keys(got.new).sort(), Object.keys(selected![0]).sort())
    // The sender may select the drop they sent: they see it too (a row anyone else cannot see).
    await until(() => senderView.changes.length === 1, "the sender's own drop")

    await settle(marker, outsider.id)
    assert.deepEqual(spying.changes, [], 'a filter naming another user receives nothing')
    assert.deepEqual(spyingAll.changes, [], 'an outsider receives nothing of drops between others')
  } finally {
    await closeAll(r, o, s)
  }
})

/** A chain for today: first, then next (next's before user is first); squad mate shares first's
 *  squad; stranger has a chain of their own that date. */
async function chainOfToday() {
  const [first, next, mate, stranger] = await Promise.all([createUser(), createUser(), createUser(), createUser()])
  const [{ today }] = await sql`select (now() at time zone 'UTC')::date::text as today`
  const [squad] = await sql`insert into public.workout_squads (date, user_1_id, user_2_id, team_color)
                            values (${today}, ${first.id}, ${mate.id}, 'red') returning id`
  const chains = await sql`insert into public.workout_chains (date, user_id, before_user_id, after_user_id, team_color, squad_id)
    values (${today}, ${first.id}, null, ${next.id}, 'red', ${squad.id}),
           (${today}, ${next.id}, ${first.id}, null, 'red', null),
           (${today}, ${mate.id}, null, null, 'red', ${squad.id}),
           (${today}, ${stranger.id}, null, null, 'blue', null)
    returning id, user_id`
  const chainOf = (u: TestUser) => chains.find((c) => c.user_id === u.id)!.id
  const checkIn = async (u: TestUser) =>
    (await sql`insert into public.workout_checkins (user_id, chain_id, date, activity_type, photo_url, photo_timestamp,
                                                     location_lat, location_lng, review_reason)
               values (${u.id}, ${chainOf(u)}, ${today}, 'run', 'https://example.test/secret.jpg', now(), 48.85, 2.35,
                       'looks odd') returning id`)[0].id as string
  return { first, next, mate, stranger, today, squadId: squad.id as string, checkIn }
}

test("realtime live: a chain partner's check-in reaches the next user and the squad (the baton pass), nobody else", async () => {
  const w = await chainOfToday()
  const clients = [w.next, w.mate, w.stranger, w.first].map((u) => realtimeClient(u.token))
  const [nextC, mateC, strangerC, firstC] = clients
  try {
    const baton = await listen(nextC, { event: 'INSERT', table: 'workout_checkin_events' })
    const squad = await listen(mateC, { event: 'INSERT', table: 'workout_checkin_events', filter: `date=eq.${w.today}` })
    const stranger = await listen(strangerC, { table: 'workout_checkin_events' })
    const strangerNamed = await listen(strangerC, { table: 'workout_checkin_events', filter: `user_id=eq.${w.first.id}` })
    const own = await listen(firstC, { event: 'INSERT', table: 'workout_checkin_events' })
    const marker = await listen(strangerC, { table: 'notifications', filter: `user_id=eq.${w.stranger.id}` })

    const checkinId = await w.checkIn(w.first)
    await until(() => baton.changes.length === 1 && squad.changes.length === 1 && own.changes.length === 1, 'the check-in')
    const event = baton.changes[0].new
    assert.equal(event.checkin_id, checkinId)
    assert.equal(event.user_id, w.first.id)
    assert.equal(event.date, w.today)
    assert.equal(event.squad_id, w.squadId)
    // Who and when, never the photo, the place or the review.
    assert.deepEqual(Object.keys(event).sort(), ['activity_type', 'checkin_id', 'created_at', 'date', 'squad_id', 'user_id'])

    await settle(marker, w.stranger.id)
    assert.deepEqual(stranger.changes, [], 'a non-member receives nothing')
    assert.deepEqual(strangerNamed.changes, [], "a filter naming the checker's id receives nothing")

    // Both ways along the chain and within the squad: first hears next (their after user) and mate.
    await w.checkIn(w.next)
    await w.checkIn(w.mate)
    await until(() => own.changes.length === 3, "the neighbour's and the squad mate's check-ins at first")
    assert.deepEqual(own.changes.map((c) => c.new.user_id), [w.first.id, w.next.id, w.mate.id])
  } finally {
    await closeAll(...clients)
  }
})

test('realtime live: check-in events are readable as their policy says, go with the check-in or account, and are pruned after 3 days', async () => {
  const w = await chainOfToday()
  const id = await w.checkIn(w.first)
  const visible = async (u: TestUser) =>
    ((await clientAs(u.token).from('workout_checkin_events').select('checkin_id').eq('checkin_id', id)).data ?? []).length
  assert.deepEqual(
    await Promise.all([w.first, w.next, w.mate, w.stranger].map(visible)),
    [1, 1, 1, 0],
    'the checker, the next user and the squad mate read it; a stranger does not',
  )
  const { error } = await clientAs(w.first.token).from('workout_checkin_events').insert({
    checkin_id: crypto.randomUUID(),
    user_id: w.first.id,
    date: w.today,
    activity_type: 'run',
  })
  assert.ok(error, 'clients cannot write events')

  // Deleting the check-in (or, by cascade, the account) deletes its event.
  await sql`delete from public.workout_checkins where id = ${id}`
  assert.equal((await sql`select count(*)::int as n from public.workout_checkin_events where checkin_id = ${id}`)[0].n, 0)

  // The five-minute job prunes dates more than 3 days back.
  const old = await w.checkIn(w.next)
  await sql`update public.workout_checkin_events set date = date - 4 where checkin_id = ${old}`
  const [{ pruned }] = await sql`select private.prune_workout_checkin_events() as pruned`
  assert.ok(pruned >= 1)
  assert.equal((await sql`select count(*)::int as n from public.workout_checkin_events where checkin_id = ${old}`)[0].n, 0)
})

test('realtime live: an event written right after "Subscribed to PostgreSQL" is never missed (20 fresh stand-ins and channels)', async () => {
  const user = await createUser()
  for (let round = 0; round < 20; round++) {
    // A fresh stand-in each round: its first subscription is the one that starts reading changes.
    const rt = createRealtime({ dbUrl: env('SUPABASE_DB_URL'), jwtSecret: JWT_SECRET })
    const server = Deno.serve(
      { port: 0, hostname: '127.0.0.1', onListen: () => {} },
      (req) => rt.handle(req, new URL(req.url).pathname.replace('/realtime/v1', '')),
    )
    const client = new RealtimeClient(`ws://127.0.0.1:${server.addr.port}/realtime/v1`, {
      params: { apikey: env('SUPABASE_ANON_KEY') },
    })
    try {
      await client.setAuth(user.token)
      const received: string[] = []
      let written: string | undefined
      const write = async () =>
        written =
          (await sql`select private.notify(${user.id}, 'test.first_event', ${sql.json({ round })}) as id`)[0].id
      client.channel(`user:${user.id}:first-${round}`, { config: { private: true } })
        .on('postgres_changes', { event: 'INSERT', schema: 'public', table: 'notifications' }, (p) => {
          received.push((p.new as { id: string }).id)
        })
        // The documented usage: write (or read what was missed) once Realtime reads changes.
        .on('system', {}, (m: { extension?: string; status?: string }) => {
          if (m.extension === 'postgres_changes' && m.status === 'ok') write()
        })
        .subscribe()
      await until(() => written !== undefined, `round ${round}: Subscribed to PostgreSQL`)
      await until(() => received.includes(written!), `round ${round}: the first event after Subscribed to PostgreSQL`, 5000)
    } finally {
      client.disconnect()
      await server.shutdown()
      await rt.close()
    }
  }
})
