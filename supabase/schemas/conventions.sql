-- =============================================================================================
-- Conventions
-- =============================================================================================
-- What every other schema file relies on:
--   * `private`, the schema the API does not expose: security definer helpers, RLS helpers and
--     tables no client role may read live there;
--   * no function is executable by anon or authenticated unless a grant says so;
--   * pg_cron (in pg_catalog, as on Supabase) and the helpers scheduled jobs share.
-- pg_net, the job schedules and the Vault secrets they read stay in migrations (README
-- "Database"): they are platform state and rows, not schema.

create schema if not exists private;
comment on schema private is 'Helpers for policies and jobs; not exposed through the API.';
revoke all on schema private from public;
grant usage on schema private to anon, authenticated, service_role;

-- Postgres grants EXECUTE on new functions to PUBLIC, and Supabase adds anon/authenticated in
-- public: every function here is granted on purpose instead.
alter default privileges revoke execute on functions from public;
alter default privileges in schema public revoke execute on functions from anon, authenticated;

create extension if not exists pg_cron with schema pg_catalog;

-- ---------------------------------------------------------------------------------------------
-- Small helpers
-- ---------------------------------------------------------------------------------------------

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

-- BEFORE UPDATE trigger of every table with an updated_at column.
create or replace function private.touch_updated_at() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.updated_at := now();
  return new;
end
$$;

-- ---------------------------------------------------------------------------------------------
-- Client-chosen ids: creates safe to retry
-- ---------------------------------------------------------------------------------------------
-- Devices choose the id of what they create (a UUID, as they do for sync), so a create repeated
-- after an ambiguous failure (the reply lost after the commit) can be told from a new one. The
-- one error of a retry is `id: ...` as 23505 (PostgREST and /api: 409): with hint
-- already_created when the row exists, is the caller's and holds what the insert carries (the
-- retry's row was made: read it; /api answers 200 with it), with hint id_conflict otherwise
-- (other content, or another user's row: the same words, so nothing of it is revealed).
-- BEFORE INSERT trigger; its arguments name the client-written columns compared.
create or replace function private.refuse_reused_id() returns trigger
language plpgsql security definer -- reads another user's row to refuse its id, and says nothing of it
set search_path = ''
as $$
declare
  existing jsonb;
  proposed jsonb := to_jsonb(new);
begin
  execute format('select to_jsonb(t) from %I.%I t where t.id = $1', tg_table_schema, tg_table_name)
    into existing using new.id;
  if existing is null then
    return new;
  end if;
  if existing ->> 'user_id' = (select auth.uid())::text and existing ->> 'user_id' = proposed ->> 'user_id'
     and not exists (select 1 from unnest(tg_argv) f where existing -> f is distinct from proposed -> f) then
    raise exception 'id: created already with this content (a retry): read it instead'
      using errcode = '23505', hint = 'already_created', constraint = tg_table_name || '_pkey';
  end if;
  raise exception 'id: already used for something else; choose a new id'
    using errcode = '23505', hint = 'id_conflict', constraint = tg_table_name || '_pkey';
end
$$;
comment on function private.refuse_reused_id() is
  'Before insert: an id in use is 23505 with hint already_created (the caller''s row, same columns: a retry) or id_conflict (anything else).';

-- ---------------------------------------------------------------------------------------------
-- Auth users the project writes itself
-- ---------------------------------------------------------------------------------------------
-- Supabase Auth (GoTrue) scans auth.users into Go strings: a NULL in a token or change column
-- makes every lookup of the user fail ("Database error querying schema", supabase/auth#1940),
-- and a NULL instance_id hides the user from every lookup. Hosted auth.users has no defaults
-- for most of them, so a row the project inserts (seed, the assistant, AI users) must carry
-- what Auth itself writes on sign-up: this function is the one place that knows it.
create or replace function private.new_auth_user(columns jsonb) returns uuid
language plpgsql
set search_path = ''
as $$
declare
  made auth.users;
  gotrue_defaults constant jsonb := jsonb_build_object(
    'instance_id', '00000000-0000-0000-0000-000000000000', 'id', gen_random_uuid(),
    'aud', 'authenticated', 'role', 'authenticated', 'encrypted_password', '',
    'confirmation_token', '', 'recovery_token', '', 'email_change_token_new', '', 'email_change', '',
    'email_change_token_current', '', 'email_change_confirm_status', 0, 'phone_change', '',
    'phone_change_token', '', 'reauthentication_token', '',
    'raw_app_meta_data', '{"provider": "email", "providers": ["email"]}'::jsonb, 'raw_user_meta_data', '{}'::jsonb,
    'is_sso_user', false, 'is_anonymous', false, 'created_at', now(), 'updated_at', now());
begin
  insert into auth.users (instance_id, id, aud, role, email, encrypted_password, email_confirmed_at, invited_at,
    confirmation_token, confirmation_sent_at, recovery_token, recovery_sent_at, email_change_token_new,
    email_change, email_change_sent_at, last_sign_in_at, raw_app_meta_data, raw_user_meta_data, is_super_admin,
    created_at, updated_at, phone, phone_confirmed_at, phone_change, phone_change_token, phone_change_sent_at,
    email_change_token_current, email_change_confirm_status, banned_until, reauthentication_token,
    reauthentication_sent_at, is_sso_user, deleted_at, is_anonymous)
  select r.instance_id, r.id, r.aud, r.role, r.email, r.encrypted_password, r.email_confirmed_at, r.invited_at,
    r.confirmation_token, r.confirmation_sent_at, r.recovery_token, r.recovery_sent_at, r.email_change_token_new,
    r.email_change, r.email_change_sent_at, r.last_sign_in_at, r.raw_app_meta_data, r.raw_user_meta_data,
    r.is_super_admin, r.created_at, r.updated_at, r.phone, r.phone_confirmed_at, r.phone_change,
    r.phone_change_token, r.phone_change_sent_at, r.email_change_token_current, r.email_change_confirm_status,
    r.banned_until, r.reauthentication_token, r.reauthentication_sent_at, r.is_sso_user, r.deleted_at,
    r.is_anonymous
    from jsonb_populate_record(null::auth.users, gotrue_defaults || columns) r
  returning * into made;
  -- An e-mail user has its e-mail identity, as after a sign-up.
  if made.email is not null and made.raw_app_meta_data ->> 'provider' = 'email' then
    insert into auth.identities (provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
    values (made.id::text, made.id,
            jsonb_build_object('sub', made.id::text, 'email', made.email,
                               'email_verified', made.email_confirmed_at is not null, 'phone_verified', false),
            'email', made.created_at, made.created_at, made.created_at);
  end if;
  return made.id;
end
$$;
comment on function private.new_auth_user(jsonb) is
  'Inserts an auth.users row (and its e-mail identity) as Supabase Auth writes one; `columns` sets any column, the rest get GoTrue''s values.';

-- ---------------------------------------------------------------------------------------------
-- Field rules in words
-- ---------------------------------------------------------------------------------------------
-- A client that writes a table straight (PostgREST, an RPC) reads the same "field: message" as
-- /api's request validation says it: each table's BEFORE INSERT/UPDATE trigger checks its
-- client-written columns with these, one helper per kind of rule, before the check constraints
-- (which stay as the last word) could answer with only a constraint name. A rule broken raises
-- 23514 (check_violation), a missing value 23502 (not_null_violation); null passes every rule
-- but check_required, as it passes a check constraint.

-- A value a NOT NULL column needs from the client.
create or replace function private.check_required(field text, value anyelement) returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if value is null then
    raise exception '%: is required', field using errcode = '23502';
  end if;
end
$$;
comment on function private.check_required(text, anyelement) is
  'Refuses (23502, naming the field) a null value.';
grant execute on function private.check_required(text, anyelement) to authenticated, service_role;

-- A text of 1 to max_length characters (pass btrim(value) where the constraint trims).
create or replace function private.check_length(field text, value text, max_length integer) returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if char_length(value) < 1 then
    raise exception '%: must not be empty', field using errcode = '23514';
  end if;
  if char_length(value) > max_length then
    raise exception '%: must be at most % characters', field, max_length using errcode = '23514';
  end if;
end
$$;
comment on function private.check_length(text, text, integer) is
  'Refuses (23514, naming the field) an empty text, or one longer than max_length.';
grant execute on function private.check_length(text, text, integer) to authenticated, service_role;

-- A required text argument of an RPC, trimmed: refused in check_length's words (23514, naming the
-- field) when missing, blank or longer than max_length. Every area validates texts with these two.
create or replace function private.required_text(value text, field text, max_length integer) returns text
language plpgsql immutable
set search_path = ''
as $$
begin
  perform private.check_length(field, btrim(coalesce(value, '')), max_length);
  return btrim(value);
end
$$;
comment on function private.required_text(text, text, integer) is
  'A required text argument, trimmed; refused (23514, naming the field, as check_length words it) when missing, blank or too long.';
grant execute on function private.required_text(text, text, integer) to authenticated, service_role;

-- A text of at most max_length characters (empty allowed).
create or replace function private.check_max_length(field text, value text, max_length integer) returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if char_length(value) > max_length then
    raise exception '%: must be at most % characters', field, max_length using errcode = '23514';
  end if;
end
$$;
comment on function private.check_max_length(text, text, integer) is
  'Refuses (23514, naming the field) a text longer than max_length.';
grant execute on function private.check_max_length(text, text, integer) to authenticated, service_role;

-- One of a fixed list of values.
create or replace function private.check_one_of(field text, value text, allowed text[]) returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if value <> all (allowed) then
    raise exception '%: must be one of %', field, array_to_string(allowed, ', ') using errcode = '23514';
  end if;
end
$$;
comment on function private.check_one_of(text, text, text[]) is
  'Refuses (23514, naming the field and the values allowed) a value not in the list.';
grant execute on function private.check_one_of(text, text, text[]) to authenticated, service_role;

-- A number from minimum to maximum, both included (null: no bound).
create or replace function private.check_between(field text, value numeric, minimum numeric, maximum numeric)
returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if value < minimum then
    raise exception '%: must be at least %', field, minimum using errcode = '23514';
  end if;
  if value > maximum then
    raise exception '%: must be at most %', field, maximum using errcode = '23514';
  end if;
end
$$;
comment on function private.check_between(text, numeric, numeric, numeric) is
  'Refuses (23514, naming the field and the bound) a number below minimum or above maximum.';
grant execute on function private.check_between(text, numeric, numeric, numeric) to authenticated, service_role;

-- A JSON object of at most max_bytes (as stored: pg_column_size).
create or replace function private.check_object(field text, value jsonb, max_bytes integer) returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if jsonb_typeof(value) <> 'object' then
    raise exception '%: must be an object', field using errcode = '23514';
  end if;
  if pg_column_size(value) > max_bytes then
    raise exception '%: must be at most % bytes', field, max_bytes using errcode = '23514';
  end if;
end
$$;
comment on function private.check_object(text, jsonb, integer) is
  'Refuses (23514, naming the field) a JSON value that is not an object, or one larger than max_bytes.';
grant execute on function private.check_object(text, jsonb, integer) to authenticated, service_role;

-- An http(s) URL of at most max_length characters.
create or replace function private.check_url(field text, value text, max_length integer) returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if value !~* '^https?://' then
    raise exception '%: must be a URL', field using errcode = '23514';
  end if;
  perform private.check_max_length(field, value, max_length);
end
$$;
comment on function private.check_url(text, text, integer) is
  'Refuses (23514, naming the field) a text that is not an http(s) URL, or one longer than max_length.';
grant execute on function private.check_url(text, text, integer) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Scheduled jobs
-- ---------------------------------------------------------------------------------------------

-- Schedules (or reschedules) a pg_cron job that POSTs to an edge-function path with the
-- x-cron-secret read from Vault at run time, exactly as on Supabase. A job is one line of a
-- migration:
--   select private.schedule_edge_function_job('music-sync-all', '0 * * * *',
--     '/api/music/sync-all', 'MUSIC_SYNC_CRON_SECRET');
-- Vault must hold `project_url` (e.g. https://<ref>.supabase.co) and the named secret.
-- `invocations` > 1 makes each run N requests at once, each its own edge-function run (its own
-- CPU allowance), for jobs whose runs share the work side by side (claims with skip locked);
-- each request's body names its number (`invocation`, 1..N).
create or replace function private.schedule_edge_function_job(
  job_name text,
  schedule text,
  function_path text,
  secret_name text,
  invocations integer default 1
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
  if invocations is null or invocations not between 1 and 20 then
    raise exception 'invocations must be 1 to 20, got %', invocations using errcode = '22023';
  end if;
  return cron.schedule(job_name, schedule, format(
    $job$select net.http_post(
      url := (select decrypted_secret from vault.decrypted_secrets where name = 'project_url') || '/functions/v1' || %L,
      headers := jsonb_build_object(
        'Content-Type', 'application/json',
        'x-cron-secret', (select decrypted_secret from vault.decrypted_secrets where name = %L)),
      body := jsonb_build_object('scheduled_at', now(), 'invocation', invocation),
      timeout_milliseconds := 60000
    ) from generate_series(1, %s) as invocation$job$,
    function_path, secret_name, invocations));
end
$$;
comment on function private.schedule_edge_function_job(text, text, text, text, integer) is
  'One-line scheduling of an edge-function cron job; the URL and secret come from Vault; invocations: requests a run.';

-- One row per run of a scheduled job, written by the job itself (SQL jobs directly, edge jobs
-- through public.record_job_run); the admin health page reads the latest runs.
create table private.job_runs (
  id bigint generated always as identity primary key,
  job text not null,
  started_at timestamptz not null,
  finished_at timestamptz not null default now(),
  succeeded integer not null default 0,
  failed integer not null default 0,
  remaining integer,
  details jsonb not null default '{}'::jsonb
);
comment on table private.job_runs is 'One row per scheduled-job run (SPEC Events 4): start, end, success and failure counts.';
create index job_runs_by_job on private.job_runs (job, started_at desc);

-- Logs one run; only the scheduler (a trusted caller) may.
create or replace function private.record_job_run(job text, started_at timestamptz, succeeded integer, failed integer,
                                                  remaining integer, details jsonb) returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'only the scheduler may log job runs' using errcode = '42501';
  end if;
  insert into private.job_runs (job, started_at, succeeded, failed, remaining, details)
  values (job, started_at, coalesce(succeeded, 0), coalesce(failed, 0), remaining, coalesce(details, '{}'::jsonb));
end
$$;
grant execute on function private.record_job_run(text, timestamptz, integer, integer, integer, jsonb) to service_role;
create or replace function public.record_job_run(job text, started_at timestamptz, succeeded integer, failed integer,
                                                 remaining integer, details jsonb default '{}'::jsonb) returns void
language sql
set search_path = ''
as $$ select private.record_job_run(job, started_at, succeeded, failed, remaining, details) $$;
comment on function public.record_job_run(text, timestamptz, integer, integer, integer, jsonb) is
  'Edge jobs (service role): logs one run (SPEC Events 4) in private.job_runs.';
