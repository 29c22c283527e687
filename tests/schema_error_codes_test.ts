// How SQL functions report errors, as a client calling them through PostgREST sees it: "not
// found" is raised as PT404, which PostgREST answers 404 (never a 500). The same convention
// inside the database: supabase/tests/schema_error_codes.test.sql.
import { strict as assert } from 'node:assert'
import { clientAs, createUser, orgWith, teamWith, test } from './_helpers.ts'

test('PostgREST answers 404, not 500, when an RPC finds nothing (PT404)', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const stranger = await createUser({ prefix: 'stranger' })
  const orgId = await orgWith(owner)
  const teamId = await teamWith(orgId, owner)
  const db = clientAs(stranger.token)
  for (
    const [fn, args] of [
      ['list_organization_members', { target_org: orgId }],
      ['list_team_members', { target_team: teamId }],
      ['transfer_organization_ownership', { target_org: orgId, new_owner_id: stranger.id }],
      ['update_journal_entry', { entry_id: crypto.randomUUID(), patch: { title: 'x' } }],
    ] as const
  ) {
    const res = await db.rpc(fn, args)
    assert.equal(res.status, 404, `${fn}: ${JSON.stringify(res.error)}`)
    assert.equal(res.error?.code, 'PT404', fn)
  }
  const admin = await createUser({ prefix: 'super', superAdmin: true })
  const nobody = await clientAs(admin.token).rpc('admin_adjust_drops', {
    target_user_id: crypto.randomUUID(),
    delta: 5,
    reason: 'x',
  })
  assert.equal(nobody.status, 404, JSON.stringify(nobody.error))
})
