-- Project-wide conventions every later migration relies on:
--   * a `private` schema (not exposed by the API) for security-definer helpers;
--   * new functions are not executable by anon/authenticated unless granted on purpose;
--   * pg_cron in pg_catalog, pg_net where the platform has it;
--   * one helper that schedules a pg_cron job calling an edge function with a cron secret.

create schema if not exists private;
comment on schema private is 'Helpers for policies and jobs; not exposed through the API.';
revoke all on schema private from public;
grant usage on schema private to anon, authenticated, service_role;

-- Postgres grants EXECUTE on new functions to PUBLIC, and Supabase adds anon/authenticated in
-- public; from here on every function is granted on purpose.
alter default privileges revoke execute on functions from public;
alter default privileges in schema public revoke execute on functions from anon, authenticated;

create extension if not exists pg_cron with schema pg_catalog;
do $$
begin
  -- pg_net on Supabase; the local stack provides the same `net` schema itself (sql/local).
  if exists (select 1 from pg_available_extensions where name = 'pg_net') then
    create extension if not exists pg_net with schema extensions;
  end if;
end
$$;

-- The caller's role as PostgREST set it; null for a direct database session (SQL dashboard, jobs).
create or replace function private.request_role() returns text
language sql stable
set search_path = ''
as $$
  select nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role'
$$;
comment on function private.request_role() is
  'Role claim of the API request (anon, authenticated, service_role), or null outside the API.';
grant execute on function private.request_role() to authenticated, service_role;

-- Schedules (or reschedules) a pg_cron job that POSTs to an edge-function path with the
-- x-cron-secret read from Vault at run time, exactly as on Supabase. A later issue adds a job
-- in one line:
--   select private.schedule_edge_function_job('music-sync-all', '0 * * * *',
--     '/api/music/sync-all', 'MUSIC_SYNC_CRON_SECRET');
-- Vault must hold `project_url` (e.g. https://<ref>.supabase.co) and the named secret.
create or replace function private.schedule_edge_function_job(
  job_name text,
  schedule text,
  function_path text,
  secret_name text
) returns bigint
language plpgsql
set search_path = ''
as $$
begin
  if function_path !~ '^/[A-Za-z0-9/_-]+$' then
    raise exception 'function_path must look like /api/area/job, got %', function_path using errcode = '22023';
  end if;
  if secret_name !~ '^[A-Z0-9_]+$' then
    raise exception 'secret_name must be an upper-case variable name, got %', secret_name using errcode = '22023';
  end if;
  return cron.schedule(job_name, schedule, format(
    $job$select net.http_post(
      url := (select decrypted_secret from vault.decrypted_secrets where name = 'project_url') || '/functions/v1' || %L,
      headers := jsonb_build_object(
        'Content-Type', 'application/json',
        'x-cron-secret', (select decrypted_secret from vault.decrypted_secrets where name = %L)),
      body := jsonb_build_object('scheduled_at', now()),
      timeout_milliseconds := 60000
    )$job$,
    function_path, secret_name));
end
$$;
comment on function private.schedule_edge_function_job(text, text, text, text) is
  'One-line scheduling of an edge-function cron job; the URL and secret come from Vault.';
revoke execute on function private.schedule_edge_function_job(text, text, text, text) from public;
