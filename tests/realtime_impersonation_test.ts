// Realtime and impersonation: a channel joined with an impersonation token receives the target's
// notifications while the session lasts and nothing once it has ended (the restrictive policy on
// public.notifications, which hosted Realtime applies too); the stand-in refuses the ended token.
import { strict as assert } from 'node:assert'
import { api, createUser, sql, test } from './_helpers.ts'
import { closeAll, listen, realtimeClient, settle, until } from './_realtime.ts'

const notify = async (userId: string, type: string) =>
  (await sql`select private.notify(${userId}, ${type}, ${sql.json({ n: crypto.randomUUID() })}) as id`)[0]
    .id as string

test('realtime: an ended impersonation session receives no more notifications, and cannot join again', async () => {
  const [admin, target] = await Promise.all([
    createUser({ superAdmin: true, prefix: 'rt-imp-admin' }),
    createUser({ prefix: 'rt-imp-target' }),
  ])
  const started = await api('/api/admin/impersonation', {
    token: admin.token,
    body: { user_id: target.id, reason: 'Ticket 12: notifications missing' },
  })
  assert.equal(started.status, 201, JSON.stringify(started.body))
  const token = started.body.access_token as string

  const own = realtimeClient(target.token)
  const imp = realtimeClient(token)
  const late = realtimeClient(token)
  try {
    const mine = await listen(own, { table: 'notifications', filter: `user_id=eq.${target.id}` })
    const seen = await listen(imp, { table: 'notifications', filter: `user_id=eq.${target.id}` })
    assert.equal(seen.system[0]?.status, 'ok', JSON.stringify(seen.system))

    const during = await notify(target.id, 'test.impersonation_live')
    await until(() => seen.changes.length === 1, 'the notification during the session')
    assert.equal(seen.changes[0].new.id, during)

    const stop = await api('/api/admin/impersonation/stop', { token, body: {} })
    assert.equal(stop.status, 200, JSON.stringify(stop.body))
    const after = await notify(target.id, 'test.impersonation_ended')
    await until(() => mine.changes.some((c) => c.new?.id === after), 'her own copy of the later one')
    await settle(mine, target.id)
    assert.deepEqual(seen.changes.map((c) => c.new.id), [during], 'the ended session was sent nothing more')

    // A new join with the ended token is refused.
    const again = await listen(late, { table: 'notifications', filter: `user_id=eq.${target.id}` })
    assert.equal(again.status[0], 'CHANNEL_ERROR')
    assert.match(String(again.errors[0]?.message ?? ''), /impersonation session has ended/)
  } finally {
    await closeAll(own, imp, late)
  }
})
