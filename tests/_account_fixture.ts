// A user who has touched every area of the product, for the account-deletion test: deleting
// them must reach every table with a column that points at a user (the foreign keys to
// public.profiles and auth.users, and the audit columns kept without one). Everything is set up
// as the superuser, through the real SQL functions where that is simple (they apply the same
// rules and side effects as the api), otherwise with plain inserts that satisfy the constraints
// and triggers. Functions that read the caller (auth.uid()) run inside actingAs().
import type postgres from 'postgres'

export type AccountFixtureIds = {
  subject: string
  neighbour1: string
  neighbour2: string
  friend: string
  admin: string
}

export type AccountFixture = {
  subject: string
  others: { neighbour1: string; neighbour2: string; friend: string; admin: string }
  /** Owned by the subject, no other member. */
  orgAlone: string
  /** Owned by `friend`; the subject and neighbour1 are members. */
  orgShared: string
  /** A team of orgShared whose admin is the subject (neighbour1 is a member). */
  teamAdminned: string
  journal: {
    notebookId: string
    privateEntryId: string
    teamEntryId: string
    friendsEntryMentioningSubject: string
  }
  goals: { goalId: string; checkInId: string }
  drops: { adjustmentToFriendId: number; awardMonth: string }
  tonePacks: {
    subjectPackId: string
    friendPackId: string
    friendsPurchaseId: string
    subjectsPurchaseId: string
  }
  encouragement: {
    /** The drop the subject sent and `friend` received. */
    dropFriendReceived: string
    /** The drop `friend` sent and the subject received. */
    dropSubjectReceived: string
    templateId: string
  }
  workout: {
    today: string
    pastDate: string
    /** A third date, so the subject is user_1_id, user_2_id and user_3_id of a squad. */
    olderDate: string
    /** The subject's chain rows (neighbour1 before, neighbour2 after), by date. */
    chainIds: { today: string; past: string; older: string }
    /** Squads of subject + neighbour1 + neighbour2, by date (the subject first, second, third). */
    squadIds: { today: string; past: string; older: string }
    checkinId: string
    /** neighbour1's check-in, reviewed by the subject. */
    reviewedCheckinId: string
    photoObject: string
  }
  music: { musicUserId: string; trackId: string; stateHash: string }
  ai: { usageIds: number[]; usageMonth: string }
  labs: {
    templateId: string
    subjectExperimentId: string
    cloneId: string
    replicationId: string
    removedReplicationId: string
    competitionId: string
    sponsorId: string
    opportunityId: string
    dreamVideoId: string
    waitlistEmail: string
  }
  payments: {
    subscriptionId: string
    stripeCustomerId: string
    stripeSubscriptionId: string
    emailMessageId: string
  }
  admin: {
    /** admin impersonating the subject. */
    impersonationSessionId: string
    /** The subject (a super admin for a while) impersonating neighbour1. */
    subjectImpersonatedSessionId: string
  }
  notifications: { subjectNotificationIds: string[]; naming: { friend: string; neighbour1: string } }
}

type Tx = postgres.TransactionSql

/** Runs `fn` in a transaction (a savepoint when `sql` already is one) whose requests come from
 *  `uid` as the API would send them: request.jwt.claims with sub and role (role null: a
 *  database session of that user, which the functions treat as a trusted caller). */
async function actingAs<T>(
  sql: postgres.Sql,
  uid: string,
  fn: (tx: Tx) => Promise<T>,
  role: string | null = 'authenticated',
): Promise<T> {
  const claims = JSON.stringify(role ? { sub: uid, role } : { sub: uid })
  const run = async (tx: Tx) => {
    await tx`select set_config('request.jwt.claims', ${claims}, true)`
    const result = await fn(tx)
    // A released savepoint keeps a local setting until the outer transaction ends: clear it.
    await tx`select set_config('request.jwt.claims', '', true)`
    return result
  }
  const s = sql as any
  return await (typeof s.savepoint === 'function' ? s.savepoint(run) : s.begin(run))
}

const tag = () => crypto.randomUUID().slice(0, 8)

/** Auth: an e-mail identity, a session with a refresh token and its sign-in method — the rows
 *  Supabase Auth keeps per user (auth.identities, auth.sessions and what hangs off a session). */
async function seedAuth(sql: postgres.Sql, subject: string) {
  const [{ email }] = await sql`select email from auth.users where id = ${subject}`
  await sql`insert into auth.identities (provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
            values (${subject}, ${subject}, ${
    sql.json({ sub: subject, email })
  }, 'email', now(), now(), now())
            on conflict (provider_id, provider) do nothing`
  const sessionId = crypto.randomUUID()
  await sql`insert into auth.sessions (id, user_id, created_at, updated_at, aal)
            values (${sessionId}, ${subject}, now(), now(), 'aal1')`
  await sql`insert into auth.refresh_tokens (token, user_id, revoked, created_at, updated_at, session_id)
            values (${`fixture-${tag()}`}, ${subject}, false, now(), now(), ${sessionId})`
  await sql`insert into auth.mfa_amr_claims (id, session_id, created_at, updated_at, authentication_method)
            values (gen_random_uuid(), ${sessionId}, now(), now(), 'password')`
  return email as string
}

/** Organizations: orgAlone (the subject owns it alone) and orgShared (friend owns it; the
 *  subject is a member and admin of teamAdminned, where they added neighbour1, which notifies
 *  neighbour1 with by = subject). */
async function seedOrgs(sql: postgres.Sql, ids: AccountFixtureIds) {
  const orgAlone = await actingAs(sql, ids.subject, async (tx) => {
    const [o] =
      await tx`insert into public.organizations (name, owner_id) values (${`Alone ${tag()}`}, ${ids.subject}) returning id`
    return o.id as string
  })
  const { orgShared, teamAdminned } = await actingAs(sql, ids.friend, async (tx) => {
    const [o] =
      await tx`insert into public.organizations (name, owner_id) values (${`Shared ${tag()}`}, ${ids.friend}) returning id`
    await tx`insert into public.organization_members (org_id, user_id, role) values (${o.id}, ${ids.subject}, 'member')`
    await tx`insert into public.organization_members (org_id, user_id, role) values (${o.id}, ${ids.neighbour1}, 'member')`
    // teams_sync_admin makes the subject the team's admin member.
    const [t] =
      await tx`insert into public.teams (name, org_id, admin_id) values (${`Team ${tag()}`}, ${o.id}, ${ids.subject})
                         returning id`
    return { orgShared: o.id as string, teamAdminned: t.id as string }
  })
  await actingAs(
    sql,
    ids.subject,
    (tx) =>
      tx`insert into public.team_members (team_id, user_id, role) values (${teamAdminned}, ${ids.neighbour1}, 'member')`,
  )
  return { orgAlone, orgShared, teamAdminned }
}

/** Journal: the subject's notebook, a private entry in it and an entry shared with
 *  teamAdminned (entries + contents), and a friend's entry whose text mentions the subject
 *  (journal_entry_mentions.mentioned_user_id). */
async function seedJournal(sql: postgres.Sql, ids: AccountFixtureIds, teamAdminned: string) {
  const [nb] =
    await sql`insert into public.notebooks (user_id, name) values (${ids.subject}, 'Fixture diary') returning id`
  const entry = async (owner: string, fields: Record<string, unknown>, content: string) => {
    const [e] = await sql`insert into public.journal_entries ${
      sql({ user_id: owner, ...fields } as any)
    } returning id`
    await sql`insert into public.journal_entry_contents (entry_id, content) values (${e.id}, ${content})`
    return e.id as string
  }
  const privateEntryId = await entry(
    ids.subject,
    { title: 'Private', mood: 'calm', notebook_id: nb.id },
    'only mine',
  )
  const teamEntryId = await entry(
    ids.subject,
    { title: 'For the team', metadata_visibility: 'team', content_visibility: 'team', team_id: teamAdminned },
    'team update',
  )
  const friendsEntryMentioningSubject = await entry(
    ids.friend,
    { title: 'Thanks' },
    `Thanks @[Subject](${ids.subject})!`,
  )
  return { notebookId: nb.id as string, privateEntryId, teamEntryId, friendsEntryMentioningSubject }
}

/** Goals: one goal with one check-in. */
async function seedGoals(sql: postgres.Sql, subject: string) {
  const [g] = await sql`insert into public.goals (user_id, title) values (${subject}, 'Run 5k') returning id`
  const [c] =
    await sql`insert into public.goal_check_ins (goal_id, user_id, notes) values (${g.id}, ${subject}, 'done')
                        returning id`
  return { goalId: g.id as string, checkInId: c.id as string }
}

/** Payments and e-mail: an active subscription, the Stripe customer (private.stripe_customers,
 *  through remember_stripe_customer as the payment endpoint does) and a sent e-mail. */
async function seedPayments(sql: postgres.Sql, subject: string, email: string) {
  const stripeCustomerId = `cus_fixture_${tag()}`
  const stripeSubscriptionId = `sub_fixture_${tag()}`
  await sql`select private.remember_stripe_customer(${subject}, ${stripeCustomerId})`
  const [s] =
    await sql`insert into public.subscriptions (user_id, stripe_customer_id, stripe_subscription_id, status, current_period_end)
                        values (${subject}, ${stripeCustomerId}, ${stripeSubscriptionId}, 'active', now() + interval '30 days')
                        returning id`
  const [m] =
    await sql`insert into public.email_messages (user_id, to_address, subject, idempotency_key, request_hash, provider_id, status)
                        values (${subject}, ${email}, 'Fixture mail', ${`fixture-${tag()}`}, 'fixture-hash', ${`re_${tag()}`}, 'sent')
                        returning id`
  return {
    subscriptionId: s.id as string,
    stripeCustomerId,
    stripeSubscriptionId,
    emailMessageId: m.id as string,
  }
}

/** Drops: this month's award (monthly_drop_awards + ledger row, premium after seedPayments). */
async function seedDrops(sql: postgres.Sql, subject: string) {
  const [{ month }] = await sql`select private.current_award_month()::text as month`
  await sql`select * from private.award_monthly_drops(${[subject]}::uuid[], ${month}::date)`
  return { awardMonth: month as string }
}

/** Tone packs: a private pack of the subject's shared with and bought by friend, and friend's
 *  pack shared with and bought by the subject (shares, purchases and their ledger rows). */
async function seedTonePacks(sql: postgres.Sql, ids: AccountFixtureIds) {
  const makePack = (owner: string, name: string) =>
    actingAs(sql, owner, async (tx) => {
      const [p] =
        await tx`insert into public.tone_packs (owner_id, name, theme, price_drops) values (${owner}, ${name}, 'nature', 3)
                           returning id`
      return p.id as string
    })
  const share = (owner: string, pack: string, to: string) =>
    actingAs(sql, owner, (tx) => tx`select private.share_tone_pack(${pack}, ${to}, null)`)
  const buy = (buyer: string, pack: string) =>
    actingAs(sql, buyer, async (tx) => {
      const [{ r }] = await tx`select private.purchase_tone_pack(${pack}, ${`fixture-${tag()}`}, 3) as r`
      return r.purchase.id as string
    })
  const subjectPackId = await makePack(ids.subject, 'Subject pack')
  const friendPackId = await makePack(ids.friend, 'Friend pack')
  await share(ids.subject, subjectPackId, ids.friend)
  await share(ids.friend, friendPackId, ids.subject)
  const friendsPurchaseId = await buy(ids.friend, subjectPackId)
  const subjectsPurchaseId = await buy(ids.subject, friendPackId)
  return { subjectPackId, friendPackId, friendsPurchaseId, subjectsPurchaseId }
}

/** Encouragement: a drop each way with friend through send_encouragement_drop (daily drops,
 *  sent drops, the recipient's notification, the sender's badge), a badge milestone, bonus
 *  pairs both ways (written by the engagement job), a note analysis and queued AI jobs. */
async function seedEncouragement(sql: postgres.Sql, ids: AccountFixtureIds) {
  const send = (from: string, to: string, content: string) =>
    actingAs(sql, from, async (tx) => {
      const [d] =
        await tx`select (private.send_encouragement_drop(${to}, 'encouragement', null, ${content}, null)).id`
      return d.id as string
    })
  const dropFriendReceived = await send(ids.subject, ids.friend, 'Keep going!')
  const dropSubjectReceived = await send(ids.friend, ids.subject, 'You too!')
  await sql`insert into public.encouragement_badge_milestones (user_id, level, stats)
            select ${ids.subject}, 1, '{"total_sent": 1}'
             where not exists (select 1 from public.encouragement_badge_milestones where user_id = ${ids.subject})`
  await sql`insert into private.encouragement_bonus_pairs (sender_id, recipient_id, day, drop_id)
            values (${ids.subject}, ${ids.friend}, private.utc_today(), ${dropFriendReceived}),
                   (${ids.friend}, ${ids.subject}, private.utc_today(), ${dropSubjectReceived})`
  await sql`insert into public.note_analyses (user_id, analysis_date, summary, entry_count)
            values (${ids.subject}, private.utc_today(), 'Calm week', 2)`
  await sql`insert into private.ai_job_queue (job, day, user_id)
            values ('analyze-notes', private.utc_today(), ${ids.subject}), ('generate-daily-drops', private.utc_today(), ${ids.subject})`
  return { dropFriendReceived, dropSubjectReceived }
}

/** Workout: a window, a location, the synthetic-user settings row, chains for today and two past
 *  dates where the subject sits between neighbour1 (before) and neighbour2 (after), a squad of the
 *  three on each date (the subject as user_1_id, user_2_id, user_3_id in turn), the subject's check-in with its registered photo (private.workout_photos)
 *  and neighbour1's check-in (reviewed by the subject in seedAdmin). */
async function seedWorkout(sql: postgres.Sql, ids: AccountFixtureIds) {
  const { subject, neighbour1, neighbour2 } = ids
  await sql`insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
            values (${subject}, 'cardio', '07:00', '09:00', 'UTC')`
  await sql`insert into public.workout_locations (user_id, city, country, latitude, longitude, timezone)
            values (${subject}, 'Lisbon', 'PT', 38.7, -9.1, 'Europe/Lisbon')`
  await sql`insert into public.workout_ai_users (user_id, region, city, timezone, activity_type, window_start_time, window_end_time)
            values (${subject}, 'Europe', 'Lisbon', 'Europe/Lisbon', 'cardio', '07:00', '09:00')`
  const [{ today, past, older }] =
    await sql`select private.utc_today()::text as today, (private.utc_today() - 7)::text as past,
                                                     (private.utc_today() - 14)::text as older`
  const chainOn = async (date: string, trio: string[]) => {
    const [sq] =
      await sql`insert into public.workout_squads (date, user_1_id, user_2_id, user_3_id, team_color)
                           values (${date}, ${trio[0]}, ${trio[1]}, ${trio[2]}, 'red') returning id`
    const rows = [
      {
        date,
        user_id: neighbour1,
        before_user_id: null,
        after_user_id: subject,
        team_color: 'red',
        squad_id: sq.id,
      },
      {
        date,
        user_id: subject,
        before_user_id: neighbour1,
        after_user_id: neighbour2,
        team_color: 'red',
        squad_id: sq.id,
      },
      {
        date,
        user_id: neighbour2,
        before_user_id: subject,
        after_user_id: null,
        team_color: 'red',
        squad_id: sq.id,
      },
    ]
    const chains = await sql`insert into public.workout_chains ${sql(rows as any)} returning id, user_id`
    return { squad: sq.id as string, chain: chains.find((c) => c.user_id === subject)!.id as string }
  }
  const onToday = await chainOn(today, [subject, neighbour1, neighbour2])
  const onPast = await chainOn(past, [neighbour1, subject, neighbour2])
  const onOlder = await chainOn(older, [neighbour1, neighbour2, subject])
  const checkin = async (user: string, chain: string | null, object: string) => {
    const url = `https://example.test/storage/v1/object/public/workout-checkins/${object}`
    const [k] =
      await sql`insert into public.workout_checkins (user_id, chain_id, date, activity_type, photo_url, photo_object, photo_timestamp)
                          values (${user}, ${chain}, ${today}, 'cardio', ${url}, ${object}, now()) returning id`
    await sql`insert into private.workout_photos (object_name, user_id, photo_url, checkin_id)
              values (${object}, ${user}, ${url}, ${k.id})`
    return k.id as string
  }
  const photoObject = `${subject}/fixture-${tag()}.jpg`
  const checkinId = await checkin(subject, onToday.chain, photoObject)
  const reviewedCheckinId = await checkin(neighbour1, null, `${neighbour1}/fixture-${tag()}.jpg`)
  return {
    today: today as string,
    pastDate: past as string,
    olderDate: older as string,
    chainIds: { today: onToday.chain, past: onPast.chain, older: onOlder.chain },
    squadIds: { today: onToday.squad, past: onPast.squad, older: onOlder.squad },
    checkinId,
    reviewedCheckinId,
    photoObject,
  }
}

/** Music: a link with its encrypted tokens (music_save_link, as the OAuth callback stores
 *  them), a pending login (music_begin_connect) and a play. */
async function seedMusic(sql: postgres.Sql, subject: string) {
  const musicUserId = `fixture-music-${tag()}`
  await sql`select private.music_save_link(${subject}, ${musicUserId}, 'user-read-recently-played',
                                            'fixture-access-token', 'fixture-refresh-token', now() + interval '1 hour')`
  const stateHash = Array.from(
    crypto.getRandomValues(new Uint8Array(32)),
    (b) => b.toString(16).padStart(2, '0'),
  ).join('')
  await actingAs(
    sql,
    subject,
    (tx) => tx`select private.music_begin_connect(${stateHash}, ${'v'.repeat(43)})`,
  )
  const trackId = `fixture-track-${tag()}`
  await sql`insert into public.music_tracks (id, name, artists, raw) values (${trackId}, 'Song', array['Band'], '{}')`
  await sql`insert into public.music_plays (user_id, played_at, track_id) values (${subject}, now() - interval '1 hour', ${trackId})`
  return { musicUserId, trackId, stateHash }
}

/** AI: two billed calls through record_ai_usage (ai_usage, and ai_usage_monthly by its
 *  trigger) and one claimed daily call (private.ai_daily_calls). */
async function seedAi(sql: postgres.Sql, subject: string) {
  const usage =
    await sql`select (private.record_ai_usage(${subject}, 'tone_analysis', 'gpt-4o-mini', 120, 30, 0, null, null, null)).id
                          union all
                          select (private.record_ai_usage(${subject}, 'entry_background', 'dall-e-3', 0, 0, 1, 'standard', null, null)).id`
  await sql`select private.claim_ai_call(${subject}, 'tone_analysis')`
  const [{ month }] = await sql`select date_trunc('month', now() at time zone 'UTC')::date::text as month`
  return { usageIds: usage.map((r) => Number(r.id)), usageMonth: month as string }
}

/** Labs: the subject owns an experiment, clones friend's public template (activity events),
 *  reports two replications (admin removes one: labs_replication_removals.user_id), joins a
 *  competition, applies as a sponsor (private applicant) and messages an approved sponsor,
 *  submits an opportunity and a dream video (private submitter), joins the kit waitlist with
 *  their e-mail, has a step prompt, and is finally made a classroom account by admin. */
async function seedLabs(sql: postgres.Sql, ids: AccountFixtureIds, email: string) {
  const { subject, friend, admin } = ids
  const spec = { calculator_outputs: { outputs: [{ value: 100 }] } }
  const [t] =
    await sql`insert into public.labs_experiments (owner_id, title, calculator, inputs, is_template, is_public, predicted_values)
                        values (${friend}, 'Friend template', 'resonance', '{"l": 1, "c": 2}', true, true, ${
      sql.json(spec)
    })
                        returning id`
  const [own] = await sql`insert into public.labs_experiments (owner_id, title, calculator, inputs)
                          values (${subject}, 'My coil', 'coil', '{"turns": 10}') returning id`
  const slug = `fixture-${tag()}`
  const [comp] =
    await sql`insert into public.labs_competitions (slug, title) values (${slug}, 'Fixture cup') returning id`
  const [approved] =
    await sql`insert into public.labs_sponsors (name, tier, status) values ('Approved sponsor', 'gold', 'approved')
                               returning id`
  const mine = await actingAs(sql, subject, async (tx) => {
    const [clone] = await tx`select (private.labs_clone_template(${t.id})).id`
    await tx`select private.labs_complete_clone(${clone.id}, true)`
    const [kept] = await tx`select (private.labs_report_replication(${clone.id}, '101')).id`
    const [removed] = await tx`select (private.labs_report_replication(${clone.id}, '150')).id`
    await tx`select private.labs_join_competition(${slug})`
    const [sp] =
      await tx`select (private.labs_submit_sponsor('My company', 'silver', ${email}, 'Subject')).id`
    await tx`select private.labs_send_sponsor_message(${approved.id}, 'Hello sponsor')`
    const [op] =
      await tx`select (private.labs_submit_opportunity('internship', 'Summer lab', '', 'https://example.test/job',
                                                                  ${email}, 'Subject')).id`
    const [dv] =
      await tx`select (private.labs_submit_dream_video('My dream', 'https://example.test/video')).id`
    return {
      cloneId: clone.id,
      replicationId: kept.id,
      removedReplicationId: removed.id,
      sponsorId: sp.id,
      opportunityId: op.id,
      dreamVideoId: dv.id,
    }
  })
  await actingAs(sql, admin, async (tx) => {
    await tx`select private.labs_remove_replication(${mine.removedReplicationId}, 'fixture: implausible')`
    await tx`select private.labs_set_account_type(${subject}, 'classroom')`
  })
  await sql`insert into public.labs_kit_waitlist (email, user_id) values (${email.toLowerCase()}, ${subject})`
  await sql`insert into private.labs_step_prompts (user_id, prompted_on) values (${subject}, private.utc_today())`
  return {
    templateId: t.id as string,
    subjectExperimentId: own.id as string,
    competitionId: comp.id as string,
    waitlistEmail: email.toLowerCase(),
    ...(mine as Record<keyof typeof mine, string>),
  }
}

/** Admin: admin promotes the subject to super admin; as one, the subject adjusts friend's
 *  drops (drops_transactions.created_by), records an unchanged encouragement configuration
 *  (encouragement_config.updated_by, encouragement_config_changes.changed_by), adds a template,
 *  a price for a fixture-only model and the current token conversion rate again (created_by),
 *  reviews neighbour1's check-in (reviewed_by), removes a replication of neighbour2's
 *  (labs_replication_removals.removed_by), makes neighbour2 a classroom account (set_by),
 *  impersonates neighbour1 with one recorded write (impersonation_audit/_writes.admin_id), then
 *  steps back down (role_changes: user_id and changed_by). Then admin impersonates the subject
 *  (impersonation_audit start) and one write of the session is recorded (impersonation_writes). */
async function seedAdmin(
  sql: postgres.Sql,
  ids: AccountFixtureIds,
  labsTemplate: string,
  reviewedCheckin: string,
) {
  const { subject, friend, admin, neighbour1, neighbour2 } = ids
  // neighbour2's replication, for the subject to remove.
  const n2Replication = await actingAs(sql, neighbour2, async (tx) => {
    const [clone] = await tx`select (private.labs_clone_template(${labsTemplate})).id`
    const [r] = await tx`select (private.labs_report_replication(${clone.id}, '99')).id`
    return r.id as string
  })
  await actingAs(sql, admin, (tx) => tx`select public.set_user_role(${subject}, 'super_admin')`)
  const adjustment = await actingAs(sql, subject, async (tx) => {
    const [adj] = await tx`select (private.admin_adjust_drops(${friend}, 5, 'fixture: goodwill', 'admin')).id`
    const [tpl] = await tx`insert into public.encouragement_templates (type, title, content, is_approved)
                           values ('encouragement', 'Fixture template', 'You can do it', true) returning id`
    // The admin stamps on global rows (prices, conversion rates, the encouragement config) are
    // left out: other tests read those tables beside this one. supabase/tests/user_deletion.test.sql
    // covers their tombstones inside a rolled-back transaction.
    await tx`select private.review_workout_checkin(${reviewedCheckin}, 'verified', null)`
    await tx`select private.labs_remove_replication(${n2Replication}, 'fixture: duplicate')`
    await tx`select private.labs_set_account_type(${neighbour2}, 'classroom')`
    const [imp] =
      await tx`select session_id from private.start_impersonation(${neighbour1}, 'fixture: checking a report')`
    await tx`insert into public.impersonation_writes (session_id, admin_id, target_id, table_name, operation, row_id, actor_role)
             values (${imp.session_id}, ${subject}, ${neighbour1}, 'public.goals', 'INSERT', ${crypto.randomUUID()}, 'authenticated')`
    await tx`select public.set_user_role(${subject}, 'user')`
    return {
      adjustmentToFriendId: Number(adj.id),
      templateId: tpl.id as string,
      subjectImpersonatedSessionId: imp.session_id as string,
    }
  })
  const sessionId = await actingAs(sql, admin, async (tx) => {
    const [s] =
      await tx`select session_id from private.start_impersonation(${subject}, 'fixture: support ticket')`
    return s.session_id as string
  })
  await sql`insert into public.impersonation_writes (session_id, admin_id, target_id, table_name, operation, row_id, actor_role)
            values (${sessionId}, ${admin}, ${subject}, 'public.goals', 'UPDATE', ${crypto.randomUUID()}, 'authenticated')`
  return { ...adjustment, impersonationSessionId: sessionId }
}

/** Notifications: one the subject has read, plus those the other areas sent (a received drop,
 *  being added to orgShared); and the ids of notifications to others that name the subject. */
async function seedNotifications(sql: postgres.Sql, ids: AccountFixtureIds) {
  // A phone and a digest subscription: the notification below gets a delivery row in the outbox.
  await sql`insert into public.notification_devices (user_id, kind, address)
            values (${ids.subject}, 'expo', ${`ExponentPushToken[fixture-${ids.subject}]`})`
  await sql`update public.notification_preferences set email_digest = true where user_id = ${ids.subject}`
  await sql`insert into private.notification_digests (user_id) values (${ids.subject}) on conflict do nothing`
  await sql`select private.notify(${ids.subject}, 'fixture.hello', '{"hello": "subject"}')`
  await sql`update public.notifications set read_at = now() where user_id = ${ids.subject} and type = 'fixture.hello'`
  const mine =
    await sql`select id from public.notifications where user_id = ${ids.subject} order by created_at, id`
  const [toFriend] = await sql`select id from public.notifications
                                where user_id = ${ids.friend} and type = 'encouragement.drop_received'
                                  and payload ->> 'sender_id' = ${ids.subject}`
  const [toNeighbour] = await sql`select id from public.notifications
                                   where user_id = ${ids.neighbour1} and type = 'team.member_added' and payload ->> 'by' = ${ids.subject}`
  return {
    subjectNotificationIds: mine.map((r) => r.id as string),
    naming: { friend: toFriend.id as string, neighbour1: toNeighbour.id as string },
  }
}

/** Seeds every area for `ids.subject` (the five users must exist; `admin` a super admin). */
export async function seedEveryArea(sql: postgres.Sql, ids: AccountFixtureIds): Promise<AccountFixture> {
  const email = await seedAuth(sql, ids.subject)
  const orgs = await seedOrgs(sql, ids)
  const journal = await seedJournal(sql, ids, orgs.teamAdminned)
  const goals = await seedGoals(sql, ids.subject)
  const payments = await seedPayments(sql, ids.subject, email)
  const drops = await seedDrops(sql, ids.subject)
  const tonePacks = await seedTonePacks(sql, ids)
  const encouragement = await seedEncouragement(sql, ids)
  const workout = await seedWorkout(sql, ids)
  const music = await seedMusic(sql, ids.subject)
  const ai = await seedAi(sql, ids.subject)
  const labs = await seedLabs(sql, ids, email)
  const admin = await seedAdmin(sql, ids, labs.templateId, workout.reviewedCheckinId)
  const notifications = await seedNotifications(sql, ids)
  const { subject, ...others } = ids
  return {
    subject,
    others,
    ...orgs,
    journal,
    goals,
    drops: { adjustmentToFriendId: admin.adjustmentToFriendId, awardMonth: drops.awardMonth },
    tonePacks,
    encouragement: { ...encouragement, templateId: admin.templateId },
    workout,
    music,
    ai,
    labs,
    payments,
    admin: {
      impersonationSessionId: admin.impersonationSessionId,
      subjectImpersonatedSessionId: admin.subjectImpersonatedSessionId,
    },
    notifications,
  }
}
