-- Workout bench fixture: 100,000 users (wbench-<n>@bench.local) with a 2-hour window and a
-- location in one of 500 cities (200 per city), in four time zones. Windows start between
-- 05:00 and 19:45 on the quarter hour, so many users share a start and the Haversine
-- tie-break is exercised. All windows start inactive; the bench activates the share it needs.
-- Loaded with triggers off (session_replication_role = replica): profiles are written
-- directly, no signup bonus is booked (nothing here reads drops).
-- BENCH_SCALE=k (the setting bench.scale): k x 100,000 users in k x 500 cities (the same 200 a city).
begin;
set local session_replication_role = replica;
create temporary table wbench_scale on commit drop as
  select coalesce(nullif(current_setting('bench.scale', true), '')::integer, 1) as k;
insert into auth.users (id, email)
select md5('wbench-' || g)::uuid, 'wbench-' || g || '@bench.local'
  from wbench_scale, generate_series(1, 100000 * k) g;
insert into public.profiles (id, full_name)
select md5('wbench-' || g)::uuid, 'Bench ' || g
  from wbench_scale, generate_series(1, 100000 * k) g;

insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone, is_active)
select md5('wbench-' || g)::uuid,
       (array['cardio', 'strength', 'walk', 'meditation', 'reading', 'homework', 'other'])[1 + g % 7],
       time '05:00' + make_interval(mins => 15 * (('x' || substr(md5('s' || g), 1, 4))::bit(16)::integer % 60)),
       time '07:00' + make_interval(mins => 15 * (('x' || substr(md5('s' || g), 1, 4))::bit(16)::integer % 60)),
       (array['America/New_York', 'America/Chicago', 'America/Denver', 'America/Los_Angeles'])[1 + (g % (500 * k)) % 4],
       false
  from wbench_scale, generate_series(1, 100000 * k) g;

insert into public.workout_locations (user_id, latitude, longitude, city, region, country)
select md5('wbench-' || g)::uuid,
       30 + (g % (500 * k)) * 0.03 / k + ((g::bigint * 7919) % 1000) / 20000.0,
       -120 + (g % (500 * k)) * 0.1 / k + ((g::bigint * 104729) % 1000) / 20000.0,
       'Bench City ' || (g % (500 * k)), 'Bench Region ' || (g % 50), 'US'
  from wbench_scale, generate_series(1, 100000 * k) g;

commit;

analyze public.workout_windows;
analyze public.workout_locations;
analyze public.profiles;
