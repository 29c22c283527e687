-- =============================================================================================
-- Workout windows: weekly battles
-- =============================================================================================
-- routes/workout/battles.ts. The area's overview: workout/shared.sql.

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
