-- =============================================================================================
-- Workout windows
-- =============================================================================================
-- A 2-hour daily window per user, a private location, daily chains (before/after neighbours),
-- squads and red/blue teams, photo check-ins that earn battle chips, weekly battles, a daily
-- mosaic and synthetic (AI) users.
--
-- Who sees what: a user reads and writes their own window and location (super admins read
-- all). Locations never leave the database except to their owner: matching uses them inside
-- security definer SQL only. Chains, squads and check-ins are written only by the functions
-- below; their readers get other users' id, name, avatar and window, never a location.
-- Battles and mosaics are readable by every signed-in user.
--
-- Time: a window's start on a date is `(date + window_start_time) at time zone timezone`, an
-- instant; its end is two hours later (so a window may cross midnight). A check-in belongs to
-- the date whose window it is nearest to in the user's own timezone (see
-- private.workout_checkin_date). Zones are IANA names only, on every write path.

-- ---------------------------------------------------------------------------------------------
-- Small helpers
-- ---------------------------------------------------------------------------------------------

-- Whether a name is an IANA time zone name (POSIX strings and offsets are not).
create or replace function private.is_valid_timezone(name text) returns boolean
language sql stable
set search_path = ''
as $$ select private.canonical_timezone(name) is not null $$;
comment on function private.is_valid_timezone(text) is 'True for an IANA time zone name (no POSIX strings, no offsets).';
grant execute on function private.is_valid_timezone(text) to authenticated, service_role;

create or replace function private.haversine_km(lat1 numeric, lng1 numeric, lat2 numeric, lng2 numeric)
returns double precision
language sql immutable parallel safe
set search_path = ''
as $$
  select 2 * 6371.0088 * asin(sqrt(
      power(sin(radians((lat2 - lat1)::double precision) / 2), 2)
    + cos(radians(lat1::double precision)) * cos(radians(lat2::double precision))
      * power(sin(radians((lng2 - lng1)::double precision) / 2), 2)))
$$;
comment on function private.haversine_km(numeric, numeric, numeric, numeric) is
  'Great-circle distance in km (Haversine, mean Earth radius); null when a coordinate is null.';

-- The instant a window starts on a local date.
create or replace function private.workout_window_start(local_date date, start_time time, tz text)
returns timestamptz
language sql stable parallel safe
set search_path = ''
as $$ select (local_date + start_time) at time zone tz $$;

-- A deterministic number in [0, 1) from a text seed (jobs that must repeat exactly).
create or replace function private.seeded_fraction(seed text) returns double precision
language sql immutable parallel safe
set search_path = ''
as $$ select ('x' || substr(md5(seed), 1, 8))::bit(32)::bigint / 4294967296.0 $$;

-- ---------------------------------------------------------------------------------------------
-- Windows and locations
-- ---------------------------------------------------------------------------------------------

create table public.workout_windows (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  activity_type text not null
    check (activity_type in ('cardio', 'strength', 'walk', 'meditation', 'reading', 'homework', 'other')),
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

-- A window's zone is checked (IANA names only) and stored as IANA spells it, on insert and whenever it changes, whoever writes (PostgREST, the
-- RPCs, the api, synthetic user generation).
create or replace function private.prepare_workout_window() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.timezone is distinct from old.timezone then
    perform private.check_workout_timezone(new.timezone);
    new.timezone := private.canonical_timezone(new.timezone);
  end if;
  new.updated_at := now();
  return new;
end
$$;

create trigger workout_windows_prepare before insert or update on public.workout_windows
  for each row execute function private.prepare_workout_window();

-- A window's rules in words, as POST /api/workout-window/setup says them (conventions.sql, "Field
-- rules in words"); the zone's name is checked by workout_windows_prepare.
create or replace function private.check_workout_window_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('user_id', new.user_id);
  perform private.check_required('activity_type', new.activity_type);
  perform private.check_one_of('activity_type', new.activity_type,
    array['cardio', 'strength', 'walk', 'meditation', 'reading', 'homework', 'other']);
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

-- A location's zone is checked (IANA names only) and stored as IANA spells it; last_updated is
-- stamped.
create or replace function private.prepare_workout_location() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.timezone is distinct from old.timezone then
    perform private.check_workout_timezone(new.timezone);
    new.timezone := private.canonical_timezone(new.timezone);
  end if;
  new.last_updated := now();
  return new;
end
$$;

create trigger workout_locations_prepare before insert or update on public.workout_locations
  for each row execute function private.prepare_workout_location();

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

-- ---------------------------------------------------------------------------------------------
-- Chains, squads, check-ins
-- ---------------------------------------------------------------------------------------------

create table public.workout_squads (
  id uuid primary key default gen_random_uuid(),
  date date not null,
  user_1_id uuid not null,
  user_2_id uuid not null,
  user_3_id uuid,
  team_color text not null check (team_color in ('red', 'blue')),
  created_at timestamptz not null default now(),
  constraint workout_squads_trio unique nulls not distinct (user_1_id, date, user_2_id, user_3_id)
);
alter table public.workout_squads enable row level security;
comment on table public.workout_squads is
  'Two or three users of one team for one date (unique per date and trio). Written by private.generate_workout_chains.';
revoke all on public.workout_squads from anon, authenticated;
grant select on public.workout_squads to authenticated;

create table public.workout_chains (
  id uuid primary key default gen_random_uuid(),
  date date not null,
  user_id uuid not null,
  before_user_id uuid,
  after_user_id uuid,
  team_color text not null check (team_color in ('red', 'blue')),
  squad_id uuid,
  created_at timestamptz not null default now(),
  constraint workout_chains_user_date unique (user_id, date)
);
alter table public.workout_chains enable row level security;
comment on table public.workout_chains is
  'A user''s place in a date''s chain: neighbours, team and squad (unique per date and user).';
comment on column public.workout_chains.before_user_id is
  'The neighbour whose window ends closest before this one (no foreign key: when that user is deleted, the one before them takes their place).';
comment on column public.workout_chains.after_user_id is
  'The neighbour whose window starts closest after this one ends (no foreign key: when that user is deleted, the one after them takes their place).';
comment on column public.workout_chains.squad_id is
  'The user''s squad that date (no foreign key: cleared when the squad goes with a deleted member).';
comment on column public.workout_chains.user_id is
  'The member (a profile; no foreign key: only the generator writes rows, under the lock that profile deletion waits for, and deleting a profile deletes its rows).';
revoke all on public.workout_chains from anon, authenticated, service_role;
grant select on public.workout_chains to authenticated;
grant select, delete, truncate, references, trigger on public.workout_chains to service_role;
grant update (before_user_id, after_user_id, team_color, squad_id)
  on public.workout_chains to service_role;

create index workout_chains_by_date on public.workout_chains (date, team_color);

create table public.workout_checkins (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references public.profiles (id) on delete cascade,
  chain_id uuid references public.workout_chains (id) on delete set null,
  date date not null,
  activity_type text not null check (char_length(activity_type) between 1 and 50),
  photo_url text not null check (char_length(photo_url) <= 2048),
  photo_object text check (char_length(photo_object) <= 500),
  photo_timestamp timestamptz not null,
  location_lat numeric(10, 8) check (location_lat between -90 and 90),
  location_lng numeric(11, 8) check (location_lng between -180 and 180),
  status text not null default 'pending' check (status in ('pending', 'verified', 'rejected')),
  review_reason text check (char_length(review_reason) <= 500),
  reviewed_by uuid references public.profiles (id) on delete set null,
  reviewed_at timestamptz,
  chain_continued boolean not null default false,
  streak_days integer not null default 1,
  battle_chips_earned integer not null default 1 check (battle_chips_earned >= 0),
  created_at timestamptz not null default now(),
  timezone text not null default 'UTC' check (char_length(timezone) <= 50),
  constraint workout_checkins_user_date unique (user_id, date)
);
alter table public.workout_checkins enable row level security;
comment on table public.workout_checkins is
  'One photo check-in per user per date, with its chips (rules 2-4) and photo validation (rule 6).';
comment on column public.workout_checkins.review_reason is
  'Why the check-in waits for review (pending) or was rejected; null once verified automatically.';
comment on column public.workout_checkins.photo_object is 'Storage object name in bucket workout-checkins.';
comment on column public.workout_checkins.timezone is
  'The time zone the check-in''s date was counted in (the window''s then): the day lasts until the next midnight there.';
revoke all on public.workout_checkins from anon, authenticated;
grant select on public.workout_checkins to authenticated;

create index workout_checkins_by_date on public.workout_checkins (date, status);

create index workout_checkins_review on public.workout_checkins (status, created_at desc, id desc) where status = 'pending';

create index workout_checkins_chain on public.workout_checkins (chain_id);

create index workout_checkins_reviewer on public.workout_checkins (reviewed_by);

create policy "workout_chains: members and super admins read" on public.workout_chains
  for select to authenticated using (user_id = (select auth.uid()) or (select private.is_super_admin()));
comment on policy "workout_chains: members and super admins read" on public.workout_chains is
  'Neighbours and squad mates are read through the chain/squad functions, which show no location.';

create policy "workout_squads: members and super admins read" on public.workout_squads
  for select to authenticated
  using ((select auth.uid()) in (user_1_id, user_2_id, user_3_id) or (select private.is_super_admin()));

create policy "workout_checkins: owners and super admins read" on public.workout_checkins
  for select to authenticated using (user_id = (select auth.uid()) or (select private.is_super_admin()));

create function private.workout_participants(target date)
returns table (user_id uuid, grp text, start_utc timestamptz, x double precision, y double precision, z double precision)
language sql stable
set search_path = ''
as $$
  select w.user_id,
         (case when l.city is not null then 'c:' || coalesce(l.country, '') || ':' || lower(l.city)
               when l.region is not null then 'r:' || coalesce(l.country, '') || ':' || lower(l.region) end) collate "C",
         (target + w.window_start_time) at time zone w.timezone,
         cos(radians(l.latitude::float8)) * cos(radians(l.longitude::float8)),
         cos(radians(l.latitude::float8)) * sin(radians(l.longitude::float8)),
         sin(radians(l.latitude::float8))
    from public.workout_windows w
    join public.profiles p on p.id = w.user_id and p.is_active
    left join public.workout_locations l on l.user_id = w.user_id
   where w.is_active
$$;
comment on function private.workout_participants(date) is
  'Who is matched on a date, with their group, window start in UTC and position as a unit vector.';

-- One participant of a date's plan (private.workout_participants' row).
create type private.workout_participant as (
  user_id uuid, grp text, start_utc timestamptz, x double precision, y double precision, z double precision
);

create function private.workout_chain_plan(target date, people private.workout_participant[])
returns table (user_id uuid, before_user_id uuid, after_user_id uuid, team_color text,
               squad_id uuid, squad_members uuid[], is_new boolean, frozen boolean)
language sql stable
set search_path = ''
as $$
  with participants as materialized (
    select * from unnest(people)
  ),
  -- The distinct start instants of each group: users starting together share their candidates.
  instants as (
    select distinct p.grp, p.start_utc as s from participants p where p.grp is not null
  ),
  -- For each instant s: prev_start, the latest start at or before s - 2h (the window ending
  -- closest at or before s), and next_start, the earliest start at or after s + 2h (the window
  -- starting closest after s's window ends): window frames over the group's instants, no
  -- per-user scan.
  neighbour_instants as materialized (
    select i.grp, i.s,
           max(i.s) over (partition by i.grp order by i.s
                          range between unbounded preceding and interval '2 hours' preceding) as prev_start,
           min(i.s) over (partition by i.grp order by i.s desc
                          range between unbounded preceding and interval '2 hours' preceding) as next_start
      from instants i
  ),
  -- Among the users at that instant, the nearest; ties by user id.
  before_pick as (
    select distinct on (u.user_id) u.user_id, v.user_id as neighbour
      from participants u
      join neighbour_instants ni on ni.grp = u.grp and ni.s = u.start_utc
      join participants v on v.grp = u.grp and v.start_utc = ni.prev_start
     order by u.user_id, (u.x - v.x) ^ 2 + (u.y - v.y) ^ 2 + (u.z - v.z) ^ 2 nulls last, v.user_id
  ),
  after_pick as (
    select distinct on (u.user_id) u.user_id, v.user_id as neighbour
      from participants u
      join neighbour_instants ni on ni.grp = u.grp and ni.s = u.start_utc
      join participants v on v.grp = u.grp and v.start_utc = ni.next_start
     order by u.user_id, (u.x - v.x) ^ 2 + (u.y - v.y) ^ 2 + (u.z - v.z) ^ 2 nulls last, v.user_id
  ),
  -- Rows already made for these participants (a shard's: not the whole day's).
  existing as (
    select c.user_id, c.team_color,
           exists (select 1 from public.workout_checkins k where k.user_id = c.user_id and k.date = target) as has_checkin
      from public.workout_chains c
     where c.date = target and c.user_id in (select p.user_id from participants p)
  ),
  team_counts as (
    select coalesce(p.grp, '') as team_group,
           count(*) filter (where e.team_color = 'red') as red,
           count(*) filter (where e.team_color = 'blue') as blue
      from participants p join existing e on e.user_id = p.user_id
     group by 1
  ),
  -- Users without a row yet alternate red/blue in start order inside their group, starting with
  -- the team the group has fewer of: the i-th newcomer of a group is the (i/2)-th of its team,
  -- and the team's previous and next members are two places away in the group's order. So one
  -- ordered pass gives teams and squads: consecutive team members in threes, a remainder of 1
  -- making the last four two pairs, a remainder of 2 a last pair, a lone member none. A squad's
  -- id is derived from the date and its first member (date first, see above); its members are
  -- listed on that row.
  newcomers as (
    select p.user_id, p.grp,
           (row_number() over w - 1)::integer as i,
           (count(*) over (partition by coalesce(p.grp, '')))::integer as n,
           coalesce(t.red, 0) <= coalesce(t.blue, 0) as red_first,
           lag(p.user_id, 2) over w as back_1, lag(p.user_id, 4) over w as back_2,
           lead(p.user_id, 2) over w as next_1, lead(p.user_id, 4) over w as next_2
      from participants p
      left join team_counts t on t.team_group = coalesce(p.grp, '')
     where not exists (select 1 from existing e where e.user_id = p.user_id)
    window w as (partition by coalesce(p.grp, '') order by p.start_utc, p.user_id)
  ),
  teams as (
    select n.*,
           case when (n.i % 2 = 0) = n.red_first then 'red' else 'blue' end as team_color,
           n.i / 2 as j,
           case when n.i % 2 = 0 then (n.n + 1) / 2 else n.n / 2 end as size
      from newcomers n
  ),
  -- pos: place in the squad (0 for its first member); members: the squad's size.
  squads as (
    select t.user_id, t.team_color, t.back_1, t.back_2, t.next_1, t.next_2,
           case when t.grp is null or t.size = 1 then null
                when t.size % 3 = 1 and t.j >= t.size - 4 then (t.j - (t.size - 4)) % 2
                else t.j % 3 end as pos,
           case when (t.size % 3 = 1 and t.j >= t.size - 4) or (t.size % 3 = 2 and t.j >= t.size - 2) then 2 else 3 end as members
      from teams t
  )
  select p.user_id, bp.neighbour, ap.neighbour,
         coalesce(e.team_color, s.team_color),
         encode(overlay(decode(md5(target::text || ':' || (case when s.pos = 0 then s.user_id when s.pos = 1 then s.back_1
                                                                  when s.pos = 2 then s.back_2 end)::text), 'hex')
                        placing int4send(target - date '2000-01-01') from 1 for 4), 'hex')::uuid,
         case when s.pos = 0 then (array[s.user_id, s.next_1, s.next_2])[1:s.members] end,
         e.user_id is null,
         coalesce(e.has_checkin, false)
    from participants p
    left join existing e on e.user_id = p.user_id
    left join squads s on s.user_id = p.user_id
    left join before_pick bp on bp.user_id = p.user_id
    left join after_pick ap on ap.user_id = p.user_id
$$;
comment on function private.workout_chain_plan(date, private.workout_participant[]) is
  'The chain plan for a date and some participants, whole groups (read only): neighbours for everyone, team and squad for users without a row yet.';

-- ---------------------------------------------------------------------------------------------
-- Applying the plan
-- ---------------------------------------------------------------------------------------------

-- Groups (cities) fall into 64 fixed buckets by the hash of their name; a part of a run is the
-- buckets b with b % parts = part. Parts are independent (neighbours, teams and squads never
-- cross a group), so they run side by side as separate calls, each its own transaction (the
-- daily job: one pg_cron job per part). Each bucket is locked for the date (in bucket order, so
-- parts never deadlock): a run of all parts and parts of another split wait for the buckets
-- they share, and a group is never planned twice at once.
create or replace function private.workout_chain_bucket(grp text) returns integer
language sql immutable parallel safe
set search_path = ''
as $$ select (abs(hashtext(coalesce(grp, ''))::bigint) % 64)::integer $$;
comment on function private.workout_chain_bucket(text) is
  'The bucket (0..63) of a chain group: parts of a chain run are sets of buckets.';

create or replace function private.generate_workout_chains(target date, part integer default 0, parts integer default 1)
returns jsonb
language plpgsql security definer
set search_path = ''
set work_mem = '64MB'
set jit = off
set enable_mergejoin = off
set enable_nestloop = off
as $$
declare
  result jsonb;
  shards integer;
  bucket integer;
  people private.workout_participant[];
  plan_part record;
  counts record;
  total_participants bigint := 0;
  total_created bigint := 0;
  total_relinked bigint := 0;
  total_squads bigint := 0;
begin
  if target is null then
    raise exception 'date: required' using errcode = '22023';
  end if;
  if (select auth.uid()) is null and not private.is_trusted_caller() then
    raise exception 'sign in to generate chains' using errcode = '42501';
  end if;
  if parts is null or parts not between 1 and 64 or part is null or part not between 0 and parts - 1 then
    raise exception 'part: must be between 0 and parts - 1, parts between 1 and 64' using errcode = '22023';
  end if;
  raise log 'workout chains % (part % of %): start', target, part, parts;
  perform pg_advisory_xact_lock_shared(hashtextextended('workout_chains:membership', 0));
  for bucket in select b from generate_series(part, 63, parts) b order by b loop
    perform pg_advisory_xact_lock(hashtextextended('workout_chains:' || target || ':' || bucket, 0));
  end loop;
  -- The participants are read once, grouped into shards of groups, and the plan runs one shard
  -- at a time, at most about 100,000 windows each (a plan of 100,000 sorts about 35 MB: within
  -- work_mem). Groups are independent (neighbours, teams and squads never cross one), so a
  -- shard's plan is the whole day's plan for its groups, and its sorts and hashes stay within
  -- work_mem however large the day: planned at once, 300,000 windows spilled to disk and took
  -- 4.3x the time of 100,000 (docs/performance.md).
  -- A part's shards are sets of its buckets.
  select least(64 / parts + 1, greatest(1, ceil(count(*) / parts / 100000.0)))::integer into shards
    from public.workout_windows w where w.is_active;
  for plan_part in
    select x.shard, array_agg(row(x.user_id, x.grp, x.start_utc, x.x, x.y, x.z)::private.workout_participant) as people
      from (select p.*, (private.workout_chain_bucket(p.grp) / parts) % shards as shard
              from private.workout_participants(target) p
             where private.workout_chain_bucket(p.grp) % parts = part) x
     group by x.shard
     order by x.shard
  loop
    people := plan_part.people;
    -- Nothing here can conflict (runs over a bucket are serialized by the locks above, and the plan
    -- only adds users without a row), so these are plain inserts, in user order (the unique
    -- index's order). Squads come from their first member's plan row, with their id. Hash joins
    -- only (enable_mergejoin and enable_nestloop off): the plan's joins are all of whole sets; a
    -- merge join there sorted 100,000 rows for each (measured: 1.95 s against 1.59 s for the
    -- plan), and the planner, which guesses 10 rows for an unnest of the shard's array, chose
    -- nested loops (300,000 windows: 86 s).
    with plan as materialized (
      select * from private.workout_chain_plan(target, people)
    ),
    new_squads as (
      insert into public.workout_squads (id, date, user_1_id, user_2_id, user_3_id, team_color)
      select p.squad_id, target, p.squad_members[1], p.squad_members[2], p.squad_members[3], p.team_color
        from plan p where p.is_new and p.squad_members is not null
       order by p.squad_members[1]
      returning 1
    ),
    added as (
      insert into public.workout_chains (id, date, user_id, before_user_id, after_user_id, team_color, squad_id)
      select encode(overlay(uuid_send(gen_random_uuid()) placing int4send(target - date '2000-01-01') from 1 for 4), 'hex')::uuid,
             target, p.user_id, p.before_user_id, p.after_user_id, p.team_color, p.squad_id
        from plan p
       where p.is_new
       order by p.user_id
      returning 1
    ),
    relinked as (
      update public.workout_chains c
         set before_user_id = p.before_user_id, after_user_id = p.after_user_id
        from plan p
       where c.date = target and c.user_id = p.user_id and not p.is_new and not p.frozen
         and (c.before_user_id, c.after_user_id) is distinct from (p.before_user_id, p.after_user_id)
      returning 1
    )
    select (select count(*) from plan) as participants, (select count(*) from added) as created,
           (select count(*) from relinked) as relinked, (select count(*) from new_squads) as squads
      into counts;
    total_participants := total_participants + counts.participants;
    total_created := total_created + counts.created;
    total_relinked := total_relinked + counts.relinked;
    total_squads := total_squads + counts.squads;
  end loop;
  result := jsonb_build_object('date', target, 'participants', total_participants, 'created', total_created,
                               'relinked', total_relinked, 'squadsCreated', total_squads);
  raise log 'workout chains % (part % of %): done % (% shards)', target, part, parts, result, shards;
  return result;
end
$$;
comment on function private.generate_workout_chains(date, integer, integer) is
  'Daily chains, squads and teams for a date (or one part of its groups: buckets b % parts = part); repeatable (adds newcomers, never duplicates, keeps checked-in links); parts run side by side.';

-- Generates a date's chains under the date rules above; today in the caller's zone by default.
create or replace function public.generate_workout_chains(target date default null)
returns jsonb
language sql
set search_path = ''
as $$ select private.checked_workout_chains(target) $$;
comment on function public.generate_workout_chains(date) is
  'Generates (or completes) the chains of a date, by default today in the caller''s window''s zone (UTC without one). '
  'Users: today and tomorrow only; super admins, the service role and pg_cron: any date within a year of today.';
grant execute on function generate_workout_chains(date) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Reading chains, squads and the day's state
-- ---------------------------------------------------------------------------------------------

-- What others may see of a participant: id, name, avatar, AI flag and window (never a location).
create or replace function private.workout_user_card(target_user uuid)
returns jsonb
language sql stable security definer
set search_path = ''
as $$
  select jsonb_build_object(
           'id', p.id, 'name', p.full_name, 'avatarUrl', p.avatar_url, 'isAi', p.is_ai,
           'window', case when w.user_id is null then null else jsonb_build_object(
             'activityType', w.activity_type, 'customActivity', w.custom_activity,
             'windowStartTime', to_char(w.window_start_time, 'HH24:MI'),
             'windowEndTime', to_char(w.window_end_time, 'HH24:MI'), 'timezone', w.timezone) end)
    from public.profiles p
    left join public.workout_windows w on w.user_id = p.id
   where p.id = target_user
$$;

-- ---------------------------------------------------------------------------------------------
-- Reading check-ins: locations and review reasons for their owner and super admins only
-- ---------------------------------------------------------------------------------------------

create or replace function private.workout_checkin_json(k public.workout_checkins, full_view boolean)
returns jsonb
language sql stable
set search_path = ''
as $$
  select jsonb_build_object(
    'id', k.id, 'userId', k.user_id, 'chainId', k.chain_id, 'date', k.date, 'activityType', k.activity_type,
    'photoUrl', k.photo_url, 'photoTimestamp', k.photo_timestamp,
    'locationLat', case when full_view then k.location_lat end,
    'locationLng', case when full_view then k.location_lng end,
    'status', k.status, 'reviewReason', case when full_view then k.review_reason end,
    'chainContinued', k.chain_continued, 'streakDays', k.streak_days,
    'battleChipsEarned', k.battle_chips_earned, 'createdAt', k.created_at)
$$;
-- A check-in as the caller may see it (location and review reason for its owner and super admins).
create or replace function private.workout_checkin_json(k public.workout_checkins)
returns jsonb
language sql stable
set search_path = ''
as $$ select private.workout_checkin_json(k, k.user_id = (select auth.uid()) or private.is_trusted_caller()) $$;
comment on function private.workout_checkin_json(public.workout_checkins, boolean) is
  'A check-in as the api shows it; without full_view (another user) its location and review reason are null.';
comment on function private.workout_checkin_json(public.workout_checkins) is
  'A check-in as the caller may see it: its location and review reason for its owner and trusted callers only.';

-- Day status of a user on a date (SPEC): completed (a check-in that is not rejected),
-- not_started (before the window), pending (during it), failed (after it, no check-in).
create or replace function private.workout_day_status(target_user uuid, target date, at timestamptz default now())
returns text
language sql stable
set search_path = ''
as $$
  select case
    when exists (select 1 from public.workout_checkins k
                  where k.user_id = target_user and k.date = target and k.status <> 'rejected') then 'completed'
    when w.user_id is null then 'not_started'
    when at < private.workout_window_start(target, w.window_start_time, w.timezone) then 'not_started'
    when at < private.workout_window_start(target, w.window_start_time, w.timezone) + interval '2 hours' then 'pending'
    else 'failed' end
    from (select 1) one
    left join public.workout_windows w on w.user_id = target_user
$$;

-- A squad with its members as others may see them (never a location).
create or replace function private.workout_squad_json(target_squad uuid)
returns jsonb
language sql stable security definer
set search_path = ''
as $$
  select jsonb_build_object('id', s.id, 'date', s.date, 'teamColor', s.team_color,
           'user1', private.workout_user_card(s.user_1_id),
           'user2', private.workout_user_card(s.user_2_id),
           'user3', private.workout_user_card(s.user_3_id))
    from public.workout_squads s where s.id = target_squad
$$;

-- The check-ins of some users on a date (chains and squads): others' check-ins without location
-- or review reason.
create or replace function private.workout_checkins_of(users uuid[], target date)
returns jsonb
language sql stable security definer
set search_path = ''
as $$
  with viewer as (select (select auth.uid()) as me, private.is_trusted_caller() as trusted)
  select coalesce(jsonb_agg(private.workout_checkin_json(k, k.user_id = v.me or v.trusted) order by k.created_at, k.id), '[]'::jsonb)
    from public.workout_checkins k cross join viewer v
   where k.user_id = any (users) and k.date = target
$$;

-- The caller's chain on a date: neighbours, team, squad and their check-ins.
create or replace function private.workout_chain(target date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  c public.workout_chains;
begin
  if me is null then
    raise exception 'sign in to read chains' using errcode = '42501';
  end if;
  select * into c from public.workout_chains where user_id = me and date = target;
  if not found then
    raise exception 'no chain for % yet (set up a window, then generate chains)', target using errcode = 'PT404';
  end if;
  return jsonb_build_object(
    'chain', jsonb_build_object(
      'id', c.id, 'date', c.date,
      'beforeUser', private.workout_user_card(c.before_user_id),
      'currentUser', private.workout_user_card(c.user_id),
      'afterUser', private.workout_user_card(c.after_user_id),
      'teamColor', c.team_color,
      'squad', private.workout_squad_json(c.squad_id)),
    'checkins', private.workout_checkins_of(array_remove(array[c.before_user_id, c.user_id, c.after_user_id], null), target));
end
$$;
grant execute on function private.workout_chain(date) to authenticated;

create or replace function public.workout_chain(target date) returns jsonb
language sql stable set search_path = '' as $$ select private.workout_chain(target) $$;
comment on function public.workout_chain(date) is 'The caller''s chain on a date: neighbours, team, squad and their check-ins.';
grant execute on function workout_chain(date) to authenticated, service_role;

-- The caller's squad on a date and its check-ins.
create or replace function private.workout_squad(target date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  s public.workout_squads;
begin
  if me is null then
    raise exception 'sign in to read squads' using errcode = '42501';
  end if;
  select q.* into s from public.workout_chains c join public.workout_squads q on q.id = c.squad_id
   where c.user_id = me and c.date = target;
  if not found then
    raise exception 'no squad for you on %', target using errcode = 'PT404';
  end if;
  return jsonb_build_object(
    'squad', private.workout_squad_json(s.id),
    'checkins', private.workout_checkins_of(array_remove(array[s.user_1_id, s.user_2_id, s.user_3_id], null), target));
end
$$;
grant execute on function private.workout_squad(date) to authenticated;

create or replace function public.workout_squad(target date) returns jsonb
language sql stable set search_path = '' as $$ select private.workout_squad(target) $$;
comment on function public.workout_squad(date) is 'The caller''s squad on a date and its check-ins.';
grant execute on function workout_squad(date) to authenticated, service_role;

-- Each participant of a date with team and day status (the team stats, the mosaic, admin teams).
create or replace function private.workout_day_board(target date, at timestamptz default now())
returns table (user_id uuid, team_color text, squad_id uuid, status text, chips integer, start_utc timestamptz)
language sql stable
set search_path = ''
as $$
  select c.user_id, c.team_color, c.squad_id,
         case when k.status is not null and k.status <> 'rejected' then 'completed'
              when w.user_id is null then 'pending'
              when at >= ((target + w.window_start_time) at time zone w.timezone) + interval '2 hours' then 'failed'
              else 'pending' end,
         case when k.status is not null and k.status <> 'rejected' then k.battle_chips_earned else 0 end,
         (target + w.window_start_time) at time zone w.timezone
    from public.workout_chains c
    left join public.workout_windows w on w.user_id = c.user_id
    left join public.workout_checkins k on k.user_id = c.user_id and k.date = target
   where c.date = target
$$;

-- Per team on a date: members, completed, failed, pending, completion rate and chips.
create or replace function private.workout_team_stats(target date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if (select auth.uid()) is null and not private.is_trusted_caller() then
    raise exception 'sign in to read team stats' using errcode = '42501';
  end if;
  return (
    select jsonb_object_agg(t.team || 'Team', jsonb_build_object(
             'totalMembers', coalesce(s.total, 0), 'completed', coalesce(s.completed, 0),
             'failed', coalesce(s.failed, 0), 'pending', coalesce(s.pending, 0),
             'completionRate', case when coalesce(s.total, 0) = 0 then 0
                                    else round(100.0 * s.completed / s.total, 1) end,
             'totalChips', coalesce(s.chips, 0)))
      from (values ('red'), ('blue')) t(team)
      left join (select b.team_color, count(*) as total,
                        count(*) filter (where b.status = 'completed') as completed,
                        count(*) filter (where b.status = 'failed') as failed,
                        count(*) filter (where b.status = 'pending') as pending,
                        sum(b.chips) as chips
                   from private.workout_day_board(target) b group by b.team_color) s on s.team_color = t.team);
end
$$;
grant execute on function private.workout_team_stats(date) to authenticated, service_role;

create or replace function public.workout_team_stats(target date) returns jsonb
language sql stable set search_path = '' as $$ select private.workout_team_stats(target) $$;
comment on function public.workout_team_stats(date) is
  'Per team on a date: totalMembers, completed, failed (window over, no check-in), pending, completionRate (percent), totalChips.';
grant execute on function workout_team_stats(date) to authenticated, service_role;

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

-- ---------------------------------------------------------------------------------------------
-- Writing a check-in
-- ---------------------------------------------------------------------------------------------

-- The check-in trusts no client fact. The api reads the photo (capture time, GPS), strips and
-- stores it with the service role, and records what it read in private.workout_photos, keyed
-- by the storage object; public.workout_checkin takes only that object (and the optional
-- position of the SPEC's form), which must be one the api registered for the caller, still in
-- the bucket and not used by another check-in. EXIF stays a claim the client controls, so a
-- check-in verifies automatically only when the capture time is in the window (± 30 min), the
-- position within 50 km, the server received the photo inside the window (± 30 min), the
-- capture is no later than the receipt (5 min of clock skew) and at most 120 minutes before
-- it, and its picture is new: its 64-bit difference hash (computed by the api from the
-- decoded, upright picture) is more than 7 bits from that of every photo that served a
-- check-in before, anyone's (a match waits for review, never refused; so does a picture too
-- plain to hash). Otherwise it waits for review with the first reason that failed.
--
-- A time-zone change applies from the next local day: a check-in needs a later date than the
-- user's latest check-in, and comes after that check-in's day has ended in the zone it was
-- counted in (stored on the check-in). A user's check-ins run one at a time (an advisory
-- lock), so the rule holds under concurrency.

-- The photo rules a check-in is held to (the numbers above).
create or replace function private.workout_photo_rules() returns jsonb
language sql immutable
set search_path = ''
as $$ select '{"graceMinutes": 30, "maxDistanceKm": 50, "maxPhotoAgeMinutes": 120, "clockSkewMinutes": 5, "samePictureBits": 7}'::jsonb $$;
comment on function private.workout_photo_rules() is
  'Photo validation: grace around the window (capture and receipt), distance from the user''s location, how long '
  'before its receipt a photo may be taken, how far a camera clock may run ahead, and within how many bits of 64 '
  'two pictures'' difference hashes count as the same picture.';

create function private.record_workout_checkin(
  checkin_user uuid,
  activity_type text,
  photo_url text,
  photo_object text,
  photo_taken_local timestamp,
  photo_offset_minutes integer,
  photo_lat numeric,
  photo_lng numeric,
  given_lat numeric,
  given_lng numeric,
  at timestamptz default now(),
  auto_status text default null,
  photo_received_at timestamptz default null,
  photo_dhashes bigint[] default null,
  photo_too_plain boolean default false
) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  w public.workout_windows;
  loc public.workout_locations;
  c public.workout_chains;
  latest public.workout_checkins;
  d date;
  starts timestamptz;
  taken timestamptz;
  received timestamptz := coalesce(photo_received_at, at);
  continued boolean;
  early boolean;
  streak integer;
  chips integer;
  reason text;
  distance double precision;
  rules jsonb := private.workout_photo_rules();
  grace interval := make_interval(mins => (private.workout_photo_rules() ->> 'graceMinutes')::integer);
  row public.workout_checkins;
  notified boolean := false;
  band_lock bigint;
begin
  -- One check-in of a user at a time: the rules below read the user's latest check-in.
  perform pg_advisory_xact_lock(hashtextextended('workout_checkin:' || checkin_user::text, 0));
  select * into w from public.workout_windows where user_id = checkin_user;
  if not found then
    raise exception 'set up a workout window before checking in' using errcode = '22023';
  end if;
  if activity_type is null or btrim(activity_type) = '' or char_length(activity_type) > 50 then
    raise exception 'activityType: must be 1 to 50 characters' using errcode = '22023';
  end if;
  d := private.workout_checkin_date(w, at);

  -- A time-zone change applies from the next local day: a later date than the latest check-in,
  -- once that check-in's day is over in the zone it was counted in.
  select * into latest from public.workout_checkins k where k.user_id = checkin_user order by k.date desc limit 1;
  if found then
    if latest.date = d then
      raise exception 'already checked in for %', d using errcode = '23505';
    elsif latest.date > d then
      raise exception 'already checked in for % (% in %): a time-zone change applies to check-ins from the next local day',
        latest.date, d, w.timezone using errcode = '23505';
    elsif at < (latest.date + 1)::timestamp at time zone latest.timezone then
      raise exception 'already checked in for % in %, whose day lasts until % UTC: a time-zone change applies to check-ins from the next local day',
        latest.date, latest.timezone, to_char(((latest.date + 1)::timestamp at time zone latest.timezone) at time zone 'UTC', 'YYYY-MM-DD HH24:MI')
        using errcode = '23505';
    end if;
  end if;

  select * into loc from public.workout_locations where user_id = checkin_user;
  starts := private.workout_window_start(d, w.window_start_time, w.timezone);
  select * into c from public.workout_chains where user_id = checkin_user and date = d;

  -- Rule 3: +1 when the before user checked in earlier that day (chain continued).
  continued := c.before_user_id is not null and exists (
    select 1 from public.workout_checkins k
     where k.user_id = c.before_user_id and k.date = d and k.status <> 'rejected' and k.created_at < at);
  -- Rule 4: +0.5 in the first 30 minutes of the window; +2 from the seventh consecutive day.
  early := at >= starts and at < starts + interval '30 minutes';
  select coalesce(max(k.streak_days), 0) + 1 into streak
    from public.workout_checkins k
   where k.user_id = checkin_user and k.date = d - 1 and k.status <> 'rejected';
  chips := floor(1 + case when continued then 1 else 0 end + case when early then 0.5 else 0 end
                   + case when streak >= 7 then 2 else 0 end);

  -- Rule 6, and EXIF as a claim: the capture time (with its offset, else in the window's zone)
  -- inside the window with grace; the server's receipt inside it too; the capture no later
  -- than the receipt and not long before it; the photo near the user's location; its picture
  -- new (and not too plain to tell). Else it waits for review with the first reason.
  taken := case when photo_taken_local is null then null
                when photo_offset_minutes is not null
                  then (photo_taken_local - make_interval(mins => photo_offset_minutes)) at time zone 'UTC'
                else photo_taken_local at time zone w.timezone end;
  distance := private.haversine_km(coalesce(photo_lat, given_lat), coalesce(photo_lng, given_lng),
                                   coalesce(loc.latitude, case when photo_lat is not null then given_lat end),
                                   coalesce(loc.longitude, case when photo_lat is not null then given_lng end));
  reason := case
    when taken is null then 'no capture time (EXIF) in the photo'
    when taken < starts - grace or taken > starts + interval '2 hours' + grace then
      format('photo taken at %s, outside the window (%s to %s UTC, %s min grace)',
             to_char(taken at time zone 'UTC', 'YYYY-MM-DD HH24:MI'), to_char(starts at time zone 'UTC', 'HH24:MI'),
             to_char((starts + interval '2 hours') at time zone 'UTC', 'HH24:MI'), rules ->> 'graceMinutes')
    when received < starts - grace or received > starts + interval '2 hours' + grace then
      format('photo uploaded at %s, outside the window (%s to %s UTC, %s min grace)',
             to_char(received at time zone 'UTC', 'YYYY-MM-DD HH24:MI'), to_char(starts at time zone 'UTC', 'HH24:MI'),
             to_char((starts + interval '2 hours') at time zone 'UTC', 'HH24:MI'), rules ->> 'graceMinutes')
    when taken > received + make_interval(mins => (rules ->> 'clockSkewMinutes')::integer) then
      format('capture time %s UTC is after it was uploaded (%s UTC)',
             to_char(taken at time zone 'UTC', 'HH24:MI'), to_char(received at time zone 'UTC', 'HH24:MI'))
    when taken < received - make_interval(mins => (rules ->> 'maxPhotoAgeMinutes')::integer) then
      format('photo taken %s min before it was uploaded (at most %s)',
             floor(extract(epoch from received - taken) / 60), rules ->> 'maxPhotoAgeMinutes')
    when distance > (rules ->> 'maxDistanceKm')::numeric then
      format('photo taken %s km from your location', round(distance::numeric))
  end;
  if reason is null and cardinality(photo_dhashes) > 0 then
    -- Check-ins with the same picture at once take turns (so the second sees the first): one
    -- lock per band value (pictures within 3 bits share a band), taken in a fixed order.
    for band_lock in
      select distinct hashtextextended('workout_picture:' || b || ':' || ((h >> (16 * b)) & 65535), 0) as k
        from unnest(photo_dhashes) h cross join generate_series(0, 3) b order by k
    loop
      perform pg_advisory_xact_lock(band_lock);
    end loop;
    if exists (select 1 from unnest(photo_dhashes) h where private.workout_picture_used(h)) then
      reason := 'the same picture (or a copy of it) was already used for a check-in';
    end if;
  elsif reason is null and photo_too_plain then
    reason := 'the photo is almost one colour, too plain to tell it from others';
  end if;

  begin
    insert into public.workout_checkins as k (user_id, chain_id, date, activity_type, photo_url, photo_object,
      photo_timestamp, location_lat, location_lng, status, review_reason, chain_continued, streak_days,
      battle_chips_earned, created_at, timezone)
    values (checkin_user, c.id, d, btrim(activity_type), photo_url, photo_object, coalesce(taken, at),
      coalesce(photo_lat, given_lat), coalesce(photo_lng, given_lng),
      coalesce(auto_status, case when reason is null then 'verified' else 'pending' end),
      case when auto_status is null then reason end, continued, streak, chips, at, w.timezone)
    returning k.* into row;
  exception when unique_violation then
    raise exception 'already checked in for %', d using errcode = '23505';
  end;

  if c.after_user_id is not null then
    perform private.notify(c.after_user_id, 'workout.baton_pass', jsonb_build_object(
      'date', d, 'fromUserId', checkin_user, 'checkinId', row.id));
    notified := true;
  end if;
  return jsonb_build_object('checkin', private.workout_checkin_json(row, true), 'battleChipsEarned', chips,
    'chainStatus', case when continued then 'continued' else 'broken' end, 'nextUserNotified', notified);
end
$$;
comment on function private.record_workout_checkin(uuid, text, text, text, timestamp, integer, numeric, numeric, numeric, numeric, timestamptz, text, timestamptz, bigint[], boolean) is
  'Writes one check-in with its chips and validation and tells the after user; not granted to clients.';

-- The caller's check-in for the current window date, with a photo the api stored for them (used
-- once).
create function private.workout_checkin(activity_type text, photo_object text, latitude numeric, longitude numeric)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  photo private.workout_photos;
  result jsonb;
begin
  if me is null then
    raise exception 'sign in to check in' using errcode = '42501';
  end if;
  select * into photo from private.workout_photos p where p.object_name = $2 for update;
  if not found or photo.user_id <> me
     or not exists (select 1 from storage.objects o where o.bucket_id = 'workout-checkins' and o.name = photo.object_name) then
    raise exception 'photo: not a check-in photo the api stored for you (send it to POST /api/workout-window/checkin)'
      using errcode = '22023';
  end if;
  if photo.checkin_id is not null then
    raise exception 'photo: already used for a check-in' using errcode = 'PT409';
  end if;
  result := private.record_workout_checkin(me, $1, photo.photo_url, photo.object_name, photo.taken_local,
    photo.offset_minutes, photo.latitude, photo.longitude, $3, $4, now(), null, photo.received_at,
    array_remove(array[photo.dhash, photo.dhash_as_sent], null), photo.dhash is null);
  update private.workout_photos p set checkin_id = (result -> 'checkin' ->> 'id')::uuid where p.object_name = photo.object_name;
  return result;
end
$$;
grant execute on function private.workout_checkin(text,text,numeric,numeric) to authenticated;

create function public.workout_checkin(activity_type text, photo_object text, latitude numeric default null, longitude numeric default null)
returns jsonb
language sql
set search_path = ''
as $$ select private.workout_checkin(activity_type, photo_object, latitude, longitude) $$;
comment on function public.workout_checkin(text, text, numeric, numeric) is
  'The caller''s check-in for the current window date, with a photo POST /api/workout-window/checkin stored and read '
  'for them (once); latitude and longitude are the optional position of the SPEC''s form.';
grant execute on function workout_checkin(text,text,numeric,numeric) to authenticated, service_role;

-- The caller's check-in on a date and the day's status.
create or replace function private.my_workout_checkin(target date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  k public.workout_checkins;
begin
  if me is null then
    raise exception 'sign in' using errcode = '42501';
  end if;
  select * into k from public.workout_checkins where user_id = me and date = target;
  return jsonb_build_object('checkin', case when found then private.workout_checkin_json(k) end,
                            'status', private.workout_day_status(me, target));
end
$$;
grant execute on function private.my_workout_checkin(date) to authenticated;

create or replace function public.my_workout_checkin(target date) returns jsonb
language sql stable set search_path = '' as $$ select private.my_workout_checkin(target) $$;
comment on function public.my_workout_checkin(date) is
  'The caller''s check-in on a date and the day status: pending, completed, failed or not_started.';
grant execute on function my_workout_checkin(date) to authenticated, service_role;

-- A date's check-ins, newest first: a location and review reason only on the caller's own
-- check-in (on all of them for super admins).
create or replace function private.workout_day_checkins(target date, page_size integer default 100, before_created_at timestamptz default null)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  trusted boolean := private.is_trusted_caller();
begin
  if me is null then
    raise exception 'sign in' using errcode = '42501';
  end if;
  return jsonb_build_object(
    'checkins', (select coalesce(jsonb_agg(private.workout_checkin_json(k, k.user_id = me or trusted)
                                             || jsonb_build_object('user', private.workout_user_card(k.user_id))
                                           order by k.created_at desc, k.id desc), '[]'::jsonb)
                   from (select * from public.workout_checkins k
                          where k.date = target and (before_created_at is null or k.created_at < before_created_at)
                          order by k.created_at desc, k.id desc
                          limit least(greatest(page_size, 1), 200)) k),
    'stats', (select jsonb_build_object('total', count(*),
                                        'completed', count(*) filter (where b.status = 'completed'),
                                        'failed', count(*) filter (where b.status = 'failed'))
                from private.workout_day_board(target) b));
end
$$;
grant execute on function private.workout_day_checkins(date,integer,timestamp with time zone) to authenticated;

create or replace function public.workout_day_checkins(target date, page_size integer default 100, before_created_at timestamptz default null)
returns jsonb
language sql stable set search_path = '' as $$ select private.workout_day_checkins(target, page_size, before_created_at) $$;
comment on function public.workout_day_checkins(date, integer, timestamptz) is
  'A page of the date''s check-ins, newest first, and {total, completed, failed} over the date''s participants.';
grant execute on function workout_day_checkins(date,integer,timestamp with time zone) to authenticated, service_role;

-- The check-ins waiting for review (or of another status): trusted callers only, so everything, computed once.
create or replace function private.workout_review_queue(review_status text, page_size integer, before_created_at timestamptz)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  if review_status not in ('pending', 'verified', 'rejected') then
    raise exception 'status: must be one of pending, verified, rejected' using errcode = '22023';
  end if;
  return (select coalesce(jsonb_agg(private.workout_checkin_json(k, true)
                                      || jsonb_build_object('user', private.workout_user_card(k.user_id))
                                    order by k.created_at desc, k.id desc), '[]'::jsonb)
            from (select * from public.workout_checkins k
                   where k.status = review_status and (before_created_at is null or k.created_at < before_created_at)
                   order by k.created_at desc, k.id desc limit least(greatest(page_size, 1), 200)) k);
end
$$;
grant execute on function private.workout_review_queue(text,integer,timestamp with time zone) to authenticated, service_role;

create or replace function public.workout_review_queue(review_status text default 'pending', page_size integer default 50, before_created_at timestamptz default null)
returns jsonb
language sql stable set search_path = '' as $$ select private.workout_review_queue(review_status, page_size, before_created_at) $$;
comment on function public.workout_review_queue(text, integer, timestamptz) is 'Super admins: check-ins by status, newest first.';
grant execute on function workout_review_queue(text,integer,timestamp with time zone) to authenticated, service_role;

-- After a review, the user's check-ins on the following consecutive days get their streak
-- (and the seventh-day bonus of their chips) recomputed from the reviewed one: a rejected day
-- breaks the streak. Stops at the first gap or the first streak that is already right.
create or replace function private.recompute_later_streaks(reviewed public.workout_checkins)
returns void
language plpgsql
set search_path = ''
as $$
declare
  k public.workout_checkins;
  prev_date date := reviewed.date;
  prev_streak integer := case when reviewed.status = 'rejected' then 0 else reviewed.streak_days end;
begin
  for k in select * from public.workout_checkins c
            where c.user_id = reviewed.user_id and c.date > reviewed.date and c.status <> 'rejected'
            order by c.date for update loop
    exit when k.date <> prev_date + 1 or k.streak_days = prev_streak + 1;
    update public.workout_checkins
       set streak_days = prev_streak + 1,
           battle_chips_earned = greatest(0, battle_chips_earned - case when k.streak_days >= 7 then 2 else 0 end
                                             + case when prev_streak + 1 >= 7 then 2 else 0 end)
     where id = k.id;
    prev_date := k.date;
    prev_streak := prev_streak + 1;
  end loop;
end
$$;

-- Super admins: verify or reject (with a reason) a check-in.
create or replace function private.review_workout_checkin(checkin_id uuid, verdict text, reason text)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  row public.workout_checkins;
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  if verdict not in ('verified', 'rejected') then
    raise exception 'verdict: must be verified or rejected' using errcode = '22023';
  end if;
  if verdict = 'rejected' and (reason is null or btrim(reason) = '') then
    raise exception 'reason: required to reject' using errcode = '22023';
  end if;
  update public.workout_checkins
     set status = verdict, review_reason = nullif(btrim(coalesce(reason, '')), ''),
         reviewed_by = (select auth.uid()), reviewed_at = now()
   where id = checkin_id
  returning * into row;
  if not found then
    raise exception 'no check-in %', checkin_id using errcode = 'PT404';
  end if;
  perform private.recompute_later_streaks(row);
  if verdict = 'rejected' then
    perform private.notify(row.user_id, 'workout.checkin_rejected',
      jsonb_build_object('checkinId', row.id, 'date', row.date, 'reason', row.review_reason));
  end if;
  return private.workout_checkin_json(row);
end
$$;
grant execute on function private.review_workout_checkin(uuid,text,text) to authenticated, service_role;

create or replace function public.review_workout_checkin(checkin_id uuid, verdict text, reason text default null)
returns jsonb
language sql set search_path = '' as $$ select private.review_workout_checkin(checkin_id, verdict, reason) $$;
comment on function public.review_workout_checkin(uuid, text, text) is 'Super admins: verify or reject (with a reason) a check-in.';
grant execute on function review_workout_checkin(uuid,text,text) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Weekly battles (planned rows; rule 4)
-- ---------------------------------------------------------------------------------------------

create table public.workout_battles (
  id uuid primary key default gen_random_uuid(),
  week_start_date date not null unique check (extract(isodow from week_start_date) = 1),
  week_end_date date not null,
  red_team_chips integer not null default 0,
  blue_team_chips integer not null default 0,
  red_team_robot_power integer not null default 0,
  blue_team_robot_power integer not null default 0,
  battle_status text not null default 'pending' check (battle_status in ('pending', 'in_progress', 'completed')),
  winner text check (winner in ('red', 'blue', 'tie')),
  battle_result jsonb,
  created_at timestamptz not null default now(),
  executed_at timestamptz,
  constraint workout_battles_week check (week_end_date = week_start_date + 6)
);
alter table public.workout_battles enable row level security;
comment on table public.workout_battles is
  'One red-versus-blue battle per Monday-Sunday week. Every signed-in user reads them; written by SQL functions only.';
revoke all on public.workout_battles from anon, authenticated;
grant select on public.workout_battles to authenticated;

create policy "workout_battles: signed-in users read" on public.workout_battles
  for select to authenticated using (true);

-- floor(chips*10 + members*5 + (chips/members)*20); 0 for the last term without members.
create or replace function private.robot_power(chips integer, members integer) returns integer
language sql immutable parallel safe
set search_path = ''
as $$
  select floor(chips * 10 + members * 5
               + case when members > 0 then (chips::numeric / members) * 20 else 0 end)::integer
$$;
comment on function private.robot_power(integer, integer) is 'Planned robot power: floor(chips*10 + members*5 + (chips/members)*20).';

-- 22023 unless the date is a Monday (battle weeks start on Mondays).
create or replace function private.assert_monday(week_start date) returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if week_start is null or extract(isodow from week_start) <> 1 then
    raise exception 'weekStartDate: must be a Monday (YYYY-MM-DD)' using errcode = '22023';
  end if;
end
$$;

-- The week's teams: chips of non-rejected check-ins by the team of that day's chain row.
create or replace function private.workout_week_totals(week_start date)
returns jsonb
language sql stable
set search_path = ''
as $$
  with days as (
    select c.date, c.team_color, c.user_id,
           case when k.status is not null and k.status <> 'rejected' then k.battle_chips_earned else 0 end as chips
      from public.workout_chains c
      left join public.workout_checkins k on k.user_id = c.user_id and k.date = c.date
     where c.date between week_start and week_start + 6
  ),
  members as (
    select d.team_color, d.user_id, sum(d.chips)::integer as chips from days d group by 1, 2
  ),
  teams as (
    select t.team,
           coalesce((select sum(m.chips) from members m where m.team_color = t.team), 0)::integer as chips,
           (select count(*) from members m where m.team_color = t.team)::integer as size,
           coalesce((select jsonb_agg(jsonb_build_object('userId', m.user_id, 'chips', m.chips,
                                        'name', p.full_name, 'avatarUrl', p.avatar_url, 'isAi', p.is_ai)
                                      order by m.chips desc, m.user_id)
                       from members m join public.profiles p on p.id = m.user_id where m.team_color = t.team), '[]'::jsonb) as list
      from (values ('red'), ('blue')) t(team)
  )
  select jsonb_build_object(
    'redTeam', (select jsonb_build_object('totalChips', chips, 'robotPower', private.robot_power(chips, size),
                                          'memberCount', size, 'members', list) from teams where team = 'red'),
    'blueTeam', (select jsonb_build_object('totalChips', chips, 'robotPower', private.robot_power(chips, size),
                                           'memberCount', size, 'members', list) from teams where team = 'blue'),
    'dailyStats', (select jsonb_agg(jsonb_build_object(
                      'date', g.day::date,
                      'redTeamChips', coalesce((select sum(d.chips) from days d where d.date = g.day and d.team_color = 'red'), 0),
                      'blueTeamChips', coalesce((select sum(d.chips) from days d where d.date = g.day and d.team_color = 'blue'), 0))
                    order by g.day)
                     from generate_series(week_start, week_start + 6, interval '1 day') g(day)))
$$;

-- A battle as the api shows it.
create or replace function private.battle_json(b public.workout_battles) returns jsonb
language sql stable
set search_path = ''
as $$
  select jsonb_build_object('id', b.id, 'weekStartDate', b.week_start_date, 'weekEndDate', b.week_end_date,
    'redTeamChips', b.red_team_chips, 'blueTeamChips', b.blue_team_chips,
    'redTeamRobotPower', b.red_team_robot_power, 'blueTeamRobotPower', b.blue_team_robot_power,
    'battleStatus', b.battle_status, 'winner', b.winner, 'battleResult', b.battle_result,
    'createdAt', b.created_at, 'executedAt', b.executed_at)
$$;

-- The weekly job: creates the week's battle (idempotent). Monday of the current UTC week by default.
create or replace function private.generate_weekly_battle(week_start date)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  b public.workout_battles;
  created boolean;
begin
  if not private.is_trusted_caller() then
    raise exception 'the scheduler, the service role or super admins only' using errcode = '42501';
  end if;
  perform private.assert_monday(week_start);
  insert into public.workout_battles (week_start_date, week_end_date) values (week_start, week_start + 6)
  on conflict (week_start_date) do nothing
  returning * into b;
  created := found;
  if not created then
    select * into b from public.workout_battles where week_start_date = week_start;
  end if;
  raise log 'workout weekly battle %: created=%', week_start, created;
  return jsonb_build_object('battle', private.battle_json(b), 'created', created);
end
$$;
grant execute on function private.generate_weekly_battle(date) to authenticated, service_role;

create or replace function public.generate_weekly_battle(week_start date default null) returns jsonb
language sql set search_path = ''
as $$ select private.generate_weekly_battle(coalesce(week_start, date_trunc('week', now() at time zone 'UTC')::date)) $$;
comment on function public.generate_weekly_battle(date) is 'Creates the week''s battle (scheduler, service role, super admins); idempotent.';
grant execute on function generate_weekly_battle(date) to authenticated, service_role;

-- A week's battle (or null) with live team totals, robot power and daily chips.
create or replace function private.workout_battle_week(week_start date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  b public.workout_battles;
begin
  if (select auth.uid()) is null and not private.is_trusted_caller() then
    raise exception 'sign in' using errcode = '42501';
  end if;
  perform private.assert_monday(week_start);
  select * into b from public.workout_battles where week_start_date = week_start;
  return jsonb_build_object('battle', case when b.id is null then null else private.battle_json(b) end)
         || private.workout_week_totals(week_start);
end
$$;
grant execute on function private.workout_battle_week(date) to authenticated, service_role;

create or replace function public.workout_battle_week(week_start date) returns jsonb
language sql stable set search_path = '' as $$ select private.workout_battle_week(week_start) $$;
comment on function public.workout_battle_week(date) is 'A week''s battle (or null) with live team totals, robot power and daily chips.';
grant execute on function workout_battle_week(date) to authenticated, service_role;

-- Executes a week's battle once: 3 to 5 rounds against a common opponent whose power is the
-- two teams' mean plus 50 (so it grows with them, and a small team still lands hits). A team's
-- round damage is its power spread over the rounds times 0.75..1.25, capped at 40 percent of
-- the opponent's power (no one-shot). Highest total damage wins; equal is a tie. Every random
-- draw is seeded by the week, so the result repeats; a completed battle is returned unchanged.
create or replace function private.execute_workout_battle(week_start date)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  b public.workout_battles;
  totals jsonb;
  red_chips integer; blue_chips integer; red_power integer; blue_power integer;
  foe integer; rounds integer; cap integer;
  red_total integer := 0; blue_total integer := 0;
  rd integer; bd integer; fd integer;
  log jsonb := '[]'::jsonb;
  won text;
  seed text := 'workout-battle:' || week_start::text;
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins or the scheduler only' using errcode = '42501';
  end if;
  perform private.assert_monday(week_start);
  insert into public.workout_battles (week_start_date, week_end_date) values (week_start, week_start + 6)
  on conflict (week_start_date) do nothing;
  select * into b from public.workout_battles where week_start_date = week_start for update;
  if b.battle_status = 'completed' then
    return jsonb_build_object('battle', private.battle_json(b), 'winner', b.winner,
                              'battleResult', b.battle_result, 'alreadyExecuted', true);
  end if;

  totals := private.workout_week_totals(week_start);
  red_chips := (totals -> 'redTeam' ->> 'totalChips')::integer;
  blue_chips := (totals -> 'blueTeam' ->> 'totalChips')::integer;
  red_power := (totals -> 'redTeam' ->> 'robotPower')::integer;
  blue_power := (totals -> 'blueTeam' ->> 'robotPower')::integer;
  foe := (red_power + blue_power) / 2 + 50;
  rounds := 3 + floor(private.seeded_fraction(seed || ':rounds') * 3)::integer;
  cap := ceil(foe * 0.4)::integer;
  for r in 1..rounds loop
    rd := least(cap, round(red_power::numeric / rounds * (0.75 + 0.5 * private.seeded_fraction(seed || ':red:' || r)))::integer);
    bd := least(cap, round(blue_power::numeric / rounds * (0.75 + 0.5 * private.seeded_fraction(seed || ':blue:' || r)))::integer);
    fd := round(foe::numeric / rounds * (0.75 + 0.5 * private.seeded_fraction(seed || ':foe:' || r)))::integer;
    red_total := red_total + rd;
    blue_total := blue_total + bd;
    log := log || jsonb_build_object('round', r, 'redDamage', rd, 'blueDamage', bd, 'badGuyDamage', fd);
  end loop;
  won := case when red_total > blue_total then 'red' when blue_total > red_total then 'blue' else 'tie' end;

  update public.workout_battles set
    red_team_chips = red_chips, blue_team_chips = blue_chips,
    red_team_robot_power = red_power, blue_team_robot_power = blue_power,
    battle_status = 'completed', winner = won, executed_at = now(),
    battle_result = jsonb_build_object('redRobotPower', red_power, 'blueRobotPower', blue_power,
      'badGuyPower', foe, 'rounds', log, 'redTotalDamage', red_total, 'blueTotalDamage', blue_total,
      'finalOutcome', case won when 'tie' then format('Tie: both teams dealt %s damage', red_total)
                               else format('%s team wins, %s to %s damage', initcap(won),
                                           greatest(red_total, blue_total), least(red_total, blue_total)) end)
   where id = b.id
  returning * into b;

  -- Battle result for everyone who took part that week.
  insert into public.notifications (user_id, type, payload)
  select distinct c.user_id, 'workout.battle_result',
         jsonb_build_object('weekStartDate', week_start, 'winner', won, 'yourTeam', c.team_color)
    from (select distinct on (user_id) user_id, team_color from public.workout_chains
           where date between week_start and week_start + 6 order by user_id, date desc) c;
  raise log 'workout battle %: executed, winner %', week_start, won;
  return jsonb_build_object('battle', private.battle_json(b), 'winner', won,
                            'battleResult', b.battle_result, 'alreadyExecuted', false);
end
$$;
grant execute on function private.execute_workout_battle(date) to authenticated, service_role;

create or replace function public.execute_workout_battle(week_start date) returns jsonb
language sql set search_path = '' as $$ select private.execute_workout_battle(week_start) $$;
comment on function public.execute_workout_battle(date) is 'Super admins and the Sunday-evening job: runs a week''s battle once (deterministic).';
grant execute on function execute_workout_battle(date) to authenticated, service_role;

-- Battle update: stores the week's live standing on its (not yet completed) battle and, only
-- when chips or robot power changed since the last store, tells that week's participants.
-- Idempotent: a second run without new chips changes nothing and sends nothing. Run daily
-- just after chain generation (yesterday's check-ins are then counted).
create or replace function private.refresh_workout_battle_standing(week_start date)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  b public.workout_battles;
  totals jsonb;
  red_chips integer; blue_chips integer; red_power integer; blue_power integer;
  told integer := 0;
begin
  if not private.is_trusted_caller() then
    raise exception 'the scheduler, the service role or super admins only' using errcode = '42501';
  end if;
  perform private.assert_monday(week_start);
  select * into b from public.workout_battles where week_start_date = week_start for update;
  if b.id is null or b.battle_status = 'completed' then
    return jsonb_build_object('weekStartDate', week_start, 'changed', false, 'notified', 0);
  end if;
  totals := private.workout_week_totals(week_start);
  red_chips := (totals -> 'redTeam' ->> 'totalChips')::integer;
  blue_chips := (totals -> 'blueTeam' ->> 'totalChips')::integer;
  red_power := (totals -> 'redTeam' ->> 'robotPower')::integer;
  blue_power := (totals -> 'blueTeam' ->> 'robotPower')::integer;
  if (b.red_team_chips, b.blue_team_chips, b.red_team_robot_power, b.blue_team_robot_power)
     = (red_chips, blue_chips, red_power, blue_power) then
    return jsonb_build_object('weekStartDate', week_start, 'changed', false, 'notified', 0);
  end if;
  update public.workout_battles set
    red_team_chips = red_chips, blue_team_chips = blue_chips,
    red_team_robot_power = red_power, blue_team_robot_power = blue_power,
    battle_status = 'in_progress'
   where id = b.id;
  insert into public.notifications (user_id, type, payload)
  select c.user_id, 'workout.battle_update',
         jsonb_build_object('weekStartDate', week_start, 'yourTeam', c.team_color,
           'redTeamChips', red_chips, 'blueTeamChips', blue_chips,
           'redRobotPower', red_power, 'blueRobotPower', blue_power,
           'leader', case when red_power > blue_power then 'red' when blue_power > red_power then 'blue' else 'tie' end)
    from (select distinct on (user_id) user_id, team_color from public.workout_chains
           where date between week_start and week_start + 6 order by user_id, date desc) c;
  get diagnostics told = row_count;
  raise log 'workout battle %: standing changed, % participants told', week_start, told;
  return jsonb_build_object('weekStartDate', week_start, 'changed', true, 'notified', told);
end
$$;
grant execute on function private.refresh_workout_battle_standing(date) to authenticated, service_role;

create or replace function public.refresh_workout_battle_standing(week_start date default null) returns jsonb
language sql set search_path = ''
as $$ select private.refresh_workout_battle_standing(coalesce(week_start, date_trunc('week', now() at time zone 'UTC')::date)) $$;
comment on function public.refresh_workout_battle_standing(date) is
  'Daily job (scheduler, service role, super admins): stores the week''s standing and sends workout.battle_update when it changed.';
grant execute on function refresh_workout_battle_standing(date) to authenticated, service_role;

-- Battles newest first and the caller's chips contributed, battles won and longest chain.
create or replace function private.workout_battle_history(page_size integer)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
begin
  if me is null then
    raise exception 'sign in' using errcode = '42501';
  end if;
  return jsonb_build_object(
    'battles', (select coalesce(jsonb_agg(private.battle_json(b) order by b.week_start_date desc), '[]'::jsonb)
                  from (select * from public.workout_battles order by week_start_date desc
                         limit least(greatest(page_size, 1), 104)) b),
    'userStats', jsonb_build_object(
      'totalChipsContributed', (select coalesce(sum(k.battle_chips_earned), 0) from public.workout_checkins k
                                 where k.user_id = me and k.status <> 'rejected'),
      'battlesWon', (select count(*) from public.workout_battles b
                      where b.battle_status = 'completed' and b.winner = (
                        select mode() within group (order by c.team_color) from public.workout_chains c
                         where c.user_id = me and c.date between b.week_start_date and b.week_end_date)),
      'longestChain', (select coalesce(max(n), 0) from (
                         select count(*) as n from (
                           select k.date - (row_number() over (order by k.date))::integer as island
                             from public.workout_checkins k where k.user_id = me and k.status <> 'rejected') s
                          group by s.island) runs)));
end
$$;
grant execute on function private.workout_battle_history(integer) to authenticated;

create or replace function public.workout_battle_history(page_size integer default 52) returns jsonb
language sql stable set search_path = '' as $$ select private.workout_battle_history(page_size) $$;
comment on function public.workout_battle_history(integer) is
  'Battles newest first and the caller''s totalChipsContributed, battlesWon and longestChain (consecutive check-in days).';
grant execute on function workout_battle_history(integer) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- The daily mosaic (planned rows): the api function draws the PNG; SQL keeps the record.
-- ---------------------------------------------------------------------------------------------

create table public.workout_mosaics (
  date date primary key,
  image_url text not null check (char_length(image_url) <= 2048),
  object_name text not null check (char_length(object_name) <= 500),
  sections jsonb not null default '[]'::jsonb check (jsonb_typeof(sections) = 'array'),
  total_participants integer not null default 0,
  completed_count integer not null default 0,
  failed_count integer not null default 0,
  pending_count integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
alter table public.workout_mosaics enable row level security;
comment on table public.workout_mosaics is
  'One mosaic image per date: a tile per participant by team and status, with each tile''s coordinates. Readable by signed-in users.';
revoke all on public.workout_mosaics from anon, authenticated;
grant select on public.workout_mosaics to authenticated;

create policy "workout_mosaics: signed-in users read" on public.workout_mosaics
  for select to authenticated using (true);

-- The tiles to draw: every participant of the date by team, then window start.
create or replace function private.workout_mosaic_participants(target date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins or the scheduler only' using errcode = '42501';
  end if;
  return (select coalesce(jsonb_agg(jsonb_build_object('userId', b.user_id, 'userName', coalesce(p.full_name, 'Participant'),
                                                       'teamColor', b.team_color, 'status', b.status)
                                    order by b.team_color desc, b.start_utc, b.user_id), '[]'::jsonb)
            from private.workout_day_board(target) b join public.profiles p on p.id = b.user_id);
end
$$;
grant execute on function private.workout_mosaic_participants(date) to authenticated, service_role;

create or replace function public.workout_mosaic_participants(target date) returns jsonb
language sql stable set search_path = '' as $$ select private.workout_mosaic_participants(target) $$;
comment on function public.workout_mosaic_participants(date) is 'Super admins, the scheduler: the tiles of a date''s mosaic (red first).';
grant execute on function workout_mosaic_participants(date) to authenticated, service_role;

-- A mosaic as the api shows it.
create or replace function private.mosaic_json(m public.workout_mosaics) returns jsonb
language sql stable
set search_path = ''
as $$
  select jsonb_build_object('imageUrl', m.image_url, 'date', m.date, 'sections', m.sections,
    'stats', jsonb_build_object('totalParticipants', m.total_participants, 'completed', m.completed_count,
                                'failed', m.failed_count, 'pending', m.pending_count),
    'updatedAt', m.updated_at)
$$;

-- Stores (or replaces) a date's mosaic; returns it and the object it replaced (to delete).
create or replace function private.save_workout_mosaic(target date, image_url text, object_name text, sections jsonb)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  old_object text;
  m public.workout_mosaics;
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins or the scheduler only' using errcode = '42501';
  end if;
  select x.object_name into old_object from public.workout_mosaics x where x.date = target for update;
  insert into public.workout_mosaics as x (date, image_url, object_name, sections, total_participants,
    completed_count, failed_count, pending_count)
  select target, image_url, object_name, sections, jsonb_array_length(sections),
         count(*) filter (where s ->> 'status' = 'completed'), count(*) filter (where s ->> 'status' = 'failed'),
         count(*) filter (where s ->> 'status' = 'pending')
    from (select 1) one left join lateral jsonb_array_elements(sections) s on true
  on conflict (date) do update set image_url = excluded.image_url, object_name = excluded.object_name,
    sections = excluded.sections, total_participants = excluded.total_participants,
    completed_count = excluded.completed_count, failed_count = excluded.failed_count,
    pending_count = excluded.pending_count, updated_at = now()
  returning x.* into m;
  return jsonb_build_object('mosaic', private.mosaic_json(m),
                            'replacedObject', case when old_object is distinct from object_name then old_object end);
end
$$;
grant execute on function private.save_workout_mosaic(date,text,text,jsonb) to authenticated, service_role;

create or replace function public.save_workout_mosaic(target date, image_url text, object_name text, sections jsonb)
returns jsonb
language sql set search_path = '' as $$ select private.save_workout_mosaic(target, image_url, object_name, sections) $$;
comment on function public.save_workout_mosaic(date, text, text, jsonb) is 'Super admins, the scheduler: stores a drawn mosaic.';
grant execute on function save_workout_mosaic(date,text,text,jsonb) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Synthetic (AI) users (super admins; rule 5)
-- ---------------------------------------------------------------------------------------------

create table public.workout_ai_users (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  region text not null check (char_length(region) <= 50),
  city text not null check (char_length(city) <= 100),
  state text check (char_length(state) <= 50),
  timezone text not null check (char_length(timezone) <= 50),
  activity_type text not null,
  window_start_time time not null,
  window_end_time time not null,
  checkin_probability numeric(4, 3) not null default 0.85 check (checkin_probability between 0 and 1),
  is_active boolean not null default true,
  created_at timestamptz not null default now()
);
alter table public.workout_ai_users enable row level security;
comment on table public.workout_ai_users is
  'Synthetic users'' generation settings (profiles.is_ai = true). Super admins read them; active ones check in by a job.';
revoke all on public.workout_ai_users from anon, authenticated;
grant select on public.workout_ai_users to authenticated;

create policy "workout_ai_users: super admins read" on public.workout_ai_users
  for select to authenticated using ((select private.is_super_admin()));

-- Cities each generated region draws from.
create table private.workout_ai_cities (
  region text not null,
  city text not null,
  state text not null,
  timezone text not null,
  latitude numeric(10, 8) not null,
  longitude numeric(11, 8) not null,
  primary key (region, city)
);
comment on table private.workout_ai_cities is 'Cities synthetic users are placed in, per generation region.';

-- SPEC rule 5's default distributions (percent weights); a config key replaces its default.
create or replace function private.ai_generation_defaults() returns jsonb
language sql immutable
set search_path = ''
as $$ select '{
  "regions": {"West Coast": 25, "East Coast": 30, "Midwest": 20, "South": 15, "Mountain West": 10},
  "activities": {"cardio": 30, "strength": 25, "walk": 20, "meditation": 10, "reading": 10, "homework": 3, "other": 2},
  "windows": {"06:00": 15, "08:00": 10, "12:00": 20, "14:00": 15, "16:00": 25, "18:00": 15},
  "checkInProbability": 0.85
}'::jsonb $$;

-- The key of a weighted distribution {key: weight} at fraction f in [0, 1).
create or replace function private.weighted_pick(distribution jsonb, f double precision) returns text
language sql immutable
set search_path = ''
as $$
  select key from (
    select key, sum(value::numeric) over (order by key) / sum(value::numeric) over () as upto
      from jsonb_each_text(distribution) where value::numeric > 0) w
   where upto > f order by upto limit 1
$$;

-- Checks a partial config and merges it over the defaults.
create or replace function private.ai_generation_config(config jsonb) returns jsonb
language plpgsql immutable
set search_path = ''
as $$
declare
  merged jsonb := private.ai_generation_defaults() || coalesce(config, '{}'::jsonb);
  k text;
  entry record;
begin
  if config is not null and jsonb_typeof(config) <> 'object' then
    raise exception 'config: must be an object' using errcode = '22023';
  end if;
  for k in select jsonb_object_keys(coalesce(config, '{}'::jsonb)) loop
    if k not in ('regions', 'activities', 'windows', 'checkInProbability') then
      raise exception 'config.%: not an accepted field', k using errcode = '22023';
    end if;
  end loop;
  foreach k in array array['regions', 'activities', 'windows'] loop
    if jsonb_typeof(merged -> k) <> 'object' or not exists (select 1 from jsonb_each(merged -> k)) then
      raise exception 'config.%: must be an object of weights', k using errcode = '22023';
    end if;
    for entry in select * from jsonb_each(merged -> k) loop
      if jsonb_typeof(entry.value) <> 'number' or entry.value::numeric < 0 then
        raise exception 'config.%.%: must be a non-negative number', k, entry.key using errcode = '22023';
      end if;
      if k = 'regions' and not exists (select 1 from private.workout_ai_cities c where c.region = entry.key) then
        raise exception 'config.regions.%: unknown region', entry.key using errcode = '22023';
      end if;
      if k = 'activities' and entry.key not in ('cardio', 'strength', 'walk', 'meditation', 'reading', 'homework', 'other') then
        raise exception 'config.activities.%: unknown activity', entry.key using errcode = '22023';
      end if;
      if k = 'windows' and entry.key !~ '^([01][0-9]|2[0-3]):[0-5][0-9]$' then
        raise exception 'config.windows.%: must be a start time HH:MM', entry.key using errcode = '22023';
      end if;
    end loop;
    if (select sum(value::numeric) from jsonb_each_text(merged -> k)) <= 0 then
      raise exception 'config.%: weights must not all be 0', k using errcode = '22023';
    end if;
  end loop;
  if jsonb_typeof(merged -> 'checkInProbability') <> 'number'
     or (merged ->> 'checkInProbability')::numeric not between 0 and 1 then
    raise exception 'config.checkInProbability: must be a number from 0 to 1' using errcode = '22023';
  end if;
  return merged;
end
$$;

-- The users one generation creates: deterministic from its seed, so every statement below
-- reads the same plan (one statement per table, no per-user round trip).
create or replace function private.ai_user_plan(how_many integer, config jsonb, seed text)
returns table (id uuid, full_name text, email text, region text, city text, state text, timezone text,
               latitude numeric, longitude numeric, activity_type text, window_start_time time, probability numeric)
language sql stable
set search_path = ''
as $$
  with picks as (
    select i, md5(seed || ':' || i)::uuid as id,
           private.weighted_pick(config -> 'regions', private.seeded_fraction(seed || ':region:' || i)) as region,
           private.weighted_pick(config -> 'activities', private.seeded_fraction(seed || ':activity:' || i)) as activity,
           private.weighted_pick(config -> 'windows', private.seeded_fraction(seed || ':window:' || i))::time as starts,
           private.seeded_fraction(seed || ':city:' || i) as city_f,
           private.seeded_fraction(seed || ':name:' || i) as name_f
      from generate_series(1, how_many) i
  )
  select p.id,
         (array['Alex', 'Sam', 'Jordan', 'Taylor', 'Riley', 'Casey', 'Morgan', 'Jamie', 'Avery', 'Quinn',
                'Drew', 'Skyler', 'Reese', 'Parker', 'Rowan', 'Emerson'])[1 + floor(p.name_f * 16)::integer]
           || ' ' || chr(65 + floor(p.name_f * 16 * 26)::integer % 26) || '. (AI)',
         'ai-' || p.id || '@synthetic.invalid',
         c.region, c.city, c.state, c.timezone, c.latitude, c.longitude, p.activity, p.starts,
         (config ->> 'checkInProbability')::numeric
    from picks p
    cross join lateral (
      select x.* from private.workout_ai_cities x where x.region = p.region
       order by x.city offset floor(p.city_f * (select count(*) from private.workout_ai_cities y where y.region = p.region))::integer
       limit 1) c
$$;

-- Super admins: creates synthetic users (account, profile, window, location) in bulk.
create or replace function private.generate_ai_users(how_many integer, config jsonb)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  merged jsonb;
  seed text := gen_random_uuid()::text;
  made integer;
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  if how_many is null or how_many not between 1 and 1000 then
    raise exception 'count: must be an integer from 1 to 1000' using errcode = '22023';
  end if;
  merged := private.ai_generation_config(config);
  raise log 'workout ai users: generating %', how_many;
  insert into auth.users (id, email, aud, role, email_confirmed_at, raw_user_meta_data, raw_app_meta_data)
  select p.id, p.email, 'authenticated', 'authenticated', now(), jsonb_build_object('full_name', p.full_name, 'is_ai', true),
         '{"provider": "synthetic", "providers": ["synthetic"]}'::jsonb
    from private.ai_user_plan(how_many, merged, seed) p;
  get diagnostics made = row_count;
  update public.profiles set is_ai = true, full_name = p.full_name
    from private.ai_user_plan(how_many, merged, seed) p where profiles.id = p.id;
  insert into public.workout_windows (user_id, activity_type, custom_activity, window_start_time, window_end_time, timezone)
  select p.id, p.activity_type, case when p.activity_type = 'other' then 'Mixed training' end,
         p.window_start_time, p.window_start_time + interval '2 hours', p.timezone
    from private.ai_user_plan(how_many, merged, seed) p;
  insert into public.workout_locations (user_id, latitude, longitude, city, region, country, timezone)
  select p.id, p.latitude, p.longitude, p.city, p.state, 'US', p.timezone
    from private.ai_user_plan(how_many, merged, seed) p;
  insert into public.workout_ai_users (user_id, region, city, state, timezone, activity_type, window_start_time,
                                       window_end_time, checkin_probability)
  select p.id, p.region, p.city, p.state, p.timezone, p.activity_type, p.window_start_time,
         p.window_start_time + interval '2 hours', p.probability
    from private.ai_user_plan(how_many, merged, seed) p;
  raise log 'workout ai users: created %', made;
  return jsonb_build_object('created', made, 'failed', how_many - made, 'errors', '[]'::jsonb,
    'users', (select jsonb_agg(private.ai_user_json(a.user_id) order by a.created_at, a.user_id)
                from public.workout_ai_users a
               where a.user_id in (select p.id from private.ai_user_plan(how_many, merged, seed) p)));
end
$$;
grant execute on function private.generate_ai_users(integer,jsonb) to authenticated, service_role;

-- A synthetic user with their profile, as the admin pages show it.
create or replace function private.ai_user_json(target_user uuid) returns jsonb
language sql stable
set search_path = ''
as $$
  select jsonb_build_object('id', a.user_id, 'fullName', p.full_name, 'isAi', p.is_ai, 'isActive', a.is_active,
    'region', a.region, 'city', a.city, 'state', a.state, 'timezone', a.timezone, 'activityType', a.activity_type,
    'windowStartTime', to_char(a.window_start_time, 'HH24:MI'), 'windowEndTime', to_char(a.window_end_time, 'HH24:MI'),
    'checkInProbability', a.checkin_probability, 'createdAt', a.created_at)
    from public.workout_ai_users a join public.profiles p on p.id = a.user_id
   where a.user_id = target_user
$$;

create or replace function public.generate_ai_users(how_many integer, config jsonb default null) returns jsonb
language sql set search_path = '' as $$ select private.generate_ai_users(how_many, config) $$;
comment on function public.generate_ai_users(integer, jsonb) is
  'Super admins: creates 1..1000 synthetic users (account, profile, window, location) in bulk from SPEC''s distributions.';
grant execute on function generate_ai_users(integer,jsonb) to authenticated, service_role;

-- Super admins: synthetic users with their profiles, by id.
create or replace function private.list_ai_users(page_size integer, after_id uuid)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  return (select coalesce(jsonb_agg(private.ai_user_json(a.user_id) order by a.user_id), '[]'::jsonb)
            from (select user_id from public.workout_ai_users where after_id is null or user_id > after_id
                   order by user_id limit least(greatest(page_size, 1), 1000)) a);
end
$$;
grant execute on function private.list_ai_users(integer,uuid) to authenticated, service_role;

create or replace function public.list_ai_users(page_size integer default 1000, after_id uuid default null) returns jsonb
language sql stable set search_path = '' as $$ select private.list_ai_users(page_size, after_id) $$;
comment on function public.list_ai_users(integer, uuid) is 'Super admins: synthetic users with their profiles, by id.';
grant execute on function list_ai_users(integer,uuid) to authenticated, service_role;

-- Super admins: removes a synthetic user and all their data (a real user: 404).
create or replace function private.delete_ai_user(target_user uuid)
returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  if not exists (select 1 from public.workout_ai_users a join public.profiles p on p.id = a.user_id
                  where a.user_id = target_user and p.is_ai) then
    raise exception 'no AI user %', target_user using errcode = 'PT404';
  end if;
  -- The account goes, and with it (by cascade) the profile and every row that refers to it.
  delete from auth.users where id = target_user;
end
$$;
grant execute on function private.delete_ai_user(uuid) to authenticated, service_role;

create or replace function public.delete_ai_user(target_user uuid) returns void
language sql set search_path = '' as $$ select private.delete_ai_user(target_user) $$;
comment on function public.delete_ai_user(uuid) is 'Super admins: removes a synthetic user and all their data (real users: 404).';
grant execute on function delete_ai_user(uuid) to authenticated, service_role;

-- Super admins: activates or pauses a synthetic user (and its matching).
create or replace function private.toggle_ai_user(target_user uuid, active boolean)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  if active is null then
    raise exception 'isActive: required' using errcode = '22023';
  end if;
  update public.workout_ai_users set is_active = active where user_id = target_user;
  if not found then
    raise exception 'no AI user %', target_user using errcode = 'PT404';
  end if;
  -- An inactive synthetic user is no longer matched either.
  update public.workout_windows set is_active = active where user_id = target_user;
  return private.ai_user_json(target_user);
end
$$;
grant execute on function private.toggle_ai_user(uuid,boolean) to authenticated, service_role;

create or replace function public.toggle_ai_user(target_user uuid, active boolean) returns jsonb
language sql set search_path = '' as $$ select private.toggle_ai_user(target_user, active) $$;
comment on function public.toggle_ai_user(uuid, boolean) is 'Super admins: activates or pauses a synthetic user (and its matching).';
grant execute on function toggle_ai_user(uuid,boolean) to authenticated, service_role;

-- Super admins: a date's teams and squads with AI versus real members.
create or replace function private.admin_workout_teams(target date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  return (
    select jsonb_object_agg(t.team || 'Team', jsonb_build_object(
      'totalMembers', (select count(*) from public.workout_chains c where c.date = target and c.team_color = t.team),
      'aiMembers', (select count(*) from public.workout_chains c join public.profiles p on p.id = c.user_id
                     where c.date = target and c.team_color = t.team and p.is_ai),
      'realMembers', (select count(*) from public.workout_chains c join public.profiles p on p.id = c.user_id
                       where c.date = target and c.team_color = t.team and not p.is_ai),
      'squads', (select coalesce(jsonb_agg(jsonb_build_object(
                   'id', s.id,
                   'members', (select jsonb_agg(jsonb_build_object('id', p.id, 'name', p.full_name, 'isAi', p.is_ai) order by m.pos)
                                 from unnest(array[s.user_1_id, s.user_2_id, s.user_3_id]) with ordinality m(user_id, pos)
                                 join public.profiles p on p.id = m.user_id),
                   'aiCount', (select count(*) from public.profiles p where p.id in (s.user_1_id, s.user_2_id, s.user_3_id) and p.is_ai),
                   'realCount', (select count(*) from public.profiles p where p.id in (s.user_1_id, s.user_2_id, s.user_3_id) and not p.is_ai))
                   order by s.user_1_id), '[]'::jsonb)
                   from public.workout_squads s where s.date = target and s.team_color = t.team)))
      from (values ('red'), ('blue')) t(team));
end
$$;
grant execute on function private.admin_workout_teams(date) to authenticated, service_role;

create or replace function public.admin_workout_teams(target date) returns jsonb
language sql stable set search_path = '' as $$ select private.admin_workout_teams(target) $$;
comment on function public.admin_workout_teams(date) is 'Super admins: a date''s teams and squads with AI versus real members.';
grant execute on function admin_workout_teams(date) to authenticated, service_role;

create index workout_squads_by_date on public.workout_squads (date, team_color);

-- ---------------------------------------------------------------------------------------------
-- The five-minute job: synthetic users' check-ins, reminders 30 minutes before a window, and
-- "chain broken" for the after user of a window that ended without a check-in (Events 3).
-- A reminder is written up to 35 minutes ahead (the job runs every 5), and its push goes out at
-- exactly 30 minutes before the start (notification_delivery.sql: the outbox's deliver_after).
-- ---------------------------------------------------------------------------------------------

create or replace function private.workout_stock_photo_url() returns text
language sql stable security definer
set search_path = ''
as $$
  select coalesce((select decrypted_secret from vault.decrypted_secrets where name = 'project_url'), '')
         || '/storage/v1/object/public/workout-checkins/stock/ai-checkin.png'
$$;
comment on function private.workout_stock_photo_url() is 'The stock image synthetic users check in with (stored by the api).';

create or replace function private.run_workout_jobs(at timestamptz default now())
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  due record;
  ai_done integer := 0;
  ai_failed integer := 0;
  reminders integer;
  broken integer;
begin
  if not private.is_trusted_caller() then
    raise exception 'the scheduler, the service role or super admins only' using errcode = '42501';
  end if;
  raise log 'workout jobs at %: start', at;
  -- Synthetic users: each draws (seeded by user and date) whether and when in the window it
  -- checks in; due ones check in through the same function as everyone.
  for due in
    select a.user_id, a.activity_type, d.day
      from public.workout_ai_users a
      join public.workout_windows w on w.user_id = a.user_id and w.is_active
      cross join lateral (select private.workout_checkin_date(w, at) as day) d
     where a.is_active
       and private.seeded_fraction('ai-checkin:' || a.user_id || ':' || d.day) < a.checkin_probability
       and at >= private.workout_window_start(d.day, w.window_start_time, w.timezone)
                 + make_interval(mins => floor(private.seeded_fraction('ai-minute:' || a.user_id || ':' || d.day) * 110)::integer)
       and at < private.workout_window_start(d.day, w.window_start_time, w.timezone) + interval '2 hours'
       and not exists (select 1 from public.workout_checkins k where k.user_id = a.user_id and k.date = d.day)
     order by a.user_id
     limit 2000
  loop
    begin
      perform private.record_workout_checkin(due.user_id, due.activity_type, private.workout_stock_photo_url(), null,
        (at at time zone 'UTC')::timestamp, 0, null, null, null, null, at, 'verified');
      ai_done := ai_done + 1;
    exception when others then
      ai_failed := ai_failed + 1;
      raise log 'workout jobs: synthetic check-in of % failed: %', due.user_id, sqlerrm;
    end;
  end loop;

  with due_reminders as (
    select w.user_id, d.day, private.workout_window_start(d.day, w.window_start_time, w.timezone) as starts
      from public.workout_windows w
      join public.profiles p on p.id = w.user_id and p.is_active and not p.is_ai
      cross join lateral (select ((at + interval '35 minutes') at time zone w.timezone)::date as day) d
     where w.is_active
  ), sent as (
    insert into public.notifications (user_id, type, payload)
    select r.user_id, 'workout.checkin_reminder', jsonb_build_object('date', r.day, 'windowStartsAt', r.starts)
      from due_reminders r
     where r.starts > at and r.starts <= at + interval '35 minutes'
       and not exists (select 1 from public.workout_checkins k where k.user_id = r.user_id and k.date = r.day)
       and not exists (select 1 from public.notifications n where n.user_id = r.user_id and n.type = 'workout.checkin_reminder'
                          and n.created_at > least(at, now()) - interval '1 day' and n.payload ->> 'date' = r.day::text)
    returning 1
  )
  select count(*) into reminders from sent;

  with ended as (
    select c.user_id, c.after_user_id, c.date
      from public.workout_chains c
      join public.workout_windows w on w.user_id = c.user_id
     where c.date between (at at time zone 'UTC')::date - 2 and (at at time zone 'UTC')::date
       and c.after_user_id is not null
       and private.workout_window_start(c.date, w.window_start_time, w.timezone) + interval '2 hours' between at - interval '1 day' and at
       and not exists (select 1 from public.workout_checkins k where k.user_id = c.user_id and k.date = c.date and k.status <> 'rejected')
  ), sent as (
    insert into public.notifications (user_id, type, payload)
    select e.after_user_id, 'workout.chain_broken', jsonb_build_object('date', e.date, 'beforeUserId', e.user_id)
      from ended e
     -- Written once: a notice of the last two days (by the job's clock or the real one, whichever
     -- is earlier, so a run at a moment ahead, as tests and catch-ups make, sees what it wrote).
     where not exists (select 1 from public.notifications n where n.user_id = e.after_user_id and n.type = 'workout.chain_broken'
                          and n.created_at > least(at, now()) - interval '2 days' and n.payload ->> 'date' = e.date::text)
    returning 1
  )
  select count(*) into broken from sent;
  raise log 'workout jobs at %: % synthetic check-ins (% failed), % reminders, % chain-broken', at, ai_done, ai_failed, reminders, broken;
  return jsonb_build_object('aiCheckins', ai_done, 'aiFailed', ai_failed, 'reminders', reminders, 'chainBroken', broken);
end
$$;
comment on function private.run_workout_jobs(timestamptz) is
  'Every 5 minutes: synthetic users'' check-ins (seeded), check-in reminders and chain-broken notifications.';

-- Generation and deletion take turns: a generator holds this lock shared for its whole run,
-- a statement deleting profiles takes it exclusively before it touches a row. Without the
-- foreign keys, a user deleted while a run was writing could otherwise be left as a neighbour
-- on a new row (which the cleanup below, running before that row is committed, cannot see),
-- and a check-in or the five-minute job would then fail notifying them. Taken before any row
-- lock (a statement trigger), so it cannot deadlock with a run's foreign-key checks.
create or replace function private.wait_for_workout_generation() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  perform pg_advisory_xact_lock(hashtextextended('workout_chains:membership', 0));
  return null;
end
$$;
comment on function private.wait_for_workout_generation() is
  'Before a statement deletes profiles: waits for running chain generations, and holds them off until commit.';

create trigger profiles_wait_for_workout_generation before delete on public.profiles
  for each statement execute function private.wait_for_workout_generation();

-- Before a profile goes (while its chain rows still say which squads it was in).
create or replace function private.forget_workout_squads_of() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  with gone as (
    delete from public.workout_squads s
     where s.id in (select c.squad_id from public.workout_chains c where c.user_id = old.id and c.squad_id is not null)
    returning s.id, s.date, s.user_1_id, s.user_2_id, s.user_3_id
  )
  update public.workout_chains c set squad_id = null
    from gone s
   where c.date = s.date and c.user_id in (s.user_1_id, s.user_2_id, s.user_3_id) and c.squad_id = s.id;
  return old;
end
$$;
comment on function private.forget_workout_squads_of() is
  'Before a profile is deleted: the squads the user was in go, and their other members lose them.';

create trigger profiles_forget_workout_squads before delete on public.profiles
  for each row execute function private.forget_workout_squads_of();

-- Before a profile goes: on every date the user was in a chain, their neighbours join up (the one
-- before now passes to the one after), so a chain keeps going around a deleted account.
create or replace function private.relink_workout_chains_around() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  update public.workout_chains prev set after_user_id = mine.after_user_id
    from public.workout_chains mine
   where mine.user_id = old.id and prev.date = mine.date and prev.user_id = mine.before_user_id
     and prev.after_user_id = old.id;
  update public.workout_chains next set before_user_id = mine.before_user_id
    from public.workout_chains mine
   where mine.user_id = old.id and next.date = mine.date and next.user_id = mine.after_user_id
     and next.before_user_id = old.id;
  return old;
end
$$;
comment on function private.relink_workout_chains_around() is
  'Before a profile is deleted: on each date of the user''s chains, the neighbours before and after are linked to each other.';

create trigger profiles_relink_workout_chains before delete on public.profiles
  for each row execute function private.relink_workout_chains_around();

-- After profiles are deleted, once for the statement: links to them on recent and future dates.
create or replace function private.forget_workout_links_to() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  update public.workout_chains c
     set before_user_id = case when c.before_user_id in (select g.id from gone g) then null else c.before_user_id end,
         after_user_id = case when c.after_user_id in (select g.id from gone g) then null else c.after_user_id end
   where c.date >= (now() at time zone 'UTC')::date - 3
     and (c.before_user_id in (select g.id from gone g) or c.after_user_id in (select g.id from gone g));
  return null;
end
$$;
comment on function private.forget_workout_links_to() is
  'After profiles are deleted: chain links to them on recent and future dates are cleared.';

create trigger profiles_forget_workout_links after delete on public.profiles
  referencing old table as gone
  for each statement execute function private.forget_workout_links_to();

-- After a profile goes, its chain rows go (the cascade's job). After the row, so that
-- profiles_forget_workout_squads, before it, still finds the user's squads through them.
create or replace function private.forget_workout_chains_of() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  delete from public.workout_chains c where c.user_id = old.id;
  return null;
end
$$;
comment on function private.forget_workout_chains_of() is
  'After a profile is deleted: the user''s chain rows go.';

create trigger profiles_forget_workout_chains after delete on public.profiles
  for each row execute function private.forget_workout_chains_of();

create or replace function private.require_read_committed() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if current_setting('transaction_isolation') <> 'read committed' then
    raise exception '% on %.% runs at read committed isolation only', tg_op, tg_table_schema, tg_table_name
      using errcode = '0A000',
            hint = 'Without a foreign key from workout_chains to profiles, an older snapshot could leave a chain row without its profile.';
  end if;
  return null;
end
$$;
comment on function private.require_read_committed() is
  'Statement trigger: refuses a write outside read committed isolation (see 20261124020000_workout_chain_owner.sql).';

-- Fires before profiles_wait_for_workout_generation (triggers of a kind fire in name order).
create trigger profiles_delete_read_committed before delete on public.profiles
  for each statement execute function private.require_read_committed();

create trigger workout_chains_insert_read_committed before insert on public.workout_chains
  for each statement execute function private.require_read_committed();

-- ---------------------------------------------------------------------------------------------
-- Photos the api read and stored
-- ---------------------------------------------------------------------------------------------

create table private.workout_photos (
  object_name text primary key check (char_length(object_name) <= 500),
  user_id uuid not null references public.profiles (id) on delete cascade,
  photo_url text not null check (char_length(photo_url) <= 2048),
  dhash bigint,
  dhash_as_sent bigint,
  taken_local timestamp,
  offset_minutes integer check (offset_minutes between -840 and 840),
  latitude numeric(10, 8) check (latitude between -90 and 90),
  longitude numeric(11, 8) check (longitude between -180 and 180),
  received_at timestamptz not null default now(),
  checkin_id uuid unique references public.workout_checkins (id) on delete cascade
);
alter table private.workout_photos enable row level security;
comment on table private.workout_photos is
  'Check-in photos the api stored (bucket workout-checkins, metadata stripped), with what it read from the original '
  'file (EXIF capture time and offset, GPS), when the server received it and the 64-bit difference hash of its '
  'picture. Written only by private.register_workout_photo (service role); claimed once by a check-in.';
comment on column private.workout_photos.dhash is
  'dHash of the upright picture (grey, 9x8, left brighter than right), as a signed 64-bit integer; null when the '
  'picture is too plain to compare. Near-identical pictures differ in a few bits.';
comment on column private.workout_photos.dhash_as_sent is
  'dHash of the picture as sent, before its EXIF orientation turned it (null unless it did): compared too, so a '
  'stored photo given an orientation tag is still the same picture.';

create index workout_photos_by_user on private.workout_photos (user_id, received_at);

-- Finding the used pictures within 7 bits of a hash: split into four 16-bit bands, two hashes
-- within 7 bits agree on some band to within one bit (else each band differs in 2 or more),
-- so each band's value and its 16 one-bit neighbours are looked up (68 index probes, each
-- matching about n/65,536 rows) and the candidates' full distance is computed from the index
-- itself (it carries the hash: index-only scans). Measured on 2,000,000 random hashes: about
-- 2,100 candidates, 0.3-0.6 ms.
create index workout_photos_used_band_0 on private.workout_photos (((dhash >> 48) & 65535)) include (dhash) where checkin_id is not null;

create index workout_photos_used_band_1 on private.workout_photos (((dhash >> 32) & 65535)) include (dhash) where checkin_id is not null;

create index workout_photos_used_band_2 on private.workout_photos (((dhash >> 16) & 65535)) include (dhash) where checkin_id is not null;

create index workout_photos_used_band_3 on private.workout_photos ((dhash & 65535)) include (dhash) where checkin_id is not null;

-- POST /api/workout-window/checkin, after storing the stripped photo: records what the api read
-- from the original. The service role only (a direct database session too): the facts are the
-- server's, never a client's.
create or replace function private.register_workout_photo(
  object_name text, owner_id uuid, photo_url text, dhash bigint, dhash_as_sent bigint,
  taken_local timestamp, offset_minutes integer, latitude numeric, longitude numeric
) returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  if coalesce(private.request_role(), 'service_role') <> 'service_role' then
    raise exception 'photos are registered by the api only' using errcode = '42501';
  end if;
  if $1 is null or $2 is null or $1 not like $2::text || '/%'
     or not exists (select 1 from storage.objects o where o.bucket_id = 'workout-checkins' and o.name = $1) then
    raise exception 'photo: % is not a stored object in its owner''s folder of workout-checkins', $1 using errcode = '22023';
  end if;
  -- A refused check-in leaves its registration behind (its object is deleted); forget the
  -- owner's unused ones after a day.
  delete from private.workout_photos p
   where p.user_id = $2 and p.checkin_id is null and p.received_at < now() - interval '1 day';
  insert into private.workout_photos (object_name, user_id, photo_url, dhash, dhash_as_sent, taken_local, offset_minutes,
                                      latitude, longitude)
  values ($1, $2, $3, $4, $5, $6, $7, $8, $9);
end
$$;
comment on function private.register_workout_photo(text, uuid, text, bigint, bigint, timestamp, integer, numeric, numeric) is
  'The api (service role): records a stored check-in photo with the facts it read from the original file.';
grant execute on function private.register_workout_photo(text,uuid,text,bigint,bigint,timestamp without time zone,integer,numeric,numeric) to service_role;

create or replace function public.register_workout_photo(
  object_name text, owner_id uuid, photo_url text, dhash bigint, dhash_as_sent bigint,
  taken_local timestamp default null, offset_minutes integer default null,
  latitude numeric default null, longitude numeric default null
) returns void
language sql
set search_path = ''
as $$ select private.register_workout_photo(object_name, owner_id, photo_url, dhash, dhash_as_sent, taken_local, offset_minutes,
                                            latitude, longitude) $$;
comment on function public.register_workout_photo(text, uuid, text, bigint, bigint, timestamp, integer, numeric, numeric) is
  'Service role only (the api): records a check-in photo it stored and read; clients cannot call it.';
grant execute on function register_workout_photo(text,uuid,text,bigint,bigint,timestamp without time zone,integer,numeric,numeric) to service_role;

-- Whether a picture within samePictureBits (at most 7: see the band indexes) of this dHash
-- already served a check-in, anyone's.
create or replace function private.workout_picture_used(hash bigint) returns boolean
language plpgsql stable
set search_path = ''
as $$
declare
  near_0 bigint[];
  near_1 bigint[];
  near_2 bigint[];
  near_3 bigint[];
begin
  -- Each band's value and its 16 one-bit neighbours.
  select array_agg(((hash >> 48) & 65535) # flip), array_agg(((hash >> 32) & 65535) # flip),
         array_agg(((hash >> 16) & 65535) # flip), array_agg((hash & 65535) # flip)
    into near_0, near_1, near_2, near_3
    from (select 0::bigint as flip union all select 1::bigint << b from generate_series(0, 15) b) flips;
  -- One index-only scan per band (a union, not an OR, which would need the table's rows).
  return exists (
    select 1
      from (select p.dhash from private.workout_photos p where p.checkin_id is not null and ((p.dhash >> 48) & 65535) = any (near_0)
            union all
            select p.dhash from private.workout_photos p where p.checkin_id is not null and ((p.dhash >> 32) & 65535) = any (near_1)
            union all
            select p.dhash from private.workout_photos p where p.checkin_id is not null and ((p.dhash >> 16) & 65535) = any (near_2)
            union all
            select p.dhash from private.workout_photos p where p.checkin_id is not null and (p.dhash & 65535) = any (near_3)) candidates
     where bit_count((candidates.dhash # hash)::bit(64)) <= (private.workout_photo_rules() ->> 'samePictureBits')::integer);
end
$$;
comment on function private.workout_picture_used(bigint) is
  'True when a photo whose picture is within samePictureBits of this dHash already served a check-in.';

-- ---------------------------------------------------------------------------------------------
-- Chain generation: which dates a caller may generate
-- ---------------------------------------------------------------------------------------------

-- The date a caller asked for (or today in their window's zone, UTC without a window), checked:
-- within a year of today (UTC) for everyone; for users who are not trusted, only today or
-- tomorrow in their window's zone. Then the generator runs.
create or replace function private.checked_workout_chains(target date, part integer default 0, parts integer default 1)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  trusted boolean := private.is_trusted_caller();
  w public.workout_windows;
  today_utc date := (now() at time zone 'UTC')::date;
  first_day date;
  last_day date;
begin
  if me is null and not trusted then
    raise exception 'sign in to generate chains' using errcode = '42501';
  end if;
  if target < today_utc - 366 or target > today_utc + 366 then
    raise exception 'date: must be within a year of today (% to %)', today_utc - 366, today_utc + 366 using errcode = '22023';
  end if;
  if me is not null then
    select * into w from public.workout_windows where user_id = me;
  end if;
  target := coalesce(target, (now() at time zone coalesce(w.timezone, 'UTC'))::date);
  if not trusted then
    first_day := case when w.user_id is null then today_utc else private.workout_checkin_date(w, now()) end;
    last_day := (now() at time zone coalesce(w.timezone, 'UTC'))::date + 1;
    if target < first_day or target > last_day then
      raise exception 'date: you may generate chains for today and tomorrow only (% to %, %); other dates are for super admins',
        first_day, last_day, coalesce(w.timezone, 'UTC') using errcode = '42501';
    end if;
  end if;
  if not trusted and (part, parts) is distinct from (0, 1) then
    raise exception 'parts: only the scheduler and super admins run a chain generation in parts' using errcode = '42501';
  end if;
  return private.generate_workout_chains(target, part, parts);
end
$$;
comment on function private.checked_workout_chains(date, integer, integer) is
  'Chain generation with its date rules: users today and tomorrow (their window''s zone), trusted callers any date within a year, also in parts.';
grant execute on function private.checked_workout_chains(date, integer, integer) to authenticated, service_role;

-- One part of a date's chain generation (trusted callers): the daily job runs its parts side by
-- side, one call each (pg_cron: one job per part).
create or replace function public.generate_workout_chains_part(target date, part integer, parts integer)
returns jsonb
language sql
set search_path = ''
as $$ select private.checked_workout_chains(target, part, parts) $$;
comment on function public.generate_workout_chains_part(date, integer, integer) is
  'One part (0..parts-1, parts 1..64) of the chain generation of a date (today UTC by default): the groups of buckets b % parts = part. '
  'Super admins, the service role and pg_cron; parts run side by side.';
grant execute on function public.generate_workout_chains_part(date, integer, integer) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Time zones: IANA names only, on every write path
-- ---------------------------------------------------------------------------------------------

-- The names a window or location may use: IANA zones (Europe/Paris, America/New_York, UTC,
-- Etc/GMT-14), whose offsets stay within -12 and +14 hours. Postgres also accepts POSIX
-- strings ("ABC-167": 167 hours ahead) wherever a zone is expected, and pg_timezone_names
-- reads every zone file (about 30 ms), so the names are kept here, filled once. Left out:
-- the posix/ and right/ copies, posixrules, localtime and Factory (no one's zone).
create table private.time_zone_names (name text primary key check (char_length(name) <= 50));
alter table private.time_zone_names enable row level security;
comment on table private.time_zone_names is
  'IANA time zone names Postgres knows (from pg_timezone_names when the migration ran): the zones a workout window '
  'or location may use. After a tzdata upgrade that adds zones, insert the new names.';

-- Postgres reads zone names case-insensitively; the name is stored as IANA spells it.
create unique index time_zone_names_by_lower_name on private.time_zone_names (lower(name));

-- The IANA spelling of a zone name, or null when it is none (a POSIX string, an offset, a typo).
create or replace function private.canonical_timezone(tz text) returns text
language sql stable security definer
set search_path = ''
as $$ select n.name from private.time_zone_names n where lower(n.name) = lower(tz) $$;
comment on function private.canonical_timezone(text) is
  'The IANA spelling of a time zone name, or null when it is not one (POSIX strings and offsets are not).';
grant execute on function private.canonical_timezone(text) to authenticated, service_role;

-- Repairs rows whose zone is no IANA name (none expected; a migration runs it): a window
-- falls back to UTC (its times stay; its owner sees the zone and can set theirs), a location
-- forgets its zone, and a check-in counted in such a zone goes back to review (its date may
-- have been moved) and keeps UTC as its zone. Returns how many rows of each it changed.
create or replace function private.repair_workout_time_zones() returns jsonb
language plpgsql
set search_path = ''
as $$
declare
  windows integer;
  locations integer;
  checkins integer;
begin
  update public.workout_windows w set timezone = coalesce(private.canonical_timezone(w.timezone), 'UTC')
   where w.timezone is distinct from private.canonical_timezone(w.timezone);
  get diagnostics windows = row_count;
  update public.workout_locations l set timezone = private.canonical_timezone(l.timezone)
   where l.timezone is distinct from private.canonical_timezone(l.timezone);
  get diagnostics locations = row_count;
  update public.workout_checkins k
     set review_reason = case when z.name is null and k.status = 'verified'
                              then format('counted in %s, which is not a time zone: its date may be wrong', k.timezone)
                              else k.review_reason end,
         status = case when z.name is null and k.status = 'verified' then 'pending' else k.status end,
         timezone = coalesce(z.name, 'UTC')
    from public.workout_checkins o cross join lateral (select private.canonical_timezone(o.timezone) as name) z
   where o.id = k.id and k.timezone is distinct from z.name;
  get diagnostics checkins = row_count;
  if windows + locations + checkins > 0 then
    raise log 'repair_workout_time_zones: % windows, % locations, % check-ins', windows, locations, checkins;
  end if;
  return jsonb_build_object('windows', windows, 'locations', locations, 'checkins', checkins);
end
$$;
comment on function private.repair_workout_time_zones() is
  'Puts rows whose time zone is no IANA name right: windows to UTC, locations without a zone, check-ins back to review.';

