-- Auth users as Supabase Auth writes them (issue 35, part 1).
-- Rows the project inserted itself into auth.users (the assistant of 20261122040000, AI users,
-- the seed's demo users) left NULL in columns GoTrue scans into Go strings, so hosted Auth
-- answers any lookup of such a user with 500 "Database error querying schema"
-- (supabase/auth#1940), and a NULL instance_id hides the user from Auth altogether.
-- private.new_auth_user writes every column as Auth does; the rows already written are repaired.
create or replace function private.new_auth_user(columns jsonb) returns uuid
language plpgsql
set search_path = ''
as $$
declare
  made auth.users;
  gotrue_defaults constant jsonb := jsonb_build_object(
    'instance_id', '00000000-0000-0000-0000-000000000000', 'id', gen_random_uuid(),
    'aud', 'authenticated', 'role', 'authenticated', 'encrypted_password', '',
    'confirmation_token', '', 'recovery_token', '', 'email_change_token_new', '', 'email_change', '',
    'email_change_token_current', '', 'email_change_confirm_status', 0, 'phone_change', '',
    'phone_change_token', '', 'reauthentication_token', '',
    'raw_app_meta_data', '{"provider": "email", "providers": ["email"]}'::jsonb, 'raw_user_meta_data', '{}'::jsonb,
    'is_sso_user', false, 'is_anonymous', false, 'created_at', now(), 'updated_at', now());
begin
  insert into auth.users (instance_id, id, aud, role, email, encrypted_password, email_confirmed_at, invited_at,
    confirmation_token, confirmation_sent_at, recovery_token, recovery_sent_at, email_change_token_new,
    email_change, email_change_sent_at, last_sign_in_at, raw_app_meta_data, raw_user_meta_data, is_super_admin,
    created_at, updated_at, phone, phone_confirmed_at, phone_change, phone_change_token, phone_change_sent_at,
    email_change_token_current, email_change_confirm_status, banned_until, reauthentication_token,
    reauthentication_sent_at, is_sso_user, deleted_at, is_anonymous)
  select r.instance_id, r.id, r.aud, r.role, r.email, r.encrypted_password, r.email_confirmed_at, r.invited_at,
    r.confirmation_token, r.confirmation_sent_at, r.recovery_token, r.recovery_sent_at, r.email_change_token_new,
    r.email_change, r.email_change_sent_at, r.last_sign_in_at, r.raw_app_meta_data, r.raw_user_meta_data,
    r.is_super_admin, r.created_at, r.updated_at, r.phone, r.phone_confirmed_at, r.phone_change,
    r.phone_change_token, r.phone_change_sent_at, r.email_change_token_current, r.email_change_confirm_status,
    r.banned_until, r.reauthentication_token, r.reauthentication_sent_at, r.is_sso_user, r.deleted_at,
    r.is_anonymous
    from jsonb_populate_record(null::auth.users, gotrue_defaults || columns) r
  returning * into made;
  -- An e-mail user has its e-mail identity, as after a sign-up.
  if made.email is not null and made.raw_app_meta_data ->> 'provider' = 'email' then
    insert into auth.identities (provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
    values (made.id::text, made.id,
            jsonb_build_object('sub', made.id::text, 'email', made.email,
                               'email_verified', made.email_confirmed_at is not null, 'phone_verified', false),
            'email', made.created_at, made.created_at, made.created_at);
  end if;
  return made.id;
end
$$;
comment on function private.new_auth_user(jsonb) is
  'Inserts an auth.users row (and its e-mail identity) as Supabase Auth writes one; `columns` sets any column, the rest get GoTrue''s values.';


-- Synthetic users are written with the helper (it was aud and role only).
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

-- The rows already written: what Auth would have written where they hold NULL.
update auth.users
   set instance_id = coalesce(instance_id, '00000000-0000-0000-0000-000000000000'),
       aud = coalesce(aud, 'authenticated'),
       role = coalesce(role, 'authenticated'),
       confirmation_token = coalesce(confirmation_token, ''),
       recovery_token = coalesce(recovery_token, ''),
       email_change_token_new = coalesce(email_change_token_new, ''),
       email_change_token_current = coalesce(email_change_token_current, ''),
       email_change = coalesce(email_change, ''),
       email_change_confirm_status = coalesce(email_change_confirm_status, 0),
       phone_change = coalesce(phone_change, ''),
       phone_change_token = coalesce(phone_change_token, ''),
       reauthentication_token = coalesce(reauthentication_token, ''),
       created_at = coalesce(created_at, now()),
       updated_at = coalesce(updated_at, now())
 where instance_id is null or aud is null or role is null or confirmation_token is null
    or recovery_token is null or email_change_token_new is null or email_change_token_current is null
    or email_change is null or email_change_confirm_status is null or phone_change is null
    or phone_change_token is null or reauthentication_token is null or created_at is null or updated_at is null;

-- A suspended account (deletion pending) was banned until 'infinity', which GoTrue cannot read
-- into a Go time: the ban is now a real date, and the rows banned before get it.
create or replace function private.suspend_account(target uuid) returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  update auth.users set banned_until = '9999-12-31 00:00:00+00' where id = target;
  delete from auth.sessions where user_id = target;
  update public.profiles set is_active = false where id = target;
  update public.music_connections set needs_reconnect = true where user_id = target;
  update public.tone_packs set retired_at = now(), is_public = false where owner_id = target and retired_at is null;
end
$$;
comment on function private.suspend_account(uuid) is
  'Stops an account whose deletion was asked for until its rows step: banned, signed out, inactive, its packs out of the shop.';
update auth.users set banned_until = '9999-12-31 00:00:00+00' where banned_until = 'infinity';
