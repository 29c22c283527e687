-- =============================================================================================
-- Workout windows: windows and locations
-- =============================================================================================
-- Each user's 2-hour daily window and private location, and the date a check-in counts for
-- (routes/workout/windows.ts). The area's overview: workout/shared.sql.

-- ---------------------------------------------------------------------------------------------
-- Windows and locations
-- ---------------------------------------------------------------------------------------------

-- The activities a window may name, listed once: the checks below read this type, and the api's
-- list (routes/workout/shared.ts) must equal the generated enum or the type check fails. Columns
-- stay text, so a wrong value is refused in the field's words (check_workout_window_fields)
-- rather than as an enum's input error.
create type public.workout_activity_type as enum ('cardio', 'strength', 'walk', 'meditation', 'reading', 'homework', 'other');
comment on type public.workout_activity_type is 'The activities a workout window may name (the api reads the list from the generated types).';

create table public.workout_windows (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  activity_type text not null
    check (activity_type = any (enum_range(null::public.workout_activity_type)::text[])),
  custom_activity text check (char_length(custom_activity) between 1 and 100),
  window_start_time time not null,
  window_end_time time not null,
  timezone text not null check (char_length(timezone) <= 50),
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint workout_windows_two_hours check (
    ((extract(epoch from window_end_time) - extract(epoch from window_start_time) + 86400)::integer % 86400) = 7200),
  constraint workout_windows_custom_activity_only_other check (custom_activity is null or activity_type = 'other')
);
alter table public.workout_windows enable row level security;
comment on table public.workout_windows is
  'One 2-hour daily workout window per user (SPEC "the service"); may cross midnight. Owners and super admins read it.';
comment on column public.workout_windows.timezone is 'IANA zone the window''s times are in (checked by a trigger).';
revoke all on public.workout_windows from anon, authenticated;
grant select, insert, update, delete on public.workout_windows to authenticated;

create table public.workout_locations (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  ip_address inet,
  latitude numeric(10, 8) check (latitude between -90 and 90),
  longitude numeric(11, 8) check (longitude between -180 and 180),
  city text check (char_length(city) between 1 and 100),
  region text check (char_length(region) between 1 and 100),
  country text check (country ~ '^[A-Z]{2}$'),
  timezone text check (char_length(timezone) <= 50),
  last_updated timestamptz not null default now()
);
alter table public.workout_locations enable row level security;
comment on table public.workout_locations is
  'Where a user works out (one per user). Private: the owner and super admins read it; matching reads it inside SQL.';
revoke all on public.workout_locations from anon, authenticated;
grant select, insert, update, delete on public.workout_locations to authenticated;

-- 22023 unless the zone is an IANA name (null passes).
create or replace function private.check_workout_timezone(tz text) returns void
language plpgsql stable
set search_path = ''
as $$
begin
  if tz is not null and not private.is_valid_timezone(tz) then
    raise exception 'timezone: % is not an IANA time zone name such as Europe/Paris', tz using errcode = '22023';
  end if;
end
$$;
grant execute on function private.check_workout_timezone(text) to authenticated, service_role;

-- A window's or location's zone is checked (IANA names only) and stored as IANA spells it, on
-- insert and whenever it changes, whoever writes (PostgREST, the RPCs, the api, synthetic user
-- generation); the column the trigger's argument names (updated_at, last_updated) is stamped.
create or replace function private.prepare_workout_place() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.timezone is distinct from old.timezone then
    perform private.check_workout_timezone(new.timezone);
    new.timezone := private.canonical_timezone(new.timezone);
  end if;
  new := jsonb_populate_record(new, jsonb_build_object(tg_argv[0], now()));
  return new;
end
$$;
comment on function private.prepare_workout_place() is
  'Workout windows and locations: the zone checked and spelled as IANA does; the column named by the trigger''s argument stamped.';

create trigger workout_windows_prepare before insert or update on public.workout_windows
  for each row execute function private.prepare_workout_place('updated_at');

-- A window's rules in words, as POST /api/workout-window/setup says them (conventions.sql, "Field
-- rules in words"); the zone's name is checked by workout_windows_prepare.
create or replace function private.check_workout_window_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('user_id', new.user_id);
  perform private.check_required('activity_type', new.activity_type);
  perform private.check_one_of('activity_type', new.activity_type, enum_range(null::public.workout_activity_type)::text[]);
  perform private.check_length('custom_activity', new.custom_activity, 100);
  if new.custom_activity is not null and new.activity_type <> 'other' then
    raise exception 'custom_activity: only with activity_type other' using errcode = '23514';
  end if;
  perform private.check_required('window_start_time', new.window_start_time);
  perform private.check_required('window_end_time', new.window_end_time);
  if ((extract(epoch from new.window_end_time) - extract(epoch from new.window_start_time) + 86400)::integer % 86400) <> 7200 then
    raise exception 'window_end_time: must be exactly 2 hours after window_start_time' using errcode = '23514';
  end if;
  perform private.check_required('timezone', new.timezone);
  perform private.check_max_length('timezone', new.timezone, 50);
  perform private.check_required('is_active', new.is_active);
  return new;
end
$$;
create trigger workout_windows_check_fields
  before insert or update of user_id, activity_type, custom_activity, window_start_time, window_end_time, timezone, is_active
  on public.workout_windows
  for each row execute function private.check_workout_window_fields();

create trigger workout_locations_prepare before insert or update on public.workout_locations
  for each row execute function private.prepare_workout_place('last_updated');

-- A location's rules in words, as PUT /api/workout-window/update-location says them (conventions.sql,
-- "Field rules in words"); the zone's name is checked by workout_locations_prepare.
create or replace function private.check_workout_location_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('user_id', new.user_id);
  perform private.check_between('latitude', new.latitude, -90, 90);
  perform private.check_between('longitude', new.longitude, -180, 180);
  perform private.check_length('city', new.city, 100);
  perform private.check_length('region', new.region, 100);
  if new.country !~ '^[A-Z]{2}$' then
    raise exception 'country: must be a two-letter country code (upper case)' using errcode = '23514';
  end if;
  perform private.check_max_length('timezone', new.timezone, 50);
  return new;
end
$$;
create trigger workout_locations_check_fields
  before insert or update of user_id, latitude, longitude, city, region, country, timezone
  on public.workout_locations
  for each row execute function private.check_workout_location_fields();

create policy "workout_windows: owners and super admins read" on public.workout_windows
  for select to authenticated using (user_id = (select auth.uid()) or (select private.is_super_admin()));

create policy "workout_windows: owners add theirs" on public.workout_windows
  for insert to authenticated with check (user_id = (select auth.uid()));

create policy "workout_windows: owners change theirs" on public.workout_windows
  for update to authenticated using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));

create policy "workout_windows: owners remove theirs" on public.workout_windows
  for delete to authenticated using (user_id = (select auth.uid()));

create policy "workout_locations: owners and super admins read" on public.workout_locations
  for select to authenticated using (user_id = (select auth.uid()) or (select private.is_super_admin()));

create policy "workout_locations: owners add theirs" on public.workout_locations
  for insert to authenticated with check (user_id = (select auth.uid()));

create policy "workout_locations: owners change theirs" on public.workout_locations
  for update to authenticated using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));

create policy "workout_locations: owners remove theirs" on public.workout_locations
  for delete to authenticated using (user_id = (select auth.uid()));

-- POST /api/workout-window/setup: one window per user; setting up again replaces it.
create or replace function public.setup_workout_window(
  activity_type text,
  custom_activity text,
  window_start_time time,
  window_end_time time,
  timezone text
) returns public.workout_windows
language sql
set search_path = ''
as $$
  insert into public.workout_windows as w (user_id, activity_type, custom_activity, window_start_time, window_end_time, timezone, is_active)
  values ((select auth.uid()), setup_workout_window.activity_type, setup_workout_window.custom_activity,
          setup_workout_window.window_start_time, setup_workout_window.window_end_time, setup_workout_window.timezone, true)
  on conflict (user_id) do update set
    activity_type = excluded.activity_type, custom_activity = excluded.custom_activity,
    window_start_time = excluded.window_start_time, window_end_time = excluded.window_end_time,
    timezone = excluded.timezone, is_active = true
  returning w.*
$$;
comment on function public.setup_workout_window(text, text, time, time, text) is
  'The caller''s window (created or replaced). The table''s checks refuse anything but a 2-hour window.';
grant execute on function setup_workout_window(text,text,time without time zone,time without time zone,text) to authenticated, service_role;

-- PUT /api/workout-window/update-location: the fields given replace the stored ones.
create or replace function public.update_workout_location(patch jsonb) returns public.workout_locations
language plpgsql
set search_path = ''
as $$
declare
  row public.workout_locations;
begin
  if jsonb_typeof(patch) is distinct from 'object' then
    raise exception 'patch must be a JSON object' using errcode = '22023';
  end if;
  insert into public.workout_locations as l (user_id, ip_address, latitude, longitude, city, region, country, timezone)
  values ((select auth.uid()), (patch ->> 'ipAddress')::inet, (patch ->> 'latitude')::numeric,
          (patch ->> 'longitude')::numeric, patch ->> 'city', patch ->> 'region', upper(patch ->> 'country'),
          patch ->> 'timezone')
  on conflict (user_id) do update set
    ip_address = case when patch ? 'ipAddress' then excluded.ip_address else l.ip_address end,
    latitude = case when patch ? 'latitude' then excluded.latitude else l.latitude end,
    longitude = case when patch ? 'longitude' then excluded.longitude else l.longitude end,
    city = case when patch ? 'city' then excluded.city else l.city end,
    region = case when patch ? 'region' then excluded.region else l.region end,
    country = case when patch ? 'country' then excluded.country else l.country end,
    timezone = case when patch ? 'timezone' then excluded.timezone else l.timezone end
  returning l.* into row;
  return row;
end
$$;
comment on function public.update_workout_location(jsonb) is
  'Creates or updates the caller''s location; keys: ipAddress, latitude, longitude, city, region, country, timezone.';
grant execute on function update_workout_location(jsonb) to authenticated, service_role;

-- The date a check-in made at `at` counts for: the local date, or the day before while a
-- window that crossed midnight is still running.
create or replace function private.workout_checkin_date(w public.workout_windows, at timestamptz)
returns date
language sql stable
set search_path = ''
as $$
  select case when w.window_end_time < w.window_start_time
               and (at at time zone w.timezone)::time < w.window_end_time
              then (at at time zone w.timezone)::date - 1
              else (at at time zone w.timezone)::date end
$$;
