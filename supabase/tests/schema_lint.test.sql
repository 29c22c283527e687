-- Schema lint: reads the catalog and fails on any breach of ARCHITECTURE.md's database
-- conventions, so no later migration can break them unnoticed. Each rule is a helper
-- function (pg_temp.lint_*) returning one text line per offender; the real check asserts it
-- returns nothing (the diagnostics list the offenders), and a self-test creates a
-- deliberately bad object and asserts the same helper now reports exactly that object.
begin;
create extension if not exists pgtap with schema extensions;
-- Deterministic names in the output: every object prints schema-qualified.
set local search_path = extensions;

-- ---------------------------------------------------------------------------------------
-- Allow-list: security definer functions that anon may execute ON PURPOSE.
-- One row per function, signature as 'schema.name(argtype, argtype)' (types as
-- pg_catalog.oidvectortypes prints them), with the reason.
create temp table lint_anon_definer_allowlist (signature text primary key, reason text not null);
insert into lint_anon_definer_allowlist values
  ('private.limit_writes()', 'PostgREST''s pre-request counts anonymous writes per address in a table no API role may write'),
  ('private.invitation_details(text)', 'whoever holds an invitation link''s token (not signed up yet) reads what its e-mail said'),
  ('private.author_cards(uuid[])', 'anonymous readers see the author of a public entry: journal_feed and journal_entry_details pass only the authors of rows the caller already sees');
-- insert into lint_anon_definer_allowlist values ('public.example(uuid)', 'why anon needs it');
-- ---------------------------------------------------------------------------------------

select plan(39);

-- Schemas the API exposes (PostgREST db-schemas).
create function pg_temp.lint_exposed_schemas() returns text[]
language sql immutable as $$ select array['public'] $$;

-- The project's own schemas: everything except Postgres' and the platform's (Supabase's
-- schemas, hosted and local stand-ins) and the extensions schema (pgTAP lives there).
create function pg_temp.lint_is_project_schema(nsp name) returns boolean
language sql immutable as $$
  select nsp not in (
      'pg_catalog', 'information_schema', 'auth', 'storage', 'vault', 'net', 'extensions',
      'cron', 'supabase_migrations', 'graphql', 'graphql_public', 'realtime', '_realtime',
      'pgsodium', 'pgsodium_masks', 'pgbouncer', 'supabase_functions', '_analytics')
    and nsp !~ '^pg_(toast|temp_|toast_temp_)'
$$;

-- Functions that belong to an extension are not the project's code.
create function pg_temp.lint_is_extension_member(fn oid) returns boolean
language sql stable as $$
  select exists (select 1 from pg_catalog.pg_depend d
                  where d.classid = 'pg_catalog.pg_proc'::regclass and d.objid = fn and d.deptype = 'e')
$$;

create function pg_temp.lint_signature(fn oid) returns text
language sql stable as $$
  select format('%s.%s(%s)', n.nspname, p.proname, pg_catalog.oidvectortypes(p.proargtypes))
    from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
   where p.oid = fn
$$;

-- (a) tables in an exposed schema without row-level security.
create function pg_temp.lint_tables_without_rls() returns setof text
language sql stable as $$
  select format('%I.%I', n.nspname, c.relname)
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where c.relkind in ('r', 'p')
     and n.nspname = any (pg_temp.lint_exposed_schemas())
     and not c.relrowsecurity
   order by 1
$$;

-- (b1) security definer functions without a fixed search_path.
create function pg_temp.lint_definer_without_search_path() returns setof text
language sql stable as $$
  select pg_temp.lint_signature(p.oid)
    from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
   where p.prosecdef
     and pg_temp.lint_is_project_schema(n.nspname)
     and not pg_temp.lint_is_extension_member(p.oid)
     and not exists (select 1 from unnest(p.proconfig) cfg where cfg like 'search_path=%')
   order by 1
$$;

-- (b2) security definer functions whose fixed search_path is not '' (the convention).
create function pg_temp.lint_definer_search_path_not_empty() returns setof text
language sql stable as $$
  select pg_temp.lint_signature(p.oid) || ' has ' || cfg
    from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
    cross join lateral unnest(p.proconfig) cfg
   where p.prosecdef
     and pg_temp.lint_is_project_schema(n.nspname)
     and not pg_temp.lint_is_extension_member(p.oid)
     and cfg like 'search_path=%'
     and cfg <> 'search_path=""'
   order by 1
$$;

-- (c) views in an exposed schema that are not security_invoker.
create function pg_temp.lint_views_not_security_invoker() returns setof text
language sql stable as $$
  select format('%I.%I', n.nspname, c.relname)
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where c.relkind = 'v'
     and n.nspname = any (pg_temp.lint_exposed_schemas())
     and not exists (
       select 1 from unnest(c.reloptions) opt
        where split_part(opt, '=', 1) = 'security_invoker'
          and split_part(opt, '=', 2)::boolean)  -- Postgres' own boolean parsing (true, on, 1, ...)
   order by 1
$$;

-- (d) extensions installed in public.
create function pg_temp.lint_extensions_in_public() returns setof text
language sql stable as $$
  select e.extname::text
    from pg_catalog.pg_extension e
   where e.extnamespace = 'public'::regnamespace
   order by 1
$$;

-- (e) foreign keys (public, private) whose columns are not the leading columns of a
-- (non-partial) index on the referencing table.
create function pg_temp.lint_unindexed_foreign_keys() returns setof text
language sql stable as $$
  select format('%I.%I %I (%s)', n.nspname, c.relname, con.conname,
                (select string_agg(a.attname, ', ' order by k.ord)
                   from unnest(con.conkey) with ordinality k(attnum, ord)
                   join pg_catalog.pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.attnum))
    from pg_catalog.pg_constraint con
    join pg_catalog.pg_class c on c.oid = con.conrelid
    join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where con.contype = 'f'
     and n.nspname in ('public', 'private')
     and not exists (
       select 1 from pg_catalog.pg_index i
        where i.indrelid = con.conrelid
          and i.indpred is null
          and (select array_agg(x order by x)
                 from unnest((string_to_array(i.indkey::text, ' ')::int2[])[1:cardinality(con.conkey)]) x)
              = (select array_agg(x order by x) from unnest(con.conkey) x))
   order by 1
$$;

-- (f) policies (public, storage) calling auth.uid()/auth.jwt() per row instead of once per
-- statement. A wrapped call deparses as `( SELECT auth.uid() AS uid)` or, with an operator,
-- `( SELECT (auth.jwt() ->> 'role'::text))`: drop those, then any call left is unwrapped.
create function pg_temp.lint_policies_unwrapped_auth_calls() returns setof text
language sql stable as $$
  select format('%I.%I policy %I (%s)', p.schemaname, p.tablename, p.policyname, w.clause)
    from pg_catalog.pg_policies p
    cross join lateral (values ('using', p.qual), ('with check', p.with_check)) w(clause, expr)
   where p.schemaname in ('public', 'storage')
     and regexp_replace(w.expr, 'SELECT \(*auth\.(uid|jwt)\(\)', '', 'g') ~ 'auth\.(uid|jwt)\(\)'
   order by 1
$$;

-- (g) security definer functions anon can execute that are not on the allow-list.
create function pg_temp.lint_definer_executable_by_anon() returns setof text
language sql stable as $$
  select pg_temp.lint_signature(p.oid)
    from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
   where p.prosecdef
     and pg_temp.lint_is_project_schema(n.nspname)
     and not pg_temp.lint_is_extension_member(p.oid)
     and has_function_privilege('anon', p.oid, 'EXECUTE')
     and pg_temp.lint_signature(p.oid) not in (select signature from lint_anon_definer_allowlist)
   order by 1
$$;

-- (g) default privileges (of postgres, the role migrations run as) that would make a new
-- function executable by anon, authenticated or PUBLIC without a deliberate grant.
-- Known failure on a dev stack started more than once: sql/local/00_roles.sql is re-applied
-- on every `npm start` and re-grants EXECUTE on functions in public to anon/authenticated,
-- undoing the conventions migration's revoke (which, being applied, never runs again).
create function pg_temp.lint_default_function_privileges() returns setof text
language sql stable as $$
  select format('default privileges of %s%s grant EXECUTE on new functions to %s',
                pg_catalog.pg_get_userbyid(d.defaclrole),
                case when d.defaclnamespace = 0 then '' else ' in schema ' || d.defaclnamespace::regnamespace::text end,
                case when a.grantee = 0 then 'PUBLIC' else pg_catalog.pg_get_userbyid(a.grantee) end)
    from pg_catalog.pg_default_acl d
    cross join lateral aclexplode(d.defaclacl) a
   where d.defaclrole = 'postgres'::regrole
     and d.defaclobjtype = 'f'
     and a.privilege_type = 'EXECUTE'
     and (a.grantee = 0 or pg_catalog.pg_get_userbyid(a.grantee) in ('anon', 'authenticated'))
  union all
  select 'no global default privileges for postgres on functions: PUBLIC gets EXECUTE on every new function'
   where not exists (select 1 from pg_catalog.pg_default_acl d
                      where d.defaclrole = 'postgres'::regrole and d.defaclnamespace = 0 and d.defaclobjtype = 'f')
  order by 1
$$;

-- (h) two or more permissive policies for the same role and action on one table. A policy
-- `to public` applies to every role, so it also counts for anon and authenticated.
create function pg_temp.lint_duplicate_permissive_policies() returns setof text
language sql stable as $$
  select format('%I.%I %s to %s: %s', p.schemaname, p.tablename, a.action, r.role,
                string_agg(quote_ident(p.policyname), ', ' order by p.policyname))
    from pg_catalog.pg_policies p
    cross join lateral (
      select distinct x from unnest(p.roles) pr(name)
       cross join lateral unnest(case when pr.name = 'public' then array['public', 'anon', 'authenticated']::name[]
                                      else array[pr.name] end) x
    ) r(role)
    cross join lateral unnest(case when p.cmd = 'ALL' then array['SELECT', 'INSERT', 'UPDATE', 'DELETE']
                                   else array[p.cmd] end) a(action)
   where p.schemaname in ('public', 'storage')
     and p.permissive = 'PERMISSIVE'
   group by p.schemaname, p.tablename, a.action, r.role
  having count(*) > 1
   order by 1
$$;

-- (i) tables in public without a comment.
create function pg_temp.lint_tables_without_comment() returns setof text
language sql stable as $$
  select format('%I.%I', n.nspname, c.relname)
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where c.relkind in ('r', 'p')
     and n.nspname = 'public'
     and coalesce(obj_description(c.oid, 'pg_class'), '') = ''
   order by 1
$$;

-- (j) security definer functions in an exposed schema, whoever may execute them: an RPC
-- that needs elevated rights is a security invoker function calling a definer in private.
create function pg_temp.lint_definer_in_exposed_schema() returns setof text
language sql stable as $$
  select pg_temp.lint_signature(p.oid)
    from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
   where p.prosecdef
     and n.nspname = any (pg_temp.lint_exposed_schemas())
     and not pg_temp.lint_is_extension_member(p.oid)
   order by 1
$$;

-- (k) functions in an exposed schema without the fixed search_path '' (missing: the caller's
-- search_path decides what unqualified names mean; anything else: the convention).
create function pg_temp.lint_exposed_function_search_path() returns setof text
language sql stable as $$
  select pg_temp.lint_signature(p.oid) || coalesce(' has ' || (
           select cfg from unnest(p.proconfig) cfg where cfg like 'search_path=%' limit 1), ' has no search_path')
    from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
   where n.nspname = any (pg_temp.lint_exposed_schemas())
     and not pg_temp.lint_is_extension_member(p.oid)
     and not exists (select 1 from unnest(p.proconfig) cfg where cfg = 'search_path=""')
   order by 1
$$;

-- =======================================================================================
-- The real checks (one per rule). The diagnostics of a failure list the offenders.
-- =======================================================================================
select is_empty('select * from pg_temp.lint_tables_without_rls()',
  'lint (a): every table in an exposed schema has row-level security enabled');
select is_empty('select * from pg_temp.lint_definer_without_search_path()',
  'lint (b): every security definer function sets a fixed search_path');
select is_empty('select * from pg_temp.lint_definer_search_path_not_empty()',
  'lint (b): every security definer function sets search_path = ''''');
select is_empty('select * from pg_temp.lint_views_not_security_invoker()',
  'lint (c): every view in an exposed schema is security_invoker');
select is_empty('select * from pg_temp.lint_extensions_in_public()',
  'lint (d): no extension is installed in public');
select is_empty('select * from pg_temp.lint_unindexed_foreign_keys()',
  'lint (e): every foreign key is the leading columns of an index');
select is_empty('select * from pg_temp.lint_policies_unwrapped_auth_calls()',
  'lint (f): policies call auth.uid()/auth.jwt() only wrapped as (select ...)');
select is_empty('select * from pg_temp.lint_definer_executable_by_anon()',
  'lint (g): no security definer function is executable by anon unless allow-listed');
select is_empty('select * from pg_temp.lint_default_function_privileges()',
  'lint (g): default privileges do not give anon, authenticated or PUBLIC EXECUTE on new functions');
select is_empty('select * from pg_temp.lint_duplicate_permissive_policies()',
  'lint (h): at most one permissive policy per table, role and action');
select is_empty('select * from pg_temp.lint_tables_without_comment()',
  'lint (i): every table in public has a comment');
select is_empty('select * from pg_temp.lint_definer_in_exposed_schema()',
  'lint (j): no security definer function in an exposed schema');
select is_empty('select * from pg_temp.lint_exposed_function_search_path()',
  'lint (k): every function in an exposed schema sets search_path = ''''');

-- Baselines, so the self-tests below show exactly what each bad object adds (and still
-- work if a real check above fails).
create temp table lint_baseline as
  select 'a' as rule, x as offender from pg_temp.lint_tables_without_rls() x
  union all select 'b1', x from pg_temp.lint_definer_without_search_path() x
  union all select 'b2', x from pg_temp.lint_definer_search_path_not_empty() x
  union all select 'c', x from pg_temp.lint_views_not_security_invoker() x
  union all select 'd', x from pg_temp.lint_extensions_in_public() x
  union all select 'e', x from pg_temp.lint_unindexed_foreign_keys() x
  union all select 'f', x from pg_temp.lint_policies_unwrapped_auth_calls() x
  union all select 'g', x from pg_temp.lint_definer_executable_by_anon() x
  union all select 'g0', x from pg_temp.lint_default_function_privileges() x
  union all select 'h', x from pg_temp.lint_duplicate_permissive_policies() x
  union all select 'i', x from pg_temp.lint_tables_without_comment() x
  union all select 'j', x from pg_temp.lint_definer_in_exposed_schema() x
  union all select 'k', x from pg_temp.lint_exposed_function_search_path() x;

-- New offenders a rule reports compared with its baseline, as a sorted array.
create function pg_temp.lint_new(rule text, lint_fn text) returns text[]
language plpgsql as $$
declare result text[];
begin
  execute format(
    'select coalesce(array_agg(x order by x), ''{}'') from pg_temp.%I() x
      where x not in (select offender from lint_baseline where rule = %L)', lint_fn, rule)
    into result;
  return result;
end
$$;

-- =======================================================================================
-- Self-tests: each bad object is reported, and only it.
-- =======================================================================================

-- (a) a table in public without RLS.
create table public.lint_selftest_no_rls (id integer primary key);
comment on table public.lint_selftest_no_rls is 'lint self-test';
select is(pg_temp.lint_new('a', 'lint_tables_without_rls'), array['public.lint_selftest_no_rls'],
  'self-test (a): a table without RLS is reported');
alter table public.lint_selftest_no_rls enable row level security;
select is(pg_temp.lint_new('a', 'lint_tables_without_rls'), '{}'::text[],
  'self-test (a): the same table with RLS enabled is not reported');
drop table public.lint_selftest_no_rls;

-- (b) security definer functions without search_path, and with a non-empty one.
create function public.lint_selftest_definer_no_path() returns integer
language sql security definer as 'select 1';
create function private.lint_selftest_definer_public_path(a uuid, b text) returns integer
language sql security definer set search_path = public, pg_temp as 'select 1';
create function public.lint_selftest_definer_ok() returns integer
language sql security definer set search_path = '' as 'select 1';
create function public.lint_selftest_invoker_no_path() returns integer
language sql as 'select 1';
select is(pg_temp.lint_new('b1', 'lint_definer_without_search_path'),
  array['public.lint_selftest_definer_no_path()'],
  'self-test (b): a security definer function without search_path is reported (invoker functions are not)');
select is(pg_temp.lint_new('b2', 'lint_definer_search_path_not_empty'),
  array['private.lint_selftest_definer_public_path(uuid, text) has search_path=public, pg_temp'],
  'self-test (b): a security definer function with search_path other than '''' is reported');
drop function public.lint_selftest_definer_no_path();
drop function private.lint_selftest_definer_public_path(uuid, text);
drop function public.lint_selftest_definer_ok();
drop function public.lint_selftest_invoker_no_path();

-- (c) views: a definer-rights view is reported; security_invoker (any spelling) is not.
create view public.lint_selftest_definer_view as select 1 as one;
create view public.lint_selftest_invoker_view with (security_invoker) as select 1 as one;
create view public.lint_selftest_invoker_on_view with (security_invoker = on) as select 1 as one;
create view public.lint_selftest_invoker_off_view with (security_invoker = false) as select 1 as one;
select is(pg_temp.lint_new('c', 'lint_views_not_security_invoker'),
  array['public.lint_selftest_definer_view', 'public.lint_selftest_invoker_off_view'],
  'self-test (c): views without security_invoker (or with it false) are reported');
drop view public.lint_selftest_definer_view, public.lint_selftest_invoker_view,
  public.lint_selftest_invoker_on_view, public.lint_selftest_invoker_off_view;

-- (d) an extension in public.
create extension tsm_system_rows with schema public;
select is(pg_temp.lint_new('d', 'lint_extensions_in_public'), array['tsm_system_rows'],
  'self-test (d): an extension installed in public is reported');
drop extension tsm_system_rows;

-- (e) foreign keys: unindexed, indexed only by a partial index, indexed in another order,
-- and a composite key covered only in part.
create table private.lint_selftest_parent (id integer primary key, code text, unique (id, code));
create table private.lint_selftest_child (
  id integer primary key,
  parent_id integer references private.lint_selftest_parent (id),
  other_parent_id integer constraint lint_selftest_child_other_fk references private.lint_selftest_parent (id),
  pair_id integer,
  pair_code text,
  constraint lint_selftest_child_pair_fk foreign key (pair_id, pair_code) references private.lint_selftest_parent (id, code)
);
create index on private.lint_selftest_child (other_parent_id) where other_parent_id is not null;
create index on private.lint_selftest_child (pair_id);
select is(pg_temp.lint_new('e', 'lint_unindexed_foreign_keys'),
  array['private.lint_selftest_child lint_selftest_child_other_fk (other_parent_id)',
        'private.lint_selftest_child lint_selftest_child_pair_fk (pair_id, pair_code)',
        'private.lint_selftest_child lint_selftest_child_parent_id_fkey (parent_id)'],
  'self-test (e): unindexed, partially indexed and half-indexed foreign keys are reported');
create index on private.lint_selftest_child (parent_id, id);
create index on private.lint_selftest_child (other_parent_id);
create index on private.lint_selftest_child (pair_code, pair_id, id);
select is(pg_temp.lint_new('e', 'lint_unindexed_foreign_keys'), '{}'::text[],
  'self-test (e): a foreign key leading an index (in any column order) is not reported');
drop table private.lint_selftest_child, private.lint_selftest_parent;

-- (f) a policy with auth.uid() unwrapped is reported; wrapped forms are not.
create table public.lint_selftest_policies (id uuid primary key, owner_id uuid, team text);
create policy "lint self-test: unwrapped" on public.lint_selftest_policies
  for select to authenticated using (owner_id = auth.uid());
create policy "lint self-test: unwrapped jwt in check" on public.lint_selftest_policies
  for insert to authenticated with check (team = auth.jwt() ->> 'team');
create policy "lint self-test: wrapped" on public.lint_selftest_policies
  for update to authenticated
  using (owner_id = (select auth.uid()))
  with check ((select auth.jwt() ->> 'role') = 'authenticated' and owner_id = (select auth.uid()));
select is(pg_temp.lint_new('f', 'lint_policies_unwrapped_auth_calls'),
  array['public.lint_selftest_policies policy "lint self-test: unwrapped jwt in check" (with check)',
        'public.lint_selftest_policies policy "lint self-test: unwrapped" (using)'],
  'self-test (f): policies calling auth.uid()/auth.jwt() unwrapped are reported, wrapped ones are not');
create policy "lint self-test: unwrapped in a subquery" on public.lint_selftest_policies
  for delete to authenticated
  using (exists (select 1 from public.profiles p where p.id = auth.uid()));
select ok(pg_temp.lint_new('f', 'lint_policies_unwrapped_auth_calls')
          @> array['public.lint_selftest_policies policy "lint self-test: unwrapped in a subquery" (using)'],
  'self-test (f): an unwrapped call inside an EXISTS subquery is reported');
drop table public.lint_selftest_policies;

-- (g) a security definer function executable by anon: reported until allow-listed. (Its
-- privileges are set explicitly here; what default privileges give is the rule above.)
create function public.lint_selftest_anon_definer(n integer) returns integer
language sql security definer set search_path = '' as 'select n';
revoke all on function public.lint_selftest_anon_definer(integer) from public, anon, authenticated;
select is(pg_temp.lint_new('g', 'lint_definer_executable_by_anon'), '{}'::text[],
  'self-test (g): a security definer function anon cannot execute is not reported');
grant execute on function public.lint_selftest_anon_definer(integer) to anon;
select is(pg_temp.lint_new('g', 'lint_definer_executable_by_anon'),
  array['public.lint_selftest_anon_definer(integer)'],
  'self-test (g): a security definer function granted to anon is reported');
revoke execute on function public.lint_selftest_anon_definer(integer) from anon;
grant execute on function public.lint_selftest_anon_definer(integer) to public;
select is(pg_temp.lint_new('g', 'lint_definer_executable_by_anon'),
  array['public.lint_selftest_anon_definer(integer)'],
  'self-test (g): a security definer function executable through PUBLIC is reported');
insert into lint_anon_definer_allowlist values ('public.lint_selftest_anon_definer(integer)', 'self-test');
select is(pg_temp.lint_new('g', 'lint_definer_executable_by_anon'), '{}'::text[],
  'self-test (g): an allow-listed function is not reported');
delete from lint_anon_definer_allowlist where signature = 'public.lint_selftest_anon_definer(integer)';
drop function public.lint_selftest_anon_definer(integer);

-- (g) default privileges granting EXECUTE on new functions to an API role are reported.
alter default privileges in schema private grant execute on functions to authenticated;
select is(pg_temp.lint_new('g0', 'lint_default_function_privileges'),
  array['default privileges of postgres in schema private grant EXECUTE on new functions to authenticated'],
  'self-test (g): default privileges that grant EXECUTE on new functions to an API role are reported');
alter default privileges in schema private revoke execute on functions from authenticated;

-- (h) duplicate permissive policies (ALL expands to every action; restrictive ones don't count).
create table public.lint_selftest_dupes (id uuid primary key);
create policy "lint self-test: all" on public.lint_selftest_dupes
  for all to authenticated using (true);
create policy "lint self-test: select" on public.lint_selftest_dupes
  for select to anon, authenticated using (true);
create policy "lint self-test: restrictive update" on public.lint_selftest_dupes
  as restrictive for update to authenticated using (true);
create policy "lint self-test: anon insert" on public.lint_selftest_dupes
  for insert to anon with check (true);
create policy "lint self-test: public delete" on public.lint_selftest_dupes
  for delete to public using (true);
select is(pg_temp.lint_new('h', 'lint_duplicate_permissive_policies'),
  array['public.lint_selftest_dupes DELETE to authenticated: "lint self-test: all", "lint self-test: public delete"',
        'public.lint_selftest_dupes SELECT to authenticated: "lint self-test: all", "lint self-test: select"'],
  'self-test (h): two permissive policies for the same role and action (ALL and PUBLIC expanded) are reported, and only those');
drop table public.lint_selftest_dupes;

-- (i) a table without a comment.
create table public.lint_selftest_uncommented (id integer primary key);
alter table public.lint_selftest_uncommented enable row level security;
select is(pg_temp.lint_new('i', 'lint_tables_without_comment'), array['public.lint_selftest_uncommented'],
  'self-test (i): a table without a comment is reported');
comment on table public.lint_selftest_uncommented is 'lint self-test';
select is(pg_temp.lint_new('i', 'lint_tables_without_comment'), '{}'::text[],
  'self-test (i): the same table with a comment is not reported');
drop table public.lint_selftest_uncommented;

-- (j) a security definer function in public, even one nobody may execute; a definer in
-- private and an invoker in public are not reported.
create function public.lint_selftest_exposed_definer(a uuid) returns integer
language sql security definer set search_path = '' as 'select 1';
revoke all on function public.lint_selftest_exposed_definer(uuid) from public, anon, authenticated;
create function private.lint_selftest_private_definer() returns integer
language sql security definer set search_path = '' as 'select 1';
create function public.lint_selftest_exposed_invoker() returns integer
language sql set search_path = '' as 'select private.lint_selftest_private_definer()';
select is(pg_temp.lint_new('j', 'lint_definer_in_exposed_schema'), array['public.lint_selftest_exposed_definer(uuid)'],
  'self-test (j): a security definer function in public is reported, granted or not');
alter function public.lint_selftest_exposed_definer(uuid) security invoker;
select is(pg_temp.lint_new('j', 'lint_definer_in_exposed_schema'), '{}'::text[],
  'self-test (j): the same function as security invoker is not reported');
drop function public.lint_selftest_exposed_definer(uuid), public.lint_selftest_exposed_invoker(),
  private.lint_selftest_private_definer();

-- (k) functions in public without search_path, or with another one; SQL, PL/pgSQL alike.
create function public.lint_selftest_no_path(n integer) returns integer language sql as 'select n';
create function public.lint_selftest_public_path() returns integer
language plpgsql set search_path = public as 'begin return 1; end';
create function public.lint_selftest_empty_path() returns integer language sql set search_path = '' as 'select 1';
create function private.lint_selftest_private_no_path() returns integer language sql as 'select 1';
select is(pg_temp.lint_new('k', 'lint_exposed_function_search_path'),
  array['public.lint_selftest_no_path(integer) has no search_path',
        'public.lint_selftest_public_path() has search_path=public'],
  'self-test (k): functions in public without search_path '''' are reported (not those in private: lint b covers definers there)');
drop function public.lint_selftest_no_path(integer), public.lint_selftest_public_path(),
  public.lint_selftest_empty_path(), private.lint_selftest_private_no_path();

-- Conventions the lint relies on, from the conventions migration.
select is(
  (select array_agg(e.extname::text || ' in ' || n.nspname order by e.extname)
     from pg_catalog.pg_extension e join pg_catalog.pg_namespace n on n.oid = e.extnamespace
    where e.extname = 'pg_cron'),
  array['pg_cron in pg_catalog'],
  'pg_cron is installed in pg_catalog');
select ok(not has_schema_privilege('anon', 'private', 'create')
          and not has_schema_privilege('authenticated', 'private', 'create'),
  'API roles cannot create objects in the private schema');
select is(
  (select array_agg(pg_temp.lint_signature(p.oid) order by pg_temp.lint_signature(p.oid))
     from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('public', 'private')
      and not pg_temp.lint_is_extension_member(p.oid)
      and has_function_privilege('anon', p.oid, 'EXECUTE')),
  array['private.author_cards(uuid[])', 'private.check_request()',
        'private.entry_track(text)', 'private.impersonation_live()', 'private.invitation_details(text)',
        'private.limit_writes()', 'private.refuse_ended_impersonation()',
        'private.sees_whole_entry(uuid)', 'private.tone_icon_url(text)', 'public.invitation_details(text)',
        'public.journal_feed(text, uuid, uuid, uuid, text, text, text, timestamp with time zone, uuid, integer)',
        'public.journal_stats(text)'],
  'anon executes only the entry view''s seam functions, journal_feed and journal_stats (granted on purpose: anon reads public entries), '
  'invitation_details (a link''s holder, not signed up yet) and PostgREST''s pre-request check and its parts (it runs for every request, anonymous ones too)');
select is(
  (select array_agg(pg_temp.lint_signature(p.oid) order by pg_temp.lint_signature(p.oid))
     from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('public', 'private')
      and not pg_temp.lint_is_extension_member(p.oid)
      and p.proacl is null),
  null,
  'every function in public and private has explicit privileges (none relies on the PUBLIC default)');
select is(
  (select array_agg(format('%I.%I', n.nspname, c.relname) order by c.relname)
     from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'private' and c.relkind in ('r', 'p', 'v', 'm')
      and (has_table_privilege('anon', c.oid, 'select') or has_table_privilege('authenticated', c.oid, 'select'))),
  null,
  'no table or view in private is readable by the API roles');

select * from finish();
rollback;
