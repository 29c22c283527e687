-- The local stand-ins of Supabase's platform tables (sql/local) as hosted has them, and the
-- auth.users rows the project writes as Supabase Auth reads them. A stand-in kinder than hosted
-- (a default, a NOT NULL, RLS off) would let code pass here that fails on a hosted project.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions; -- defaults print as in _hosted_platform.sql

select plan(10);

\ir _hosted_platform.sql

create temp view local_columns as
  select n.nspname::text as schema_name, c.relname::text as table_name, a.attname::text as column_name,
         format_type(a.atttypid, a.atttypmod) as type, a.attnotnull as not_null,
         case when a.attgenerated = '' then pg_get_expr(d.adbin, d.adrelid) end as column_default,
         case when a.attgenerated = 's' then pg_get_expr(d.adbin, d.adrelid) end as generated
    from pg_attribute a
    join pg_class c on c.oid = a.attrelid
    join pg_namespace n on n.oid = c.relnamespace
    left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
   where a.attnum > 0 and not a.attisdropped
     and (n.nspname, c.relname) in (select distinct schema_name, table_name from hosted_columns);

select is_empty(
  $$select * from hosted_columns except select * from local_columns order by 1, 2, 3$$,
  'every column of hosted''s auth/storage tables is here, with its type, nullability, default and generation');
select is_empty(
  $$select * from local_columns except select * from hosted_columns order by 1, 2, 3$$,
  'no stand-in column differs from hosted''s (no default, NOT NULL or column hosted lacks)');
select is_empty(
  $$select h.schema_name, h.table_name, h.rls_enabled, c.relrowsecurity
      from hosted_rls h
      join pg_class c on c.oid = format('%I.%I', h.schema_name, h.table_name)::regclass
     where c.relrowsecurity is distinct from h.rls_enabled or c.relforcerowsecurity$$,
  'row-level security is on (not forced) where hosted has it on');

-- Columns GoTrue scans into Go strings, ints and times (models.User): a NULL in any fails every
-- lookup of the user with 500 "Database error querying schema"; a NULL instance_id hides it.
create temp view unreadable_users as
  select id, email from auth.users
   where instance_id is distinct from '00000000-0000-0000-0000-000000000000' or aud is null or role is null
      or confirmation_token is null or recovery_token is null or email_change_token_new is null
      or email_change_token_current is null or email_change is null or email_change_confirm_status is null
      or phone_change is null or phone_change_token is null or reauthentication_token is null
      or created_at is null or updated_at is null
      -- Go's time.Time holds no infinity either.
      or not isfinite(coalesce(banned_until, now())) or not isfinite(coalesce(email_confirmed_at, now()))
      or not isfinite(coalesce(deleted_at, now()));

select is_empty($$select * from unreadable_users$$,
  'every auth user in the database (seed, the assistant, AI users, tests'' users) is one Supabase Auth can read');

-- An insert leaving out what Auth writes succeeds, as on hosted: the row is what is broken.
insert into auth.users (id, email) values ('35000000-0000-4000-8000-000000000001', 'pgtap-bare@example.test');
select ok(exists (select 1 from unreadable_users where id = '35000000-0000-4000-8000-000000000001'),
  'such a row is unreadable by Auth here as on hosted (no default fills the tokens in)');

select lives_ok(
  $$select private.new_auth_user(jsonb_build_object('id', '35000000-0000-4000-8000-000000000002', 'email', 'pgtap-new@example.test')),
           private.new_auth_user(jsonb_build_object('id', '35000000-0000-4000-8000-000000000003', 'email', 'pgtap-ai@example.test',
             'raw_app_meta_data', '{"provider": "synthetic", "providers": ["synthetic"]}'::jsonb))$$,
  'private.new_auth_user inserts e-mail and synthetic users');
select results_eq(
  $$select u.id, u.aud::text, u.role::text, u.encrypted_password::text, u.raw_user_meta_data, u.is_anonymous,
           (select count(*)::int from auth.identities i where i.user_id = u.id and i.provider = 'email')
      from auth.users u where u.id in ('35000000-0000-4000-8000-000000000002', '35000000-0000-4000-8000-000000000003')
       and u.id not in (select id from unreadable_users) order by u.id$$,
  $$values ('35000000-0000-4000-8000-000000000002'::uuid, 'authenticated', 'authenticated', '', '{}'::jsonb, false, 1),
           ('35000000-0000-4000-8000-000000000003', 'authenticated', 'authenticated', '', '{}', false, 0)$$,
  'with every column as Auth writes it, and an e-mail identity for an e-mail user');

-- A suspended account (its deletion pending) stays readable: banned until a date, not 'infinity'.
select private.suspend_account('35000000-0000-4000-8000-000000000002');
select is_empty($$select * from unreadable_users where id = '35000000-0000-4000-8000-000000000002'$$,
  'a suspended account is banned until a date Auth can read');

-- Storage's protect_delete: only Storage's own queries (which set the setting) delete rows.
select throws_ok($$delete from storage.objects where false$$, '42501',
  'Direct deletion from storage tables is not allowed. Use the Storage API instead.',
  'a direct DELETE on storage.objects is refused, as on hosted');
select set_config('storage.allow_delete_query', 'true', true);
select lives_ok($$delete from storage.buckets where false$$,
  'with storage.allow_delete_query set (as Storage sets it) it runs');

select * from finish();
rollback;
