-- =============================================================================================
-- Notifications: preferences
-- =============================================================================================
-- Per type and channel on/off, quiet hours, time zone, daily cap and digest hour, one row per
-- user, and the helpers the sender's claims ask (routes/notifications/preferences.ts). The
-- area's overview: notifications/inbox.sql.

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
