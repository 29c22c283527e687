-- Profiles: the signup trigger, what a user may read and change, super admins, the
-- preference merge and the custom access-token hook.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql
-- Users written as GoTrue's role writes them (test-only grants, rolled back with the file).
grant usage on schema tests, private to supabase_auth_admin;
grant execute on function tests.create_user(jsonb), private.new_auth_user(jsonb) to supabase_auth_admin;
grant usage on schema extensions to supabase_auth_admin;
-- postgres is not GoTrue's role (nor a superuser, as on hosted): it joins it by its CREATEROLE.
grant supabase_auth_admin to postgres;

select plan(55);

-- A valid avatar of the owner: the public URL of their own folder in this project's avatars
-- bucket (the host is Vault's project_url); kept in a setting, readable under any role below.
select set_config('tests.own_avatar', rtrim(s.decrypted_secret, '/')
       || '/storage/v1/object/public/avatars/11111111-0000-4000-8000-000000000001/new.png', false)
  from vault.decrypted_secrets s where s.name = 'project_url';

-- Fixed users: an owner, another user and an admin-to-be.
select tests.create_user(to_jsonb(u)) from (values 
  ('11111111-0000-4000-8000-000000000001', 'pgtap-profiles-owner@example.test',
   '{"full_name": "Olive Owner", "avatar_url": "https://example.test/olive.png"}'),
  ('11111111-0000-4000-8000-000000000002', 'pgtap-profiles-other@example.test', '{"full_name": "Oscar Other"}'),
  ('11111111-0000-4000-8000-000000000003', 'pgtap-profiles-admin@example.test', '{}')) u (id, email, raw_user_meta_data);
select tests.create_user(to_jsonb(u)) from (values ('11111111-0000-4000-8000-000000000004', 'pgtap-profiles-bare@example.test')) u (id, email);

-- ---------------------------------------------------------------------------------------
-- The trigger: a profile per new auth user, with the defaults.
-- ---------------------------------------------------------------------------------------
select results_eq(
  $$select full_name, avatar_url, role, is_active, is_ai, read_notes_enabled, check_in_enabled, preferences
      from public.profiles where id = '11111111-0000-4000-8000-000000000001'$$,
  $$values ('Olive Owner'::text, null::text, 'user'::text, true, false, false, false,
            '{"theme": "system", "notifications": true}'::jsonb)$$,
  'a new auth user gets a profile: name from the user metadata (an avatar outside their own folder left out), role user, active, not AI, opt-ins off');
select results_eq(
  $$select full_name, avatar_url, role from public.profiles where id = '11111111-0000-4000-8000-000000000004'$$,
  $$values (null::text, null::text, 'user'::text)$$,
  'a user inserted with just id and email gets a profile with a null name and the defaults');
select is((select count(*)::integer from public.profiles where id::text like '11111111-0000-4000-8000-%'), 4,
  'exactly one profile per new auth user');

-- On Supabase the auth server inserts users as supabase_auth_admin: the trigger works for it.
set local role supabase_auth_admin;
select lives_ok(
  $$select tests.create_user(to_jsonb(u)) from (values ('11111111-0000-4000-8000-000000000005', 'pgtap-profiles-gotrue@example.test', '{"full_name": "Gita GoTrue"}')) u (id, email, raw_user_meta_data)$$,
  'the auth server (supabase_auth_admin) can create a user');
reset role;
select results_eq(
  $$select full_name, role from public.profiles where id = '11111111-0000-4000-8000-000000000005'$$,
  $$values ('Gita GoTrue'::text, 'user'::text)$$,
  'a user created by the auth server gets a profile');
delete from auth.users where id = '11111111-0000-4000-8000-000000000005';

-- The owner's balance as signup left it (the signup bonus itself is tested with the ledger,
-- drops_ledger.test.sql): what the attempts below must leave unchanged.
create temp table owner_at_signup as
select drops_balance from public.profiles where id = '11111111-0000-4000-8000-000000000001';
grant select on owner_at_signup to authenticated;

-- Super admin for later (a direct session, as in the SQL dashboard).
update public.profiles set role = 'super_admin' where id = '11111111-0000-4000-8000-000000000003';

-- ---------------------------------------------------------------------------------------
-- As the owner (authenticated).
-- ---------------------------------------------------------------------------------------
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', '11111111-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);

select results_eq(
  $$select id from public.profiles where id::text like '11111111-0000-4000-8000-%'$$,
  $$values ('11111111-0000-4000-8000-000000000001'::uuid)$$,
  'a user reads only their own profile among the test users');
select is_empty(
  $$select 1 from public.profiles where id = '11111111-0000-4000-8000-000000000002'$$,
  'another user''s profile is invisible');
select is((select count(*)::integer from public.profiles), 1, 'a user sees exactly one profile in the whole table');
select ok(not public.is_super_admin(), 'public.is_super_admin() is false for a regular user');

-- Editable fields.
select lives_ok(
  $$update public.profiles
       set full_name = 'Olive Renamed', avatar_url = current_setting('tests.own_avatar'),
           preferences = '{"theme": "dark", "notifications": false}', read_notes_enabled = true, check_in_enabled = true
     where id = '11111111-0000-4000-8000-000000000001'$$,
  'the owner updates full_name, avatar_url, preferences and the opt-ins');
select results_eq(
  $$select full_name, avatar_url, preferences, read_notes_enabled, check_in_enabled
      from public.profiles where id = '11111111-0000-4000-8000-000000000001'$$,
  $$values ('Olive Renamed'::text, current_setting('tests.own_avatar'), '{"theme": "dark", "notifications": false}'::jsonb, true, true)$$,
  'the owner''s changes are stored');
select throws_ok(
  $$update public.profiles set avatar_url = 'https://example.test/pixel.png' where id = '11111111-0000-4000-8000-000000000001'$$,
  '23514', 'avatar_url: must be the public URL of an image in your own folder of the avatars bucket',
  'an avatar anywhere else is refused, naming avatar_url');

-- Forbidden changes to one's own profile, each separately.
select throws_ok(
  $$update public.profiles set role = 'super_admin' where id = '11111111-0000-4000-8000-000000000001'$$,
  '42501', 'only a super admin may change role, is_active or is_ai',
  'a user cannot make themselves super admin');
select throws_ok(
  $$update public.profiles set drops_balance = 1000000 where id = '11111111-0000-4000-8000-000000000001'$$,
  '42501', 'permission denied for table profiles',
  'a user cannot change their drops_balance (column not granted)');
select throws_ok(
  $$update public.profiles set drops_balance = drops_balance where id = '11111111-0000-4000-8000-000000000001'$$,
  '42501', 'permission denied for table profiles',
  'a user cannot even assign drops_balance its own value');
select throws_ok(
  $$update public.profiles set is_active = false where id = '11111111-0000-4000-8000-000000000001'$$,
  '42501', 'only a super admin may change role, is_active or is_ai',
  'a user cannot change is_active');
select throws_ok(
  $$update public.profiles set is_ai = true where id = '11111111-0000-4000-8000-000000000001'$$,
  '42501', 'only a super admin may change role, is_active or is_ai',
  'a user cannot change is_ai');
select throws_ok(
  $$update public.profiles set id = '11111111-0000-4000-8000-000000000009' where id = '11111111-0000-4000-8000-000000000001'$$,
  '42501', 'permission denied for table profiles',
  'a user cannot change their id');
select throws_ok(
  $$update public.profiles set created_at = now() - interval '1 year' where id = '11111111-0000-4000-8000-000000000001'$$,
  '42501', 'permission denied for table profiles',
  'a user cannot change created_at');
select throws_ok(
  $$insert into public.profiles (id) values ('11111111-0000-4000-8000-000000000009')$$,
  '42501', 'permission denied for table profiles',
  'a user cannot insert a profile');
select throws_ok(
  $$delete from public.profiles where id = '11111111-0000-4000-8000-000000000001'$$,
  '42501', 'permission denied for table profiles',
  'a user cannot delete their profile');

-- Another user's profile: no row is touched.
select is_empty(
  $$update public.profiles set full_name = 'Hijacked' where id = '11111111-0000-4000-8000-000000000002' returning id$$,
  'updating another user''s profile affects 0 rows');
select is_empty(
  $$update public.profiles set role = 'super_admin' where id = '11111111-0000-4000-8000-000000000002' returning id$$,
  'changing another user''s role affects 0 rows');

-- update_my_profile: a partial update; preferences are merged, not replaced.
select lives_ok(
  $$select public.update_my_profile('{"preferences": {"theme": "light"}}')$$,
  'update_my_profile accepts a partial preferences patch');
select results_eq(
  $$select full_name, avatar_url, preferences from public.profiles where id = '11111111-0000-4000-8000-000000000001'$$,
  $$values ('Olive Renamed'::text, current_setting('tests.own_avatar'), '{"theme": "light", "notifications": false}'::jsonb)$$,
  'update_my_profile merges preferences (notifications kept) and leaves fields not in the patch unchanged');
select is(
  (public.update_my_profile('{"full_name": "Olive Again", "avatar_url": null}')).full_name,
  'Olive Again',
  'update_my_profile returns the updated profile');
select results_eq(
  $$select full_name, avatar_url, preferences from public.profiles where id = '11111111-0000-4000-8000-000000000001'$$,
  $$values ('Olive Again'::text, null::text, '{"theme": "light", "notifications": false}'::jsonb)$$,
  'update_my_profile sets full_name, clears avatar_url with null, and keeps preferences');
select results_eq(
  $$select role, drops_balance, is_active, is_ai
      from public.update_my_profile('{"role": "super_admin", "drops_balance": 999999, "is_active": false, "is_ai": true, "id": "11111111-0000-4000-8000-000000000009"}')$$,
  $$select 'user'::text, drops_balance, true, false from owner_at_signup$$,
  'update_my_profile ignores role, drops_balance, is_active, is_ai and id in the patch');
select throws_ok(
  $$select public.update_my_profile('[1, 2]')$$,
  '22023', 'patch must be a JSON object',
  'update_my_profile refuses a patch that is not an object');

-- The preferences shape check.
select throws_ok(
  $$select public.update_my_profile('{"preferences": {"notifications": "yes"}}')$$,
  '23514', null,
  'preferences.notifications must be a boolean (through update_my_profile)');
select throws_ok(
  $$update public.profiles set preferences = '{"notifications": "yes"}' where id = '11111111-0000-4000-8000-000000000001'$$,
  '23514', null,
  'preferences.notifications must be a boolean (direct update)');
select throws_ok(
  $$update public.profiles set preferences = '"dark"' where id = '11111111-0000-4000-8000-000000000001'$$,
  '23514', null,
  'preferences must be an object');

-- The hook is not for clients.
select throws_ok(
  $$select public.custom_access_token_hook('{"user_id": "11111111-0000-4000-8000-000000000001", "claims": {}}')$$,
  '42501', null,
  'authenticated cannot call the access-token hook');

reset role;
select results_eq(
  $$select role, is_active, is_ai, drops_balance, id from public.profiles where id = '11111111-0000-4000-8000-000000000001'$$,
  $$select 'user'::text, true, false, drops_balance, '11111111-0000-4000-8000-000000000001'::uuid from owner_at_signup$$,
  'after all those attempts the owner''s role, is_active, is_ai, balance and id are unchanged');
select is((select full_name from public.profiles where id = '11111111-0000-4000-8000-000000000002'), 'Oscar Other',
  'the other user''s profile is unchanged');
select is((select role from public.profiles where id = '11111111-0000-4000-8000-000000000002'), 'user',
  'the other user''s role is unchanged');

-- ---------------------------------------------------------------------------------------
-- Anonymous callers.
-- ---------------------------------------------------------------------------------------
set local role anon;
select set_config('request.jwt.claims', json_build_object('role', 'anon')::text, true);
select throws_ok(
  $$select * from public.profiles$$,
  '42501', 'permission denied for table profiles',
  'anon cannot read profiles at all (no SELECT grant)');
select throws_ok(
  $$update public.profiles set full_name = 'x' where id = '11111111-0000-4000-8000-000000000001'$$,
  '42501', 'permission denied for table profiles',
  'anon cannot update profiles');
select throws_ok(
  $$select public.update_my_profile('{"full_name": "x"}')$$,
  '42501', null,
  'anon cannot call update_my_profile');
reset role;

-- ---------------------------------------------------------------------------------------
-- A super admin.
-- ---------------------------------------------------------------------------------------
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', '11111111-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select ok(public.is_super_admin(), 'public.is_super_admin() is true for a super admin');
select is((select count(*)::integer from public.profiles where id::text like '11111111-0000-4000-8000-%'), 4,
  'a super admin reads every profile');
select lives_ok(
  $$update public.profiles set role = 'super_admin', is_active = false, is_ai = true, full_name = 'Oscar By Admin'
     where id = '11111111-0000-4000-8000-000000000002'$$,
  'a super admin changes another user''s role, is_active, is_ai and name');
select throws_ok(
  $$update public.profiles set drops_balance = 0 where id = '11111111-0000-4000-8000-000000000002'$$,
  '42501', 'permission denied for table profiles',
  'not even a super admin writes drops_balance directly');
reset role;
select results_eq(
  $$select role, is_active, is_ai, full_name from public.profiles where id = '11111111-0000-4000-8000-000000000002'$$,
  $$values ('super_admin'::text, false, true, 'Oscar By Admin'::text)$$,
  'the super admin''s changes are stored');

-- Demotion takes effect at once: same claims, no more access to others.
update public.profiles set role = 'user' where id = '11111111-0000-4000-8000-000000000003';
set local role authenticated;
select ok(not public.is_super_admin(), 'after demotion public.is_super_admin() is false on the very next statement');
select results_eq(
  $$select id from public.profiles where id::text like '11111111-0000-4000-8000-%'$$,
  $$values ('11111111-0000-4000-8000-000000000003'::uuid)$$,
  'after demotion the same claims read only their own profile');
select throws_ok(
  $$update public.profiles set is_active = false where id = '11111111-0000-4000-8000-000000000003'$$,
  '42501', 'only a super admin may change role, is_active or is_ai',
  'after demotion the former admin cannot change is_active, even their own');
select is_empty(
  $$update public.profiles set is_active = true where id = '11111111-0000-4000-8000-000000000002' returning id$$,
  'after demotion the former admin changes no other profile');
reset role;

-- A user promoted by a super admin (role set above) can, in turn, read all.
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', '11111111-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select is((select count(*)::integer from public.profiles where id::text like '11111111-0000-4000-8000-%'), 4,
  'a user promoted to super_admin reads every profile on the next statement');
reset role;

-- ---------------------------------------------------------------------------------------
-- The custom access-token hook.
-- ---------------------------------------------------------------------------------------
select ok(has_function_privilege('supabase_auth_admin', 'public.custom_access_token_hook(jsonb)', 'EXECUTE'),
  'supabase_auth_admin may execute the access-token hook');
select ok(not has_function_privilege('authenticated', 'public.custom_access_token_hook(jsonb)', 'EXECUTE'),
  'authenticated may not execute the access-token hook');
select ok(not has_function_privilege('anon', 'public.custom_access_token_hook(jsonb)', 'EXECUTE'),
  'anon may not execute the access-token hook');

set local role supabase_auth_admin;
select set_config('request.jwt.claims', '', true);
select is(
  public.custom_access_token_hook(
    '{"user_id": "11111111-0000-4000-8000-000000000002", "claims": {"sub": "11111111-0000-4000-8000-000000000002", "aud": "authenticated", "role": "authenticated"}}')::text,
  '{"user_id": "11111111-0000-4000-8000-000000000002", "claims": {"sub": "11111111-0000-4000-8000-000000000002", "aud": "authenticated", "role": "authenticated", "user_role": "super_admin"}}'::jsonb::text,
  'the hook, run as supabase_auth_admin, adds user_role = super_admin and keeps the other claims');
select is(
  public.custom_access_token_hook('{"user_id": "11111111-0000-4000-8000-000000000001", "claims": {"role": "authenticated"}}') #>> '{claims,user_role}',
  'user',
  'the hook adds user_role = user for a regular user');
select is(
  public.custom_access_token_hook('{"user_id": "11111111-0000-4000-8000-00000000dead", "claims": {}}') #>> '{claims,user_role}',
  'user',
  'the hook falls back to user_role = user for a user without a profile');
reset role;

select * from finish();
rollback;
