-- =============================================================================================
-- Notification delivery: devices, preferences, the delivery outbox, e-mail digests, retention
-- =============================================================================================
-- The rows of public.notifications reach people through three channels: Expo push (the mobile
-- app's ExponentPushToken[...]), Web Push (a browser's subscription: endpoint and keys) and a
-- daily e-mail digest. Sending is the api's job (functions/_shared/push_delivery.ts); what is
-- owed, to whom and when is decided here:
--   public.notification_devices      a user's devices (one owner per token or endpoint)
--   public.notification_preferences  per type and channel on/off, quiet hours, daily cap, digest
--   private.notification_deliveries  the outbox: one row per notification and device, written by
--                                    a trigger in the transaction that writes the notification
--   private.notification_digests     each user's digest state and unsubscribe token
-- The sender claims chunks (for update skip locked) and records each outcome; retention prunes.

-- ---------------------------------------------------------------------------------------------
-- Devices
-- ---------------------------------------------------------------------------------------------

create table public.notification_devices (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null default auth.uid() references public.profiles (id) on delete cascade,
  kind text not null check (kind in ('expo', 'web_push')),
  address text not null check (char_length(address) between 1 and 2048),
  key_p256dh text check (key_p256dh ~ '^[A-Za-z0-9_-]{80,100}={0,2}$'),
  key_auth text check (key_auth ~ '^[A-Za-z0-9_-]{16,32}={0,2}$'),
  name text check (char_length(name) <= 100),
  created_at timestamptz not null default now(),
  registered_at timestamptz not null default now(),
  retired_at timestamptz,
  retired_reason text check (char_length(retired_reason) <= 500),
  unique (kind, address),
  check ((kind = 'web_push') = (key_p256dh is not null and key_auth is not null))
);
alter table public.notification_devices enable row level security;
comment on table public.notification_devices is
  'Where a user''s push notifications go: an Expo push token (kind expo) or a Web Push subscription (kind '
  'web_push: endpoint in address, its p256dh and auth keys). A token or endpoint belongs to one user at a time: '
  'registering it on another account moves it.';
comment on column public.notification_devices.address is
  'The Expo push token (ExponentPushToken[...]) or the Web Push subscription''s endpoint URL.';
comment on column public.notification_devices.retired_at is
  'When the provider said the device is gone (Expo DeviceNotRegistered, Web Push 404/410): nothing more is sent '
  'to it until it is registered again.';
revoke all on public.notification_devices from anon, authenticated, service_role;
grant select, delete on public.notification_devices to authenticated, service_role;
grant insert (kind, address, key_p256dh, key_auth, name) on public.notification_devices to authenticated;
grant update (key_p256dh, key_auth, name) on public.notification_devices to authenticated;

-- A user's devices (the outbox trigger, the list, the foreign key).
create index notification_devices_by_owner on public.notification_devices (user_id);

create policy "notification_devices: owners read" on public.notification_devices
  for select to authenticated using (user_id = (select auth.uid()));
create policy "notification_devices: owners add" on public.notification_devices
  for insert to authenticated with check (user_id = (select auth.uid()));
create policy "notification_devices: owners update" on public.notification_devices
  for update to authenticated using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
create policy "notification_devices: owners forget" on public.notification_devices
  for delete to authenticated using (user_id = (select auth.uid()));

-- Why a Web Push endpoint may not be stored (null: it may). The endpoint is the client's choice
-- and the sender POSTs to it, so an address naming this machine, a private network or a bare IP
-- would let a subscription make the api call it (SSRF). What SQL can know: https, no user name or
-- password, no port but 443, a host name ending in a letter-led top-level label (so no IP literal
-- in any notation, no single-label name like localhost or metadata), none of the local-only
-- suffixes. Which push services are allowed is the api's configuration (WEB_PUSH_ALLOWED_HOSTS),
-- checked at registration through /api and again before each send (functions/_shared/web_push.ts).
-- Loopback (127.0.0.1, localhost, [::1], http or https) only where the database is told so:
-- app.web_push_allow_loopback = on, set by sql/local for the local stacks (the tests' fake push
-- service), never on a hosted project.
create or replace function private.web_push_endpoint_problem(address text) returns text
language plpgsql stable
set search_path = ''
as $$
declare
  authority text := substring(address from '^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)');
  host text := lower(regexp_replace(coalesce(authority, ''), ':[0-9]*$', ''));
begin
  if address is null or address !~ '^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\s]+([/?#]\S*)?$' then
    return 'must be an https URL (the subscription''s endpoint)';
  end if;
  if authority ~ '@' then
    return 'must not carry a user name or password';
  end if;
  if host in ('127.0.0.1', 'localhost', '[::1]')
     and coalesce(current_setting('app.web_push_allow_loopback', true), '') = 'on' then
    return null;
  end if;
  if lower(address) !~ '^https://' then
    return 'must be an https URL (the subscription''s endpoint)';
  end if;
  if authority ~ ':[0-9]*$' and authority !~ ':443$' then
    return 'must not name a port (push services listen on 443)';
  end if;
  if host !~ '^[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z][a-z0-9-]*$' then
    return 'must name a push service by its host name (no IP address, no local name)';
  end if;
  if host ~ '\.(localhost|local|localdomain|internal|intranet|lan|home\.arpa)$' then
    return 'must be a push service on the internet, not this machine or a local network';
  end if;
  return null;
end
$$;
comment on function private.web_push_endpoint_problem(text) is
  'Why a Web Push endpoint is refused (null: accepted): https, no credentials, no port but 443, a host name (no IP '
  'literal, no local name). Loopback only with app.web_push_allow_loopback = on (local stacks).';
-- The field-rules trigger runs as the writer.
grant execute on function private.web_push_endpoint_problem(text) to authenticated, service_role;

-- The columns' rules in words (conventions.sql, "Field rules in words").
create or replace function private.check_notification_device_fields() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  problem text;
begin
  perform private.check_required('kind', new.kind);
  perform private.check_one_of('kind', new.kind, array['expo', 'web_push']);
  perform private.check_required('address', new.address);
  if new.kind = 'expo' and new.address !~ '^Expo(nent)?PushToken\[[A-Za-z0-9_-]{1,200}\]$' then
    raise exception 'address: must be an Expo push token (ExponentPushToken[...])' using errcode = '23514';
  end if;
  if new.kind = 'web_push' then
    -- The endpoint is chosen by the client and called by the sender: see web_push_endpoint_problem.
    problem := private.web_push_endpoint_problem(new.address);
    if problem is not null then
      raise exception 'address: %', problem using errcode = '23514';
    end if;
    perform private.check_max_length('address', new.address, 2048);
    perform private.check_required('key_p256dh', new.key_p256dh);
    perform private.check_required('key_auth', new.key_auth);
    if new.key_p256dh !~ '^[A-Za-z0-9_-]{80,100}={0,2}$' then
      raise exception 'key_p256dh: must be the subscription''s p256dh key (base64url)' using errcode = '23514';
    end if;
    if new.key_auth !~ '^[A-Za-z0-9_-]{16,32}={0,2}$' then
      raise exception 'key_auth: must be the subscription''s auth secret (base64url)' using errcode = '23514';
    end if;
  elsif new.key_p256dh is not null or new.key_auth is not null then
    raise exception 'key_p256dh: only a web_push device has keys' using errcode = '23514';
  end if;
  perform private.check_max_length('name', new.name, 100);
  return new;
end
$$;
create trigger notification_devices_check_fields
  before insert or update of kind, address, key_p256dh, key_auth, name on public.notification_devices
  for each row execute function private.check_notification_device_fields();

-- A token or endpoint registered on another account moves: the other account's row goes first
-- (it runs before the unique check, so the insert, or an upsert's update, then succeeds).
create or replace function private.move_notification_device() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  delete from public.notification_devices d
   where d.kind = new.kind and d.address = new.address and d.user_id <> new.user_id;
  return new;
end
$$;
create trigger notification_devices_move before insert on public.notification_devices
  for each row execute function private.move_notification_device();

-- At most 10 devices a user (phones and browsers; retired ones count until re-registered or
-- deleted): each device multiplies every push, so an unbounded list would let one account turn the
-- sender into a relay. Refreshing a device the user already has is not a new one.
create or replace function private.limit_notification_devices() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if not exists (select 1 from public.notification_devices d
                  where d.kind = new.kind and d.address = new.address and d.user_id = new.user_id)
     and (select count(*) from public.notification_devices d where d.user_id = new.user_id) >= 10 then
    raise exception 'address: at most 10 devices a user; delete one first' using errcode = '23514';
  end if;
  return new;
end
$$;
create trigger notification_devices_per_user_limit before insert on public.notification_devices
  for each row execute function private.limit_notification_devices();

-- A user with no signed-in session left gets no more pushes: when the last of their sessions
-- ends (signing out everywhere, signing out of the only device, an account deletion request,
-- which ends them all), their devices are forgotten. A device is not tied to one session: a
-- sign-out on one device while others stay signed in leaves every device registered, so the
-- app DELETEs its own before signing out (docs/notifications.md).
create or replace function private.forget_devices_without_sessions() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  delete from public.notification_devices d
   where d.user_id in (select distinct e.user_id from ended e)
     and not exists (select 1 from auth.sessions s where s.user_id = d.user_id);
  return null;
end
$$;
create trigger sessions_forget_notification_devices after delete on auth.sessions
  referencing old table as ended
  for each statement execute function private.forget_devices_without_sessions();

-- RPC: registers (or refreshes) one of the caller's devices; registering again un-retires it.
create or replace function public.register_notification_device(
  kind text, address text, key_p256dh text default null, key_auth text default null, name text default null)
returns public.notification_devices
language sql security invoker
set search_path = ''
as $$
  insert into public.notification_devices as d (kind, address, key_p256dh, key_auth, name)
  values (register_notification_device.kind, register_notification_device.address,
          register_notification_device.key_p256dh, register_notification_device.key_auth,
          register_notification_device.name)
  on conflict (kind, address) do update
     set key_p256dh = excluded.key_p256dh, key_auth = excluded.key_auth,
         name = coalesce(excluded.name, d.name)
  returning *
$$;
comment on function public.register_notification_device(text, text, text, text, text) is
  'Adds the caller''s device (kind expo: address = the Expo push token; kind web_push: the endpoint and its keys). '
  'The same token on another account moves here; the caller''s own is refreshed and sent to again.';
grant execute on function public.register_notification_device(text, text, text, text, text) to authenticated;

-- Registering again (the upsert's update, which always sets the keys) refreshes the
-- registration and lifts a retirement; renaming a device does not.
create or replace function private.refresh_notification_device() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.registered_at := now();
  new.retired_at := null;
  new.retired_reason := null;
  return new;
end
$$;
create trigger notification_devices_refresh before update of key_p256dh, key_auth on public.notification_devices
  for each row execute function private.refresh_notification_device();

-- ---------------------------------------------------------------------------------------------
-- Preferences
-- ---------------------------------------------------------------------------------------------

create table public.notification_preferences (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  push_enabled boolean not null default true,
  types jsonb not null default '{}'::jsonb check (jsonb_typeof(types) = 'object' and pg_column_size(types) <= 8192),
  quiet_hours_start time default '22:00',
  quiet_hours_end time default '07:00',
  timezone text check (char_length(timezone) <= 50),
  daily_cap smallint not null default 20 check (daily_cap between 1 and 500),
  email_digest boolean not null default false,
  digest_hour smallint not null default 8 check (digest_hour between 0 and 23),
  updated_at timestamptz not null default now(),
  check ((quiet_hours_start is null) = (quiet_hours_end is null))
);
alter table public.notification_preferences enable row level security;
comment on table public.notification_preferences is
  'How a user wants to be told, one row per user (made with the profile; the column defaults are the defaults a '
  'new user gets): push on, every type on, quiet hours 22:00-07:00 in their time zone, at most 20 pushes a day, '
  'no e-mail digest until they opt in.';
comment on column public.notification_preferences.types is
  'Per type and channel overrides: {"workout.battle_update": {"push": false, "email": true}}; a type or channel '
  'not named is on.';
comment on column public.notification_preferences.timezone is
  'IANA zone of the quiet hours, the daily cap''s day and the digest hour; null: the workout window''s zone, else UTC.';
comment on column public.notification_preferences.daily_cap is
  'At most this many notifications pushed per local day; the rest stay in the inbox (and the digest).';
revoke all on public.notification_preferences from anon, authenticated, service_role;
grant select on public.notification_preferences to authenticated, service_role;
grant update (push_enabled, types, quiet_hours_start, quiet_hours_end, timezone, daily_cap, email_digest, digest_hour)
  on public.notification_preferences to authenticated;

create policy "notification_preferences: owners read" on public.notification_preferences
  for select to authenticated using (user_id = (select auth.uid()));
create policy "notification_preferences: owners update" on public.notification_preferences
  for update to authenticated using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));

-- Digest candidates: only the users who opted in.
create index notification_preferences_digest on public.notification_preferences (user_id) where email_digest;

create or replace function private.check_notification_preference_fields() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  entry record;
  channel record;
begin
  perform private.check_required('push_enabled', new.push_enabled);
  perform private.check_required('email_digest', new.email_digest);
  perform private.check_required('types', new.types);
  perform private.check_object('types', new.types, 8192);
  for entry in select * from jsonb_each(new.types) loop
    if entry.key !~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$' or char_length(entry.key) > 100 then
      raise exception 'types: "%" is not a notification type (area.event)', left(entry.key, 100) using errcode = '23514';
    end if;
    if jsonb_typeof(entry.value) <> 'object' then
      raise exception 'types.%: must be an object of channels (push, email)', entry.key using errcode = '23514';
    end if;
    for channel in select * from jsonb_each(entry.value) loop
      perform private.check_one_of('types.' || entry.key || ' channel', channel.key, array['push', 'email']);
      if jsonb_typeof(channel.value) <> 'boolean' then
        raise exception 'types.%.%: must be a boolean', entry.key, channel.key using errcode = '23514';
      end if;
    end loop;
  end loop;
  if (new.quiet_hours_start is null) <> (new.quiet_hours_end is null) then
    raise exception 'quiet_hours_end: quiet hours need both a start and an end (or neither)' using errcode = '23514';
  end if;
  if new.timezone is not null then
    new.timezone := private.canonical_timezone(new.timezone);
    if new.timezone is null then
      raise exception 'timezone: must be an IANA time zone name (e.g. Europe/Paris)' using errcode = '23514';
    end if;
  end if;
  perform private.check_required('daily_cap', new.daily_cap);
  perform private.check_between('daily_cap', new.daily_cap, 1, 500);
  perform private.check_required('digest_hour', new.digest_hour);
  perform private.check_between('digest_hour', new.digest_hour, 0, 23);
  new.updated_at := now();
  return new;
end
$$;
create trigger notification_preferences_check_fields
  before insert or update of push_enabled, types, quiet_hours_start, quiet_hours_end, timezone, daily_cap,
    email_digest, digest_hour on public.notification_preferences
  for each row execute function private.check_notification_preference_fields();

-- Every profile gets its preferences row, so the defaults live in the column defaults only.
create or replace function private.create_notification_preferences() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  insert into public.notification_preferences (user_id) values (new.id) on conflict do nothing;
  return null;
end
$$;
create trigger profiles_create_notification_preferences after insert on public.profiles
  for each row execute function private.create_notification_preferences();

-- The zone a user's day, quiet hours and digest hour are read in.
create or replace function private.notification_timezone(prefs public.notification_preferences) returns text
language sql stable security definer
set search_path = ''
as $$
  select coalesce(prefs.timezone,
                  (select w.timezone from public.workout_windows w where w.user_id = prefs.user_id),
                  'UTC')
$$;

-- Whether a type may go out on a channel ('push' or 'email').
create or replace function private.notification_channel_on(prefs public.notification_preferences, kind text, channel text)
returns boolean
language sql immutable
set search_path = ''
as $$ select coalesce((prefs.types -> kind ->> channel)::boolean, true) $$;

-- When quiet hours that hold `at` end (null when `at` is outside them), in the user's zone.
create or replace function private.quiet_hours_end(prefs public.notification_preferences, tz text, at timestamptz)
returns timestamptz
language plpgsql stable
set search_path = ''
as $$
declare
  local timestamp := at at time zone tz;
  t time := local::time;
  s time := prefs.quiet_hours_start;
  e time := prefs.quiet_hours_end;
begin
  if s is null or s = e then
    return null;
  end if;
  if s < e then
    if t >= s and t < e then return (local::date + e) at time zone tz; end if;
  else
    if t >= s then return (local::date + 1 + e) at time zone tz; end if;
    if t < e then return (local::date + e) at time zone tz; end if;
  end if;
  return null;
end
$$;

-- Types a person acts on within minutes (the baton pass, the check-in reminder): sent with high
-- priority, and never held back by the daily cap (they count towards it). Quiet hours still
-- apply; a reminder whose moment passes while they last is dropped. The sender's TIME_SENSITIVE
-- (push_delivery.ts) names the same types.
create or replace function private.notification_time_sensitive(kind text) returns boolean
language sql immutable
set search_path = ''
as $$ select kind in ('workout.checkin_reminder', 'workout.baton_pass') $$;

-- ---------------------------------------------------------------------------------------------
-- The delivery outbox
-- ---------------------------------------------------------------------------------------------

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
-- E-mail digests
-- ---------------------------------------------------------------------------------------------

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

-- ---------------------------------------------------------------------------------------------
-- Retention
-- ---------------------------------------------------------------------------------------------

-- Read notifications by age (what retention deletes); unread ones are never pruned.
create index notifications_read_by_age on public.notifications (created_at) where read_at is not null;

/*
 * One chunk of pruning: read notifications older than read_days, delivery rows older than
 * delivery_days, devices retired longer than delivery_days. Returns what it deleted and whether
 * more is left (pg_cron runs it every 10 minutes, so a backlog drains a chunk at a time).
 */
create or replace function private.prune_notifications(read_days integer default 90, delivery_days integer default 30,
                                                       chunk integer default 5000)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  n integer := least(greatest(coalesce(chunk, 5000), 1), 100000);
  notifications_deleted integer;
  deliveries_deleted integer;
  devices_deleted integer;
  more boolean;
begin
  if not private.is_trusted_caller() then
    raise exception 'the scheduler, the service role or super admins only' using errcode = '42501';
  end if;
  -- Ids grow with time, so the oldest rows are first in the primary key (no index on created_at
  -- to slow down each notification's insert).
  delete from private.notification_deliveries d
   where d.id in (select o.id from private.notification_deliveries o
                   where o.created_at < now() - make_interval(days => delivery_days)
                   order by o.id limit n);
  get diagnostics deliveries_deleted = row_count;
  delete from public.notifications x
   where x.id in (select o.id from public.notifications o
                   where o.read_at is not null and o.created_at < now() - make_interval(days => read_days)
                   order by o.created_at limit n);
  get diagnostics notifications_deleted = row_count;
  delete from public.notification_devices v
   where v.id in (select o.id from public.notification_devices o
                   where o.retired_at < now() - make_interval(days => delivery_days) limit n);
  get diagnostics devices_deleted = row_count;
  more := deliveries_deleted = n or notifications_deleted = n or devices_deleted = n;
  raise log 'notification retention: % notifications, % deliveries, % devices deleted (more: %)',
    notifications_deleted, deliveries_deleted, devices_deleted, more;
  return jsonb_build_object('notifications', notifications_deleted, 'deliveries', deliveries_deleted,
                            'devices', devices_deleted, 'more', more);
end
$$;
revoke execute on function private.prune_notifications(integer, integer, integer) from public;
grant execute on function private.prune_notifications(integer, integer, integer) to service_role;
comment on function private.prune_notifications(integer, integer, integer) is
  'Retention, one chunk: read notifications older than read_days (90), delivery rows older than delivery_days (30), '
  'devices retired as long. pg_cron: notification-retention, every 10 minutes.';
