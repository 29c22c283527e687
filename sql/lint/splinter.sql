-- The database lints of Supabase's Security and Performance Advisors ("splinter"), written
-- again for this project so they run on the local stack and in `npm test`. Each lint keeps
-- splinter's name and level (ERROR, WARN, INFO); the rules follow splinter's documented
-- checks (https://supabase.com/docs/guides/database/database-linter).
--
-- Defines the session-local view `splinter_findings` (lint, level, object, detail).
-- Run it against any database:
--   psql "$DB_URL" -X -q -f sql/lint/splinter.sql \
--     -c "select level, lint, object from splinter_findings order by 2, 3"
-- supabase/tests/splinter.test.sql includes it and fails on any ERROR or WARN finding.
--
-- Exposed schemas are PostgREST's db-schemas (the `pgrst.db_schemas` setting on Supabase),
-- `public` when the setting is absent (the local stack passes it on PostgREST's command line).
-- Schemas the platform owns are never the project's and are skipped, as splinter does.

create or replace temporary view splinter_findings as
with platform_schemas(nspname) as (
  values ('pg_catalog'), ('information_schema'), ('auth'), ('storage'), ('vault'), ('extensions'),
         ('cron'), ('net'), ('graphql'), ('graphql_public'), ('realtime'), ('supabase_functions'),
         ('supabase_migrations'), ('pgsodium'), ('pgsodium_masks'), ('pgbouncer'), ('pgtle'),
         ('pgmq'), ('pgroonga'), ('repack'), ('tiger'), ('topology'), ('_timescaledb_internal'),
         ('_timescaledb_cache'), ('_timescaledb_catalog'), ('_timescaledb_config'), ('_realtime'),
         ('_analytics')
),
exposed_schemas(nspname) as (
  select btrim(s) from unnest(string_to_array(
    coalesce(nullif(current_setting('pgrst.db_schemas', true), ''), 'public'), ',')) s
),
-- Relations and functions of the project: not in a platform schema, not part of an extension.
project_relations as (
  select c.oid, c.relname, c.relkind, c.relrowsecurity, c.reloptions, n.nspname,
         n.nspname in (select nspname from exposed_schemas) as exposed,
         format('%I.%I', n.nspname, c.relname) as object
    from pg_catalog.pg_class c
    join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where n.nspname not in (select nspname from platform_schemas)
     and n.nspname not like 'pg\_%'
     and not exists (select 1 from pg_catalog.pg_depend d
                      where d.classid = 'pg_catalog.pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
),
project_functions as (
  select p.oid, p.prosecdef, p.proconfig, n.nspname,
         n.nspname in (select nspname from exposed_schemas) as exposed,
         format('%I.%I(%s)', n.nspname, p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid)) as object
    from pg_catalog.pg_proc p
    join pg_catalog.pg_namespace n on n.oid = p.pronamespace
   where n.nspname not in (select nspname from platform_schemas)
     and n.nspname not like 'pg\_%'
     and not exists (select 1 from pg_catalog.pg_depend d
                      where d.classid = 'pg_catalog.pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
),
policies as (
  select r.object, r.relrowsecurity, pol.polname, pol.polpermissive, pol.polroles,
         case pol.polcmd when 'r' then 'SELECT' when 'a' then 'INSERT' when 'w' then 'UPDATE'
                         when 'd' then 'DELETE' else 'ALL' end as command,
         pg_catalog.pg_get_expr(pol.polqual, pol.polrelid) as qual,
         pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid) as with_check,
         -- Applies to a client role: PUBLIC, anon or authenticated.
         (0::oid = any (pol.polroles)
           or exists (select 1 from unnest(pol.polroles) ro
                       where pg_catalog.pg_get_userbyid(ro) in ('anon', 'authenticated'))) as for_clients
    from pg_catalog.pg_policy pol
    join project_relations r on r.oid = pol.polrelid
   where r.relkind in ('r', 'p')
),
findings(lint, level, object, detail) as (
  -- 0001: a foreign key whose columns are not the leading columns (in order) of a valid index.
  select 'unindexed_foreign_keys', 'INFO', r.object || ' ' || quote_ident(con.conname),
         'foreign key without a covering index'
    from pg_catalog.pg_constraint con
    join project_relations r on r.oid = con.conrelid
   where con.contype = 'f'
     and not exists (
       select 1 from pg_catalog.pg_index i
        where i.indrelid = con.conrelid and i.indisvalid
          and (string_to_array(i.indkey::text, ' ')::int2[])[1:cardinality(con.conkey)] = con.conkey)

  -- 0002: auth.users readable by clients through a view or materialized view in an exposed schema.
  union all
  select distinct 'auth_users_exposed', 'ERROR', r.object, 'exposes auth.users to anon or authenticated'
    from pg_catalog.pg_depend d
    join pg_catalog.pg_rewrite rw on rw.oid = d.objid
    join project_relations r on r.oid = rw.ev_class
   where d.classid = 'pg_catalog.pg_rewrite'::regclass
     and d.refobjid = 'auth.users'::regclass
     and r.relkind in ('v', 'm') and r.exposed
     and (has_table_privilege('anon', r.oid, 'SELECT') or has_table_privilege('authenticated', r.oid, 'SELECT'))

  -- 0003: a policy calling auth.uid()/jwt()/role()/email() per row instead of once, (select ...).
  union all
  select 'auth_rls_initplan', 'WARN', p.object || ' policy ' || quote_ident(p.polname),
         'calls an auth function per row; wrap it as (select auth.<function>())'
    from policies p
   where p.relrowsecurity
     and exists (select 1 from unnest(array[p.qual, p.with_check]) e
                  where regexp_replace(e, 'select\s+\(*auth\.(uid|jwt|role|email)\(\)', '', 'gi')
                        ~ 'auth\.(uid|jwt|role|email)\(\)')

  -- 0004: a table without a primary key.
  union all
  select 'no_primary_key', 'INFO', r.object, 'table has no primary key'
    from project_relations r
   where r.relkind in ('r', 'p')
     and not exists (select 1 from pg_catalog.pg_index i where i.indrelid = r.oid and i.indisprimary)

  -- 0005: an index never scanned since the statistics were reset (unique ones enforce rules).
  union all
  select 'unused_index', 'INFO', r.object || ' ' || quote_ident(s.indexrelname), 'index has not been used'
    from pg_catalog.pg_stat_user_indexes s
    join pg_catalog.pg_index i on i.indexrelid = s.indexrelid
    join project_relations r on r.oid = s.relid
   where s.idx_scan = 0 and not i.indisunique and not i.indisprimary

  -- 0006: more than one permissive policy for the same role and action on a table.
  union all
  select 'multiple_permissive_policies', 'WARN', p.object || ' ' || ro.rolname || ' ' || a.action,
         'permissive policies ' || string_agg(quote_ident(p.polname), ', ' order by p.polname)
    from (select * from policies where polpermissive) p
    join pg_catalog.pg_roles ro on ro.oid = any (p.polroles) or p.polroles = array[0::oid]
    cross join lateral unnest(case when p.command = 'ALL' then array['SELECT', 'INSERT', 'UPDATE', 'DELETE']
                                   else array[p.command] end) a(action)
   where ro.rolname not like 'pg\_%' and ro.rolname not like 'supabase%admin' and not ro.rolbypassrls
   group by p.object, ro.rolname, a.action
  having count(*) > 1

  -- 0007: policies on a table whose row-level security is off (they do nothing).
  union all
  select 'policy_exists_rls_disabled', 'ERROR', p.object,
         'has policies but RLS is disabled: ' || string_agg(quote_ident(p.polname), ', ' order by p.polname)
    from policies p
   where not p.relrowsecurity
   group by p.object

  -- 0008: a table in an exposed schema with RLS enabled and no policy (nobody can use it).
  union all
  select 'rls_enabled_no_policy', 'INFO', r.object, 'RLS enabled but no policy exists'
    from project_relations r
   where r.relkind in ('r', 'p') and r.exposed and r.relrowsecurity
     and not exists (select 1 from pg_catalog.pg_policy pol where pol.polrelid = r.oid)

  -- 0009: identical indexes on one table.
  union all
  select 'duplicate_index', 'WARN', r.object,
         'identical indexes ' || string_agg(quote_ident(ic.relname), ', ' order by ic.relname)
    from pg_catalog.pg_index i
    join pg_catalog.pg_class ic on ic.oid = i.indexrelid
    join project_relations r on r.oid = i.indrelid
   where r.relkind in ('r', 'p', 'm')
   group by r.object, replace(pg_catalog.pg_get_indexdef(i.indexrelid), quote_ident(ic.relname), '')
  having count(*) > 1

  -- 0010: a view clients can read that runs with its owner's rights (ignores RLS).
  union all
  select 'security_definer_view', 'ERROR', r.object, 'view is not security_invoker'
    from project_relations r
   where r.relkind = 'v'
     and (has_table_privilege('anon', r.oid, 'SELECT') or has_table_privilege('authenticated', r.oid, 'SELECT'))
     and not exists (select 1 from unnest(r.reloptions) o
                      where lower(o) in ('security_invoker=true', 'security_invoker=on',
                                         'security_invoker=1', 'security_invoker=yes'))

  -- 0011: a function whose search_path the caller controls.
  union all
  select 'function_search_path_mutable', 'WARN', f.object, 'function does not set search_path'
    from project_functions f
   where not exists (select 1 from unnest(f.proconfig) c where c like 'search\_path=%')

  -- 0013: a table in an exposed schema without row-level security.
  union all
  select 'rls_disabled_in_public', 'ERROR', r.object, 'RLS is not enabled on a table the API exposes'
    from project_relations r
   where r.relkind in ('r', 'p') and r.exposed and not r.relrowsecurity

  -- 0014: an extension installed in public.
  union all
  select 'extension_in_public', 'WARN', e.extname::text, 'extension installed in public'
    from pg_catalog.pg_extension e
   where e.extnamespace = 'public'::regnamespace and e.extname <> 'plpgsql'

  -- 0015: a policy trusting user_metadata, which users edit themselves.
  union all
  select 'rls_references_user_metadata', 'ERROR', p.object || ' policy ' || quote_ident(p.polname),
         'policy reads user_metadata from the token'
    from policies p
   where concat_ws(' ', p.qual, p.with_check) ~ '(auth\.jwt\(\)|request\.jwt\.claims).*user_metadata'

  -- 0016, 0017: materialized views and foreign tables in an exposed schema (no RLS on them).
  union all
  select case r.relkind when 'm' then 'materialized_view_in_api' else 'foreign_table_in_api' end, 'WARN',
         r.object, 'readable by client roles without row-level security'
    from project_relations r
   where r.relkind in ('m', 'f') and r.exposed
     and (has_table_privilege('anon', r.oid, 'SELECT') or has_table_privilege('authenticated', r.oid, 'SELECT'))

  -- 0021: a foreign key to a unique (non-primary) constraint of an auth table.
  union all
  select 'fkey_to_auth_unique', 'ERROR', r.object || ' ' || quote_ident(con.conname),
         'foreign key to a unique constraint in auth'
    from pg_catalog.pg_constraint con
    join project_relations r on r.oid = con.conrelid
    join pg_catalog.pg_class ref on ref.oid = con.confrelid
    join pg_catalog.pg_index i on i.indexrelid = con.conindid
   where con.contype = 'f' and ref.relnamespace = 'auth'::regnamespace and i.indisunique and not i.indisprimary

  -- 0024: a client policy that lets every row through for writes.
  union all
  select 'rls_policy_always_true', 'WARN', p.object || ' policy ' || quote_ident(p.polname),
         p.command || ' policy is always true'
    from policies p
   where p.relrowsecurity and p.polpermissive and p.for_clients
     and ((p.command in ('UPDATE', 'DELETE', 'ALL')
            and (regexp_replace(lower(coalesce(p.qual, '')), '\s', '', 'g') in ('true', '(true)', '1=1', '(1=1)')
                 or p.qual is null))
       or regexp_replace(lower(coalesce(p.with_check, '')), '\s', '', 'g') in ('true', '(true)', '1=1', '(1=1)')
       or (p.command = 'INSERT' and p.with_check is null))

  -- 0028, 0029: a security definer function in an exposed schema that clients may execute.
  union all
  select case r.rolname when 'anon' then 'anon_security_definer_function_executable'
                        else 'authenticated_security_definer_function_executable' end,
         'WARN', f.object, 'security definer function executable by ' || r.rolname
    from project_functions f
    cross join (values ('anon'), ('authenticated')) r(rolname)
   where f.prosecdef and f.exposed and has_function_privilege(r.rolname, f.oid, 'EXECUTE')
)
select lint, level, object, detail from findings;
