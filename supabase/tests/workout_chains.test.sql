-- Workout windows: chain generation (ordering, neighbours, ties, teams, squads of
-- three and two, isolated users, repeat runs), chips (every rule and the floor), photo
-- validation, unique keys, robot power, battle determinism and the policies. The generator is
-- called directly (private.generate_workout_chains) for the fixture's fixed dates; the dates a
-- caller may generate are tested through public.generate_workout_chains below and over HTTP.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(125);

-- ---------------------------------------------------------------------------------------
-- Fixture: Monday 2030-01-07. City A (Springfield, US) has seven users; windows in UTC unless
-- said. u5's window is 07:00 in New York = 12:00 UTC. u6 and u7 are identical (tie by id).
--   u1 06-08 (0,0)      u2 08-10 (0,0.1)   u3 08-10 (0,0.01)   u4 10-12 (0,0.02)
--   u5 12-14 UTC (NY)   u6 14-16 (1,1)     u7 14-16 (1,1)
-- City B has u8 alone; u9 has no location (isolated). u10 joins later (16-18, city A).
-- ---------------------------------------------------------------------------------------
select tests.create_user(jsonb_build_object('id', ('d1100000-0000-4000-8000-0000000000' || lpad(i::text, 2, '0'))::uuid,
         'email', 'pgtap-workout-' || i || '@example.test', 'raw_user_meta_data', jsonb_build_object('full_name', 'Workout ' || i)))
  from generate_series(1, 12) i;
update public.profiles set role = 'super_admin' where id = 'd1100000-0000-4000-8000-000000000012';

create function pg_temp.u(i integer) returns uuid language sql immutable as
  $$ select ('d1100000-0000-4000-8000-0000000000' || lpad(i::text, 2, '0'))::uuid $$;
grant execute on function pg_temp.u(integer) to authenticated;

insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone) values
  (pg_temp.u(1), 'cardio', '06:00', '08:00', 'UTC'),
  (pg_temp.u(2), 'walk', '08:00', '10:00', 'UTC'),
  (pg_temp.u(3), 'walk', '08:00', '10:00', 'UTC'),
  (pg_temp.u(4), 'strength', '10:00', '12:00', 'UTC'),
  (pg_temp.u(5), 'reading', '07:00', '09:00', 'America/New_York'),
  (pg_temp.u(6), 'cardio', '14:00', '16:00', 'UTC'),
  (pg_temp.u(7), 'cardio', '14:00', '16:00', 'UTC'),
  (pg_temp.u(8), 'cardio', '14:00', '16:00', 'UTC'),
  (pg_temp.u(9), 'cardio', '15:00', '17:00', 'UTC');
insert into public.workout_locations (user_id, latitude, longitude, city, country) values
  (pg_temp.u(1), 0, 0, 'Springfield', 'US'),
  (pg_temp.u(2), 0, 0.1, 'Springfield', 'US'),
  (pg_temp.u(3), 0, 0.01, 'springfield', 'US'),
  (pg_temp.u(4), 0, 0.02, 'Springfield', 'US'),
  (pg_temp.u(5), 0, 0.03, 'Springfield', 'US'),
  (pg_temp.u(6), 1, 1, 'Springfield', 'US'),
  (pg_temp.u(7), 1, 1, 'Springfield', 'US'),
  (pg_temp.u(8), 5, 5, 'Shelbyville', 'US');

-- Window rules live in the table: exactly two hours, a real time zone, custom only with other.
select throws_ok($$insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
                   values (pg_temp.u(10), 'cardio', '06:00', '09:00', 'UTC')$$, '23514', null, 'a 3-hour window is refused');
select throws_ok($$insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
                   values (pg_temp.u(10), 'cardio', '06:00', '08:00', 'Mars/Olympus')$$, '22023', null, 'an unknown time zone is refused');
select throws_ok($$insert into public.workout_windows (user_id, activity_type, custom_activity, window_start_time, window_end_time, timezone)
                   values (pg_temp.u(10), 'cardio', 'rowing', '06:00', '08:00', 'UTC')$$, '23514', null, 'customActivity only with other');
select lives_ok($$insert into public.workout_windows (user_id, activity_type, custom_activity, window_start_time, window_end_time, timezone)
                  values (pg_temp.u(11), 'other', 'rowing', '23:00', '01:00', 'UTC')$$, 'a window may cross midnight');
delete from public.workout_windows where user_id = pg_temp.u(11);

-- ---------------------------------------------------------------------------------------
-- First run.
-- ---------------------------------------------------------------------------------------
select is(private.generate_workout_chains('2030-01-07') - 'date',
          '{"participants": 9, "created": 9, "relinked": 0, "squadsCreated": 3}'::jsonb, 'first run: 9 rows, 3 squads');

create function pg_temp.link(i integer) returns text language sql stable as $$
  select coalesce(substr(c.before_user_id::text, 35), '-') || '<' || i || '>' || coalesce(substr(c.after_user_id::text, 35), '-')
    from public.workout_chains c where c.user_id = pg_temp.u(i) and c.date = '2030-01-07' $$;

select is(pg_temp.link(1), '-<1>03', 'u1: nothing ends before 06:00; after: u2 and u3 start at 08:00, u3 is nearer');
select is(pg_temp.link(2), '01<2>04', 'u2: before u1 (ends 08:00 exactly), after u4');
select is(pg_temp.link(3), '01<3>04', 'u3: same neighbours as u2');
select is(pg_temp.link(4), '03<4>05', 'u4: u2 and u3 both end at 10:00, u3 is nearer; after u5 (07:00 New York = 12:00 UTC)');
select is(pg_temp.link(5), '04<5>06', 'u5: after u6 and u7 tie on time and distance: the smaller id wins');
select is(pg_temp.link(6), '05<6>-', 'u6: before u5, nothing after');
select is(pg_temp.link(7), '05<7>-', 'u7: before u5, nothing after');
select is(pg_temp.link(8), '-<8>-', 'u8, alone in its city, has a row without neighbours');
select is(pg_temp.link(9), '-<9>-', 'u9, without a location, has a row without neighbours');

select results_eq(
  $$select team_color, array_agg(substr(user_id::text, 35) order by user_id)
      from public.workout_chains where date = '2030-01-07' and user_id <> all (array[pg_temp.u(8), pg_temp.u(9)])
     group by team_color order by team_color$$,
  $$values ('blue', array['02', '04', '06']), ('red', array['01', '03', '05', '07'])$$,
  'city A alternates red/blue in start order (then id): 4 red, 3 blue');
select results_eq(
  $$select s.team_color, array_remove(array[substr(s.user_1_id::text, 35), substr(s.user_2_id::text, 35), substr(s.user_3_id::text, 35)], null)
      from public.workout_squads s where s.date = '2030-01-07' order by s.team_color, s.user_1_id$$,
  $$values ('blue', array['02', '04', '06']), ('red', array['01', '03']), ('red', array['05', '07'])$$,
  'blue: one squad of three; red (4 members): two squads of two');
select ok((select bool_and(c.squad_id = s.id) from public.workout_chains c
             join public.workout_squads s on c.user_id in (s.user_1_id, s.user_2_id, s.user_3_id) and s.date = c.date
            where c.date = '2030-01-07'), 'every chain row points at the squad that lists its user');
select ok((select bool_and(c.team_color = s.team_color) from public.workout_chains c join public.workout_squads s on s.id = c.squad_id),
          'a squad is one team');
select is((select count(*)::integer from public.workout_chains where date = '2030-01-07' and squad_id is null
             and user_id in (pg_temp.u(8), pg_temp.u(9))), 2, 'isolated users have no squad');

-- Squad sizes for larger teams: 3k, 3k+1 (two pairs at the end), 3k+2 (one pair).
select is((select array_agg(n order by n) from (
             select count(*)::integer as n from generate_series(0, 6) i
              cross join lateral (select case when 7 % 3 = 1 and i >= 7 - 4 then (7 - 4) / 3 + (i - (7 - 4)) / 2 else i / 3 end as sq) x
              group by sq) s), array[2, 2, 3], 'the squad rule splits 7 into 3 + 2 + 2');

-- Repeat run: nothing changes.
select is(private.generate_workout_chains('2030-01-07') - 'date',
          '{"participants": 9, "created": 0, "relinked": 0, "squadsCreated": 0}'::jsonb, 'a repeat run adds and changes nothing');
select is((select count(*)::integer from public.workout_chains where date = '2030-01-07'), 9, 'still one row per user');

-- ---------------------------------------------------------------------------------------
-- Check-ins and chips (private.record_workout_checkin with an explicit time).
-- Arguments: user, activity, url, object, taken_local, offset_minutes, photo_lat, photo_lng, lat, lng, at
-- ---------------------------------------------------------------------------------------
create function pg_temp.check_in(i integer, at timestamptz, taken timestamp default null, offset_min integer default null,
                                 plat numeric default null, plng numeric default null)
returns jsonb language sql as $$
  select private.record_workout_checkin(pg_temp.u(i), 'cardio', 'https://example.test/p.jpg', null, taken, offset_min,
                                        plat, plng, null, null, at) $$;

create temp table r (who integer primary key, result jsonb);
insert into r values (1, pg_temp.check_in(1, '2030-01-07 06:10+00', '2030-01-07 06:05', 0));
select is(r.result -> 'battleChipsEarned', '1'::jsonb, 'u1: 1 + 0.5 (first 30 minutes), floored to 1') from r where who = 1;
select is(r.result ->> 'chainStatus', 'broken', 'u1 has no before user: broken') from r where who = 1;
select is(r.result -> 'nextUserNotified', 'true'::jsonb, 'u1''s after user is told') from r where who = 1;
select is((select count(*)::integer from public.notifications where user_id = pg_temp.u(3) and type = 'workout.baton_pass'
             and payload ->> 'fromUserId' = pg_temp.u(1)::text), 1, 'u3 got one baton pass from u1');
select is(r.result -> 'checkin' ->> 'status', 'verified', 'capture time inside the window: verified') from r where who = 1;

insert into r values (3, pg_temp.check_in(3, '2030-01-07 08:45+00'));
select is(r.result -> 'battleChipsEarned', '2'::jsonb, 'u3: 1 + 1 (before user u1 checked in earlier)') from r where who = 3;
select is(r.result ->> 'chainStatus', 'continued', 'u3: continued') from r where who = 3;
select is(r.result -> 'checkin' ->> 'status', 'pending', 'no EXIF time: pending') from r where who = 3;
select is(r.result -> 'checkin' ->> 'reviewReason', 'no capture time (EXIF) in the photo', 'with the reason') from r where who = 3;

insert into r values (4, pg_temp.check_in(4, '2030-01-07 10:05+00', '2030-01-07 03:00', 0));
select is(r.result -> 'battleChipsEarned', '2'::jsonb, 'u4: 1 + 1 + 0.5, floored to 2') from r where who = 4;
select is(r.result -> 'checkin' ->> 'status', 'pending', 'photo taken hours before the window: pending') from r where who = 4;
select matches(r.result -> 'checkin' ->> 'reviewReason', 'outside the window', 'reason says outside the window') from r where who = 4;
select is(r.result -> 'checkin' ->> 'photoTimestamp', '2030-01-07T03:00:00+00:00', 'photo_timestamp is the EXIF time') from r where who = 4;

-- Streak: u2 checked in the six days before.
insert into public.workout_checkins (user_id, date, activity_type, photo_url, photo_timestamp, status, streak_days)
select pg_temp.u(2), date '2030-01-07' - i, 'walk', 'https://example.test/p.jpg', now(), 'verified', 7 - i
  from generate_series(1, 6) i;
-- 10:05 local +02:00 = 08:05 UTC: inside the window (offset applied).
insert into r values (2, pg_temp.check_in(2, '2030-01-07 08:05+00', '2030-01-07 10:05', 120));
select is(r.result -> 'battleChipsEarned', '4'::jsonb, 'u2: 1 + 1 + 0.5 + 2 (seventh day), floored to 4') from r where who = 2;
select is(r.result -> 'checkin' -> 'streakDays', '7'::jsonb, 'u2 is on day 7') from r where who = 2;
select is(r.result -> 'checkin' ->> 'status', 'verified', 'the EXIF offset is applied before comparing') from r where who = 2;

-- u5: local time without offset is read in the window's zone (07:10 New York = 12:10 UTC).
insert into r values (5, pg_temp.check_in(5, '2030-01-07 12:20+00', '2030-01-07 07:10'));
select is(r.result -> 'checkin' ->> 'status', 'verified', 'no offset: the window''s time zone applies') from r where who = 5;
select is(r.result -> 'battleChipsEarned', '2'::jsonb, 'u5: 1 + 1 (u4 checked in) + 0.5 floored') from r where who = 5;

-- u6: the photo's GPS is far from the stored location.
insert into r values (6, pg_temp.check_in(6, '2030-01-07 14:40+00', '2030-01-07 14:35', 0, 40, 40));
select is(r.result -> 'checkin' ->> 'status', 'pending', 'photo taken far away: pending') from r where who = 6;
select matches(r.result -> 'checkin' ->> 'reviewReason', 'km from your location', 'with the distance') from r where who = 6;

-- One check-in per user and date.
select throws_ok($$select pg_temp.check_in(1, '2030-01-07 07:00+00')$$, '23505', 'already checked in for 2030-01-07',
                 'a second check-in the same day is refused');
select throws_ok($$select private.record_workout_checkin(pg_temp.u(10), 'cardio', 'x', null, null, null, null, null, null, null)$$,
                 '22023', null, 'no window: refused');

-- Day status.
select is(private.workout_day_status(pg_temp.u(1), '2030-01-07', '2030-01-07 23:00+00'), 'completed', 'checked in: completed');
select is(private.workout_day_status(pg_temp.u(8), '2030-01-07', '2030-01-07 13:00+00'), 'not_started', 'before the window: not_started');
select is(private.workout_day_status(pg_temp.u(8), '2030-01-07', '2030-01-07 15:00+00'), 'pending', 'during the window: pending');
select is(private.workout_day_status(pg_temp.u(8), '2030-01-07', '2030-01-07 16:00+00'), 'failed', 'after it, no check-in: failed');

-- ---------------------------------------------------------------------------------------
-- Repeat run after a newcomer: links a check-in counted on are kept.
-- u7 checks in, then u10 joins (16-18, city A, at 1,1): u6 and u7 would both get u10 after.
-- ---------------------------------------------------------------------------------------
select pg_temp.check_in(7, '2030-01-07 15:00+00');
insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
values (pg_temp.u(10), 'cardio', '16:00', '18:00', 'UTC');
insert into public.workout_locations (user_id, latitude, longitude, city, country) values (pg_temp.u(10), 1, 1, 'Springfield', 'US');
-- u6 already checked in too; remove its check-in so it can be relinked.
delete from public.workout_checkins where user_id = pg_temp.u(6);
select is(private.generate_workout_chains('2030-01-07') - 'date',
          '{"participants": 10, "created": 1, "relinked": 1, "squadsCreated": 0}'::jsonb, 'rerun: the newcomer added, one row relinked');
select is(pg_temp.link(6), '05<6>10', 'u6 (no check-in) now passes to u10');
select is(pg_temp.link(7), '05<7>-', 'u7 (checked in) keeps its links');
select is((select team_color from public.workout_chains where user_id = pg_temp.u(10) and date = '2030-01-07'), 'blue',
          'the newcomer joins the team its group has fewer of');

-- ---------------------------------------------------------------------------------------
-- Robot power, battles.
-- ---------------------------------------------------------------------------------------
select is(private.robot_power(10, 4), 170, 'floor(10*10 + 4*5 + (10/4)*20) = 170');
select is(private.robot_power(7, 3), 131, 'floor(70 + 15 + 46.67) = 131');
select is(private.robot_power(0, 0), 0, 'no members: 0');

-- Battle update: told once per change of standing, never again without one.
select public.generate_weekly_battle('2030-01-07');
create temp table standing (n integer, result jsonb);
insert into standing values (1, public.refresh_workout_battle_standing('2030-01-07'));
insert into standing values (2, public.refresh_workout_battle_standing('2030-01-07'));
select is((select result -> 'changed' from standing where n = 1), 'true'::jsonb, 'new chips change the week''s standing');
select is((select (result ->> 'notified')::integer from standing where n = 1),
          (select count(distinct user_id)::integer from public.workout_chains where date between '2030-01-07' and '2030-01-13'),
          'every participant of the week is told');
select is((select result - 'weekStartDate' from standing where n = 2), '{"changed": false, "notified": 0}'::jsonb,
          'a second run without new chips sends nothing');
select is((select count(*)::integer from public.notifications where type = 'workout.battle_update'),
          (select (result ->> 'notified')::integer from standing where n = 1), 'one battle update per participant');
select is((select payload ->> 'redTeamChips' from public.notifications where type = 'workout.battle_update' limit 1),
          private.workout_week_totals('2030-01-07') -> 'redTeam' ->> 'totalChips', 'the update carries the live chips');
select is((select battle_status from public.workout_battles where week_start_date = '2030-01-07'), 'in_progress',
          'the battle is in progress once it has a standing');
select throws_ok($$select public.refresh_workout_battle_standing('2030-01-08')$$, '22023', null, 'the standing week starts on a Monday');

create temp table battle (n integer, result jsonb);
insert into battle values (1, public.execute_workout_battle('2030-01-07'));
insert into battle values (2, public.execute_workout_battle('2030-01-07'));
select is((select result -> 'battleResult' from battle where n = 2), (select result -> 'battleResult' from battle where n = 1),
          'executing twice gives the same result');
select is((select result -> 'alreadyExecuted' from battle where n = 2), 'true'::jsonb, 'the second run changes nothing');
select ok((select jsonb_array_length(result -> 'battleResult' -> 'rounds') between 3 and 5 from battle where n = 1), '3 to 5 rounds');
select is((select result ->> 'winner' from battle where n = 1),
          (select case when (b ->> 'redTotalDamage')::int > (b ->> 'blueTotalDamage')::int then 'red'
                       when (b ->> 'redTotalDamage')::int < (b ->> 'blueTotalDamage')::int then 'blue' else 'tie' end
             from (select result -> 'battleResult' as b from battle where n = 1) x),
          'the winner dealt the most damage');
select is((select red_team_chips from public.workout_battles where week_start_date = '2030-01-07'),
          (select sum(k.battle_chips_earned)::integer from public.workout_checkins k
             join public.workout_chains c on c.user_id = k.user_id and c.date = k.date
            where c.team_color = 'red' and k.date between '2030-01-07' and '2030-01-13' and k.status <> 'rejected'),
          'red chips are the red members'' chips that week');
select throws_ok($$select public.execute_workout_battle('2030-01-08')$$, '22023', null, 'a week must start on a Monday');
select ok((select count(*) > 0 from public.notifications where type = 'workout.battle_result'), 'participants are told the result');

-- A rejected check-in's chips stop counting.
create temp table blue_before as select (private.workout_week_totals('2030-01-07') -> 'blueTeam' ->> 'totalChips')::integer as chips;
select private.review_workout_checkin(k.id, 'rejected', 'not a workout') from public.workout_checkins k
 where k.user_id = pg_temp.u(2) and k.date = '2030-01-07';
select is((select chips from blue_before) - (private.workout_week_totals('2030-01-07') -> 'blueTeam' ->> 'totalChips')::integer, 4,
          'rejecting u2''s check-in removes its 4 chips from blue');

-- Rejecting an older check-in recomputes the streaks of the consecutive days after it.
insert into public.workout_checkins (user_id, date, activity_type, photo_url, photo_timestamp, status, streak_days, battle_chips_earned)
select pg_temp.u(11), '2031-03-01'::date + i, 'walk', 'https://x/p.jpg', now(), 'verified', 6 + i, case when 6 + i >= 7 then 3 else 1 end
  from generate_series(0, 2) i;
select private.review_workout_checkin(k.id, 'rejected', 'not a workout') from public.workout_checkins k
 where k.user_id = pg_temp.u(11) and k.date = '2031-03-01';
select is((select array_agg(streak_days order by date) from public.workout_checkins
            where user_id = pg_temp.u(11) and date > '2031-03-01'), array[1, 2],
          'the days after a rejected check-in restart their streak');
select is((select array_agg(battle_chips_earned order by date) from public.workout_checkins
            where user_id = pg_temp.u(11) and date > '2031-03-01'), array[1, 1],
          'and lose the seventh-day bonus');

-- ---------------------------------------------------------------------------------------
-- Policies: a user sees only their own location and rows; others through the functions.
-- ---------------------------------------------------------------------------------------
set local role authenticated;
select set_config('request.jwt.claims', json_build_object('sub', pg_temp.u(3), 'role', 'authenticated')::text, true);
select is((select count(*)::integer from public.workout_locations), 1, 'a user reads only their own location');
select is((select count(*)::integer from public.workout_chains), 1, 'and only their own chain row');
select is((select count(*)::integer from public.workout_checkins), 1, 'and only their own check-ins');
select is((public.workout_chain('2030-01-07') -> 'chain' -> 'beforeUser' ->> 'id')::uuid, pg_temp.u(1), 'the chain shows the before user');
select ok(not (public.workout_chain('2030-01-07')::text ~ 'latitude|longitude|city'), 'the chain never carries a location');
select throws_ok($$select private.record_workout_checkin(pg_temp.u(3), 'x', 'x', null, null, null, null, null, null, null)$$,
                 '42501', null, 'clients cannot write check-ins directly');
select throws_ok($$select public.workout_checkin('cardio', 'other/p.jpg')$$,
                 '22023', null, 'the RPC only takes a photo the api stored and read for the caller');
select throws_ok($$select public.register_workout_photo(pg_temp.u(3) || '/p.jpg', pg_temp.u(3), 'https://x/p.jpg', 0, null)$$,
                 '42501', null, 'clients cannot register photo facts');
-- Others' check-ins come without location or review reason; own and super admins' with.
select is((select count(*)::integer from jsonb_array_elements(public.workout_day_checkins('2030-01-07') -> 'checkins') e
            where (e ->> 'userId')::uuid <> pg_temp.u(3) and (e ->> 'reviewReason' is not null or e ->> 'locationLat' is not null)),
          0, 'a user sees no other user''s location or review reason');
select throws_ok($$select public.generate_workout_chains('9999-12-31')$$, '22023', null, 'a date years away is bad input');
select throws_ok($$select public.generate_workout_chains(current_date + 7)$$, '42501', null, 'a user generates only today and tomorrow');
select throws_ok($$select public.execute_workout_battle('2030-01-14')$$, '42501', null, 'only super admins execute battles');
select throws_ok($$select public.refresh_workout_battle_standing('2030-01-14')$$, '42501', null, 'only trusted callers refresh the standing');
select throws_ok($$select public.generate_ai_users(1)$$, '42501', null, 'only super admins generate AI users');
select set_config('request.jwt.claims', json_build_object('sub', pg_temp.u(12), 'role', 'authenticated')::text, true);
select is((select count(*)::integer from public.workout_locations where user_id::text like 'd1100000-%'), 9, 'a super admin reads every location');
select ok((select count(*)::integer from jsonb_array_elements(public.workout_day_checkins('2030-01-07') -> 'checkins') e
            where e ->> 'reviewReason' is not null) > 0, 'a super admin sees the review reasons');
reset role;
set local role anon;
select throws_ok($$select count(*) from public.workout_windows$$, '42501', null, 'anon reads no windows');
reset role;

-- ---------------------------------------------------------------------------------------
-- A deleted user: their rows and squads go, their neighbours before and after are linked to each
-- other, other links to them are cleared on recent and future dates, an older row keeping the
-- id shows no neighbour.
-- ---------------------------------------------------------------------------------------
insert into public.workout_chains (date, user_id, before_user_id, team_color)
values ('2020-01-06', pg_temp.u(1), pg_temp.u(4), 'red');
delete from auth.users where id = pg_temp.u(4);
select is((select count(*)::integer from public.workout_chains where user_id = pg_temp.u(4)), 0,
          'a deleted user''s chain rows go with their profile');
select is((select count(*)::integer from public.workout_squads where pg_temp.u(4) in (user_1_id, user_2_id, user_3_id)), 0,
          'and so do the squads they were in');
select is((select count(*)::integer from public.workout_chains where date = '2030-01-07' and user_id in (pg_temp.u(2), pg_temp.u(6))
             and squad_id is null), 2, 'the other members of that squad have none');
select is(array[pg_temp.link(2), pg_temp.link(3), pg_temp.link(5)], array['01<2>-', '01<3>05', '03<5>06'],
          'the chain joins up around the deleted u4 (u3, before it, now passes to u5, after it); u2''s link to u4 is cleared');
select is((select private.workout_user_card(before_user_id) from public.workout_chains where user_id = pg_temp.u(1) and date = '2020-01-06'),
          null, 'an older row may keep the id of a deleted user, which shows as no neighbour');

-- Only the generator writes chain rows (user_id has no foreign key).
grant execute on function pg_temp.u(integer) to service_role;
set local role service_role;
select throws_ok($$insert into public.workout_chains (date, user_id, team_color) values ('2020-01-08', pg_temp.u(1), 'red')$$,
                 '42501', null, 'service_role may not insert chain rows');
select throws_ok($$update public.workout_chains set user_id = pg_temp.u(9) where user_id = pg_temp.u(1) and date = '2020-01-06'$$,
                 '42501', null, 'nor change whose a chain row is');
select lives_ok($$update public.workout_chains set before_user_id = null where user_id = pg_temp.u(1) and date = '2020-01-06'$$,
                'but may still clear a link');
reset role;
select is((select count(*)::integer from public.workout_chains where user_id = pg_temp.u(1) and date = '2020-01-06' and before_user_id is null),
          1, 'and the link is cleared');

-- Isolated users (no city or region) all share one team split; none of them may get a squad,
-- and every squad a chain row names exists (squads come from plan rows).
select tests.create_user(jsonb_build_object('id', pg_temp.u(i), 'email', 'pgtap-workout-' || i || '@example.test'))
  from generate_series(13, 19) i;
insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
select pg_temp.u(i), 'walk', make_time(6 + i - 13, 0, 0), make_time(8 + i - 13, 0, 0), 'UTC' from generate_series(13, 19) i;
select is((private.generate_workout_chains('2030-01-09') ->> 'created')::integer, 16, 'a new date: the nine users left and seven more, none of them located');
select is((select count(*)::integer from public.workout_chains where date = '2030-01-09' and squad_id is not null
             and user_id in (select pg_temp.u(i) from generate_series(13, 19) i)), 0, 'isolated users get no squad, however many');
select is((select count(*)::integer from public.workout_chains c where c.date = '2030-01-09' and c.squad_id is not null
             and not exists (select 1 from public.workout_squads s where s.id = c.squad_id and c.user_id in (s.user_1_id, s.user_2_id, s.user_3_id))),
          0, 'every squad a chain row names exists and lists that user');

-- In parts: the groups of buckets b % parts = part, each part its own call. Three parts one
-- after another make the rows one call makes (the same neighbours, teams and squads).
create temporary table parts_made as
  select p, private.generate_workout_chains('2030-01-10', p, 3) as r from generate_series(0, 2) p;
select is((select sum((r ->> 'created')::integer)::integer from parts_made), 16, 'three parts create every row once');
select ok((select count(*) from parts_made where (r ->> 'created')::integer > 0) > 1, 'the groups fall in more than one part');
create temporary table parts_shape as
  select c.user_id, c.before_user_id, c.after_user_id, c.team_color, c.squad_id, s.user_1_id, s.user_2_id, s.user_3_id
    from public.workout_chains c left join public.workout_squads s on s.id = c.squad_id where c.date = '2030-01-10';
delete from public.workout_chains where date = '2030-01-10';
delete from public.workout_squads where date = '2030-01-10';
select is((private.generate_workout_chains('2030-01-10') ->> 'created')::integer, 16, 'one call for the same date');
select set_eq($$select c.user_id, c.before_user_id, c.after_user_id, c.team_color, c.squad_id, s.user_1_id, s.user_2_id, s.user_3_id
                  from public.workout_chains c left join public.workout_squads s on s.id = c.squad_id where c.date = '2030-01-10'$$,
              $$select * from parts_shape$$, 'parts make the chains and squads of one call');
select is((private.generate_workout_chains('2030-01-10', 1, 3) ->> 'created')::integer, 0, 'a part run again adds nothing');
select throws_ok($$select private.generate_workout_chains('2030-01-10', 3, 3)$$, '22023', null, 'a part outside the split is refused');
select throws_ok($$select private.generate_workout_chains('2030-01-10', 0, 65)$$, '22023', null, 'more than 64 parts are refused');
select is(private.workout_chain_bucket(null), private.workout_chain_bucket(''), 'users without a group share one bucket');

-- Time zones are IANA names; rows written with another are repaired.
select is(array[private.is_valid_timezone('Europe/Paris'), private.is_valid_timezone('europe/paris'), private.is_valid_timezone('Etc/GMT-14'),
                private.is_valid_timezone('UTC')], array[true, true, true, true], 'IANA names are time zones, in any case');
select is(array[private.is_valid_timezone('ABC-167'), private.is_valid_timezone('<+167>-167'), private.is_valid_timezone('UTC+5'),
                private.is_valid_timezone('posixrules'), private.is_valid_timezone('posix/Europe/Paris'), private.is_valid_timezone(null)],
          array[false, false, false, false, false, false], 'POSIX strings, offsets and zone-file leftovers are not');
select is(now() at time zone 'ABC-167' > now() at time zone 'UTC' + interval '6 days', true,
          'Postgres itself reads ABC-167 as a zone 167 hours ahead (why the list is needed)');
select throws_ok($$update public.workout_windows set timezone = 'ABC+167' where user_id = pg_temp.u(1)$$,
                 '22023', 'timezone: ABC+167 is not an IANA time zone name such as Europe/Paris', 'an update to a POSIX zone is refused');
update public.workout_windows set timezone = 'america/new_york' where user_id = pg_temp.u(2);
select is((select timezone from public.workout_windows where user_id = pg_temp.u(2)), 'America/New_York', 'a zone is stored as IANA spells it');
-- Rows from before the rule (written here with triggers off, as a superuser could).
select tests.create_user(to_jsonb(u)) from (values (pg_temp.u(20), 'pgtap-workout-20@example.test')) u (id, email);
set local session_replication_role = replica;
insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
  values (pg_temp.u(20), 'walk', '10:00', '12:00', 'ABC-167');
insert into public.workout_locations (user_id, city, timezone) values (pg_temp.u(20), 'Springfield', 'ABC+167');
insert into public.workout_checkins (user_id, date, activity_type, photo_url, photo_timestamp, status, timezone) values
  (pg_temp.u(20), '2030-01-01', 'walk', 'https://x/a.png', now(), 'verified', 'ABC-167'),
  (pg_temp.u(20), '2030-01-02', 'walk', 'https://x/b.png', now(), 'verified', 'europe/paris');
set local session_replication_role = origin;
select is(private.repair_workout_time_zones(), '{"windows": 1, "locations": 1, "checkins": 2}'::jsonb, 'the repair finds them');
select is((select timezone from public.workout_windows where user_id = pg_temp.u(20)), 'UTC', 'a window falls back to UTC');
select is((select timezone from public.workout_locations where user_id = pg_temp.u(20)), null, 'a location forgets its zone');
select is((select array[status, timezone, review_reason] from public.workout_checkins where user_id = pg_temp.u(20) and date = '2030-01-01'),
          array['pending', 'UTC', 'counted in ABC-167, which is not a time zone: its date may be wrong'], 'a check-in counted in it goes back to review');
select is((select array[status, timezone] from public.workout_checkins where user_id = pg_temp.u(20) and date = '2030-01-02'),
          array['verified', 'Europe/Paris'], 'a check-in in a real zone spelt otherwise keeps its status');
select is(private.repair_workout_time_zones(), '{"windows": 0, "locations": 0, "checkins": 0}'::jsonb, 'and then nothing is left');

-- A picture is the same as a used one within 7 bits of its dHash, wherever the
-- bits differ (the band lookup finds them all), and not beyond.
insert into private.workout_photos (object_name, user_id, photo_url, dhash, checkin_id)
select pg_temp.u(20) || '/used.jpg', pg_temp.u(20), 'https://x/used.jpg', 0, k.id
  from public.workout_checkins k where k.user_id = pg_temp.u(20) and k.date = '2030-01-01';
select is(private.workout_picture_used(0), true, 'the same hash is a used picture');
select is(private.workout_picture_used((3::bigint << 48) | (3::bigint << 32) | (3::bigint << 16) | 1), true,
          '7 bits apart, spread 2, 2, 2, 1 over the bands: the same picture');
select is(private.workout_picture_used(127::bigint << 20), true, '7 bits apart, all in one band: the same picture');
select is(private.workout_picture_used((3::bigint << 48) | (3::bigint << 32) | (3::bigint << 16) | 3), false, '8 bits apart: another picture');
select is(private.workout_picture_used(255), false, '8 bits apart in one band: another picture');

select * from finish();
rollback;
