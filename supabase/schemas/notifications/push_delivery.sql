-- =============================================================================================
-- Notifications: the delivery outbox
-- =============================================================================================
-- One row per notification and device, queued in the notification's own transaction, claimed
-- and recorded by the push sender (routes/notifications/push_delivery.ts), with Expo's receipts.
-- The area's overview: notifications/inbox.sql.

create table private.notification_deliveries (
  id bigint generated always as identity primary key,
  notification_id uuid not null references public.notifications (id) on delete cascade,
  device_id uuid not null references public.notification_devices (id) on delete cascade,
  user_id uuid not null,
  channel text not null check (channel in ('expo', 'web_push')),
  status text not null default 'pending'
    check (status in ('pending', 'claimed', 'attempting', 'sent', 'failed', 'retired', 'expired', 'skipped', 'capped', 'unknown')),
  deliver_after timestamptz not null,
  expires_at timestamptz not null,
  attempts smallint not null default 0,
  claim_id uuid,
  claimed_until timestamptz,
  claimed_at timestamptz,
  sent_at timestamptz,
  ticket_id text,
  receipt_status text check (receipt_status in ('checking', 'ok', 'error', 'unavailable')),
  error text check (char_length(error) <= 1000),
  created_at timestamptz not null default now(),
  attempted_at timestamptz
);
alter table private.notification_deliveries enable row level security;
comment on table private.notification_deliveries is
  'The outbox: one row per notification and device, written with the notification. pending -> claimed (a run''s '
  'lease) -> attempting (committed just before the provider is called) -> sent | pending again (429/5xx, with '
  'backoff) | failed | retired (device gone); or expired (its moment passed), skipped (read, or the type or push '
  'is off), capped (the daily cap). A lease that runs out while claimed goes back to pending; while attempting, '
  'the row becomes unknown and is never sent again: at most once per device.';
comment on column private.notification_deliveries.attempted_at is
  'When the row was marked attempting (the mark''s commit, give or take its own statement): an unknown row was '
  'attempted then by a run that died; the bench measures from it how long a marked row waits to reach its provider.';

create index notification_deliveries_due on private.notification_deliveries (deliver_after) where status = 'pending';
-- Leases (a sender's claim, a receipt check): what the claim recovers when they run out. Its
-- predicate names no status, so no statement that marks rows by id (start, record) takes it for a
-- scan of every row under lease instead of the primary key.
create index notification_deliveries_leased on private.notification_deliveries (claimed_until)
  where claimed_until is not null;
create index notification_deliveries_by_notification on private.notification_deliveries (notification_id);
create index notification_deliveries_by_device on private.notification_deliveries (device_id);
create index notification_deliveries_user_day on private.notification_deliveries (user_id, claimed_at)
  where claimed_at is not null;
create index notification_deliveries_receipts_due on private.notification_deliveries (sent_at)
  where ticket_id is not null and (receipt_status is null or receipt_status = 'checking');

-- Written in the notification's own transaction, one statement per insert statement (set-based:
-- a bulk insert of notifications costs one query here). A check-in reminder goes out 30 minutes
-- before the window starts and expires when it starts; anything else at once, for a day. Nothing
-- is queued for a deactivated profile or an account being deleted (a live recipient: an active
-- profile and no row in private.account_deletions; the push and digest claims ask the same).
create or replace function private.queue_notification_deliveries() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  insert into private.notification_deliveries (notification_id, device_id, user_id, channel, deliver_after, expires_at)
  select n.id, d.id, n.user_id, d.kind,
         case when n.type = 'workout.checkin_reminder' and n.payload ? 'windowStartsAt'
              then greatest(n.created_at, (n.payload ->> 'windowStartsAt')::timestamptz - interval '30 minutes')
              else n.created_at end,
         case when n.type = 'workout.checkin_reminder' and n.payload ? 'windowStartsAt'
              then (n.payload ->> 'windowStartsAt')::timestamptz
              else n.created_at + interval '1 day' end
    from inserted n
    join public.notification_devices d on d.user_id = n.user_id and d.retired_at is null
    join public.profiles pr on pr.id = n.user_id and pr.is_active
   where not exists (select 1 from private.account_deletions x where x.user_id = n.user_id);
  return null;
end
$$;
create trigger notifications_queue_deliveries after insert on public.notifications
  referencing new table as inserted
  for each statement execute function private.queue_notification_deliveries();

-- What the texts need beyond the payload: the name of the person who did it, the recipient's
-- window start (local HH:MM). The digest reads it per notification; the push claim joins the same
-- (claim_notification_deliveries), which costs less per row.
create or replace function private.notification_context(n public.notifications) returns jsonb
language sql stable security definer
set search_path = ''
as $$
  select jsonb_strip_nulls(jsonb_build_object(
    'actorName', (select nullif(btrim(p.full_name), '') from public.profiles p
                   where p.id = (select case when a.id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                                             then a.id::uuid end
                                   from (select coalesce(n.payload ->> 'fromUserId', n.payload ->> 'beforeUserId',
                                                         n.payload ->> 'sender_id', n.payload ->> 'shared_by',
                                                         n.payload ->> 'by') as id) a)),
    'windowStart', (select to_char(w.window_start_time, 'HH24:MI') from public.workout_windows w where w.user_id = n.user_id)))
$$;

/*
 * Claims up to max_rows due deliveries of the given channels for one sender run, deciding on the
 * way what the recipient's preferences say: read or switched off, or a recipient deactivated or
 * being deleted -> skipped; past its moment -> expired; inside quiet hours -> held until they end
 * (expired if that is too late); over the daily cap -> capped (time-sensitive types never are). Runs side by side share the work (skip locked); expired leases are
 * recovered first. Each claimed row carries the device, the notification and its context, and
 * `remaining` (due rows still pending after this claim, counted up to 1,000).
 */
create or replace function private.claim_notification_deliveries(
  max_rows integer, lease_seconds integer, channels text[], at timestamptz)
returns table (id bigint, claim_id uuid, channel text, address text, key_p256dh text, key_auth text,
               notification_id uuid, user_id uuid, type text, payload jsonb, created_at timestamptz,
               expires_at timestamptz, attempts smallint, context jsonb, remaining bigint)
language plpgsql security definer
set search_path = ''
-- A chunk is at most a few thousand rows, each reached by key: hash joins read all of profiles
-- and the outbox for them (half of a claim's time at 100,000 rows, and growing with the tables).
set enable_hashjoin = off
set enable_mergejoin = off
as $$
declare
  n integer := least(greatest(coalesce(max_rows, 500), 1), 5000);
  run uuid := gen_random_uuid();
  left_over bigint;
begin
  -- Leases that ran out: never attempted -> pending again; attempted -> unknown (never resent).
  -- Rows a late run is recording right now are skipped (the next claim looks again): waiting
  -- for them, in another order than the recording's, deadlocked runs side by side.
  update private.notification_deliveries d
     set status = case when d.status = 'claimed' then 'pending' else 'unknown' end,
         claim_id = null, claimed_until = null,
         claimed_at = case when d.status = 'claimed' then null else d.claimed_at end
   where d.id in (select o.id from private.notification_deliveries o
                   where o.claimed_until < at and o.status in ('claimed', 'attempting')
                   order by o.id
                     for update skip locked);

  -- Counted up to 1,000 past this chunk, in the due index's order: counting a backlog of 100,000
  -- rows at every claim cost a third of the claim.
  select count(*) into left_over from (
    select from private.notification_deliveries d
     where d.status = 'pending' and d.deliver_after <= at and d.channel = any (channels)
     order by d.deliver_after
     limit n + 1000) due_now;

  return query
  with due as (
    select d.id, d.notification_id, d.user_id, d.device_id, d.expires_at
      from private.notification_deliveries d
     where d.status = 'pending' and d.deliver_after <= at and d.channel = any (channels)
     order by d.deliver_after
     limit n
       for update of d skip locked
  ), judged as materialized (
    -- Materialized: each row's zone and quiet hours are worked out once, not again in every
    -- expression that reads them.
    select due.id, due.notification_id, due.user_id, p.daily_cap, tz.zone, due.expires_at,
           private.notification_time_sensitive(nt.type) as urgent,
           case when nt.read_at is not null then 'skipped'
                -- Retired since the row was queued (the record that retired it sweeps only the
                -- rows it could see then).
                when dv.retired_at is not null then 'retired'
                -- Deactivated, or being deleted: nothing more goes out.
                when not pr.is_active or exists (select 1 from private.account_deletions x where x.user_id = due.user_id)
                  then 'skipped'
                when due.expires_at <= at then 'expired'
                when not p.push_enabled or not private.notification_channel_on(p, nt.type, 'push') then 'skipped'
                else null end as verdict,
           private.quiet_hours_end(p, tz.zone, at) as quiet_until
      from due
      join public.notifications nt on nt.id = due.notification_id
      join public.notification_devices dv on dv.id = due.device_id
      join public.notification_preferences p on p.user_id = due.user_id
      join public.profiles pr on pr.id = due.user_id
     cross join lateral (select private.notification_timezone(p) as zone) tz
  ), counted as (
    select j.*,
           -- Notifications already pushed (or going out) today, in the user's day.
           (select count(distinct o.notification_id) from private.notification_deliveries o
             where o.user_id = j.user_id
               and o.claimed_at >= ((at at time zone j.zone)::date)::timestamp at time zone j.zone
               and o.notification_id <> j.notification_id) as today,
           -- The notification's own deliveries (one per device), by its index: a plain exists
           -- became a hashed scan of the whole outbox, and `claimed_at is not null limit 1` a walk
           -- of every claimed row in the user_day index (1 ms a row once 150,000 were claimed).
           coalesce((select bool_or(o.claimed_at is not null) from private.notification_deliveries o
                      where o.notification_id = j.notification_id), false)
             as counted_already,
           dense_rank() over (partition by j.user_id, (j.verdict is null and j.quiet_until is null)
                              order by j.notification_id) as rank_in_claim
      from judged j
  ), decided as (
    select c.id, c.quiet_until,
           case when c.verdict is not null then c.verdict
                when c.quiet_until is not null and c.quiet_until >= c.expires_at then 'expired'
                when c.quiet_until is not null then 'held'
                when not c.urgent and not c.counted_already and c.today + c.rank_in_claim > c.daily_cap then 'capped'
                else 'claimed' end as verdict
      from counted c
  ), changed as (
    update private.notification_deliveries d
       set status = case when x.verdict = 'held' then 'pending' else x.verdict end,
           deliver_after = case when x.verdict = 'held' then x.quiet_until else d.deliver_after end,
           claim_id = case when x.verdict = 'claimed' then run end,
           claimed_until = case when x.verdict = 'claimed' then at + make_interval(secs => greatest(coalesce(lease_seconds, 120), 5)) end,
           claimed_at = case when x.verdict = 'claimed' then at end,
           attempts = d.attempts + case when x.verdict = 'claimed' then 1 else 0 end
      from decided x
     where d.id = x.id
    returning d.id, d.claim_id, d.channel, d.device_id, d.notification_id, d.expires_at, d.attempts, x.verdict
  )
  -- The context the texts need beyond the payload: the name of the person who did it, the
  -- recipient's window start (local HH:MM); joined, not looked up per row by a function.
  select d.id, d.claim_id, d.channel, dv.address, dv.key_p256dh, dv.key_auth, nt.id, nt.user_id, nt.type,
         nt.payload, nt.created_at, d.expires_at, d.attempts,
         jsonb_strip_nulls(jsonb_build_object('actorName', nullif(btrim(actor.full_name), ''),
                                              'windowStart', to_char(w.window_start_time, 'HH24:MI'))),
         -- What this claim took is no longer remaining.
         greatest(left_over - (select count(*) from changed), 0)
    from changed d
    join public.notification_devices dv on dv.id = d.device_id
    join public.notifications nt on nt.id = d.notification_id
   cross join lateral (select coalesce(nt.payload ->> 'fromUserId', nt.payload ->> 'beforeUserId',
                                       nt.payload ->> 'sender_id', nt.payload ->> 'shared_by',
                                       nt.payload ->> 'by') as id) a
    left join public.profiles actor
      on actor.id = case when a.id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then a.id::uuid end
    left join public.workout_windows w on w.user_id = nt.user_id
   where d.verdict = 'claimed'
   order by d.id;
end
$$;

revoke execute on function private.claim_notification_deliveries(integer, integer, text[], timestamptz) from public;
grant execute on function private.claim_notification_deliveries(integer, integer, text[], timestamptz) to service_role;

create or replace function public.claim_notification_deliveries(
  max_rows integer default 500, lease_seconds integer default 120, channels text[] default array['expo', 'web_push'],
  at timestamptz default now())
returns table (id bigint, claim_id uuid, channel text, address text, key_p256dh text, key_auth text,
               notification_id uuid, user_id uuid, type text, payload jsonb, created_at timestamptz,
               expires_at timestamptz, attempts smallint, context jsonb, remaining bigint)
language sql
set search_path = ''
as $$ select * from private.claim_notification_deliveries($1, $2, $3, $4) $$;
comment on function public.claim_notification_deliveries(integer, integer, text[], timestamptz) is
  'Service role (the sender job): claims a chunk of due push deliveries, applying preferences, quiet hours and caps.';
grant execute on function public.claim_notification_deliveries(integer, integer, text[], timestamptz) to service_role;

-- Marks claimed rows as being sent, just before the provider is called; returns the ids still
-- held by this claim (a row whose lease ran out and that another run took is not among them).
create or replace function private.start_notification_deliveries(ids bigint[], claim uuid) returns setof bigint
language sql security definer
set search_path = ''
as $$
  -- One moment for the whole mark (an uncorrelated subquery is evaluated once).
  update private.notification_deliveries d set status = 'attempting', attempted_at = (select clock_timestamp())
   where d.id = any (ids) and d.claim_id = claim and d.status = 'claimed'
  returning d.id
$$;
revoke execute on function private.start_notification_deliveries(bigint[], uuid) from public;
grant execute on function private.start_notification_deliveries(bigint[], uuid) to service_role;

create or replace function public.start_notification_deliveries(ids bigint[], claim uuid) returns setof bigint
language sql
set search_path = ''
as $$ select * from private.start_notification_deliveries($1, $2) $$;
comment on function public.start_notification_deliveries(bigint[], uuid) is
  'Service role (the sender job): marks claimed deliveries as attempting; returns those this claim still holds.';
grant execute on function public.start_notification_deliveries(bigint[], uuid) to service_role;

/*
 * Records what the providers answered, one object per delivery:
 *   {id, outcome: sent, ticket_id?}                 delivered to the provider (Expo: its ticket)
 *   {id, outcome: retry, error, retry_after?}       429/5xx: pending again after a backoff
 *                                                   (30 s doubling, at most 1 h, or Retry-After);
 *                                                   the 5th attempt fails for good
 *   {id, outcome: failed, error}                    refused for good
 *   {id, outcome: retired, error, reason}           the device is gone: retired with it; reason
 *                                                   (the sender's fixed words) is its retired_reason
 *   {id, outcome: receipt_ok | receipt_error | receipt_retry, error?, retire?}  Expo receipts
 *   {id, outcome: released, claim_id}               claimed by a run that is stopping and never
 *                                                   marked: pending again at once, the claim not
 *                                                   counted as an attempt; only while that claim
 *                                                   holds it (a marked row is left as it is: it may
 *                                                   have gone out; a row another run took is theirs)
 * Returns how many rows changed.
 */
create or replace function private.record_notification_deliveries(results jsonb) returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  changed integer;
  retired uuid[];
begin
  -- The rows are locked in id order first, so runs side by side never wait on each other in
  -- opposite orders.
  perform 1 from private.notification_deliveries d
   where d.id in (select (y ->> 'id')::bigint from jsonb_array_elements(results) y)
   order by d.id
     for update;
  with r as (
    select x.id, x.outcome, left(x.error, 1000) as error, x.ticket_id, x.retry_after, coalesce(x.retire, false) as retire,
           left(x.reason, 100) as reason, x.claim_id
      from jsonb_to_recordset(results)
        as x(id bigint, outcome text, error text, ticket_id text, retry_after integer, retire boolean, reason text,
             claim_id uuid)
  ), upd as (
    update private.notification_deliveries d
       set status = case r.outcome
                      when 'sent' then 'sent'
                      when 'retry' then case when d.attempts >= 5 then 'failed' else 'pending' end
                      when 'failed' then 'failed'
                      when 'retired' then 'retired'
                      when 'released' then 'pending'
                      else d.status end,
           sent_at = case when r.outcome = 'sent' then now() else d.sent_at end,
           ticket_id = case when r.outcome = 'sent' then r.ticket_id else d.ticket_id end,
           receipt_status = case r.outcome when 'receipt_ok' then 'ok' when 'receipt_error' then 'error'
                                           when 'receipt_retry' then null else d.receipt_status end,
           deliver_after = case when r.outcome = 'retry'
                                then now() + make_interval(secs => greatest(coalesce(r.retry_after, 0),
                                                                            least(3600, 30 * power(2, greatest(d.attempts - 1, 0)))))
                                else d.deliver_after end,
           claim_id = null,
           claimed_until = null,
           -- A retried row no longer counts towards the daily cap until it is claimed again.
           claimed_at = case when r.outcome in ('retry', 'released') then null else d.claimed_at end,
           attempts = d.attempts - case when r.outcome = 'released' then 1 else 0 end,
           error = coalesce(r.error, d.error)
      from r
     where d.id = r.id and (r.outcome <> 'released' or (d.status = 'claimed' and d.claim_id = r.claim_id))
    returning d.id, d.device_id, r.outcome, r.retire, r.reason
  ), gone as (
    -- The sender's fixed words ('gone (410)', 'DeviceNotRegistered'), never a provider's answer:
    -- the owner reads this column, and the endpoint was the owner's choice.
    update public.notification_devices v
       set retired_at = now(), retired_reason = coalesce(u.reason, 'the provider no longer knows this device')
      from upd u
     where v.id = u.device_id and (u.outcome = 'retired' or u.retire) and v.retired_at is null
    returning v.id
  )
  select count(*), array_agg(distinct u.device_id) filter (where u.outcome = 'retired' or u.retire)
    into changed, retired
    from upd u;
  -- Whatever else was waiting for a device just retired is not sent.
  if retired is not null then
    update private.notification_deliveries d set status = 'retired', claim_id = null, claimed_until = null
     where d.device_id = any (retired) and d.status in ('pending', 'claimed');
  end if;
  return changed;
end
$$;
revoke execute on function private.record_notification_deliveries(jsonb) from public;
grant execute on function private.record_notification_deliveries(jsonb) to service_role;

create or replace function public.record_notification_deliveries(results jsonb) returns integer
language sql
set search_path = ''
as $$ select private.record_notification_deliveries($1) $$;
comment on function public.record_notification_deliveries(jsonb) is
  'Service role (the sender job): records the providers'' answers (sent, retry with backoff, failed, retired, receipts).';
grant execute on function public.record_notification_deliveries(jsonb) to service_role;

-- Expo tickets whose receipts are due (sent at least delay_seconds ago, within Expo's day),
-- held for 5 minutes: a run that dies while asking leaves them to the next one.
create or replace function private.claim_expo_receipts(max_rows integer, delay_seconds integer) returns table (id bigint, ticket_id text)
language sql security definer
set search_path = ''
as $$
  with due as (
    select d.id from private.notification_deliveries d
     where d.ticket_id is not null
       and (d.receipt_status is null or (d.receipt_status = 'checking' and d.claimed_until < now()))
       and d.sent_at <= now() - make_interval(secs => greatest(coalesce(delay_seconds, 900), 0))
     order by d.sent_at
     limit least(greatest(coalesce(max_rows, 1000), 1), 5000)
       for update of d skip locked
  ), expired as (
    -- Expo keeps receipts about a day: older tickets are not asked about.
    update private.notification_deliveries d set receipt_status = 'unavailable', claimed_until = null
      from due where d.id = due.id and d.sent_at < now() - interval '23 hours'
    returning d.id
  )
  update private.notification_deliveries d set receipt_status = 'checking', claimed_until = now() + interval '5 minutes'
    from due where d.id = due.id and d.id not in (select e.id from expired e)
  returning d.id, d.ticket_id
$$;
revoke execute on function private.claim_expo_receipts(integer, integer) from public;
grant execute on function private.claim_expo_receipts(integer, integer) to service_role;

create or replace function public.claim_expo_receipts(max_rows integer default 1000, delay_seconds integer default 900)
returns table (id bigint, ticket_id text)
language sql
set search_path = ''
as $$ select * from private.claim_expo_receipts($1, $2) $$;
comment on function public.claim_expo_receipts(integer, integer) is
  'Service role (the sender job): Expo tickets whose receipts are due; record the answers with record_notification_deliveries.';
grant execute on function public.claim_expo_receipts(integer, integer) to service_role;

-- ---------------------------------------------------------------------------------------------
-- The kick: delivery within seconds of the write
-- ---------------------------------------------------------------------------------------------
-- Rows due now start a sender run at once (one pg_net request to the deliver endpoint, as the
-- pg_cron job makes), instead of waiting for the minute's run. At most one request per
-- `min_interval`, however many rows are written: the row below remembers the last kick, and a
-- writer that finds it recent does nothing, because the kicked run keeps claiming for
-- `linger` after it starts (past the interval), so it takes the rows written meanwhile. The
-- pg_cron job stays the safety net (a failed request, a row committed after the run stopped
-- looking, rows that become due later: quiet hours, backoff, the check-in reminder).
create table private.notification_push_kick (
  id boolean primary key default true check (id),
  enabled boolean not null default true,
  min_interval interval not null default interval '500 milliseconds'
    check (min_interval between interval '0' and interval '1 minute'),
  linger interval not null default interval '1500 milliseconds'
    check (linger between interval '0' and interval '10 seconds'),
  kicked_at timestamptz,
  kicks bigint not null default 0
);
alter table private.notification_push_kick enable row level security;
comment on table private.notification_push_kick is
  'One row: whether writing due outbox rows starts a sender run at once (enabled), at most one request per '
  'min_interval (kicked_at: the last), the run claiming for linger after it starts; kicks counts the requests.';
insert into private.notification_push_kick default values;

create or replace function private.kick_notification_deliveries() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  kick private.notification_push_kick;
  url text;
  secret text;
begin
  if not exists (select 1 from inserted i where i.deliver_after <= now()) then
    return null;
  end if;
  -- A plain read first: at a thousand writes a second nearly every writer stops here, without
  -- a lock on the row.
  select * into kick from private.notification_push_kick k
   where k.enabled and (k.kicked_at is null or k.kicked_at < clock_timestamp() - k.min_interval);
  if not found then
    return null;
  end if;
  -- One writer takes the kick; one that finds the row locked leaves it to that one.
  update private.notification_push_kick k set kicked_at = clock_timestamp(), kicks = k.kicks + 1
   where k.id in (select l.id from private.notification_push_kick l
                   where l.enabled and (l.kicked_at is null or l.kicked_at < clock_timestamp() - l.min_interval)
                     for update skip locked)
  returning * into kick;
  if not found then
    return null;
  end if;
  select s.decrypted_secret into url from vault.decrypted_secrets s where s.name = 'project_url';
  select s.decrypted_secret into secret from vault.decrypted_secrets s where s.name = 'NOTIFICATIONS_CRON_SECRET';
  if url is null or secret is null then
    return null; -- not configured: the pg_cron job (which needs the same) cannot run either
  end if;
  -- Sent when the writer commits (pg_net's queue is a table); never fails the write.
  begin
    perform net.http_post(
      url := url || '/functions/v1/api/notifications/cron/deliver',
      headers := jsonb_build_object('Content-Type', 'application/json', 'x-cron-secret', secret),
      body := jsonb_build_object('kicked_at', kick.kicked_at,
                                 'linger_ms', (extract(epoch from kick.linger) * 1000)::integer),
      timeout_milliseconds := 60000);
  exception when others then
    raise warning 'notification kick: %', sqlerrm;
  end;
  return null;
end
$$;
revoke execute on function private.kick_notification_deliveries() from public;
create trigger notification_deliveries_kick after insert on private.notification_deliveries
  referencing new table as inserted
  for each statement execute function private.kick_notification_deliveries();
