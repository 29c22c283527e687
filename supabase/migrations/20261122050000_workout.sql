-- Workout windows (issue 11): a 2-hour daily window per user, a private location, daily
-- chains (before/after neighbours), squads and red/blue teams, photo check-ins that earn
-- battle chips, weekly battles, a daily mosaic and synthetic (AI) users.
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
-- private.workout_checkin_date).

-- =======================================================================================
-- Small helpers
-- =======================================================================================

-- A zone name Postgres resolves (IANA names such as Europe/Paris or UTC; not numeric
-- offsets). Asking Postgres to use it is fast; pg_timezone_names reads every zone file.
create or replace function private.is_valid_timezone(name text) returns boolean
language plpgsql stable
set search_path = ''
as $$
begin
  if name is null or name !~ '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$' then
    return false;
  end if;
  perform now() at time zone name;
  return true;
exception when invalid_parameter_value then
  return false;
end
$$;
comment on function private.is_valid_timezone(text) is 'True for a time zone name Postgres knows (IANA names; no numeric offsets).';

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

-- =======================================================================================
-- Windows and locations
-- =======================================================================================

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
comment on table public.workout_windows is
  'One 2-hour daily workout window per user (SPEC "the service"); may cross midnight. Owners and super admins read it.';
comment on column public.workout_windows.timezone is 'IANA zone the window''s times are in (checked by a trigger).';

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
comment on table public.workout_locations is
  'Where a user works out (one per user). Private: the owner and super admins read it; matching reads it inside SQL.';

create or replace function private.check_workout_timezone(tz text) returns void
language plpgsql stable
set search_path = ''
as $$
begin
  if tz is not null and not private.is_valid_timezone(tz) then
    raise exception 'timezone: % is not an IANA time zone', tz using errcode = '22023';
  end if;
end
$$;

-- The triggers run as the writer (a client through RLS), so they may call the check.
grant execute on function private.is_valid_timezone(text), private.check_workout_timezone(text) to authenticated, service_role;

create or replace function private.prepare_workout_window() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.timezone is distinct from old.timezone then
    perform private.check_workout_timezone(new.timezone);
  end if;
  new.updated_at := now();
  return new;
end
$$;
create trigger workout_windows_prepare before insert or update on public.workout_windows
  for each row execute function private.prepare_workout_window();

create or replace function private.prepare_workout_location() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.timezone is distinct from old.timezone then
    perform private.check_workout_timezone(new.timezone);
  end if;
  new.last_updated := now();
  return new;
end
$$;
create trigger workout_locations_prepare before insert or update on public.workout_locations
  for each row execute function private.prepare_workout_location();

alter table public.workout_windows enable row level security;
alter table public.workout_locations enable row level security;
revoke all on public.workout_windows, public.workout_locations from anon, authenticated;
grant select, insert, update, delete on public.workout_windows, public.workout_locations to authenticated;
grant all on public.workout_windows, public.workout_locations to service_role;

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
grant execute on function public.setup_workout_window(text, text, time, time, text) to authenticated;

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
grant execute on function public.update_workout_location(jsonb) to authenticated;

-- =======================================================================================
-- Chains, squads, check-ins
-- =======================================================================================

create table public.workout_squads (
  id uuid primary key default gen_random_uuid(),
  date date not null,
  user_1_id uuid not null references public.profiles (id) on delete cascade,
  user_2_id uuid not null references public.profiles (id) on delete cascade,
  user_3_id uuid references public.profiles (id) on delete cascade,
  team_color text not null check (team_color in ('red', 'blue')),
  created_at timestamptz not null default now(),
  constraint workout_squads_trio unique nulls not distinct (user_1_id, date, user_2_id, user_3_id)
);
comment on table public.workout_squads is
  'Two or three users of one team for one date (unique per date and trio). Written by private.generate_workout_chains.';
create index workout_squads_user_2 on public.workout_squads (user_2_id, date);
create index workout_squads_user_3 on public.workout_squads (user_3_id, date);

create table public.workout_chains (
  id uuid primary key default gen_random_uuid(),
  date date not null,
  user_id uuid not null references public.profiles (id) on delete cascade,
  before_user_id uuid references public.profiles (id) on delete set null,
  after_user_id uuid references public.profiles (id) on delete set null,
  team_color text not null check (team_color in ('red', 'blue')),
  squad_id uuid references public.workout_squads (id) on delete set null,
  created_at timestamptz not null default now(),
  constraint workout_chains_user_date unique (user_id, date)
);
comment on table public.workout_chains is
  'A user''s place in a date''s chain: neighbours, team and squad (unique per date and user).';
create index workout_chains_by_date on public.workout_chains (date, team_color);
create index workout_chains_before_user on public.workout_chains (before_user_id);
create index workout_chains_after_user on public.workout_chains (after_user_id);
create index workout_chains_squad on public.workout_chains (squad_id);

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
  constraint workout_checkins_user_date unique (user_id, date)
);
comment on table public.workout_checkins is
  'One photo check-in per user per date, with its chips (rules 2-4) and photo validation (rule 6).';
comment on column public.workout_checkins.review_reason is
  'Why the check-in waits for review (pending) or was rejected; null once verified automatically.';
comment on column public.workout_checkins.photo_object is 'Storage object name in bucket workout-checkins.';
create index workout_checkins_by_date on public.workout_checkins (date, status);
create index workout_checkins_review on public.workout_checkins (status, created_at desc, id desc) where status = 'pending';
create index workout_checkins_chain on public.workout_checkins (chain_id);
create index workout_checkins_reviewer on public.workout_checkins (reviewed_by);

alter table public.workout_squads enable row level security;
alter table public.workout_chains enable row level security;
alter table public.workout_checkins enable row level security;
revoke all on public.workout_squads, public.workout_chains, public.workout_checkins from anon, authenticated;
grant select on public.workout_squads, public.workout_chains, public.workout_checkins to authenticated;
grant all on public.workout_squads, public.workout_chains, public.workout_checkins to service_role;

create policy "workout_chains: members and super admins read" on public.workout_chains
  for select to authenticated using (user_id = (select auth.uid()) or (select private.is_super_admin()));
create policy "workout_squads: members and super admins read" on public.workout_squads
  for select to authenticated
  using ((select auth.uid()) in (user_1_id, user_2_id, user_3_id) or (select private.is_super_admin()));
create policy "workout_checkins: owners and super admins read" on public.workout_checkins
  for select to authenticated using (user_id = (select auth.uid()) or (select private.is_super_admin()));
comment on policy "workout_chains: members and super admins read" on public.workout_chains is
  'Neighbours and squad mates are read through the chain/squad functions, which show no location.';

-- =======================================================================================
-- Chain generation (rule 1): one set-based plan, applied by one statement.
-- =======================================================================================

-- Everyone matched on a date: active windows of active users. Group: city (country and
-- lower-cased name), else region; users without either are isolated (no neighbours, no squad).
create or replace function private.workout_participants(target date)
returns table (user_id uuid, grp text, start_utc timestamptz, lat numeric, lng numeric)
language sql stable
set search_path = ''
as $$
  select w.user_id,
         case when l.city is not null then 'c:' || coalesce(l.country, '') || ':' || lower(l.city)
              when l.region is not null then 'r:' || coalesce(l.country, '') || ':' || lower(l.region) end,
         (target + w.window_start_time) at time zone w.timezone,
         l.latitude, l.longitude
    from public.workout_windows w
    join public.profiles p on p.id = w.user_id and p.is_active
    left join public.workout_locations l on l.user_id = w.user_id
   where w.is_active
$$;

-- The plan for a date: every participant's neighbours, and team and squad for those without a
-- chain row yet. Before: the window ending closest at or before the current start; after: the
-- window starting closest at or after the current end; ties by Haversine distance, then user
-- id. The nearest instants come from window functions over the group's start and end events
-- (no per-user scan); only users tied at that instant are compared by distance.
-- Teams: users without a row yet alternate red/blue in start order inside their group,
-- starting with the team the group has fewer of. Squads: consecutive members of one team and
-- group in threes; a remainder of 1 makes the last four two pairs; a lone member has none.
create or replace function private.workout_chain_plan(target date)
returns table (user_id uuid, before_user_id uuid, after_user_id uuid, team_color text,
               squad_key text, is_new boolean, frozen boolean, start_utc timestamptz)
language sql stable
set search_path = ''
as $$
  with participants as materialized (
    select * from private.workout_participants(target)
  ),
  -- Positions in radians once per user: the tie-break below orders candidates by the
  -- Haversine term hav = sin²(dlat/2) + cos(lat1)cos(lat2)sin²(dlng/2), which orders exactly
  -- as the distance 2R·asin(√hav) does (private.haversine_km), at a fraction of the cost of a
  -- function call per candidate pair.
  grouped as materialized (
    select p.*, radians(p.lat::double precision) as rlat, radians(p.lng::double precision) as rlng,
           cos(radians(p.lat::double precision)) as cos_lat
      from participants p where p.grp is not null
  ),
  -- Each start event carries its user, group and position, so the tie join below is on
  -- (group, instant) alone.
  before_time as (
    select e.user_id, e.grp, e.rlat, e.rlng, e.cos_lat, e.t_before from (
      select ev.kind, ev.user_id, ev.grp, ev.rlat, ev.rlng, ev.cos_lat,
             max(ev.t) filter (where ev.kind = 0) over (partition by ev.grp order by ev.t, ev.kind
                                                         rows between unbounded preceding and current row) as t_before
        from (select g.grp, g.start_utc + interval '2 hours' as t, 0 as kind, null::uuid as user_id,
                     null::double precision as rlat, null::double precision as rlng, null::double precision as cos_lat from grouped g
              union all
              select g.grp, g.start_utc, 1, g.user_id, g.rlat, g.rlng, g.cos_lat from grouped g) ev
    ) e where e.kind = 1 and e.t_before is not null
  ),
  after_time as (
    select e.user_id, e.grp, e.rlat, e.rlng, e.cos_lat, e.t_after from (
      select ev.kind, ev.user_id, ev.grp, ev.rlat, ev.rlng, ev.cos_lat,
             min(ev.t) filter (where ev.kind = 0) over (partition by ev.grp order by ev.t desc, ev.kind
                                                         rows between unbounded preceding and current row) as t_after
        from (select g.grp, g.start_utc as t, 0 as kind, null::uuid as user_id,
                     null::double precision as rlat, null::double precision as rlng, null::double precision as cos_lat from grouped g
              union all
              select g.grp, g.start_utc + interval '2 hours', 1, g.user_id, g.rlat, g.rlng, g.cos_lat from grouped g) ev
    ) e where e.kind = 1 and e.t_after is not null
  ),
  before_pick as (
    select distinct on (b.user_id) b.user_id, v.user_id as neighbour
      from before_time b
      join grouped v on v.grp = b.grp and v.start_utc = b.t_before - interval '2 hours'
     order by b.user_id,
              power(sin((v.rlat - b.rlat) / 2), 2) + b.cos_lat * v.cos_lat * power(sin((v.rlng - b.rlng) / 2), 2) nulls last,
              v.user_id
  ),
  after_pick as (
    select distinct on (a.user_id) a.user_id, v.user_id as neighbour
      from after_time a
      join grouped v on v.grp = a.grp and v.start_utc = a.t_after
     order by a.user_id,
              power(sin((v.rlat - a.rlat) / 2), 2) + a.cos_lat * v.cos_lat * power(sin((v.rlng - a.rlng) / 2), 2) nulls last,
              v.user_id
  ),
  existing as (
    select c.user_id, c.team_color,
           exists (select 1 from public.workout_checkins k where k.user_id = c.user_id and k.date = target) as has_checkin
      from public.workout_chains c
     where c.date = target
  ),
  team_counts as (
    select coalesce(p.grp, '') as team_group,
           count(*) filter (where e.team_color = 'red') as red,
           count(*) filter (where e.team_color = 'blue') as blue
      from participants p join existing e on e.user_id = p.user_id
     group by 1
  ),
  newcomers as (
    select p.user_id, p.grp, p.start_utc,
           case when (row_number() over w - 1) % 2 = 0
                then case when coalesce(t.red, 0) <= coalesce(t.blue, 0) then 'red' else 'blue' end
                else case when coalesce(t.red, 0) <= coalesce(t.blue, 0) then 'blue' else 'red' end
           end as team_color
      from participants p
      left join team_counts t on t.team_group = coalesce(p.grp, '')
     where not exists (select 1 from existing e where e.user_id = p.user_id)
    window w as (partition by coalesce(p.grp, '') order by p.start_utc, p.user_id)
  ),
  squads as (
    select n.user_id,
           (row_number() over w - 1)::integer as i,
           (count(*) over (partition by n.grp, n.team_color))::integer as size
      from newcomers n
     where n.grp is not null
    window w as (partition by n.grp, n.team_color order by n.start_utc, n.user_id)
  )
  select p.user_id, bp.neighbour, ap.neighbour,
         coalesce(e.team_color, n.team_color),
         case when s.size is null or s.size = 1 then null
              else p.grp || '|' || n.team_color || '|' ||
                   case when s.size % 3 = 1 and s.i >= s.size - 4 then (s.size - 4) / 3 + (s.i - (s.size - 4)) / 2
                        else s.i / 3 end
         end,
         e.user_id is null,
         coalesce(e.has_checkin, false),
         p.start_utc
    from participants p
    left join existing e on e.user_id = p.user_id
    left join newcomers n on n.user_id = p.user_id
    left join squads s on s.user_id = p.user_id
    left join before_pick bp on bp.user_id = p.user_id
    left join after_pick ap on ap.user_id = p.user_id
$$;
comment on function private.workout_chain_plan(date) is
  'The chain plan for a date (read only): neighbours for everyone, team and squad for users without a row yet.';

-- Applies the plan: new users get a row (and their squads); rows whose user has not checked in
-- get their neighbours refreshed; rows with a check-in keep every link it counted on. A
-- per-date advisory lock makes concurrent runs for one date run one after the other.
create or replace function private.generate_workout_chains(target date)
returns jsonb
language plpgsql security definer
set search_path = ''
set work_mem = '64MB'
set jit = off
as $$
declare
  result jsonb;
begin
  if target is null then
    raise exception 'date: required' using errcode = '22023';
  end if;
  if (select auth.uid()) is null and not private.is_trusted_caller() then
    raise exception 'sign in to generate chains' using errcode = '42501';
  end if;
  raise log 'workout chains %: start', target;
  perform pg_advisory_xact_lock(hashtext('workout_chains'), target - date '2000-01-01');
  with plan as materialized (
    select * from private.workout_chain_plan(target)
  ),
  new_squads as (
    insert into public.workout_squads (date, user_1_id, user_2_id, user_3_id, team_color)
    select target, s.members[1], s.members[2], s.members[3], s.team_color
      from (select p.squad_key, p.team_color, array_agg(p.user_id order by p.start_utc, p.user_id) as members
              from plan p where p.is_new and p.squad_key is not null
             group by p.squad_key, p.team_color) s
    on conflict on constraint workout_squads_trio do nothing
    returning id, user_1_id, user_2_id, user_3_id
  ),
  squad_members as (
    select s.id, m.user_id
      from new_squads s cross join lateral unnest(array[s.user_1_id, s.user_2_id, s.user_3_id]) m(user_id)
     where m.user_id is not null
  ),
  added as (
    insert into public.workout_chains (date, user_id, before_user_id, after_user_id, team_color, squad_id)
    select target, p.user_id, p.before_user_id, p.after_user_id, p.team_color, sm.id
      from plan p left join squad_members sm on sm.user_id = p.user_id
     where p.is_new
    on conflict on constraint workout_chains_user_date do nothing
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
  select jsonb_build_object(
           'date', target,
           'participants', (select count(*) from plan),
           'created', (select count(*) from added),
           'relinked', (select count(*) from relinked),
           'squadsCreated', (select count(*) from new_squads))
    into result;
  raise log 'workout chains %: done %', target, result;
  return result;
end
$$;
comment on function private.generate_workout_chains(date) is
  'Daily chains, squads and teams for a date; repeatable (adds newcomers, never duplicates, keeps checked-in links).';
grant execute on function private.generate_workout_chains(date) to authenticated, service_role;

create or replace function public.generate_workout_chains(target date default null)
returns jsonb
language sql
set search_path = ''
as $$ select private.generate_workout_chains(coalesce(target, (now() at time zone 'UTC')::date)) $$;
comment on function public.generate_workout_chains(date) is
  'Generates (or completes) the chains of a date, today (UTC) by default. Any signed-in user, the service role, pg_cron.';
grant execute on function public.generate_workout_chains(date) to authenticated, service_role;

select cron.schedule('workout-generate-chains', '0 0 * * *', 'select public.generate_workout_chains()');

-- =======================================================================================
-- Reading chains, squads and the day's state
-- =======================================================================================

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

create or replace function private.workout_checkin_json(k public.workout_checkins)
returns jsonb
language sql stable
set search_path = ''
as $$
  select jsonb_build_object(
    'id', k.id, 'userId', k.user_id, 'chainId', k.chain_id, 'date', k.date, 'activityType', k.activity_type,
    'photoUrl', k.photo_url, 'photoTimestamp', k.photo_timestamp, 'locationLat', k.location_lat,
    'locationLng', k.location_lng, 'status', k.status, 'reviewReason', k.review_reason,
    'chainContinued', k.chain_continued, 'streakDays', k.streak_days,
    'battleChipsEarned', k.battle_chips_earned, 'createdAt', k.created_at)
$$;

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

create or replace function private.workout_checkins_of(users uuid[], target date)
returns jsonb
language sql stable security definer
set search_path = ''
as $$
  select coalesce(jsonb_agg(private.workout_checkin_json(k) order by k.created_at, k.id), '[]'::jsonb)
    from public.workout_checkins k
   where k.user_id = any (users) and k.date = target
$$;

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
grant execute on function public.workout_chain(date) to authenticated;

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
grant execute on function public.workout_squad(date) to authenticated;

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
grant execute on function public.workout_team_stats(date) to authenticated, service_role;

-- =======================================================================================
-- Check-ins and chips (rules 2-4, 6)
-- =======================================================================================

-- The photo bucket (public; the api function writes it under the user's own prefix).
insert into storage.buckets (id, name, public, file_size_limit, allowed_mime_types)
values ('workout-checkins', 'workout-checkins', true, 10 * 1024 * 1024,
        array['image/jpeg', 'image/png', 'image/gif', 'image/webp'])
on conflict (id) do update set public = excluded.public, file_size_limit = excluded.file_size_limit,
  allowed_mime_types = excluded.allowed_mime_types;
insert into storage.buckets (id, name, public, file_size_limit, allowed_mime_types)
values ('workout-mosaics', 'workout-mosaics', true, 5 * 1024 * 1024, array['image/png'])
on conflict (id) do update set public = excluded.public, file_size_limit = excluded.file_size_limit,
  allowed_mime_types = excluded.allowed_mime_types;

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

-- Minutes of grace around the window for a photo's capture time, and how far (km) from the
-- user's location a photo may be taken before it waits for review.
create or replace function private.workout_photo_rules() returns jsonb
language sql immutable
set search_path = ''
as $$ select '{"graceMinutes": 30, "maxDistanceKm": 50}'::jsonb $$;

-- One check-in, its chips, validation and the baton pass, in one transaction. The unique key
-- (user_id, date) makes a second or concurrent one a 23505 (409).
create or replace function private.record_workout_checkin(
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
  auto_status text default null
) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  w public.workout_windows;
  loc public.workout_locations;
  c public.workout_chains;
  d date;
  starts timestamptz;
  taken timestamptz;
  continued boolean;
  early boolean;
  streak integer;
  chips integer;
  reason text;
  distance double precision;
  grace interval := make_interval(mins => (private.workout_photo_rules() ->> 'graceMinutes')::integer);
  row public.workout_checkins;
  notified boolean := false;
begin
  select * into w from public.workout_windows where user_id = checkin_user;
  if not found then
    raise exception 'set up a workout window before checking in' using errcode = '22023';
  end if;
  if activity_type is null or btrim(activity_type) = '' or char_length(activity_type) > 50 then
    raise exception 'activityType: must be 1 to 50 characters' using errcode = '22023';
  end if;
  select * into loc from public.workout_locations where user_id = checkin_user;
  d := private.workout_checkin_date(w, at);
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

  -- Rule 6: the capture time (EXIF, with its offset or else the window's zone) inside the
  -- window with grace, and the photo near the user's location; else it waits for review.
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
             to_char((starts + interval '2 hours') at time zone 'UTC', 'HH24:MI'), private.workout_photo_rules() ->> 'graceMinutes')
    when distance > (private.workout_photo_rules() ->> 'maxDistanceKm')::numeric then
      format('photo taken %s km from your location', round(distance::numeric))
  end;

  begin
    insert into public.workout_checkins as k (user_id, chain_id, date, activity_type, photo_url, photo_object,
      photo_timestamp, location_lat, location_lng, status, review_reason, chain_continued, streak_days,
      battle_chips_earned, created_at)
    values (checkin_user, c.id, d, btrim(activity_type), photo_url, photo_object, coalesce(taken, at),
      coalesce(photo_lat, given_lat), coalesce(photo_lng, given_lng),
      coalesce(auto_status, case when reason is null then 'verified' else 'pending' end),
      case when auto_status is null then reason end, continued, streak, chips, at)
    returning k.* into row;
  exception when unique_violation then
    raise exception 'already checked in for %', d using errcode = '23505';
  end;

  if c.after_user_id is not null then
    perform private.notify(c.after_user_id, 'workout.baton_pass', jsonb_build_object(
      'date', d, 'fromUserId', checkin_user, 'checkinId', row.id));
    notified := true;
  end if;
  return jsonb_build_object('checkin', private.workout_checkin_json(row), 'battleChipsEarned', chips,
    'chainStatus', case when continued then 'continued' else 'broken' end, 'nextUserNotified', notified);
end
$$;
comment on function private.record_workout_checkin(uuid, text, text, text, timestamp, integer, numeric, numeric, numeric, numeric, timestamptz, text) is
  'Writes one check-in with its chips and validation and tells the after user; not granted to clients.';

-- The caller's check-in. The photo must be an object the api stored under the caller's prefix.
create or replace function private.workout_checkin(
  activity_type text, photo_url text, photo_object text, photo_taken_local timestamp,
  photo_offset_minutes integer, photo_lat numeric, photo_lng numeric, latitude numeric, longitude numeric
) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
begin
  if me is null then
    raise exception 'sign in to check in' using errcode = '42501';
  end if;
  if photo_object is null or photo_object not like me::text || '/%'
     or photo_url is null or right(photo_url, char_length('/storage/v1/object/public/workout-checkins/' || photo_object))
        <> '/storage/v1/object/public/workout-checkins/' || photo_object
     or not exists (select 1 from storage.objects o where o.bucket_id = 'workout-checkins' and o.name = photo_object) then
    raise exception 'photo: not a stored check-in photo of yours' using errcode = '22023';
  end if;
  return private.record_workout_checkin(me, activity_type, photo_url, photo_object, photo_taken_local,
    photo_offset_minutes, photo_lat, photo_lng, latitude, longitude);
end
$$;
grant execute on function private.workout_checkin(text, text, text, timestamp, integer, numeric, numeric, numeric, numeric) to authenticated;

create or replace function public.workout_checkin(
  activity_type text, photo_url text, photo_object text, photo_taken_local timestamp default null,
  photo_offset_minutes integer default null, photo_lat numeric default null, photo_lng numeric default null,
  latitude numeric default null, longitude numeric default null
) returns jsonb
language sql
set search_path = ''
as $$ select private.workout_checkin(activity_type, photo_url, photo_object, photo_taken_local,
        photo_offset_minutes, photo_lat, photo_lng, latitude, longitude) $$;
comment on function public.workout_checkin(text, text, text, timestamp, integer, numeric, numeric, numeric, numeric) is
  'The caller''s check-in for the current window date (POST /api/workout-window/checkin stores the photo first).';
grant execute on function public.workout_checkin(text, text, text, timestamp, integer, numeric, numeric, numeric, numeric) to authenticated;

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
grant execute on function public.my_workout_checkin(date) to authenticated;

-- The day's check-ins (photos are public) with the day's participant stats.
create or replace function private.workout_day_checkins(target date, page_size integer default 100, before_created_at timestamptz default null)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if (select auth.uid()) is null then
    raise exception 'sign in' using errcode = '42501';
  end if;
  return jsonb_build_object(
    'checkins', (select coalesce(jsonb_agg(private.workout_checkin_json(k)
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
grant execute on function private.workout_day_checkins(date, integer, timestamptz) to authenticated;
create or replace function public.workout_day_checkins(target date, page_size integer default 100, before_created_at timestamptz default null)
returns jsonb
language sql stable set search_path = '' as $$ select private.workout_day_checkins(target, page_size, before_created_at) $$;
comment on function public.workout_day_checkins(date, integer, timestamptz) is
  'A page of the date''s check-ins, newest first, and {total, completed, failed} over the date''s participants.';
grant execute on function public.workout_day_checkins(date, integer, timestamptz) to authenticated;

-- Review (super admins): pending check-ins, and verify or reject one. A rejected check-in's
-- chips no longer count (battles, team stats and day status read only non-rejected ones).
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
  return (select coalesce(jsonb_agg(private.workout_checkin_json(k)
                                      || jsonb_build_object('user', private.workout_user_card(k.user_id))
                                    order by k.created_at desc, k.id desc), '[]'::jsonb)
            from (select * from public.workout_checkins k
                   where k.status = review_status and (before_created_at is null or k.created_at < before_created_at)
                   order by k.created_at desc, k.id desc limit least(greatest(page_size, 1), 200)) k);
end
$$;
grant execute on function private.workout_review_queue(text, integer, timestamptz) to authenticated, service_role;
create or replace function public.workout_review_queue(review_status text default 'pending', page_size integer default 50, before_created_at timestamptz default null)
returns jsonb
language sql stable set search_path = '' as $$ select private.workout_review_queue(review_status, page_size, before_created_at) $$;
comment on function public.workout_review_queue(text, integer, timestamptz) is 'Super admins: check-ins by status, newest first.';
grant execute on function public.workout_review_queue(text, integer, timestamptz) to authenticated, service_role;

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
revoke execute on function private.recompute_later_streaks(public.workout_checkins) from public, anon, authenticated;

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
grant execute on function private.review_workout_checkin(uuid, text, text) to authenticated, service_role;
create or replace function public.review_workout_checkin(checkin_id uuid, verdict text, reason text default null)
returns jsonb
language sql set search_path = '' as $$ select private.review_workout_checkin(checkin_id, verdict, reason) $$;
comment on function public.review_workout_checkin(uuid, text, text) is 'Super admins: verify or reject (with a reason) a check-in.';
grant execute on function public.review_workout_checkin(uuid, text, text) to authenticated, service_role;

-- =======================================================================================
-- Weekly battles (planned rows; rule 4)
-- =======================================================================================

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
comment on table public.workout_battles is
  'One red-versus-blue battle per Monday-Sunday week. Every signed-in user reads them; written by SQL functions only.';
alter table public.workout_battles enable row level security;
revoke all on public.workout_battles from anon, authenticated;
grant select on public.workout_battles to authenticated;
grant all on public.workout_battles to service_role;
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
grant execute on function public.generate_weekly_battle(date) to authenticated, service_role;
select cron.schedule('workout-weekly-battle', '0 0 * * 1', 'select public.generate_weekly_battle()');

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
grant execute on function public.workout_battle_week(date) to authenticated, service_role;

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
grant execute on function public.execute_workout_battle(date) to authenticated, service_role;
-- Sunday 20:00 UTC: the current week's battle.
select cron.schedule('workout-execute-battle', '0 20 * * 0',
  $$select public.execute_workout_battle(date_trunc('week', now() at time zone 'UTC')::date)$$);

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
grant execute on function public.refresh_workout_battle_standing(date) to authenticated, service_role;
select cron.schedule('workout-battle-standing', '5 0 * * *', 'select public.refresh_workout_battle_standing()');

-- Realtime pushes notifications when the publication exists (hosted Supabase, supabase start).
do $$
begin
  if exists (select 1 from pg_publication where pubname = 'supabase_realtime')
     and not exists (select 1 from pg_publication_tables
                      where pubname = 'supabase_realtime' and schemaname = 'public' and tablename = 'notifications') then
    alter publication supabase_realtime add table public.notifications;
  end if;
end
$$;

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
grant execute on function public.workout_battle_history(integer) to authenticated;

-- =======================================================================================
-- The daily mosaic (planned rows): the api function draws the PNG; SQL keeps the record.
-- =======================================================================================

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
comment on table public.workout_mosaics is
  'One mosaic image per date: a tile per participant by team and status, with each tile''s coordinates. Readable by signed-in users.';
alter table public.workout_mosaics enable row level security;
revoke all on public.workout_mosaics from anon, authenticated;
grant select on public.workout_mosaics to authenticated;
grant all on public.workout_mosaics to service_role;
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
grant execute on function public.workout_mosaic_participants(date) to authenticated, service_role;

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
grant execute on function private.save_workout_mosaic(date, text, text, jsonb) to authenticated, service_role;
create or replace function public.save_workout_mosaic(target date, image_url text, object_name text, sections jsonb)
returns jsonb
language sql set search_path = '' as $$ select private.save_workout_mosaic(target, image_url, object_name, sections) $$;
comment on function public.save_workout_mosaic(date, text, text, jsonb) is 'Super admins, the scheduler: stores a drawn mosaic.';
grant execute on function public.save_workout_mosaic(date, text, text, jsonb) to authenticated, service_role;

-- =======================================================================================
-- Synthetic (AI) users (super admins; rule 5)
-- =======================================================================================

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
comment on table public.workout_ai_users is
  'Synthetic users'' generation settings (profiles.is_ai = true). Super admins read them; active ones check in by a job.';
alter table public.workout_ai_users enable row level security;
revoke all on public.workout_ai_users from anon, authenticated;
grant select on public.workout_ai_users to authenticated;
grant all on public.workout_ai_users to service_role;
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
insert into private.workout_ai_cities values
  ('West Coast', 'Los Angeles', 'CA', 'America/Los_Angeles', 34.05223, -118.24368),
  ('West Coast', 'San Francisco', 'CA', 'America/Los_Angeles', 37.77493, -122.41942),
  ('West Coast', 'Seattle', 'WA', 'America/Los_Angeles', 47.60621, -122.33207),
  ('West Coast', 'Portland', 'OR', 'America/Los_Angeles', 45.51523, -122.67837),
  ('East Coast', 'New York', 'NY', 'America/New_York', 40.71278, -74.00594),
  ('East Coast', 'Boston', 'MA', 'America/New_York', 42.36008, -71.05888),
  ('East Coast', 'Philadelphia', 'PA', 'America/New_York', 39.95258, -75.16522),
  ('East Coast', 'Washington', 'DC', 'America/New_York', 38.90719, -77.03687),
  ('Midwest', 'Chicago', 'IL', 'America/Chicago', 41.87811, -87.62980),
  ('Midwest', 'Minneapolis', 'MN', 'America/Chicago', 44.97775, -93.26501),
  ('Midwest', 'Detroit', 'MI', 'America/Detroit', 42.33143, -83.04575),
  ('South', 'Houston', 'TX', 'America/Chicago', 29.76043, -95.36980),
  ('South', 'Atlanta', 'GA', 'America/New_York', 33.74900, -84.38798),
  ('South', 'Nashville', 'TN', 'America/Chicago', 36.16266, -86.78160),
  ('Mountain West', 'Denver', 'CO', 'America/Denver', 39.73924, -104.99025),
  ('Mountain West', 'Salt Lake City', 'UT', 'America/Denver', 40.76078, -111.89105),
  ('Mountain West', 'Phoenix', 'AZ', 'America/Phoenix', 33.44838, -112.07404);

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
grant execute on function private.generate_ai_users(integer, jsonb) to authenticated, service_role;
create or replace function public.generate_ai_users(how_many integer, config jsonb default null) returns jsonb
language sql set search_path = '' as $$ select private.generate_ai_users(how_many, config) $$;
comment on function public.generate_ai_users(integer, jsonb) is
  'Super admins: creates 1..1000 synthetic users (account, profile, window, location) in bulk from SPEC''s distributions.';
grant execute on function public.generate_ai_users(integer, jsonb) to authenticated, service_role;

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
grant execute on function private.list_ai_users(integer, uuid) to authenticated, service_role;
create or replace function public.list_ai_users(page_size integer default 1000, after_id uuid default null) returns jsonb
language sql stable set search_path = '' as $$ select private.list_ai_users(page_size, after_id) $$;
comment on function public.list_ai_users(integer, uuid) is 'Super admins: synthetic users with their profiles, by id.';
grant execute on function public.list_ai_users(integer, uuid) to authenticated, service_role;

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
grant execute on function public.delete_ai_user(uuid) to authenticated, service_role;

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
grant execute on function private.toggle_ai_user(uuid, boolean) to authenticated, service_role;
create or replace function public.toggle_ai_user(target_user uuid, active boolean) returns jsonb
language sql set search_path = '' as $$ select private.toggle_ai_user(target_user, active) $$;
comment on function public.toggle_ai_user(uuid, boolean) is 'Super admins: activates or pauses a synthetic user (and its matching).';
grant execute on function public.toggle_ai_user(uuid, boolean) to authenticated, service_role;

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
grant execute on function public.admin_workout_teams(date) to authenticated, service_role;
create index workout_squads_by_date on public.workout_squads (date, team_color);

-- =======================================================================================
-- The five-minute job: synthetic users' check-ins, reminders 30 minutes before a window, and
-- "chain broken" for the after user of a window that ended without a check-in (Events 3).
-- =======================================================================================

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
      cross join lateral (select ((at + interval '30 minutes') at time zone w.timezone)::date as day) d
     where w.is_active
  ), sent as (
    insert into public.notifications (user_id, type, payload)
    select r.user_id, 'workout.checkin_reminder', jsonb_build_object('date', r.day, 'windowStartsAt', r.starts)
      from due_reminders r
     where r.starts > at and r.starts <= at + interval '30 minutes'
       and not exists (select 1 from public.workout_checkins k where k.user_id = r.user_id and k.date = r.day)
       and not exists (select 1 from public.notifications n where n.user_id = r.user_id and n.type = 'workout.checkin_reminder'
                          and n.created_at > at - interval '1 day' and n.payload ->> 'date' = r.day::text)
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
     where not exists (select 1 from public.notifications n where n.user_id = e.after_user_id and n.type = 'workout.chain_broken'
                          and n.created_at > at - interval '2 days' and n.payload ->> 'date' = e.date::text)
    returning 1
  )
  select count(*) into broken from sent;
  raise log 'workout jobs at %: % synthetic check-ins (% failed), % reminders, % chain-broken', at, ai_done, ai_failed, reminders, broken;
  return jsonb_build_object('aiCheckins', ai_done, 'aiFailed', ai_failed, 'reminders', reminders, 'chainBroken', broken);
end
$$;
comment on function private.run_workout_jobs(timestamptz) is
  'Every 5 minutes: synthetic users'' check-ins (seeded), check-in reminders and chain-broken notifications.';
select cron.schedule('workout-five-minute-jobs', '*/5 * * * *', 'select private.run_workout_jobs()');

-- 00:30 UTC: the mosaic of the day that just ended, drawn by the api function.
select cron.schedule('workout-daily-mosaic', '30 0 * * *', $job$select net.http_post(
  url := (select decrypted_secret from vault.decrypted_secrets where name = 'project_url')
         || '/functions/v1/api/workout-window/mosaic/generate/' || ((now() at time zone 'UTC')::date - 1)::text,
  headers := jsonb_build_object('Content-Type', 'application/json',
    'x-cron-secret', (select decrypted_secret from vault.decrypted_secrets where name = 'WORKOUT_WINDOW_CRON_SECRET')),
  body := '{}'::jsonb, timeout_milliseconds := 60000)$job$);

notify pgrst, 'reload schema';
