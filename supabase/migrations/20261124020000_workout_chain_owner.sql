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
--  * deleting a profile deletes its chain rows (profiles_forget_workout_chains, below), as
--    the cascade did;
--  * both sides run at read committed, where each statement sees what committed before it
--    (so after the lock): under repeatable read, a delete whose snapshot predates a run's rows
--    would not see them, and a run whose snapshot predates a delete would write rows for the
--    deleted user. The foreign key refused those with a serialization error; the statement
--    triggers below refuse them up front. PostgREST, pg_cron and Supabase Auth use read
--    committed.

alter table public.workout_chains drop constraint workout_chains_user_id_fkey;

revoke insert, update on public.workout_chains from service_role;
grant update (before_user_id, after_user_id, team_color, squad_id) on public.workout_chains to service_role;

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
revoke execute on function private.forget_workout_chains_of() from public;
create trigger profiles_forget_workout_chains after delete on public.profiles
  for each row execute function private.forget_workout_chains_of();

comment on column public.workout_chains.user_id is
  'The member (a profile; no foreign key: only the generator writes rows, under the lock that profile deletion waits for, and deleting a profile deletes its rows).';

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
revoke execute on function private.require_read_committed() from public;

-- Fires before profiles_wait_for_workout_generation (triggers of a kind fire in name order).
create trigger profiles_delete_read_committed before delete on public.profiles
  for each statement execute function private.require_read_committed();
create trigger workout_chains_insert_read_committed before insert on public.workout_chains
  for each statement execute function private.require_read_committed();
