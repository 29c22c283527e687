-- Impersonation in SQL: the catalog walk
-- (every table a request can write, directly or through a security definer function, carries
-- the audit trigger), tables created later get it by themselves, PostgREST's pre-request
-- setting, and the session rules inside the database (both session sources, 401 once ended,
-- storage.objects and the supabase_realtime tables closed to an ended session).
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql
set local search_path = extensions;

select plan(30);

-- The tables a request can write, derived here independently of the migration's own rule:
-- every table of the project's schemas (all but Postgres' and the platform's: the schema lint's
-- list) and storage.objects; every table that holds rows (partitions too, never a partitioned
-- parent, which holds none); not the audit tables themselves, not extensions' tables.
create function pg_temp.writable_tables() returns setof regclass
language sql stable as $$
  select c.oid::regclass
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where c.relkind = 'r'
     and ((n.nspname not in ('information_schema', 'auth', 'storage', 'vault', 'net', 'extensions', 'cron',
                             'supabase_migrations', 'graphql', 'graphql_public', 'realtime', '_realtime',
                             'pgsodium', 'pgsodium_masks', 'pgbouncer', 'supabase_functions', '_analytics')
           and n.nspname !~ '^pg_')
          or (n.nspname = 'storage' and c.relname = 'objects'))
     and (n.nspname, c.relname) not in (('public', 'impersonation_audit'), ('public', 'impersonation_writes'),
                                        -- the write rate limit's bookkeeping: counted requests, not rows written
                                        ('private', 'write_rate_counters'), ('private', 'api_write_secret'))
     and not exists (select 1 from pg_catalog.pg_depend d
                      where d.classid = 'pg_catalog.pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
$$;

-- Offenders: writable tables without an enabled AFTER ... FOR EACH ROW trigger on INSERT, UPDATE
-- and DELETE that calls private.record_impersonated_write(). (tgtype bits: 1 row, 2 before,
-- 4 insert, 8 delete, 16 update, 64 instead of; tgenabled O and A fire in normal sessions.)
create function pg_temp.unaudited_tables() returns setof text
language sql stable as $$
  select t::text from pg_temp.writable_tables() t
   where not exists (
     select 1 from pg_catalog.pg_trigger g
      where g.tgrelid = t
        and g.tgfoid = 'private.record_impersonated_write()'::regprocedure
        and g.tgenabled in ('O', 'A')
        and g.tgtype & 1 = 1 and g.tgtype & (2 | 64) = 0
        and g.tgtype & (4 | 8 | 16) = 4 | 8 | 16)
   order by 1
$$;

-- =========================================================================================
-- 1. The catalog walk.
-- =========================================================================================
select ok((select count(*) from pg_temp.writable_tables()) >= 70, 'the walk covers the project''s tables');
select ok((select array_agg(t::text) from pg_temp.writable_tables() t)
          @> array['public.labs_sponsors', 'private.labs_sponsor_private', 'private.music_tokens', 'public.tone_pack_purchases',
                   'public.email_messages', 'public.workout_checkins', 'storage.objects'],
  'it includes tables written only by security definer functions, private ones and storage.objects');
select is_empty('select * from pg_temp.unaudited_tables()',
  'every table a request can write carries the impersonation audit trigger (the diagnostics list the offenders)');

-- Hosted Realtime checks changes with the subscriber's claims and runs no pre-request: every table
-- of the supabase_realtime publication has a restrictive policy for authenticated reads that
-- calls private.impersonation_live().
select is_empty($$
  select format('%I.%I', t.schemaname, t.tablename) from pg_catalog.pg_publication_tables t
   where t.pubname = 'supabase_realtime'
     and not exists (select 1 from pg_catalog.pg_policy p
                      where p.polrelid = format('%I.%I', t.schemaname, t.tablename)::regclass
                        and not p.polpermissive and p.polcmd in ('r', '*')
                        and 'authenticated'::regrole = any (p.polroles)
                        and pg_catalog.pg_get_expr(p.polqual, p.polrelid) like '%private.impersonation_live()%')
   order by 1 $$,
  'every table Realtime publishes is closed to an ended impersonation session (the diagnostics list the offenders)');

-- New tables get the trigger in the statement that creates them, whatever the form or schema.
create table public.zz_imp_new (id integer primary key);
create table private.zz_imp_as as select 1 as id;
select 1 as id into private.zz_imp_into;
create schema zz_imp_schema;
create table zz_imp_schema.t (k text primary key);
create table public.zz_imp_parent (id integer, d date) partition by range (d);
create table public.zz_imp_child partition of public.zz_imp_parent for values from ('2026-01-01') to ('2027-01-01');
create temp table zz_imp_temp (id integer);
select is_empty('select * from pg_temp.unaudited_tables()',
  'tables created later carry the trigger: create table, create table as, select into, a new schema, a partitioned table');
select ok(exists (select 1 from pg_catalog.pg_trigger where tgrelid = 'public.zz_imp_child'::regclass
                   and tgfoid = 'private.record_impersonated_write()'::regprocedure and tgparentid = 0)
          and not exists (select 1 from pg_catalog.pg_trigger where tgrelid = 'public.zz_imp_parent'::regclass),
  'a partition carries its own trigger, the partitioned parent none');
-- pg_partman's way: a table made first (it gets the trigger), attached later; then detached.
create table public.zz_imp_later (like public.zz_imp_parent);
select lives_ok($$alter table public.zz_imp_parent attach partition public.zz_imp_later for values from ('2027-01-01') to ('2028-01-01')$$,
  'a table made first attaches as a partition (no clash of trigger names)');
alter table public.zz_imp_parent detach partition public.zz_imp_child;
select is_empty('select * from pg_temp.unaudited_tables()', 'attached and detached partitions keep their trigger');
select ok(not exists (select 1 from pg_catalog.pg_trigger where tgrelid = 'zz_imp_temp'::regclass),
  'temporary tables are left alone');
select is((select evtenabled::text || ' ' || evtevent || ' ' || evtfoid::regproc::text from pg_catalog.pg_event_trigger
            where evtname = 'audit_impersonated_writes_on_new_tables'),
  'O ddl_command_end private.audit_new_tables', 'the event trigger is enabled on ddl_command_end');

-- The walk fails for a table not covered: a disabled trigger, a dropped one.
alter table private.zz_imp_as disable trigger zz_record_impersonated_write;
select results_eq('select * from pg_temp.unaudited_tables()', array['private.zz_imp_as'],
  'the walk reports a table whose trigger is disabled');
alter table private.zz_imp_as enable trigger zz_record_impersonated_write;
drop trigger zz_record_impersonated_write on zz_imp_schema.t;
select results_eq('select * from pg_temp.unaudited_tables()', array['zz_imp_schema.t'],
  'the walk reports a table without the trigger');
alter table zz_imp_schema.t add column v text;
select is_empty('select * from pg_temp.unaudited_tables()', 'the next ALTER TABLE of it attaches the trigger again');

-- =========================================================================================
-- 2. PostgREST runs the check before every request (hosted: the same role setting).
-- =========================================================================================
select is((select s from pg_catalog.pg_db_role_setting r cross join lateral unnest(r.setconfig) s
            where r.setrole = 'authenticator'::regrole and r.setdatabase = 0 and s like 'pgrst.db_pre_request=%'),
  'pgrst.db_pre_request=private.check_request', 'the authenticator role names the pre-request function');
select ok(has_function_privilege('anon', 'private.refuse_ended_impersonation()', 'execute')
          and has_function_privilege('authenticated', 'private.refuse_ended_impersonation()', 'execute')
          and has_function_privilege('service_role', 'private.refuse_ended_impersonation()', 'execute'),
  'every API role may run it (PostgREST calls it as the request''s role)');

-- =========================================================================================
-- 3. Sessions inside the database.
-- =========================================================================================
select tests.create_user(to_jsonb(u)) from (values 
  ('20200000-0000-4000-8000-000000000001', 'imp-target@test.local'),
  ('20200000-0000-4000-8000-000000000002', 'imp-admin@test.local')) u (id, email);
update public.profiles set role = 'super_admin' where id = '20200000-0000-4000-8000-000000000002';
insert into public.impersonation_audit (session_id, event, admin_id, target_id, reason, expires_at) values
  ('20200000-0000-4000-8000-0000000000a1', 'start', '20200000-0000-4000-8000-000000000002', '20200000-0000-4000-8000-000000000001', 'live', now() + interval '10 minutes'),
  ('20200000-0000-4000-8000-0000000000a2', 'start', '20200000-0000-4000-8000-000000000002', '20200000-0000-4000-8000-000000000001', 'stopped', now() + interval '10 minutes'),
  ('20200000-0000-4000-8000-0000000000a2', 'stop', '20200000-0000-4000-8000-000000000002', '20200000-0000-4000-8000-000000000001', 'stopped', null),
  ('20200000-0000-4000-8000-0000000000a3', 'start', '20200000-0000-4000-8000-000000000002', '20200000-0000-4000-8000-000000000001', 'expired', now() - interval '1 second');
insert into storage.objects (bucket_id, name, owner_id) values ('tone-packs', '20200000-0000-4000-8000-000000000001/mine.png', '20200000-0000-4000-8000-000000000001');
select private.notify('20200000-0000-4000-8000-000000000001', 'test.impersonation', '{}');

-- Claims of an impersonation token of a session (or of the target herself: null).
create function pg_temp.claims(session text) returns void
language sql as $$
  select set_config('request.jwt.claims', json_build_object(
    'sub', '20200000-0000-4000-8000-000000000001', 'role', 'authenticated', 'aud', 'authenticated',
    'act', json_build_object('sub', '20200000-0000-4000-8000-000000000002'),
    'impersonation_session', session)::text, true)
$$;
create function pg_temp.own_claims() returns void
language sql as $$
  select set_config('request.jwt.claims', '{"sub": "20200000-0000-4000-8000-000000000001", "role": "authenticated"}', true)
$$;
create function pg_temp.writes(session text) returns text[]
language sql as $$
  select coalesce(array_agg(table_name || ' ' || operation || ' ' || actor_role order by id), '{}')
    from public.impersonation_writes where session_id = session::uuid
$$;
grant execute on function pg_temp.claims(text), pg_temp.own_claims() to authenticated;

-- A live session: a labs submission (a security definer function writing a private table too).
select pg_temp.claims('20200000-0000-4000-8000-0000000000a1');
set local role authenticated;
select lives_ok('select private.refuse_ended_impersonation()', 'a live session passes the pre-request check');
select lives_ok($$select public.labs_submit_sponsor('Imp Co', 'gold', 'c@imp.test', 'C')$$, 'a live session writes');
select is((select count(*)::int from storage.objects where name like '20200000-0000-4000-8000-000000000001/%'), 1,
  'a live session reads her storage folder');
select is((select count(*)::int from public.notifications where type = 'test.impersonation'), 1,
  'a live session reads her notifications');
reset role;
select is(pg_temp.writes('20200000-0000-4000-8000-0000000000a1'),
  array['public.labs_sponsors INSERT authenticated', 'private.labs_sponsor_private INSERT authenticated'],
  'both rows of the submission are attributed to the session, the private one too');

-- Stopped and expired sessions: 401 before anything, writes refused, storage shows nothing.
select pg_temp.claims('20200000-0000-4000-8000-0000000000a2');
set local role authenticated;
select throws_ok('select private.refuse_ended_impersonation()', 'PT401', 'The impersonation session has ended',
  'a stopped session fails the pre-request check (PostgREST answers 401)');
select throws_ok($$select public.labs_submit_sponsor('Late Co', 'gold', 'l@imp.test', 'L')$$, 'PT401', 'The impersonation session has ended',
  'a stopped session writes nothing, even where the pre-request does not run');
select is((select count(*)::int from storage.objects where name like '20200000-0000-4000-8000-000000000001/%'), 0,
  'a stopped session reads nothing of storage.objects (hosted Storage runs no pre-request)');
select is((select count(*)::int from public.notifications where type = 'test.impersonation'), 0,
  'nor her notifications (hosted Realtime runs no pre-request)');
select throws_ok($$insert into storage.objects (bucket_id, name) values ('tone-packs', '20200000-0000-4000-8000-000000000001/late.png')$$,
  '42501', null, 'nor writes into it');
select pg_temp.claims('20200000-0000-4000-8000-0000000000a3');
select throws_ok('select private.refuse_ended_impersonation()', 'PT401', 'The impersonation session has ended',
  'an expired session fails it too');
select pg_temp.own_claims();
select is((select count(*)::int from storage.objects where name like '20200000-0000-4000-8000-000000000001/%'), 1,
  'her own token still reads her folder');
select is((select count(*)::int from public.notifications where type = 'test.impersonation'), 1,
  'and her notifications');
reset role;

-- The api's service role names the session in a header; nobody else can.
select set_config('request.jwt.claims', '{"role": "service_role"}', true),
       set_config('request.headers', '{"x-impersonation-session": "20200000-0000-4000-8000-0000000000a1"}', true);
insert into public.zz_imp_new values (1);
select pg_temp.own_claims();
insert into public.zz_imp_new values (2);
select is(pg_temp.writes('20200000-0000-4000-8000-0000000000a1'),
  array['public.labs_sponsors INSERT authenticated', 'private.labs_sponsor_private INSERT authenticated',
        'public.zz_imp_new INSERT service_role'],
  'a service-role write naming the session is attributed to it; a user sending the header is not');
select set_config('request.jwt.claims', '{"role": "service_role"}', true),
       set_config('request.headers', '{"x-impersonation-session": "20200000-0000-4000-8000-0000000000a2"}', true);
select throws_ok('insert into public.zz_imp_new values (3)', 'PT401', 'The impersonation session has ended',
  'the api''s writes for a stopped session are refused too');
select set_config('request.headers', '', true), set_config('request.jwt.claims', '', true);

select * from finish();
rollback;
