-- Supabase's Security and Performance Advisors on the migrated database: no ERROR or WARN
-- finding, and none of the INFO findings a migration alone decides (unindexed foreign keys,
-- tables without a primary key). The lints are sql/lint/splinter.sql; each self-test below
-- creates one bad object and checks the lint names it, so a lint that stopped matching fails
-- here rather than passing silently.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = extensions;

\ir ../../sql/lint/splinter.sql

select plan(17);

-- =======================================================================================
-- The migrated database.
-- =======================================================================================
select is_empty($$select level || ' ' || lint || ': ' || object from splinter_findings where level in ('ERROR', 'WARN')$$,
  'splinter: no ERROR or WARN finding on the migrated database');
select is_empty($$select object from splinter_findings where lint in ('unindexed_foreign_keys', 'no_primary_key')$$,
  'splinter: every foreign key has a covering index and every table a primary key (INFO)');
-- Which indexes the statistics of this run call unused (INFO; depends on what ran before).
select diag('splinter INFO: ' || lint || ' ' || object) from splinter_findings where level = 'INFO' order by lint, object;

-- Findings added by a bad object, as "lint object" lines.
create temporary table splinter_baseline as select lint, object from splinter_findings;
create function pg_temp.splinter_new() returns text[]
language sql as $$
  select coalesce(array_agg(f.lint || ' ' || f.object order by f.lint, f.object), '{}')
    from splinter_findings f
   where (f.lint, f.object) not in (select lint, object from splinter_baseline)
     and f.lint <> 'unused_index' -- a new index has never been scanned; that lint is about workloads
$$;

-- =======================================================================================
-- Self-tests: each bad object is reported by its lint.
-- =======================================================================================

-- A security definer function in public that clients may execute.
create function public.splinter_selftest_definer(a uuid) returns integer
language sql security definer set search_path = '' as 'select 1';
grant execute on function public.splinter_selftest_definer(uuid) to anon, authenticated;
select is(pg_temp.splinter_new(), array[
    'anon_security_definer_function_executable public.splinter_selftest_definer(a uuid)',
    'authenticated_security_definer_function_executable public.splinter_selftest_definer(a uuid)'],
  'self-test: a security definer function in public executable by anon and authenticated is reported twice');
revoke execute on function public.splinter_selftest_definer(uuid) from anon, authenticated;
select is(pg_temp.splinter_new(), '{}'::text[],
  'self-test: the same function executable by neither is not reported');
drop function public.splinter_selftest_definer(uuid);

-- A function (any schema of ours) without a fixed search_path.
create function private.splinter_selftest_mutable() returns integer language sql as 'select 1';
select is(pg_temp.splinter_new(), array['function_search_path_mutable private.splinter_selftest_mutable()'],
  'self-test: a function without search_path is reported, in private too');
alter function private.splinter_selftest_mutable() set search_path = '';
select is(pg_temp.splinter_new(), '{}'::text[], 'self-test: with search_path set it is not');
drop function private.splinter_selftest_mutable();

-- A table in public without RLS; then policies on it while RLS stays off.
create table public.splinter_selftest_open (id integer primary key);
select is(pg_temp.splinter_new(), array['rls_disabled_in_public public.splinter_selftest_open'],
  'self-test: a table in public without RLS is reported (ERROR)');
create policy "selftest: one" on public.splinter_selftest_open for select to authenticated using (true);
create policy "selftest: two" on public.splinter_selftest_open for select to authenticated using (id > 0);
select is(pg_temp.splinter_new(), array[
    'multiple_permissive_policies public.splinter_selftest_open authenticated SELECT',
    'policy_exists_rls_disabled public.splinter_selftest_open',
    'rls_disabled_in_public public.splinter_selftest_open'],
  'self-test: policies on a table without RLS, and two permissive ones for one role and action, are reported');
drop table public.splinter_selftest_open;

-- A policy calling auth.uid() per row; an always-true write policy.
create table public.splinter_selftest_policies (id uuid primary key, owner_id uuid);
alter table public.splinter_selftest_policies enable row level security;
create policy "selftest: per row" on public.splinter_selftest_policies
  for select to authenticated using (owner_id = auth.uid());
create policy "selftest: anyone deletes" on public.splinter_selftest_policies
  for delete to authenticated using (true);
select is(pg_temp.splinter_new(), array[
    'auth_rls_initplan public.splinter_selftest_policies policy "selftest: per row"',
    'rls_policy_always_true public.splinter_selftest_policies policy "selftest: anyone deletes"'],
  'self-test: an unwrapped auth.uid() and a delete policy that is always true are reported');
drop table public.splinter_selftest_policies;

-- A view clients can read that ignores RLS; the same with security_invoker.
create view public.splinter_selftest_view as select 1 as one;
grant select on public.splinter_selftest_view to authenticated;
select is(pg_temp.splinter_new(), array['security_definer_view public.splinter_selftest_view'],
  'self-test: a view without security_invoker that clients read is reported (ERROR)');
alter view public.splinter_selftest_view set (security_invoker = on);
select is(pg_temp.splinter_new(), '{}'::text[], 'self-test: with security_invoker it is not');
drop view public.splinter_selftest_view;

-- Foreign key without an index (leading columns, in order), a table without a primary key,
-- and two identical indexes.
create table private.splinter_selftest_parent (a integer, b integer, primary key (a, b));
create table private.splinter_selftest_child (a integer, b integer,
  constraint splinter_selftest_fk foreign key (a, b) references private.splinter_selftest_parent (a, b));
create index splinter_selftest_ba on private.splinter_selftest_child (b, a);
create index splinter_selftest_ba_again on private.splinter_selftest_child (b, a);
select is(pg_temp.splinter_new(), array[
    'duplicate_index private.splinter_selftest_child',
    'no_primary_key private.splinter_selftest_child',
    'unindexed_foreign_keys private.splinter_selftest_child splinter_selftest_fk'],
  'self-test: an index in the wrong column order does not cover a foreign key; missing primary key; duplicate index');
create index splinter_selftest_ab on private.splinter_selftest_child (a, b, b);
drop index private.splinter_selftest_ba_again;
alter table private.splinter_selftest_child add primary key (a, b);
select is(pg_temp.splinter_new(), '{}'::text[],
  'self-test: fixed by an index leading with the key''s columns, a primary key and one copy of the index');
drop table private.splinter_selftest_child, private.splinter_selftest_parent;

-- An extension in public.
create extension tsm_system_rows with schema public;
select is(pg_temp.splinter_new(), array['extension_in_public tsm_system_rows'],
  'self-test: an extension installed in public is reported');
drop extension tsm_system_rows;

-- A policy trusting user_metadata.
create table public.splinter_selftest_metadata (id uuid primary key);
alter table public.splinter_selftest_metadata enable row level security;
create policy "selftest: metadata" on public.splinter_selftest_metadata
  for select to authenticated using (((select auth.jwt()) -> 'user_metadata' ->> 'role') = 'admin');
select is(pg_temp.splinter_new(), array['rls_references_user_metadata public.splinter_selftest_metadata policy "selftest: metadata"'],
  'self-test: a policy reading user_metadata from the token is reported (ERROR)');
drop table public.splinter_selftest_metadata;

-- A materialized view clients can read.
create materialized view public.splinter_selftest_matview as select 1 as one;
grant select on public.splinter_selftest_matview to anon;
select ok(pg_temp.splinter_new() @> array['materialized_view_in_api public.splinter_selftest_matview'],
  'self-test: a materialized view in public readable by anon is reported');
drop materialized view public.splinter_selftest_matview;

-- The exposed schemas follow PostgREST's setting where the platform sets it.
select set_config('pgrst.db_schemas', 'public, private', true);
select ok(exists (select 1 from splinter_findings
                   where lint = 'authenticated_security_definer_function_executable' and object like 'private.%'),
  'self-test: with private exposed (pgrst.db_schemas), its definer helpers count as exposed');
select set_config('pgrst.db_schemas', '', true);

select * from finish();
rollback;
