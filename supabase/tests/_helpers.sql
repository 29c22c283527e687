-- Helpers for the pgTAP files, after basejump's supabase_test_helpers (tests.authenticate_as).
-- A file includes this inside its transaction (`\ir _helpers.sql`), so the `tests` schema exists
-- only there and is rolled back with everything else: it never reaches a migration or another file.
create schema if not exists tests;
grant usage on schema tests to anon, authenticated;

-- The JWT claims PostgREST would set for this signed-in user (auth.uid(), auth.role()). Only the
-- claims: the file switches role itself (`set local role authenticated`).
create or replace function tests.authenticate_as(user_id uuid) returns void
language sql as $$
  select set_config('request.jwt.claims', json_build_object('sub', user_id, 'role', 'authenticated')::text, true)
$$;

-- The claims of an anonymous caller (the anon key's), for use with `set local role anon`.
create or replace function tests.authenticate_as_anon() returns void
language sql as $$
  select set_config('request.jwt.claims', '{"role": "anon"}', true)
$$;

-- What the client roles (anon, authenticated) may do to these tables ('<role> <table> <privilege>'
-- for SELECT, INSERT, UPDATE and DELETE), or null when nothing: a file asserts null for what only
-- the service role may reach.
create or replace function tests.client_table_privileges(tables text[]) returns text[]
language sql as $$
  select array_agg(format('%s %s %s', r, t, p) order by r, t, p)
    from unnest(array['anon', 'authenticated']) r,
         unnest(tables) t,
         unnest(array['SELECT', 'INSERT', 'UPDATE', 'DELETE']) p
   where has_table_privilege(r, t, p)
$$;

-- Which of these functions (signatures as regprocedure reads them) the client roles may execute
-- ('<role> <function>'), or null when none.
create or replace function tests.client_function_grants(functions text[]) returns text[]
language sql as $$
  select array_agg(format('%s %s', r, f) order by r, f)
    from unnest(array['anon', 'authenticated']) r,
         unnest(functions) f
   where has_function_privilege(r, f, 'EXECUTE')
$$;

grant execute on all functions in schema tests to anon, authenticated;

-- An auth user as Supabase Auth writes one (private.new_auth_user: '' tokens, instance_id, aud,
-- role, timestamps, the e-mail identity): hosted auth.users has no defaults for them, and the
-- stand-in has none either. `columns` names auth.users columns; a metadata column given as text
-- (an untyped literal in a VALUES list) is read as JSON. Use:
--   select tests.create_user(to_jsonb(u)) from (values ('<uuid>', '<email>')) u (id, email);
create or replace function tests.create_user(columns jsonb) returns uuid
language sql as $$
  select private.new_auth_user(columns || coalesce((
    select jsonb_object_agg(key, (value #>> '{}')::jsonb)
      from jsonb_each(columns)
     where key in ('raw_user_meta_data', 'raw_app_meta_data') and jsonb_typeof(value) = 'string'), '{}'))
$$;
revoke execute on function tests.create_user(jsonb) from public, anon, authenticated;
