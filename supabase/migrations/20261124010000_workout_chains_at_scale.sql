-- Chain generation at scale (issue 11: 100,000 windows under 3 s, growing linearly).
--
-- Measured on the bench fixture (100,000 windows, 500 cities), the old generator took 6.6-7.0 s:
-- 1.8 s to plan and 5 s to write 134,000 rows, of which 2.1 s were foreign-key checks (seven
-- per chain and squad: each a query and a row lock on profiles) and 1.7 s index upkeep (six
-- indexes on workout_chains, most on random uuids). Chains and squads are written by one
-- function, from participants it has just read, so the references need no checks; what the
-- foreign keys gave on deletion is kept by triggers on profiles (below):
--   - workout_chains.user_id keeps its foreign key (a user's rows go with their profile);
--   - before_user_id, after_user_id and squad_id lose theirs and their indexes (no query reads
--     chains by neighbour or squad: every read starts from (user_id, date));
--   - workout_squads loses its three foreign keys to profiles and the indexes on its second and
--     third member (a deleted user's squads are found through their chain rows).
-- Deleting a profile deletes the squads the user was in (the other members' rows lose the
-- squad) and clears links to them on the chain rows of recent and future dates, where a
-- check-in or a job may act on them (a notification to a deleted user would fail its own
-- foreign key). Older rows may keep the id of a user who is gone; every reader shows such a
-- neighbour as none (private.workout_user_card is null).
-- New chain and squad ids start with the date (days since 2000 in the first four bytes), so a
-- date's rows fill the same primary-key pages instead of random ones across all dates.

alter table public.workout_chains
  drop constraint workout_chains_before_user_id_fkey,
  drop constraint workout_chains_after_user_id_fkey,
  drop constraint workout_chains_squad_id_fkey;
drop index public.workout_chains_before_user, public.workout_chains_after_user, public.workout_chains_squad;
alter table public.workout_squads
  drop constraint workout_squads_user_1_id_fkey,
  drop constraint workout_squads_user_2_id_fkey,
  drop constraint workout_squads_user_3_id_fkey;
drop index public.workout_squads_user_2, public.workout_squads_user_3;

comment on column public.workout_chains.before_user_id is
  'The neighbour whose window ends closest before this one (no foreign key: cleared for recent dates when that user is deleted).';
comment on column public.workout_chains.after_user_id is
  'The neighbour whose window starts closest after this one ends (no foreign key: cleared for recent dates when that user is deleted).';
comment on column public.workout_chains.squad_id is
  'The user''s squad that date (no foreign key: cleared when the squad goes with a deleted member).';

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
revoke execute on function private.wait_for_workout_generation() from public;
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
revoke execute on function private.forget_workout_squads_of() from public;
create trigger profiles_forget_workout_squads before delete on public.profiles
  for each row execute function private.forget_workout_squads_of();

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
revoke execute on function private.forget_workout_links_to() from public;
create trigger profiles_forget_workout_links after delete on public.profiles
  referencing old table as gone
  for each statement execute function private.forget_workout_links_to();

-- =======================================================================================
-- The plan: the same rules (see 20261122050000_workout.sql), in fewer and cheaper passes.
-- =======================================================================================

-- Everyone matched on a date: active windows of active users. Group: city (country and
-- lower-cased name), else region, compared byte-wise (collate "C": an internal key, sorted and
-- hashed often); users without either are isolated. Position as a unit vector: the squared
-- chord between two users orders exactly as their great-circle (Haversine) distance does, for
-- three products a pair instead of four sines.
drop function private.workout_participants(date);
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

drop function private.workout_chain_plan(date);
create function private.workout_chain_plan(target date)
returns table (user_id uuid, before_user_id uuid, after_user_id uuid, team_color text,
               squad_id uuid, squad_members uuid[], is_new boolean, frozen boolean)
language sql stable
set search_path = ''
as $$
  with participants as materialized (
    select * from private.workout_participants(target)
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
comment on function private.workout_chain_plan(date) is
  'The chain plan for a date (read only): neighbours for everyone, team and squad for users without a row yet.';

-- =======================================================================================
-- Applying the plan
-- =======================================================================================

create or replace function private.generate_workout_chains(target date)
returns jsonb
language plpgsql security definer
set search_path = ''
set work_mem = '64MB'
set jit = off
set enable_mergejoin = off
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
  perform pg_advisory_xact_lock_shared(hashtextextended('workout_chains:membership', 0));
  perform pg_advisory_xact_lock(hashtext('workout_chains'), target - date '2000-01-01');
  -- Nothing here can conflict (runs for a date are serialized by the lock above, and the plan
  -- only adds users without a row), so these are plain inserts, in user order (the unique
  -- index's order). Squads come from their first member's plan row, with their id. Hash joins
  -- only (enable_mergejoin off): the plan's joins are all of whole sets, and a merge join there
  -- sorted 100,000 rows for each (measured: 1.95 s against 1.59 s for the plan).
  with plan as materialized (
    select * from private.workout_chain_plan(target)
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
