-- Chain generation at 100,000 windows, without a foreign-key check per new row.
--
-- workout_chains.user_id referenced profiles, so each of a run's 100,000 inserts looked its
-- profile up and took a KEY SHARE lock on it (a write to the profile's tuple): 0.45 s of a
-- 3.2 s run on the bench database, which also holds the feed's 150,000 profiles. The same
-- guarantees hold without it:
--  * a chain row is written only by private.generate_workout_chains (a definer; clients may
--    only read chains, and service_role may no longer insert them or change their owner);
--  * the generator writes rows only for users it has just read from workout_windows, whose
--    user_id does reference profiles, while holding the advisory lock that deleting a profile
--    takes exclusively before it touches a row (profiles_wait_for_workout_generation), so no
--    profile can go between that read and the insert;
--  * deleting a profile deletes its chain rows (private.forget_workout_squads_of, below), as
--    the cascade did;
--  * both sides run at read committed, where each statement sees what committed before it
--    (so after the lock): under repeatable read, a delete whose snapshot predates a run's rows
--    would not see them, and a run whose snapshot predates a delete would write rows for the
--    deleted user. The foreign key refused those with a serialization error; these checks
--    refuse them up front. PostgREST, pg_cron and Supabase Auth use read committed.

alter table public.workout_chains drop constraint workout_chains_user_id_fkey;

revoke insert, update on public.workout_chains from service_role;
grant update (before_user_id, after_user_id, team_color, squad_id) on public.workout_chains to service_role;

-- Before a profile goes: the squads the user was in (found through their chain rows), the other
-- members' references to those squads, then the user's chain rows themselves.
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
  delete from public.workout_chains c where c.user_id = old.id;
  return old;
end
$$;
comment on function private.forget_workout_squads_of() is
  'Before a profile is deleted: the squads the user was in go, their other members lose them, and the user''s chain rows go.';

comment on column public.workout_chains.user_id is
  'The member (a profile; no foreign key: only the generator writes rows, under the lock that profile deletion waits for, and deleting a profile deletes its rows).';

create or replace function private.wait_for_workout_generation() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if current_setting('transaction_isolation') <> 'read committed' then
    raise exception 'profiles are deleted at read committed isolation (their workout chain rows go by trigger)'
      using errcode = '0A000';
  end if;
  perform pg_advisory_xact_lock(hashtextextended('workout_chains:membership', 0));
  return null;
end
$$;
comment on function private.wait_for_workout_generation() is
  'Before a statement deletes profiles: waits for running chain generations, and holds them off until commit (read committed only).';

-- The generator, as in 20261124010000_workout_chains_at_scale.sql, with the isolation check.
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
  if current_setting('transaction_isolation') <> 'read committed' then
    raise exception 'chains are generated at read committed isolation (each statement must see the deletes before it)'
      using errcode = '0A000';
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
