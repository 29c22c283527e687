-- =============================================================================================
-- Workout windows: the five-minute job and deleting a profile
-- =============================================================================================
-- The scheduled job (routes/workout/ and the pg_cron schedules in migrations) and the triggers that
-- keep chains and squads whole when a profile goes. The area's overview: workout/shared.sql.

-- ---------------------------------------------------------------------------------------------
-- The five-minute job: synthetic users' check-ins, reminders 30 minutes before a window, and
-- "chain broken" for the after user of a window that ended without a check-in (Events 3).
-- A reminder is written up to 35 minutes ahead (the job runs every 5), and its push goes out at
-- exactly 30 minutes before the start (notifications/push_delivery.sql: the outbox's deliver_after).
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
  pruned integer;
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
  pruned := private.prune_workout_checkin_events(at);
  raise log 'workout jobs at %: % synthetic check-ins (% failed), % reminders, % chain-broken, % live check-in events pruned',
    at, ai_done, ai_failed, reminders, broken, pruned;
  return jsonb_build_object('aiCheckins', ai_done, 'aiFailed', ai_failed, 'reminders', reminders, 'chainBroken', broken,
                            'checkinEventsPruned', pruned);
end
$$;
comment on function private.run_workout_jobs(timestamptz) is
  'Every 5 minutes: synthetic users'' check-ins (seeded), check-in reminders, chain-broken notifications and pruning live check-in events.';

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
