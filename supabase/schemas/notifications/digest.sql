-- =============================================================================================
-- Notifications: e-mail digests
-- =============================================================================================
-- Each user's digest state and unsubscribe token; the digest's claim and record, and the
-- unsubscribe link (routes/notifications/digest.ts and jobs.ts). The area's overview:
-- notifications/inbox.sql.

create table private.notification_digests (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  unsubscribe_token uuid not null unique default gen_random_uuid(),
  last_sent_on date,
  last_sent_at timestamptz,
  claimed_until timestamptz,
  -- Sends refused since the last digest went out: part of the batch's idempotency key, so a
  -- retry after a refusal is a new request and a retry after a lost answer is the same one.
  failed_attempts integer not null default 0,
  -- When the claim looks at this user next (their digest hour on the next local day that may
  -- have one); null while opted out. Claims read this index, not every opted-in user.
  due_at timestamptz
);
alter table private.notification_digests enable row level security;
comment on table private.notification_digests is
  'Each opted-in user''s digest: the local date and time of the last one sent (the next covers unread notifications '
  'written since), when it is due next, a run''s claim, sends refused since the last one, and the token of the '
  'one-click unsubscribe link.';
create index notification_digests_due on private.notification_digests (due_at, user_id) where due_at is not null;

-- The moment of a user's digest hour on their first local day after `sent_through` that is not
-- before `at`'s local day (in the past when that hour has passed today: due now).
create or replace function private.notification_digest_due(prefs public.notification_preferences, sent_through date,
                                                           at timestamptz)
returns timestamptz
language sql stable security definer
set search_path = ''
as $$
  select (greatest((at at time zone z.tz)::date, sent_through + 1) + make_time(prefs.digest_hour, 0, 0)) at time zone z.tz
    from (select private.notification_timezone(prefs) as tz) z
$$;

-- Opting in (or changing the hour or zone) schedules the digest; opting out takes it off the
-- claims' index. Opting back in gives a new unsubscribe token, so the link of an e-mail sent
-- before the opt-out cannot turn the digest off again (it answers 404); changing the hour or zone
-- keeps the links already sent working.
create or replace function private.schedule_notification_digest() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  opting_in constant boolean := tg_op = 'INSERT' or not old.email_digest;
begin
  if new.email_digest then
    insert into private.notification_digests as g (user_id, due_at)
    values (new.user_id, private.notification_digest_due(new, null, now()))
    on conflict (user_id) do update
      set due_at = private.notification_digest_due(new, g.last_sent_on, now()),
          unsubscribe_token = case when opting_in then gen_random_uuid() else g.unsubscribe_token end;
  else
    update private.notification_digests g set due_at = null where g.user_id = new.user_id and g.due_at is not null;
  end if;
  return null;
end
$$;
create trigger notification_preferences_schedule_digest
  after insert or update of email_digest, digest_hour, timezone on public.notification_preferences
  for each row execute function private.schedule_notification_digest();

-- What a user's next digest lists: their unread notifications of types whose e-mail channel is
-- on, written since the last digest (or in the last 7 days) up to `at`. Plain SQL, so the
-- planner inlines it where the claim reads it.
create or replace function private.digest_notifications(prefs public.notification_preferences, last_sent_at timestamptz,
                                                        at timestamptz)
returns setof public.notifications
language sql stable
set search_path = ''
as $$
  select n.* from public.notifications n
   where n.user_id = prefs.user_id and n.read_at is null
     and n.created_at > coalesce(last_sent_at, at - interval '7 days') and n.created_at <= at
     and private.notification_channel_on(prefs, n.type, 'email')
$$;

/*
 * Claims up to max_users whose digest is due at `at`: opted in with a confirmed address that is
 * not suppressed (bounced or complained), an active profile not being deleted, their local hour at or past
 * digest_hour, none sent yet on their local date, and unread notifications (of types whose e-mail
 * channel is on) written since the last one (or in the last 7 days). Each row carries the user's
 * address, the unsubscribe token, their local date, up to 50 notifications (newest first) and
 * the sends refused since the last digest (the batch key's attempt).
 *
 * It reads the earliest due_at first (an index range, whatever the number of opted-in users),
 * judges those rows, and moves the ones it cannot send on: to their hour today (not yet there,
 * e.g. after a zone change), to tomorrow's (sent today, nothing unread, or an address that may
 * not get mail now), or off the index (opted out). It stops judging after 5 s: a call that
 * returns fewer than max_users then leaves the rest to the next run.
 */
create or replace function private.claim_notification_digests(max_users integer, lease_seconds integer, at timestamptz)
returns table (user_id uuid, email text, unsubscribe_token uuid, local_date date, total bigint, notifications jsonb,
               attempt integer)
language plpgsql security definer
set search_path = ''
as $$
declare
  want integer := least(greatest(coalesce(max_users, 100), 1), 1000);
  chosen uuid[] := '{}'::uuid[];
  ready uuid[];
  judged integer;
  started timestamptz := clock_timestamp();
begin
  loop
    with candidate as (
      select g.user_id, g.last_sent_on, g.last_sent_at
        from private.notification_digests g
       where g.due_at <= at and (g.claimed_until is null or g.claimed_until < at)
       order by g.due_at, g.user_id
       limit want - cardinality(chosen)
         for update of g skip locked
    ), verdict as (
      select c.user_id, p as prefs, l.today,
             case
               when p.user_id is null or not p.email_digest then 'off'
               when extract(hour from l.local) < p.digest_hour then 'not yet'
               when c.last_sent_on >= l.today then 'tomorrow'
               -- A confirmed address that has not bounced or complained, of a live account.
               when u.email is null or u.email_confirmed_at is null
                 or exists (select 1 from private.email_suppressions s where s.address = lower(u.email))
                 or not exists (select 1 from public.profiles pr where pr.id = c.user_id and pr.is_active)
                 or exists (select 1 from private.account_deletions x where x.user_id = c.user_id) then 'tomorrow'
               when exists (select 1 from private.digest_notifications(p, c.last_sent_at, at)) then 'ready'
               else 'tomorrow'
             end as verdict
        from candidate c
        left join public.notification_preferences p on p.user_id = c.user_id
        left join auth.users u on u.id = c.user_id
       cross join lateral (select at at time zone private.notification_timezone(p) as local) l0
       cross join lateral (select l0.local, l0.local::date as today) l
    ), moved as (
      update private.notification_digests g
         set claimed_until = case when v.verdict = 'ready'
                                  then at + make_interval(secs => greatest(coalesce(lease_seconds, 300), 5)) end,
             due_at = case v.verdict
                        when 'ready' then g.due_at
                        when 'off' then null
                        when 'not yet' then private.notification_digest_due(v.prefs, null, at)
                        else private.notification_digest_due(v.prefs, v.today, at)
                      end
        from verdict v
       where g.user_id = v.user_id
      returning g.user_id, v.verdict
    )
    select coalesce(array_agg(m.user_id) filter (where m.verdict = 'ready'), '{}'), count(*)::integer
      into ready, judged from moved m;
    chosen := chosen || ready;
    exit when judged = 0 or cardinality(chosen) >= want or clock_timestamp() - started > interval '5 seconds';
  end loop;

  return query
    select p.user_id, u.email::text, g.unsubscribe_token, (at at time zone private.notification_timezone(p))::date,
           (select count(*) from private.digest_notifications(p, g.last_sent_at, at)),
           (select coalesce(jsonb_agg(jsonb_build_object('id', x.id, 'type', x.type, 'payload', x.payload,
                                                         'created_at', x.created_at, 'context', private.notification_context(x))
                                      order by x.created_at desc), '[]'::jsonb)
              from (select n.* from private.digest_notifications(p, g.last_sent_at, at) n
                     order by n.created_at desc limit 50) x),
           g.failed_attempts
      from public.notification_preferences p
      join private.notification_digests g on g.user_id = p.user_id
      join auth.users u on u.id = p.user_id
     where p.user_id = any (chosen) and u.email is not null;
end
$$;
revoke execute on function private.claim_notification_digests(integer, integer, timestamptz) from public;
grant execute on function private.claim_notification_digests(integer, integer, timestamptz) to service_role;

create or replace function public.claim_notification_digests(max_users integer default 100, lease_seconds integer default 300,
                                                             at timestamptz default now())
returns table (user_id uuid, email text, unsubscribe_token uuid, local_date date, total bigint, notifications jsonb,
               attempt integer)
language sql
set search_path = ''
as $$ select * from private.claim_notification_digests($1, $2, $3) $$;
comment on function public.claim_notification_digests(integer, integer, timestamptz) is
  'Service role (the digest job): claims users whose daily e-mail digest is due, with its notifications.';
grant execute on function public.claim_notification_digests(integer, integer, timestamptz) to service_role;

-- After a run's batch: each user's outcome ([{user_id, local_date, sent}]) in one call. Sent: the
-- day is done and the next digest starts from `at`; not sent: tried again 10 minutes later (a
-- later run), not by the same run's next claim. Returns the rows recorded.
create or replace function private.record_notification_digests(results jsonb, at timestamptz)
returns integer
language sql security definer
set search_path = ''
as $$
  with outcome as (
    select (x ->> 'user_id')::uuid as user_id, (x ->> 'local_date')::date as local_date,
           coalesce((x ->> 'sent')::boolean, false) as sent
      from jsonb_array_elements(coalesce(results, '[]'::jsonb)) x
  ), recorded as (
    update private.notification_digests g
       set last_sent_on = case when o.sent then o.local_date else g.last_sent_on end,
           last_sent_at = case when o.sent then at else g.last_sent_at end,
           claimed_until = case when o.sent then null else at + interval '10 minutes' end,
           failed_attempts = case when o.sent then 0 else g.failed_attempts + 1 end,
           due_at = case when o.sent then private.notification_digest_due(p, o.local_date, at) else g.due_at end
      from outcome o
      join public.notification_preferences p on p.user_id = o.user_id
     where g.user_id = o.user_id
    returning 1
  )
  select count(*)::integer from recorded
$$;
revoke execute on function private.record_notification_digests(jsonb, timestamptz) from public;
grant execute on function private.record_notification_digests(jsonb, timestamptz) to service_role;

create or replace function public.record_notification_digests(results jsonb, at timestamptz default now())
returns integer
language sql
set search_path = ''
as $$ select private.record_notification_digests($1, $2) $$;
comment on function public.record_notification_digests(jsonb, timestamptz) is
  'Service role (the digest job): records a batch''s digests sent; the rest are tried again 10 minutes later.';
grant execute on function public.record_notification_digests(jsonb, timestamptz) to service_role;

-- The one-click unsubscribe (RFC 8058): the token from the e-mail's link turns the digest off.
-- Returns whether the token was known.
create or replace function private.unsubscribe_notification_digest(token uuid) returns boolean
language plpgsql security definer
set search_path = ''
as $$
declare
  owner uuid;
begin
  select g.user_id into owner from private.notification_digests g where g.unsubscribe_token = token;
  if owner is null then
    return false;
  end if;
  update public.notification_preferences p set email_digest = false where p.user_id = owner;
  return true;
end
$$;
revoke execute on function private.unsubscribe_notification_digest(uuid) from public;
grant execute on function private.unsubscribe_notification_digest(uuid) to service_role;

create or replace function public.unsubscribe_notification_digest(token uuid) returns boolean
language sql
set search_path = ''
as $$ select private.unsubscribe_notification_digest($1) $$;
comment on function public.unsubscribe_notification_digest(uuid) is
  'Service role (the unsubscribe link): turns off the digest of the token''s owner; false for an unknown token.';
grant execute on function public.unsubscribe_notification_digest(uuid) to service_role;
