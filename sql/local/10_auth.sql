-- Local stand-in for Supabase Auth's schema: auth.users with its main columns and the
-- claim helpers auth.uid(), auth.role(), auth.email(), auth.jwt() that policies call.
create schema if not exists auth authorization supabase_auth_admin;
grant usage on schema auth to anon, authenticated, service_role, postgres;

-- Column for column as on Supabase (supabase/tests/_hosted_platform.sql checks it): no defaults
-- but the few GoTrue's migrations give, so a row written without what Auth writes (tokens '',
-- instance_id, aud, role, timestamps) is as broken here as there.
create table if not exists auth.users (
  instance_id uuid,
  id uuid not null primary key,
  aud varchar(255),
  role varchar(255),
  email varchar(255),
  encrypted_password varchar(255),
  email_confirmed_at timestamptz,
  invited_at timestamptz,
  confirmation_token varchar(255),
  confirmation_sent_at timestamptz,
  recovery_token varchar(255),
  recovery_sent_at timestamptz,
  email_change_token_new varchar(255),
  email_change varchar(255),
  email_change_sent_at timestamptz,
  last_sign_in_at timestamptz,
  raw_app_meta_data jsonb,
  raw_user_meta_data jsonb,
  is_super_admin boolean,
  created_at timestamptz,
  updated_at timestamptz,
  phone text unique default null::character varying,
  phone_confirmed_at timestamptz,
  phone_change text default ''::character varying,
  phone_change_token varchar(255) default '',
  phone_change_sent_at timestamptz,
  confirmed_at timestamptz generated always as (least(email_confirmed_at, phone_confirmed_at)) stored,
  email_change_token_current varchar(255) default '',
  email_change_confirm_status smallint default 0
    constraint users_email_change_confirm_status_check check (email_change_confirm_status >= 0 and email_change_confirm_status <= 2),
  banned_until timestamptz,
  reauthentication_token varchar(255) default '',
  reauthentication_sent_at timestamptz,
  is_sso_user boolean not null default false,
  deleted_at timestamptz,
  is_anonymous boolean not null default false
);
-- A cluster made before: the defaults Supabase does not have go, the columns it has come.
alter table auth.users
  alter column id drop default, alter column aud drop default, alter column role drop default,
  alter column encrypted_password drop default, alter column raw_app_meta_data drop default,
  alter column raw_user_meta_data drop default, alter column created_at drop default,
  alter column updated_at drop default, alter column phone set default null::character varying,
  add column if not exists email_change_token_new varchar(255),
  add column if not exists email_change_token_current varchar(255) default '',
  add column if not exists email_change_confirm_status smallint default 0,
  add column if not exists phone_change text default ''::character varying,
  add column if not exists phone_change_token varchar(255) default '',
  add column if not exists phone_change_sent_at timestamptz,
  add column if not exists reauthentication_token varchar(255) default '',
  add column if not exists reauthentication_sent_at timestamptz;
alter table auth.users alter column phone_change set default ''::character varying;
do $$
begin
  if not exists (select 1 from information_schema.columns
                 where table_schema = 'auth' and table_name = 'users' and column_name = 'confirmed_at') then
    alter table auth.users add column confirmed_at timestamptz
      generated always as (least(email_confirmed_at, phone_confirmed_at)) stored;
  end if;
end
$$;
create unique index if not exists users_email_partial_key on auth.users (email) where is_sso_user = false;
comment on table auth.users is 'Local stand-in for Supabase Auth users (sql/local, not a migration).';
alter table auth.users owner to supabase_auth_admin;
grant all on auth.users to postgres;

create or replace function auth.jwt() returns jsonb
language sql stable
as $$
  select coalesce(
    nullif(current_setting('request.jwt.claim', true), ''),
    nullif(current_setting('request.jwt.claims', true), '')
  )::jsonb
$$;

create or replace function auth.uid() returns uuid
language sql stable
as $$
  select coalesce(
    nullif(current_setting('request.jwt.claim.sub', true), ''),
    (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')
  )::uuid
$$;

create or replace function auth.role() returns text
language sql stable
as $$
  select coalesce(
    nullif(current_setting('request.jwt.claim.role', true), ''),
    (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role')
  )::text
$$;

create or replace function auth.email() returns text
language sql stable
as $$
  select coalesce(
    nullif(current_setting('request.jwt.claim.email', true), ''),
    (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'email')
  )::text
$$;

grant execute on function auth.jwt(), auth.uid(), auth.role(), auth.email()
  to anon, authenticated, service_role, supabase_auth_admin;

-- ---- What the local Auth stand-in (scripts/lib/auth/) reads and writes: the rest of
-- Supabase Auth's (GoTrue's) tables, with GoTrue's column names, so a query written against
-- hosted auth.* works here too.
create extension if not exists pgcrypto with schema extensions; -- crypt()/gen_salt('bf'): bcrypt as GoTrue

do $$
begin
  if not exists (select 1 from pg_type t join pg_namespace n on n.oid = t.typnamespace
                 where n.nspname = 'auth' and t.typname = 'aal_level') then
    create type auth.aal_level as enum ('aal1', 'aal2', 'aal3');
  end if;
end
$$;

create table if not exists auth.identities (
  provider_id text not null,
  user_id uuid not null references auth.users (id) on delete cascade,
  identity_data jsonb not null,
  provider text not null,
  last_sign_in_at timestamptz,
  created_at timestamptz,
  updated_at timestamptz,
  email text generated always as (lower(identity_data ->> 'email')) stored,
  id uuid not null default gen_random_uuid() primary key,
  constraint identities_provider_id_provider_unique unique (provider_id, provider)
);
create index if not exists identities_user_id_idx on auth.identities (user_id);

create table if not exists auth.sessions (
  id uuid not null primary key,
  user_id uuid not null references auth.users (id) on delete cascade,
  created_at timestamptz,
  updated_at timestamptz,
  factor_id uuid,
  aal auth.aal_level,
  not_after timestamptz,
  refreshed_at timestamp without time zone,
  user_agent text,
  ip inet,
  tag text
);
-- Columns of Supabase's OAuth server and refresh-token HMACs: not written locally, present so a
-- query written against hosted works (no foreign key to auth.oauth_clients, absent here).
alter table auth.sessions
  add column if not exists oauth_client_id uuid,
  add column if not exists refresh_token_hmac_key text,
  add column if not exists refresh_token_counter bigint,
  add column if not exists scopes text;
create index if not exists sessions_user_id_idx on auth.sessions (user_id);

create table if not exists auth.refresh_tokens (
  instance_id uuid,
  id bigserial primary key,
  token varchar(255) unique,
  user_id varchar(255),
  revoked boolean,
  created_at timestamptz,
  updated_at timestamptz,
  parent varchar(255),
  session_id uuid references auth.sessions (id) on delete cascade
);
create index if not exists refresh_tokens_session_id_revoked_idx on auth.refresh_tokens (session_id, revoked);

-- The amr claim of a session's access tokens: how (and when) it was authenticated.
create table if not exists auth.mfa_amr_claims (
  session_id uuid not null references auth.sessions (id) on delete cascade,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  authentication_method text not null,
  id uuid not null primary key,
  constraint mfa_amr_claims_session_id_authentication_method_pkey unique (session_id, authentication_method)
);

do $$
declare t text;
begin
  foreach t in array array['identities', 'sessions', 'refresh_tokens', 'mfa_amr_claims'] loop
    execute format('alter table auth.%I owner to supabase_auth_admin', t);
    execute format('grant all on auth.%I to postgres', t);
  end loop;
end
$$;
alter sequence auth.refresh_tokens_id_seq owner to supabase_auth_admin;
grant usage on schema extensions to supabase_auth_admin;

-- ---- Local only (no such schema on Supabase): the stand-in's e-mail inbox and its rate-limit
-- counters, kept in the database so they survive a gateway restart and tests can read them.
create schema if not exists local_auth authorization supabase_auth_admin;
create table if not exists local_auth.inbox (
  id bigserial primary key,
  created_at timestamptz not null default now(),
  sender text not null,
  recipient text not null,
  subject text not null,
  html text not null,
  text text not null,
  read boolean not null default false
);
create table if not exists local_auth.rate_limit_hits (
  id bigserial primary key,
  kind text not null,
  key text not null,
  at timestamptz not null default now()
);
create index if not exists rate_limit_hits_kind_key_at_idx on local_auth.rate_limit_hits (kind, key, at);
alter table local_auth.inbox owner to supabase_auth_admin;
alter table local_auth.rate_limit_hits owner to supabase_auth_admin;

-- PKCE (flowType 'pkce', @supabase/ssr's default): the code challenge a sign-up, magic link,
-- recovery or e-mail change started with, exchanged later at /token?grant_type=pkce.
do $$
begin
  if not exists (select 1 from pg_type t join pg_namespace n on n.oid = t.typnamespace
                 where n.nspname = 'auth' and t.typname = 'code_challenge_method') then
    create type auth.code_challenge_method as enum ('s256', 'plain');
  end if;
end
$$;
create table if not exists auth.flow_state (
  id uuid primary key,
  user_id uuid,
  auth_code text,
  code_challenge_method auth.code_challenge_method,
  code_challenge text,
  provider_type text not null,
  provider_access_token text,
  provider_refresh_token text,
  created_at timestamptz,
  updated_at timestamptz,
  authentication_method text not null,
  auth_code_issued_at timestamptz
);
-- Nullable since GoTrue's 20260115000000_add_flow_state_oauth_context, which added the rest.
alter table auth.flow_state
  alter column auth_code drop not null, alter column code_challenge_method drop not null,
  alter column code_challenge drop not null,
  add column if not exists invite_token text,
  add column if not exists referrer text,
  add column if not exists oauth_client_state_id uuid,
  add column if not exists linking_target_id uuid,
  add column if not exists email_optional boolean not null default false;
create index if not exists idx_auth_code on auth.flow_state (auth_code);
create index if not exists idx_user_id_auth_method on auth.flow_state (user_id, authentication_method);
alter table auth.flow_state owner to supabase_auth_admin;
grant all on auth.flow_state to postgres;

-- Row-level security is on for GoTrue's tables on Supabase (20240612123726_enable_rls_update_grants),
-- with no policies: only their owner (supabase_auth_admin, whom the Auth stand-in connects as)
-- and roles with BYPASSRLS (postgres, service_role) read them.
alter table auth.users enable row level security;
alter table auth.identities enable row level security;
alter table auth.sessions enable row level security;
alter table auth.refresh_tokens enable row level security;
alter table auth.mfa_amr_claims enable row level security;
alter table auth.flow_state enable row level security;
