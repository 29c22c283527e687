-- Every PL/pgSQL function of ours passes plpgsql_check (undefined columns, wrong types,
-- unreachable code...), trigger functions checked against the table they are attached to.
begin;
create extension if not exists pgtap with schema extensions;
create extension if not exists plpgsql_check with schema extensions;
select plan(3);

create temporary view plpgsql_functions as
select p.oid, t.tgrelid, t.tgoldtable::text as oldtable, t.tgnewtable::text as newtable
  from pg_proc p
  join pg_language l on l.oid = p.prolang and l.lanname = 'plpgsql'
  join pg_namespace n on n.oid = p.pronamespace and n.nspname in ('public', 'private')
  left join lateral (
    select tgrelid, tgoldtable, tgnewtable from pg_trigger where tgfoid = p.oid order by tgrelid limit 1
  ) t on true
 where p.prorettype <> 'trigger'::regtype or t.tgrelid is not null;

create temporary view plpgsql_problems as
select f.oid::regprocedure::text || ' line ' || coalesce(c.lineno::text, '?') || ': ' || c.message as problem
  from plpgsql_functions f
 cross join lateral extensions.plpgsql_check_function_tb(
   f.oid, coalesce(f.tgrelid, 0), oldtable => f.oldtable::name, newtable => f.newtable::name) c
 where c.level in ('error', 'warning');

select ok((select count(*) from plpgsql_functions) >= 8, 'the check covers our PL/pgSQL functions');
select is_empty('select problem from plpgsql_problems', 'every PL/pgSQL function passes plpgsql_check');

-- The check itself catches a broken function.
create function private.zz_broken_on_purpose() returns integer
language plpgsql set search_path = '' as $$ begin return (select nope from public.profiles limit 1); end $$;
select results_eq(
  $$select problem from plpgsql_problems$$,
  $$values ('private.zz_broken_on_purpose() line 1: column "nope" does not exist')$$,
  'a function reading a missing column is reported');

select * from finish();
rollback;
