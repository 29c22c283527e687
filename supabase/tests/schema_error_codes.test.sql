-- How SQL functions report errors, so that PostgREST and /api answer with the right status:
-- "not found" is PT404 (PostgREST answers 404), bad input a class-22 data exception (the API
-- answers 400), never an error that becomes a 500. Through PostgREST:
-- tests/schema_error_codes_test.ts.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(9);

-- Olga (c6000000-...-01) owns organization O and an entry.
select tests.create_user(to_jsonb(u)) from (values 
  ('c6000000-0000-4000-8000-000000000001', 'pgtap-errors-olga@example.test', '{"full_name": "Olga Owner"}')) u (id, email, raw_user_meta_data);
insert into public.organizations (id, name, owner_id) values
  ('c60000a0-0000-4000-8000-000000000001', 'Errors', 'c6000000-0000-4000-8000-000000000001');
insert into public.journal_entries (id, user_id, title) values
  ('c60000f0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000001', 'kept private');

-- =======================================================================================
-- "Not found" raises PT404, which PostgREST answers as 404.
-- =======================================================================================
set local role authenticated;
select tests.authenticate_as('c6000000-0000-4000-8000-000000000001');
select throws_ok($$select * from public.update_journal_entry(gen_random_uuid(), '{"title": "x"}')$$,
  'PT404', 'entry not found', 'not found: update_journal_entry of a missing entry is PT404');
select throws_ok($$select * from public.list_team_members(gen_random_uuid())$$,
  'PT404', 'team not found', 'not found: list_team_members of a missing team is PT404');
reset role;
select is((select array_agg(p.oid::regprocedure::text order by 1)
             from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
            where n.nspname in ('public', 'private') and p.prosrc ~ '''P0002'''),
  null, 'not found: no function of ours raises P0002 (PostgREST answers it 400; not found is PT404)');

-- =======================================================================================
-- Bad input raises class 22 (data exception), which the API answers with a 400.
-- =======================================================================================
set local role authenticated;
select tests.authenticate_as('c6000000-0000-4000-8000-000000000001');
select throws_ok($$select public.update_journal_entry('c60000f0-0000-4000-8000-000000000001', '{"notebook_id": "nope"}')$$,
  '22P02', null, 'bad input: a malformed uuid in a patch is 22P02');
select throws_ok($$select public.update_journal_entry('c60000f0-0000-4000-8000-000000000001', '{"tags": "solo"}')$$,
  '22023', null, 'bad input: tags that are not an array are 22023');
select throws_ok($$select public.update_journal_entry('c60000f0-0000-4000-8000-000000000001', '[1]')$$,
  '22023', 'patch must be a JSON object', 'bad input: a patch that is not an object is 22023');
select throws_ok($$select public.update_my_profile('"x"')$$,
  '22023', 'patch must be a JSON object', 'bad input: a profile patch that is not an object is 22023');
select throws_ok($$insert into public.goals (title, target_date) values ('year zero', '0000-01-01')$$,
  '22008', null, 'bad input: target_date 0000-01-01 is 22008 (out of range)');
select throws_ok($$select public.transfer_organization_ownership('c60000a0-0000-4000-8000-000000000001', null)$$,
  '22023', null, 'bad input: a null new owner is 22023');

select * from finish();
rollback;
