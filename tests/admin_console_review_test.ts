// The admin console's review tabs in a real browser: Approvals (approve a sponsor: it is listed
// publicly; decline an opportunity: refused without a reason with the API's message, then
// declined with one that stays private; feature a video), Check-ins to review (the flagged
// check-in's photo loads, a reject without a reason shows the API's message, verify), Templates
// (promote to classroom, a golden spec refused then stored, reset to adult only) and
// Encouragement (approve and edit a template, a configuration change and its history row).
// Each tab passes axe-core and leaves a screenshot.
import { strict as assert } from 'node:assert'
import { encode } from 'fast-png'
import { api, apiFetch, createUser, sql, test, type TestUser } from './_helpers.ts'
import { type Console, consoleUser, withConsole } from './_admin_console.ts'

const tag = () => crypto.randomUUID().slice(0, 8)

/** A DOM expression's value, through the DevTools protocol (the console's CSP refuses eval). */
async function domValue(c: Console, expression: string): Promise<unknown> {
  const cdp = await c.page.context().newCDPSession(c.page)
  try {
    const r = await cdp.send('Runtime.evaluate', { expression, returnByValue: true })
    return r.result.value
  } finally {
    await cdp.detach()
  }
}

/** The message the API gives for a request, to compare with what the page shows. */
async function apiError(path: string, token: string, body: unknown) {
  const res = await api(path, { token, body })
  assert.equal(res.status, 400, JSON.stringify(res.body))
  return res.body.error as string
}

test('admin console approvals: approve a sponsor (listed publicly), decline an opportunity (reason required, kept private), feature a video', async () => {
  const applicant = await createUser({ prefix: 'console-applicant' })
  const fixtureAdmin = await createUser({ superAdmin: true, prefix: 'console-fixture' })
  const t = tag()
  const sponsorName = `Console sponsor ${t}`
  const oppTitle = `Console internship ${t}`
  const videoTitle = `Console dream ${t}`
  const sponsor = (await api('/api/labs/sponsors', {
    token: applicant.token,
    body: {
      name: sponsorName,
      tier: 'gold',
      contact_email: `sponsor-${t}@example.org`,
      contact_name: 'Ada Lovelace',
    },
  })).body.sponsor
  const opp = (await api('/api/labs/opportunities', {
    token: applicant.token,
    body: {
      kind: 'internship',
      title: oppTitle,
      contact_email: `opp-${t}@example.org`,
      contact_name: 'Grace Hopper',
    },
  })).body.opportunity
  const video = (await api('/api/labs/videos', {
    token: applicant.token,
    body: { title: videoTitle, video_url: `https://videos.example.org/${t}` },
  })).body.video
  assert.ok(sponsor?.id && opp?.id && video?.id)
  assert.equal(
    (await api(`/api/labs/admin/videos/${video.id}/approve`, { method: 'POST', token: fixtureAdmin.token }))
      .status,
    200,
  )
  const emptyReasonError = await apiError(
    `/api/labs/admin/opportunities/${crypto.randomUUID()}/decline`,
    fixtureAdmin.token,
    {
      reason: '',
    },
  )

  const admin = await consoleUser()
  await withConsole(async (c) => {
    await c.signIn(admin)
    await c.open('/dashboard/admin?tab=approvals')
    const page = c.page
    const sponsorCard = page.getByRole('article', { name: sponsorName })
    await sponsorCard.waitFor()
    // Contact fields, for admins only.
    await sponsorCard.getByRole('link', { name: `sponsor-${t}@example.org` }).waitFor()
    assert.match(await sponsorCard.innerText(), /Ada Lovelace/)
    await c.checkAccessibility('dashboard: approvals')
    await c.screenshot('dashboard-approvals')

    // Approve the sponsor: the public listing has it (never its contact fields).
    await sponsorCard.getByRole('button', { name: 'Approve' }).click()
    await page.getByRole('status').filter({ hasText: `Approved the sponsor “${sponsorName}”` }).waitFor()
    await sponsorCard.waitFor({ state: 'detached' })
    const [s] = await sql`select status, reviewed_at from public.labs_sponsors where id = ${sponsor.id}`
    assert.equal(s.status, 'approved')
    const listed = await api('/api/labs/sponsors?limit=100')
    const publicSponsor = listed.body.sponsors.find((x: { id: string }) => x.id === sponsor.id)
    assert.ok(publicSponsor, 'the approved sponsor is listed publicly')
    assert.equal(JSON.stringify(publicSponsor).includes('example.org'), false, 'no contact field in public')

    // Decline without a reason: the API refuses, the page shows its message, nothing changes.
    const oppCard = page.getByRole('article', { name: oppTitle })
    await oppCard.getByRole('button', { name: 'Decline' }).click()
    const dialog = page.getByRole('dialog', { name: `Decline the opportunity “${oppTitle}”` })
    await dialog.getByRole('button', { name: 'Decline' }).click()
    await dialog.getByRole('alert').filter({ hasText: emptyReasonError }).waitFor()
    assert.match(emptyReasonError, /reason/)
    const [pending] = await sql`
      select o.status, p.decline_reason from public.labs_opportunities o
        join private.labs_opportunity_private p on p.opportunity_id = o.id where o.id = ${opp.id}`
    assert.deepEqual({ ...pending }, { status: 'pending', decline_reason: null })
    await c.checkAccessibility('dashboard: approvals, decline dialog')
    await c.screenshot('dashboard-approvals-decline-refused')

    // With a reason: declined, out of the queue, the reason stored privately only.
    const reason = `Not a real internship ${t}`
    await dialog.getByLabel('Reason (stored privately, not sent to the applicant)').fill(reason)
    await dialog.getByRole('button', { name: 'Decline' }).click()
    await page.getByRole('status').filter({ hasText: `Declined the opportunity “${oppTitle}”` }).waitFor()
    await oppCard.waitFor({ state: 'detached' })
    const [declined] = await sql`
      select o.status, p.decline_reason from public.labs_opportunities o
        join private.labs_opportunity_private p on p.opportunity_id = o.id where o.id = ${opp.id}`
    assert.deepEqual({ ...declined }, { status: 'declined', decline_reason: reason })
    const publicOpps = await api('/api/labs/opportunities?limit=100')
    assert.equal(publicOpps.body.opportunities.some((x: { id: string }) => x.id === opp.id), false)
    const mine = await api('/api/labs/submissions', { token: applicant.token })
    assert.equal(mine.status, 200)
    assert.equal(mine.body.opportunities.find((x: { id: string }) => x.id === opp.id)?.status, 'declined')
    assert.equal(JSON.stringify(mine.body).includes(reason), false, 'the applicant never sees the reason')
    assert.equal(JSON.stringify(publicOpps.body).includes(reason), false)
    const pendingNow = await api('/api/labs/admin/opportunities/pending?limit=100', {
      token: fixtureAdmin.token,
    })
    assert.equal(pendingNow.body.opportunities.some((x: { id: string }) => x.id === opp.id), false)

    // Feature the approved video.
    const videoRow = page.getByRole('row').filter({ hasText: videoTitle })
    await videoRow.getByRole('button', { name: 'Feature' }).click()
    await page.getByRole('status').filter({ hasText: `Featured “${videoTitle}”` }).waitFor()
    await videoRow.getByRole('button', { name: 'Unfeature' }).waitFor()
    assert.equal(
      (await sql`select is_featured from public.labs_dream_videos where id = ${video.id}`)[0].is_featured,
      true,
    )
  })
})

/** A user whose workout window started ten minutes ago, in a zone where it is about midday. */
async function userInWindow(name: string): Promise<TestUser> {
  const user = await createUser({ prefix: 'console-checkin' })
  await sql`update public.profiles set full_name = ${name} where id = ${user.id}`
  const now = new Date()
  const offsetHours = Math.max(-11, Math.min(12, 12 - now.getUTCHours()))
  const tz = offsetHours === 0 ? 'Etc/GMT' : `Etc/GMT${offsetHours > 0 ? '-' : '+'}${Math.abs(offsetHours)}`
  const start = new Date(now.getTime() + offsetHours * 3600_000 - 10 * 60_000)
  const hhmm = (d: Date) => d.toISOString().slice(11, 16)
  const res = await api('/api/workout-window/setup', {
    token: user.token,
    body: {
      activityType: 'cardio',
      windowStartTime: hhmm(start),
      windowEndTime: hhmm(new Date(start.getTime() + 2 * 3600_000)),
      timezone: tz,
    },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return user
}

/** A check-in whose photo has no capture time: it waits for review. */
async function flaggedCheckin(user: TestUser) {
  const width = 96, height = 64
  const data = new Uint8Array(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3
      data.set([(x * 255) / width, (y * 255) / height, ((x ^ y) & 16) * 12], i)
    }
  }
  const png = encode({ width, height, data, channels: 3, depth: 8 })
  const form = new FormData()
  form.append('photo', new File([png as Uint8Array<ArrayBuffer>], 'p.png', { type: 'image/png' }))
  form.append('activityType', 'cardio')
  const res = await apiFetch('/api/workout-window/checkin', {
    method: 'POST',
    headers: { authorization: `Bearer ${user.token}` },
    body: form,
  })
  const body = await res.json()
  assert.equal(res.status, 201, JSON.stringify(body))
  assert.equal(body.checkin.status, 'pending')
  return body.checkin as { id: string; date: string; reviewReason: string; photoUrl: string }
}

test('admin console check-ins: the flagged check-in with its photo and reason; reject without a reason refused; verify', async () => {
  const name = `Console athlete ${tag()}`
  const user = await userInWindow(name)
  const checkin = await flaggedCheckin(user)
  const fixtureAdmin = await createUser({ superAdmin: true, prefix: 'console-fixture' })
  const noReason = await apiError(
    `/api/workout-window/admin/checkins/${checkin.id}/reject`,
    fixtureAdmin.token,
    {
      reason: '',
    },
  )

  const admin = await consoleUser()
  await withConsole(async (c) => {
    await c.signIn(admin)
    await c.open('/dashboard/admin?tab=checkins')
    const page = c.page
    const card = page.getByRole('article', { name: `${name}, ${checkin.date}` })
    await card.waitFor()
    assert.match(
      await card.innerText(),
      new RegExp(`Flagged: ${checkin.reviewReason.replace(/[()]/g, '\\$&')}`),
    )
    const alt = `Check-in photo of ${name} for ${checkin.date}`
    await card.getByRole('img', { name: alt }).scrollIntoViewIfNeeded()
    const loaded = `(() => { const i = document.querySelector(${JSON.stringify(`img[alt="${alt}"]`)}); ` +
      `return i && i.complete ? i.naturalWidth : -1 })()`
    let width = -1
    for (let i = 0; i < 50 && width <= 0; i++) {
      width = Number(await domValue(c, loaded))
      if (width <= 0) await page.waitForTimeout(100)
    }
    assert.equal(width, 96, 'the check-in photo is displayed')
    await c.checkAccessibility('dashboard: check-ins to review')
    await c.screenshot('dashboard-checkins')

    // Reject without a reason: the API's message in the dialog; still pending.
    await card.getByRole('button', { name: 'Reject' }).click()
    const dialog = page.getByRole('dialog', { name: `Reject ${name}'s check-in for ${checkin.date}` })
    await dialog.getByRole('button', { name: 'Reject' }).click()
    await dialog.getByRole('alert').filter({ hasText: noReason }).waitFor()
    assert.equal(
      (await sql`select status from public.workout_checkins where id = ${checkin.id}`)[0].status,
      'pending',
    )
    await dialog.getByRole('button', { name: 'Cancel' }).click()

    await card.getByRole('button', { name: 'Verify' }).click()
    await page.getByRole('status').filter({ hasText: `Verified ${name}'s check-in` }).waitFor()
    await card.waitFor({ state: 'detached' })
    const [row] = await sql`select status, reviewed_by from public.workout_checkins where id = ${checkin.id}`
    assert.deepEqual({ ...row }, { status: 'verified', reviewed_by: admin.id })

    // The verified filter shows it, with the rejection still possible.
    await page.getByLabel('Show').selectOption('verified')
    await page.getByRole('article', { name: `${name}, ${checkin.date}` }).getByRole('button', {
      name: 'Reject',
    }).waitFor()
  })
})

test('admin console templates: promote to classroom, a golden spec refused then stored, reset to adult only', async () => {
  const owner = await createUser({ prefix: 'console-maker' })
  const title = `Console coil ${tag()}`
  const made = await api('/api/labs/templates', {
    token: owner.token,
    body: { title, calculator: 'resonance', inputs: { inductance_h: 0.001 }, is_public: true },
  })
  assert.equal(made.status, 201, JSON.stringify(made.body))
  const id = made.body.template.id
  const admin = await consoleUser()
  await withConsole(async (c) => {
    await c.signIn(admin)
    await c.open('/dashboard/admin?tab=templates')
    const page = c.page
    const card = page.getByRole('article', { name: title })
    await card.waitFor()
    await card.getByLabel('Minimum grade band').selectOption('6-8')
    await card.getByRole('button', { name: 'Promote to classroom' }).click()
    await page.getByRole('status').filter({ hasText: `“${title}” is classroom safe from grades 6-8` })
      .waitFor()
    let [t] =
      await sql`select safety_level, min_grade_band, predicted_values from public.labs_experiments where id = ${id}`
    assert.deepEqual({ ...t }, {
      safety_level: 'classroom_safe',
      min_grade_band: '6-8',
      predicted_values: null,
    })

    // Golden spec: without outputs the API refuses (its message shown); then stored.
    await card.getByRole('button', { name: 'Add golden spec' }).click()
    const editor = page.getByRole('region', { name: `Golden spec of “${title}”` })
    assert.equal(await editor.getByLabel('Input 1 name').inputValue(), 'inductance_h')
    await editor.getByRole('button', { name: 'Remove output 1' }).click()
    await editor.getByRole('button', { name: 'Store golden spec' }).click()
    assert.match(await editor.getByRole('alert').innerText(), /outputs/)
    assert.equal(
      (await sql`select predicted_values from public.labs_experiments where id = ${id}`)[0].predicted_values,
      null,
    )
    await editor.getByRole('button', { name: 'Add output' }).click()
    await editor.getByLabel('Output 1 label').fill('Resonant frequency')
    await editor.getByLabel('Output 1 value').fill('42.5')
    await editor.getByLabel('Output 1 unit').fill('kHz')
    await editor.getByRole('button', { name: 'Store golden spec' }).click()
    await editor.getByRole('status').filter({ hasText: 'Golden spec stored.' }).waitFor()
    ;[t] = await sql`select predicted_values from public.labs_experiments where id = ${id}`
    assert.deepEqual(t.predicted_values, {
      calculator: 'resonance',
      optimal_inputs: { inductance_h: 0.001 },
      calculator_outputs: { outputs: [{ label: 'Resonant frequency', value: 42.5, unit: 'kHz' }] },
    })
    await card.getByText('Resonant frequency = 42.5 kHz').waitFor()
    await c.checkAccessibility('dashboard: templates')
    await c.screenshot('dashboard-templates')

    await card.getByRole('button', { name: 'Reset to adult only' }).click()
    const dialog = page.getByRole('dialog', { name: `Reset “${title}” to adult only` })
    await dialog.getByRole('button', { name: 'Reset to adult only' }).click()
    await page.getByRole('status').filter({ hasText: `“${title}” is adult only` }).waitFor()
    ;[t] = await sql`select safety_level from public.labs_experiments where id = ${id}`
    assert.equal(t.safety_level, 'adult_only')
  })
})

test('admin console encouragement: approve and edit a template; a configuration change refused empty, then saved with its history row', async () => {
  const fixtureAdmin = await createUser({ superAdmin: true, prefix: 'console-fixture' })
  const title = `Console cheer ${tag()}`
  const made = await api('/api/encouragement-drops/admin/templates', {
    token: fixtureAdmin.token,
    body: { type: 'encouragement', title, content: 'You can do it!' },
  })
  assert.equal(made.status, 201, JSON.stringify(made.body))
  const id = made.body.template.id
  const [before] = await sql`select engagement_window_hours as h from public.encouragement_config`
  const changed = before.h >= 168 ? before.h - 1 : before.h + 1
  const nothing = await api('/api/encouragement-drops/admin/config', {
    method: 'PUT',
    token: fixtureAdmin.token,
    body: {},
  })
  assert.equal(nothing.status, 400)

  const admin = await consoleUser()
  try {
    await withConsole(async (c) => {
      await c.signIn(admin)
      await c.open('/dashboard/admin?tab=encouragement')
      const page = c.page
      const row = page.getByRole('row').filter({ hasText: title })
      await row.getByRole('button', { name: 'Approve' }).click()
      await page.getByRole('status').filter({ hasText: `Approved “${title}”` }).waitFor()
      assert.equal(
        (await sql`select is_approved from public.encouragement_templates where id = ${id}`)[0].is_approved,
        true,
      )

      await row.getByRole('button', { name: 'Edit' }).click()
      const editor = page.getByRole('region', { name: `Edit “${title}”` })
      await editor.getByLabel('Title').fill(`${title} edited`)
      await editor.getByLabel('Content').fill('Keep going, you are nearly there!')
      await editor.getByRole('button', { name: 'Save template' }).click()
      await page.getByRole('status').filter({ hasText: `Saved “${title} edited”` }).waitFor()
      const [tpl] =
        await sql`select title, content, is_approved from public.encouragement_templates where id = ${id}`
      assert.deepEqual({ ...tpl }, {
        title: `${title} edited`,
        content: 'Keep going, you are nearly there!',
        is_approved: true,
      })

      // The configuration: saving nothing shows the API's message; one value changed is recorded.
      const changes = async () =>
        (await sql`select count(*)::int as n from public.encouragement_config_changes`)[0].n
      const count = await changes()
      const save = page.getByRole('button', { name: 'Save configuration' })
      await save.click()
      await page.getByRole('alert').filter({ hasText: nothing.body.error }).waitFor()
      assert.equal(await changes(), count)
      await page.getByLabel('Engagement window (hours)').fill(String(changed))
      await save.click()
      await page.getByRole('status').filter({ hasText: 'The configuration is saved.' }).waitFor()
      const [last] = await sql`
        select changed_by, old_values ->> 'engagement_window_hours' as old, new_values ->> 'engagement_window_hours' as new
          from public.encouragement_config_changes order by id desc limit 1`
      assert.deepEqual({ ...last }, { changed_by: admin.id, old: String(before.h), new: String(changed) })
      await page.getByRole('row').filter({ hasText: `engagement_window_hours: ${before.h} → ${changed}` })
        .filter({ has: page.getByRole('link', { name: 'you' }) }).first().waitFor()
      await c.checkAccessibility('dashboard: encouragement')
      await c.screenshot('dashboard-encouragement')

      await row.getByRole('button', { name: 'Delete' }).click()
      const dialog = page.getByRole('dialog', { name: `Delete “${title} edited”` })
      await dialog.getByRole('button', { name: 'Delete' }).click()
      await page.getByRole('status').filter({ hasText: `Deleted “${title} edited”` }).waitFor()
      assert.equal(
        (await sql`select count(*)::int as n from public.encouragement_templates where id = ${id}`)[0].n,
        0,
      )
    })
  } finally {
    await sql`select public.update_encouragement_config(${sql.json({ engagement_window_hours: before.h })})`
  }
})
