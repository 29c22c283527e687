-- Auth's writes as hosted GoTrue makes them (UpdateOnly of the columns named in mail.go), and
-- what the database does with them: a password set before the address was confirmed is void
-- once Auth e-mails the address again (pre-account takeover), and the new-user trigger never
-- fails a sign-up over the metadata it copies to the profile.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql
-- Users written as GoTrue's role writes them (test-only grants, rolled back with the file).
grant usage on schema tests, private to supabase_auth_admin;
grant execute on function tests.create_user(jsonb), private.new_auth_user(jsonb) to supabase_auth_admin;
grant usage on schema extensions to supabase_auth_admin;
-- postgres is not GoTrue's role (nor a superuser, as on hosted): it joins it by its CREATEROLE.
grant supabase_auth_admin to postgres;

select plan(10);

-- A valid sign-up avatar for user 5: the public URL of their own folder in this project's
-- avatars bucket (Vault's project_url is the host), read here, before GoTrue's role.
select set_config('tests.ana_avatar', rtrim(s.decrypted_secret, '/')
       || '/storage/v1/object/public/avatars/22222222-0000-4000-8000-000000000005/a.png', false)
  from vault.decrypted_secrets s where s.name = 'project_url';

set local role supabase_auth_admin; -- as GoTrue connects

-- signup.go: the user row, then sendConfirmation's UpdateOnly(confirmation_token, confirmation_sent_at).
select tests.create_user(to_jsonb(u)) from (values ('22222222-0000-4000-8000-000000000001', 'pgtap-planted@example.test', '$2a$10$plantedplantedplantedplantedplantedplantedplantedpla')) u (id, email, encrypted_password);
update auth.users set confirmation_token = 'first', confirmation_sent_at = now() - interval '2 minutes'
where id = '22222222-0000-4000-8000-000000000001';
select is((select encrypted_password from auth.users where id = '22222222-0000-4000-8000-000000000001'),
  '$2a$10$plantedplantedplantedplantedplantedplantedplantedpla',
  'the sign-up''s own confirmation keeps its password');

-- magic_link.go on an unconfirmed user -> Signup -> sendConfirmation again.
update auth.users set confirmation_token = 'second', confirmation_sent_at = now()
where id = '22222222-0000-4000-8000-000000000001';
select is((select encrypted_password from auth.users where id = '22222222-0000-4000-8000-000000000001'), '',
  'a second confirmation e-mail to an unconfirmed address voids the password');
-- verify.go: Confirm is UpdateOnly(confirmation_token, email_confirmed_at): nothing comes back.
update auth.users set confirmation_token = '', email_confirmed_at = now()
where id = '22222222-0000-4000-8000-000000000001';
select is((select encrypted_password from auth.users where id = '22222222-0000-4000-8000-000000000001'), '',
  'confirming leaves it void');

-- recover.go on an unconfirmed user: sendPasswordRecovery's UpdateOnly(recovery_token, recovery_sent_at).
select tests.create_user(to_jsonb(u)) from (values ('22222222-0000-4000-8000-000000000002', 'pgtap-planted-2@example.test', '$2a$10$x', now())) u (id, email, encrypted_password, confirmation_sent_at);
update auth.users set recovery_token = 'r', recovery_sent_at = now() where id = '22222222-0000-4000-8000-000000000002';
select is((select encrypted_password from auth.users where id = '22222222-0000-4000-8000-000000000002'), '',
  'a recovery or magic-link e-mail to an unconfirmed address voids the password');

-- A confirmed user is left alone, whatever Auth sends.
select tests.create_user(to_jsonb(u)) from (values ('22222222-0000-4000-8000-000000000003', 'pgtap-confirmed@example.test', '$2a$10$y', now(), now())) u (id, email, encrypted_password, email_confirmed_at, confirmation_sent_at);
update auth.users set recovery_token = 'r', recovery_sent_at = now() where id = '22222222-0000-4000-8000-000000000003';
update auth.users set confirmation_sent_at = now() + interval '1 second' where id = '22222222-0000-4000-8000-000000000003';
select is((select encrypted_password from auth.users where id = '22222222-0000-4000-8000-000000000003'), '$2a$10$y',
  'a confirmed user''s password is never touched');
-- Other updates of an unconfirmed user (metadata, a new password by an admin) do not void it.
update auth.users set raw_user_meta_data = '{"a": 1}', encrypted_password = '$2a$10$z'
where id = '22222222-0000-4000-8000-000000000002';
select is((select encrypted_password from auth.users where id = '22222222-0000-4000-8000-000000000002'), '$2a$10$z',
  'only an e-mail sent voids it');

-- The new-user trigger: what the profile cannot hold is cut or left out, never an error.
select tests.create_user(to_jsonb(u)) from (values 
  ('22222222-0000-4000-8000-000000000004', 'pgtap-long@example.test',
   jsonb_build_object('full_name', repeat('n', 500), 'avatar_url', 'javascript:alert(1)')),
  ('22222222-0000-4000-8000-000000000005', 'pgtap-ok@example.test',
   jsonb_build_object('full_name', 'Ana', 'avatar_url', current_setting('tests.ana_avatar'))),
  ('22222222-0000-4000-8000-000000000007', 'pgtap-elsewhere@example.test',
   '{"full_name": "Eli", "avatar_url": "https://example.test/a.png"}'),
  ('22222222-0000-4000-8000-000000000006', 'pgtap-huge-avatar@example.test',
   jsonb_build_object('avatar_url', 'https://example.test/' || repeat('a', 3000)))) u (id, email, raw_user_meta_data);
select results_eq(
  $$select char_length(full_name), avatar_url from public.profiles where id = '22222222-0000-4000-8000-000000000004'$$,
  $$values (200, null::text)$$, 'a name past 200 characters is cut, a javascript: avatar left out');
select results_eq(
  $$select full_name, avatar_url from public.profiles where id = '22222222-0000-4000-8000-000000000005'$$,
  $$values ('Ana'::text, current_setting('tests.ana_avatar'))$$,
  'good metadata is copied as it is (an avatar in the user''s own folder of the avatars bucket)');
select is((select avatar_url from public.profiles where id = '22222222-0000-4000-8000-000000000007'), null,
  'an avatar anywhere else is left out (the profile would refuse it)');
select is((select avatar_url from public.profiles where id = '22222222-0000-4000-8000-000000000006'), null,
  'an avatar URL past 2048 characters is left out');

select * from finish();
rollback;
