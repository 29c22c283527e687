// Labs outreach (routes/labs/outreach.ts): step prompts to users with an unfinished clone,
// messages to approved sponsors and the sponsors' weekly digest.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, env, sql, test } from './_helpers.ts'
import { admin, approvedSponsor, frontendCron, labsCron, publicTemplate, submitSponsor } from './_labs.ts'
import { resendControl } from './_email.ts'

// ---- Step prompts -------------------------------------------------------------------------

test('step prompts: x-cron-secret; users with an unfinished clone get one prompt, not again within 3 days', async () => {
  const u = await createUser()
  const t = await publicTemplate(await createUser())
  const clone =
    (await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: u.token })).body.clone
  assertError(await api('/api/labs/cron/process-step-prompts', { method: 'POST' }), 401)
  assertError(
    await api('/api/labs/cron/process-step-prompts', {
      method: 'POST',
      headers: { 'x-cron-secret': 'nope' },
    }),
    401,
  )
  const first = await api('/api/labs/cron/process-step-prompts', { method: 'POST', headers: labsCron() })
  assert.equal(first.status, 200, JSON.stringify(first.body))
  assert.deepEqual(first.body.results.errors, [])
  const prompts = () =>
    sql`select payload from public.notifications where user_id = ${u.id} and type = 'labs.step_prompt'`
  assert.equal((await prompts()).length, 1)
  assert.equal((await prompts())[0].payload.clone_id, clone.id)
  await api('/api/labs/cron/process-step-prompts', { method: 'POST', headers: labsCron() })
  assert.equal((await prompts()).length, 1, 'not again the same day')
  // Four days later (the last prompt moved back): prompted again.
  await sql`update private.labs_step_prompts set prompted_at = now() - interval '4 days', prompted_on = current_date - 4 where user_id = ${u.id}`
  await sql`update public.notifications set created_at = created_at - interval '4 days' where user_id = ${u.id}`
  await api('/api/labs/cron/process-step-prompts', { method: 'POST', headers: labsCron() })
  assert.equal((await prompts()).length, 2)
  // Finished clones are not prompted.
  await api(`/api/labs/clones/${clone.id}/complete`, { token: u.token, body: {} })
  await sql`update private.labs_step_prompts set prompted_at = now() - interval '5 days', prompted_on = prompted_on - 5 where user_id = ${u.id}`
  await api('/api/labs/cron/process-step-prompts', { method: 'POST', headers: labsCron() })
  assert.equal((await prompts()).length, 2)
})

test("step prompts: one user's failure is reported in results.errors and does not stop the others", async () => {
  const [broken, fine] = await Promise.all([createUser(), createUser()])
  const t = await publicTemplate(await createUser())
  for (const u of [broken, fine]) {
    await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: u.token })
  }
  // A notification trigger that fails for one recipient only (removed below).
  await sql.unsafe(
    `create function public.zz_test_fail_prompt() returns trigger language plpgsql set search_path = '' as $$
    begin if new.user_id = '${broken.id}' then raise exception 'inbox unavailable'; end if; return new; end $$`,
  )
  await sql`create trigger zz_test_fail_prompt before insert on public.notifications for each row execute function public.zz_test_fail_prompt()`
  try {
    const run = await api('/api/labs/cron/process-step-prompts', { method: 'POST', headers: labsCron() })
    assert.equal(run.status, 200, JSON.stringify(run.body))
    assert.ok(run.body.results.failed >= 1)
    assert.ok(
      run.body.results.errors.some((e: string) => e.startsWith(broken.id) && e.includes('inbox unavailable')),
      JSON.stringify(run.body.results),
    )
    assert.equal(
      (await sql`select count(*)::int as n from public.notifications where user_id = ${fine.id} and type = 'labs.step_prompt'`)[
        0
      ].n,
      1,
    )
    assert.equal(
      (await sql`select count(*)::int as n from private.labs_step_prompts where user_id = ${broken.id}`)[0].n,
      0,
      'the failed user is tried again next run',
    )
  } finally {
    await sql`drop trigger zz_test_fail_prompt on public.notifications`
    await sql`drop function public.zz_test_fail_prompt()`
  }
})

// ---- Outreach -----------------------------------------------------------------------------

test('outreach: 5 messages per 24 hours per sponsor, even sent at once; bodies for sender and recipient only', async () => {
  const owner = await createUser()
  const sponsor = await approvedSponsor(owner)
  const other = await approvedSponsor(await createUser())
  const sender = await createUser()
  const replies = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      api(`/api/labs/sponsors/${sponsor.id}/messages`, {
        token: sender.token,
        body: { body: `hello ${i}` },
      })),
  )
  assert.equal(replies.filter((r) => r.status === 201).length, 5)
  for (const r of replies.filter((r) => r.status !== 201)) assertError(r, 429)
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_sponsor_messages where sponsor_id = ${sponsor.id}`)[
      0
    ].n,
    5,
  )
  assert.equal(
    (await api(`/api/labs/sponsors/${other.id}/messages`, {
      token: sender.token,
      body: { body: 'hi other' },
    })).status,
    201,
    'per recipient',
  )

  const inbox = await api('/api/labs/messages', { token: owner.token })
  assert.equal(inbox.body.messages.length, 5)
  assert.equal((await api('/api/labs/messages', { token: sender.token })).body.messages.length, 6)
  assert.equal(
    (await api('/api/labs/messages', { token: admin.token })).body.messages.filter((
      m: { sponsor_id: string },
    ) => m.sponsor_id === sponsor.id).length,
    0,
    'super admins do not read them',
  )
  const rest = await clientAs(admin.token).from('labs_sponsor_messages').select('body').eq(
    'sponsor_id',
    sponsor.id,
  )
  assert.deepEqual(rest.data, [])

  const pending = await submitSponsor(owner)
  assertError(
    await api(`/api/labs/sponsors/${pending.id}/messages`, { token: sender.token, body: { body: 'x' } }),
    404,
  )
  assertError(
    await api(`/api/labs/sponsors/${sponsor.id}/messages`, { token: sender.token, body: { body: '' } }),
    400,
    'body',
  )
  assertError(await api(`/api/labs/sponsors/${sponsor.id}/messages`, { body: { body: 'x' } }), 401)
})

test('outreach digest: Bearer CRON_SECRET; one e-mail per sponsor per week however often it runs; a failed send is retried', async () => {
  const contact = `sponsor-${crypto.randomUUID().slice(0, 8)}@example.org`
  const sponsor = await approvedSponsor(await createUser(), contact)
  const sender = await createUser()
  await api(`/api/labs/sponsors/${sponsor.id}/messages`, {
    token: sender.token,
    body: { body: 'Could you sponsor our <robotics> club?' },
  })
  await api(`/api/labs/sponsors/${sponsor.id}/messages`, {
    token: sender.token,
    body: { body: "This week, not in last week's digest" },
  })
  // The first message moves into last week (the digest covers the 7 days before this week's Monday).
  await sql`update public.labs_sponsor_messages set created_at = date_trunc('week', now() at time zone 'utc') at time zone 'utc' - interval '2 days'
             where sponsor_id = ${sponsor.id} and body like 'Could you%'`
  assertError(await api('/api/cron/labs/sponsor-outreach-digest', { method: 'POST' }), 401)
  assertError(
    await api('/api/cron/labs/sponsor-outreach-digest', {
      method: 'POST',
      headers: { authorization: `Bearer ${env('LABS_CRON_SECRET')}` },
    }),
    401,
  )
  const digests = () =>
    sql`select status, messages, email_id from private.labs_outreach_digests where sponsor_id = ${sponsor.id}`

  // The provider fails once: nothing is recorded as sent, and the next run sends it.
  await resendControl('fail', { to: contact, status: 500, name: 'internal_server_error', times: 1 })
  const failed = await api('/api/cron/labs/sponsor-outreach-digest', {
    method: 'POST',
    headers: frontendCron(),
  })
  assert.equal(failed.status, 200, JSON.stringify(failed.body))
  assert.ok(
    failed.body.results.errors.some((e: string) => e.startsWith(sponsor.id)),
    JSON.stringify(failed.body.results),
  )
  assert.equal((await digests()).length, 0)

  const first = await api('/api/cron/labs/sponsor-outreach-digest', {
    method: 'POST',
    headers: frontendCron(),
  })
  assert.equal(first.status, 200, JSON.stringify(first.body))
  assert.equal((await digests()).length, 1)
  assert.equal((await digests())[0].status, 'sent')
  assert.equal((await digests())[0].messages, 1)
  const [second, third] = await Promise.all([
    api('/api/cron/labs/sponsor-outreach-digest', { method: 'POST', headers: frontendCron() }),
    api('/api/cron/labs/sponsor-outreach-digest', { method: 'POST', headers: frontendCron() }),
  ])
  assert.equal(second.status, 200)
  assert.equal(third.status, 200)
  const mails = await resendControl(`sent?to=${encodeURIComponent(contact)}`)
  assert.equal(mails.length, 1, 'one digest however often the job runs')
  assert.match(mails[0].html, /&#60;robotics&#62;/, 'message bodies are escaped in the HTML')
  assert.ok(!mails[0].text.includes('not in last week'), "only last week's messages")
  assert.equal((await digests()).length, 1)
})
