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
