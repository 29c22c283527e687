-- =============================================================================================
-- Workout windows: synthetic (AI) users
-- =============================================================================================
-- routes/workout/ai_users.ts. The area's overview: workout/shared.sql.

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
      if k = 'activities' and entry.key <> all (enum_range(null::public.workout_activity_type)::text[]) then
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
  select count(private.new_auth_user(jsonb_build_object('id', p.id, 'email', p.email, 'email_confirmed_at', now(),
           'raw_user_meta_data', jsonb_build_object('full_name', p.full_name, 'is_ai', true),
           'raw_app_meta_data', '{"provider": "synthetic", "providers": ["synthetic"]}'::jsonb)))
    into made
    from private.ai_user_plan(how_many, merged, seed) p;
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
