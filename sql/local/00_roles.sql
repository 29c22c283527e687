-- Local stand-in for what every Supabase project has: the API roles and their grants.
-- Applied before the migrations on every start; idempotent; never part of a migration.
-- Run as the cluster's bootstrap superuser, supabase_admin (as on hosted). postgres is the
-- role migrations and the seed run as: not a superuser, with hosted's attributes (its
-- memberships and rights: 90_postgres_role.sql, after what it is granted exists).
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'postgres') then
    create role postgres login nosuperuser createrole createdb replication bypassrls password 'postgres';
  end if;
  if not exists (select 1 from pg_roles where rolname = 'anon') then
    create role anon nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'service_role') then
    create role service_role nologin noinherit bypassrls;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'authenticator') then
    create role authenticator login noinherit password 'postgres';
  end if;
  if not exists (select 1 from pg_roles where rolname = 'supabase_auth_admin') then
    create role supabase_auth_admin login noinherit createrole password 'postgres';
  end if;
end
$$;

-- Postgres 15 gives CREATE on public only to the database's owner (pg_database_owner): as on
-- hosted, postgres owns the database.
alter database postgres owner to postgres;

grant anon, authenticated, service_role to authenticator;
alter role anon set statement_timeout = '3s';
alter role authenticated set statement_timeout = '8s';
alter role authenticator set statement_timeout = '8s';

create schema if not exists extensions;
grant usage on schema extensions to anon, authenticated, service_role;
-- As on Supabase: extension functions (pgTAP in tests) resolve without a schema prefix.
alter database postgres set search_path = "$user", public, extensions;

-- Supabase grants the API roles everything in public; row-level security is the guard.
-- Default privileges are set once, when the project is new (as on Supabase): migrations
-- may narrow them, and a restart must not widen them again.
grant usage on schema public to anon, authenticated, service_role;
do $$
begin
  if to_regclass('supabase_migrations.schema_migrations') is null then
    alter default privileges for role postgres in schema public grant all on tables to anon, authenticated, service_role;
    alter default privileges for role postgres in schema public grant all on sequences to anon, authenticated, service_role;
    alter default privileges for role postgres in schema public grant all on functions to anon, authenticated, service_role;
  end if;
end
$$;
