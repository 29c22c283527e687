-- What hosted Supabase gives the postgres role, which migrations and the seed run as (it is
-- not a superuser there: supabase_admin is). Run as supabase_admin after the other stand-ins;
-- idempotent. Each line emulates a piece of hosted's setup or of its supautils extension
-- (docs/local_stack.md, "The postgres role").

-- Extensions postgres cannot create itself (not trusted): the platform creates them, so a
-- migration's `create extension if not exists` is a no-op, as on hosted. Trusted ones
-- (pg_trgm, pgcrypto, tsm_system_rows) are left to the migrations.
create extension if not exists pg_cron with schema pg_catalog;
create extension if not exists pgtap with schema extensions;
create extension if not exists dblink with schema extensions;
create extension if not exists plpgsql_check with schema extensions;

grant anon, authenticated, service_role, pg_read_all_data, pg_signal_backend, pg_monitor to postgres;

-- The platform's schemas postgres uses from migrations and jobs.
grant usage on schema cron to postgres;
grant all on all tables in schema cron to postgres;
grant all on all sequences in schema cron to postgres;
grant execute on all functions in schema cron to postgres;
grant usage on schema vault to postgres;
grant all on all tables in schema vault to postgres;
grant execute on all functions in schema vault to postgres;
grant usage on schema net to postgres;
grant all on all tables in schema net to postgres;
grant all on all sequences in schema net to postgres;
grant execute on all functions in schema net to postgres;
grant all on schema supabase_migrations to postgres;
grant all on all tables in schema supabase_migrations to postgres;

-- supautils' policy_grants: postgres may write policies and grants on the platform tables
-- migrations secure (on hosted they are postgres's to alter). Locally postgres owns them.
alter table storage.objects owner to postgres;
alter table storage.buckets owner to postgres;
alter table realtime.messages owner to postgres;
alter publication supabase_realtime owner to postgres;
grant usage on schema storage, realtime to postgres with grant option;

-- supautils' privileged settings: postgres may set these (PostgREST's pre-request check; the
-- replication role a data fix may switch triggers off with).
grant set on parameter pgrst.db_pre_request, session_replication_role to postgres;

-- The impersonation audit's event trigger attaches a trigger to every new table, the Auth
-- stand-in's own (local_auth) included: postgres needs TRIGGER on them.
grant usage on schema local_auth to postgres;
grant trigger on all tables in schema local_auth to postgres;

-- As hosted's init scripts grant it (supabase/postgres: auth schema), postgres may use Auth's
-- sequences and functions, not only its tables (10_auth.sql).
grant all on all sequences in schema auth to postgres;
grant all on all routines in schema auth to postgres;
