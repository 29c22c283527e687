-- =============================================================================================
-- Profiles
-- =============================================================================================
-- One profile per auth user, created by a trigger on auth.users. Users read and edit their own
-- profile (full_name, avatar_url, preferences and their opt-ins); role, drops_balance,
-- is_active and is_ai are not theirs to change by any path. Authorization reads
-- profiles.role on every request, so a demotion is immediate.

-- ---------------------------------------------------------------------------------------------
-- The table
-- ---------------------------------------------------------------------------------------------

-- Column privileges: clients may write only their own editable columns. role, is_active and
-- is_ai are granted so super admins can change them; a trigger refuses everyone else.
-- drops_balance is never granted: it moves only through the drops ledger.
create table public.profiles (
  id uuid primary key references auth.users (id) on delete cascade,
  full_name text check (char_length(full_name) <= 200),
  avatar_url text check (char_length(avatar_url) <= 2048 and avatar_url ~* '^https?://'),
  preferences jsonb not null default '{"theme": "system", "notifications": true}'::jsonb,
  role text not null default 'user' check (role in ('user', 'super_admin')),
  drops_balance integer not null default 0 check (drops_balance >= 0),
  is_active boolean not null default true,
  is_ai boolean not null default false,
  read_notes_enabled boolean not null default false,
  check_in_enabled boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- The same shape PUT /api/user/profile accepts, so PostgREST writes are held to it too.
  constraint profiles_preferences_shape check (
    jsonb_typeof(preferences) = 'object'
    and preferences - array['theme', 'notifications', 'active_tone_pack_id'] = '{}'::jsonb
    and coalesce(jsonb_typeof(preferences -> 'theme'), 'string') = 'string'
    and char_length(coalesce(preferences ->> 'theme', 'x')) between 1 and 50
    and coalesce(jsonb_typeof(preferences -> 'notifications'), 'boolean') = 'boolean'
    and coalesce(jsonb_typeof(preferences -> 'active_tone_pack_id'), 'null') in ('string', 'null')
    and coalesce(preferences ->> 'active_tone_pack_id', '00000000-0000-0000-0000-000000000000')
        ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
  )
);
alter table public.profiles enable row level security;
comment on table public.profiles is
  'One row per user. drops_balance is maintained by the drops ledger and equals the sum of its deltas.';
comment on column public.profiles.role is 'user or super_admin; read on every request, so a demotion is immediate.';
comment on column public.profiles.is_ai is 'Marks synthetic users.';
revoke all on public.profiles from anon, authenticated;
grant select on public.profiles to authenticated;
grant select on public.profiles to supabase_auth_admin;
grant update (full_name, avatar_url, preferences, role, is_active, is_ai, read_notes_enabled, check_in_enabled)
  on public.profiles to authenticated;

-- The super admins' user list pages newest first (admin.sql).
create index profiles_newest on public.profiles (created_at desc, id desc);

-- ---------------------------------------------------------------------------------------------
-- Who the caller is
-- ---------------------------------------------------------------------------------------------

-- PL/pgSQL: policies call it in nearly every statement, and a PL/pgSQL body's plan is cached
-- per session where a SQL function's is planned on every call (measured: 0.014 vs 0.053 ms).
create or replace function private.is_super_admin() returns boolean
language plpgsql stable security definer
set search_path = ''
as $$
begin
  return exists (select 1 from public.profiles where id = (select auth.uid()) and role = 'super_admin');
end
$$;
comment on function private.is_super_admin() is 'True when the caller''s profile role is super_admin (read per request).';
grant execute on function private.is_super_admin() to authenticated, service_role;
create or replace function public.is_super_admin() returns boolean
language sql stable
set search_path = ''
as $$ select private.is_super_admin() $$;
comment on function public.is_super_admin() is 'RPC: is the caller a super admin (profiles.role, read now)?';
grant execute on function public.is_super_admin() to authenticated;

-- A caller trusted with cross-user operations: a super admin, the service role, or a direct
-- database session (SQL dashboard, pg_cron), which carries no API claims at all.
create or replace function private.is_trusted_caller() returns boolean
language sql stable
set search_path = ''
as $$
  select private.request_role() is null
      or private.request_role() = 'service_role'
      or private.is_super_admin()
$$;
grant execute on function private.is_trusted_caller() to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Reading and writing one's profile
-- ---------------------------------------------------------------------------------------------

create policy "profiles: owners and super admins read" on public.profiles
  for select to authenticated
  using (id = (select auth.uid()) or (select private.is_super_admin()));
create policy "profiles: owners and super admins update" on public.profiles
  for update to authenticated
  using (id = (select auth.uid()) or (select private.is_super_admin()))
  with check (id = (select auth.uid()) or (select private.is_super_admin()));
comment on policy "profiles: owners and super admins update" on public.profiles is
  'Which rows; which columns is decided by column grants and private.guard_profile_columns().';

-- Refuses changes the column grants alone cannot tell apart (owner versus super admin), and
-- keeps drops_balance to the ledger.
create or replace function private.guard_profile_columns() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if new.id is distinct from old.id or new.created_at is distinct from old.created_at then
    raise exception 'id and created_at cannot change' using errcode = '42501';
  end if;
  -- The ledger's trigger is the only writer of the balance (trigger depth > 1), apart from
  -- public.recompute_drops_balance, which marks its own transaction.
  if new.drops_balance is distinct from old.drops_balance
     and pg_trigger_depth() < 2
     and coalesce(current_setting('app.recomputing_balance', true), '') <> 'on' then
    raise exception 'drops_balance changes only through the drops ledger' using errcode = '42501';
  end if;
  if (new.role, new.is_active, new.is_ai) is distinct from (old.role, old.is_active, old.is_ai)
     and current_user in ('authenticated', 'anon')
     and not private.is_super_admin() then
    raise exception 'only a super admin may change role, is_active or is_ai' using errcode = '42501';
  end if;
  new.updated_at := now();
  return new;
end
$$;
create trigger profiles_guard_columns
  before update on public.profiles
  for each row execute function private.guard_profile_columns();

-- An avatar is an image the user put in their own folder of the project's avatars bucket
-- (avatars.sql), by its public URL, as supabase-js' getPublicUrl gives it:
-- <project URL>/storage/v1/object/public/avatars/<user id>/<name>. Anything else would let a
-- user show strangers (members, authors, leaderboards) a link of their choosing: a tracking
-- pixel. The host is checked against Vault's `project_url` (the URL pg_net's jobs call, which
-- is the project's own); a project without it in Vault gets the scheme and path checked only.
-- No query or fragment, no dot segments or encoded slashes: the URL names one object.
create or replace function private.is_own_avatar_url(owner_id uuid, url text) returns boolean
language plpgsql stable security definer
set search_path = ''
as $$
declare
  project_url text;
begin
  if url !~ ('^https?://[^/?#@\s]+/storage/v1/object/public/avatars/' || owner_id::text || '/[^?#\s\\]+$')
     or url ~ '/\.\.?(/|$)' or url ~* '%(2f|5c|2e)' then
    return false;
  end if;
  select rtrim(s.decrypted_secret, '/') into project_url from vault.decrypted_secrets s where s.name = 'project_url';
  return project_url is null
      or lower(substring(url from '^https?://[^/]+')) = lower(substring(project_url from '^https?://[^/]+'));
end
$$;
comment on function private.is_own_avatar_url(uuid, text) is
  'True for the public URL of an object in the user''s own folder of this project''s avatars bucket (host: Vault project_url).';
revoke all on function private.is_own_avatar_url(uuid, text) from public;
grant execute on function private.is_own_avatar_url(uuid, text) to authenticated, service_role;

-- The editable columns' rules in words, as PUT /api/user/profile says them (conventions.sql,
-- "Field rules in words"); the check constraints above stay as the last word. Not on the
-- ledger's balance updates (they name no column here).
create or replace function private.check_profile_fields() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  k text;
  prefs jsonb := new.preferences;
begin
  perform private.check_max_length('full_name', new.full_name, 200);
  perform private.check_url('avatar_url', new.avatar_url, 2048);
  if new.avatar_url is not null and new.avatar_url is distinct from old.avatar_url
     and not private.is_own_avatar_url(new.id, new.avatar_url) then
    raise exception 'avatar_url: must be the public URL of an image in your own folder of the avatars bucket'
      using errcode = '23514';
  end if;
  perform private.check_required('preferences', prefs);
  if jsonb_typeof(prefs) <> 'object' then
    raise exception 'preferences: must be an object' using errcode = '23514';
  end if;
  for k in select jsonb_object_keys(prefs - array['theme', 'notifications', 'active_tone_pack_id']) loop
    raise exception 'preferences.%: not an accepted field', k using errcode = '23514';
  end loop;
  if prefs ? 'theme' then
    if jsonb_typeof(prefs -> 'theme') <> 'string' then
      raise exception 'preferences.theme: must be a string' using errcode = '23514';
    end if;
    perform private.check_length('preferences.theme', prefs ->> 'theme', 50);
  end if;
  if coalesce(jsonb_typeof(prefs -> 'notifications'), 'boolean') <> 'boolean' then
    raise exception 'preferences.notifications: must be a boolean' using errcode = '23514';
  end if;
  if coalesce(jsonb_typeof(prefs -> 'active_tone_pack_id'), 'null') not in ('string', 'null')
     or prefs ->> 'active_tone_pack_id' !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
    raise exception 'preferences.active_tone_pack_id: must be a UUID' using errcode = '23514';
  end if;
  perform private.check_required('role', new.role);
  perform private.check_one_of('role', new.role, array['user', 'super_admin']);
  perform private.check_required('is_active', new.is_active);
  perform private.check_required('is_ai', new.is_ai);
  perform private.check_required('read_notes_enabled', new.read_notes_enabled);
  perform private.check_required('check_in_enabled', new.check_in_enabled);
  return new;
end
$$;
-- Named to run before profiles_guard_columns and after profiles_active_tone_pack_usable
-- (which leaves a malformed pack id to this one).
create trigger profiles_check_fields
  before update of full_name, avatar_url, preferences, role, is_active, is_ai, read_notes_enabled, check_in_enabled
  on public.profiles
  for each row execute function private.check_profile_fields();

-- PUT /api/user/profile and clients alike: a partial update of one's own editable fields;
-- preferences are merged, not replaced. Runs as the caller, so grants and RLS apply.
create or replace function public.update_my_profile(patch jsonb) returns public.profiles
language plpgsql
set search_path = ''
as $$
declare result public.profiles;
begin
  if jsonb_typeof(patch) is distinct from 'object' then
    raise exception 'patch must be a JSON object' using errcode = '22023';
  end if;
  update public.profiles set
    full_name = case when patch ? 'full_name' then patch ->> 'full_name' else full_name end,
    avatar_url = case when patch ? 'avatar_url' then patch ->> 'avatar_url' else avatar_url end,
    preferences = case when patch ? 'preferences' then preferences || (patch -> 'preferences') else preferences end
  where id = (select auth.uid())
  returning * into result;
  if result.id is null then
    raise exception 'profile not found' using errcode = 'PT404';
  end if;
  return result;
end
$$;
grant execute on function public.update_my_profile(jsonb) to authenticated;

-- ---------------------------------------------------------------------------------------------
-- Signup and tokens
-- ---------------------------------------------------------------------------------------------

-- The sign-up metadata is whatever the client sent: a name longer than the profile holds is
-- cut, an avatar the profile would refuse (not in the user's own avatars folder, longer than
-- 2048 characters: in practice any, the folder being named by the new id) is left out. Failing
-- here would fail the sign-up itself (Auth's 500 "Database error saving new user").
create or replace function private.handle_new_user() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  avatar text := new.raw_user_meta_data ->> 'avatar_url';
begin
  insert into public.profiles (id, full_name, avatar_url)
  values (
    new.id,
    left(new.raw_user_meta_data ->> 'full_name', 200),
    case when char_length(avatar) <= 2048 and private.is_own_avatar_url(new.id, avatar) then avatar end
  )
  on conflict (id) do nothing;
  return new;
end
$$;
comment on function private.handle_new_user() is
  'Creates the profile of a new auth user; a name too long is cut, an avatar the profile would refuse left out.';
create trigger on_auth_user_created
  after insert on auth.users
  for each row execute function private.handle_new_user();

-- Pre-account takeover: someone signs an address up with their password and leaves it
-- unconfirmed; when the owner of the mailbox later signs in by e-mail (magic link or code),
-- resets the password, or signs up too, Auth sends another e-mail and its link confirms the
-- address, and hosted Auth keeps the password it found (verify.go confirms an unconfirmed user
-- as it is). So any e-mail after the sign-up's own confirmation, while the address is still
-- unconfirmed, voids the password: whoever confirms the address signs in by that link and
-- sets a password then. Seen in the columns Auth writes when it sends (confirmation_sent_at a
-- second time, recovery_sent_at), so it holds for hosted Auth and the local one alike.
create or replace function private.void_unconfirmed_password() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if old.email_confirmed_at is null and new.email_confirmed_at is null
     and coalesce(new.encrypted_password, '') <> ''
     and ((old.confirmation_sent_at is not null and new.confirmation_sent_at is distinct from old.confirmation_sent_at)
          or (new.recovery_sent_at is not null and new.recovery_sent_at is distinct from old.recovery_sent_at)) then
    new.encrypted_password := '';
  end if;
  return new;
end
$$;
comment on function private.void_unconfirmed_password() is
  'Voids the password of an unconfirmed address when Auth e-mails it again (pre-account takeover).';
create trigger void_unconfirmed_password
  before update of confirmation_sent_at, recovery_sent_at on auth.users
  for each row execute function private.void_unconfirmed_password();

-- Supabase Auth's custom access-token hook (registered in supabase/config.toml): adds the
-- profile role to the JWT as `user_role`, for clients' UI. Authorization never trusts it.
create or replace function public.custom_access_token_hook(event jsonb) returns jsonb
language plpgsql stable
set search_path = ''
as $$
declare
  claims jsonb := coalesce(event -> 'claims', '{}'::jsonb);
  profile_role text;
begin
  select role into profile_role from public.profiles where id = (event ->> 'user_id')::uuid;
  claims := jsonb_set(claims, '{user_role}', to_jsonb(coalesce(profile_role, 'user')));
  return jsonb_set(event, '{claims}', claims);
end
$$;
grant execute on function public.custom_access_token_hook(jsonb) to supabase_auth_admin;
grant usage on schema public to supabase_auth_admin;
create policy "profiles: the auth server reads roles for tokens" on public.profiles
  for select to supabase_auth_admin using (true);
