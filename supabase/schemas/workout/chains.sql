-- =============================================================================================
-- Workout windows: chains, squads and teams
-- =============================================================================================
-- The day's tables (chains, squads, check-ins), the chain plan and its generation, and the
-- participant card others see (routes/workout/chains.ts). The area's overview: workout/shared.sql.

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
create index workout_squads_by_date on public.workout_squads (date, team_color);

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
