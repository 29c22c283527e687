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

grant execute on all functions in schema tests to anon, authenticated;
