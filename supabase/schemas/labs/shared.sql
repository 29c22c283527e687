-- =============================================================================================
-- Labs
-- =============================================================================================
-- The experiment community and its super-admin tools:
--
-- 1. Submitted records: sponsors, opportunities, dream videos. Anyone signed in submits one;
--    public listings show approved ones. Contact fields and decline reasons live in `private`
--    tables no client role can read; super admins see them only through the review RPCs.
-- 2. Classroom accounts (set by super admins): no dream videos, classroom-safe templates only.
-- 3. Experiments: templates, clones and replication reports; convergence and anomalies are
--    computed here (private.labs_template_stats).
-- 4. Competitions scored from recorded activity events; step prompts.
-- 5. Sponsor outreach: capped messages (5 per 24 hours per sender per sponsor) whose bodies
--    only the sender and the recipient read; weekly digests claimed once per sponsor and week.
-- 6. Kit waitlist.
--
-- Impersonation is in impersonation.sql, the pg_cron job status in admin.sql.
--
-- Every admin operation checks private.is_trusted_caller() (a super admin by profiles.role, the
-- service role, or a direct database session) and raises 42501 (403) otherwise, before writing.

--
-- The area is split as its routes are (functions/api/routes/labs/), loaded in this order
-- (supabase/config.toml, schema_paths): shared, submissions, experiments, competitions,
-- outreach, kit_waitlist. This file: the helpers and classroom accounts the others use.

-- ---------------------------------------------------------------------------------------------
-- Shared helpers
-- ---------------------------------------------------------------------------------------------

create or replace function private.require_trusted_caller(action text) returns void
language plpgsql stable
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may %', action using errcode = '42501';
  end if;
end
$$;
comment on function private.require_trusted_caller(text) is 'Raises 42501 unless the caller is a super admin, the service role or a direct session.';
grant execute on function private.require_trusted_caller(text) to authenticated, service_role;

-- The caller's id; 42501 when nobody is signed in.
create or replace function private.require_signed_in() returns uuid
language plpgsql stable
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
begin
  if me is null then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  return me;
end
$$;
grant execute on function private.require_signed_in() to authenticated, service_role;

-- 22023 naming the field unless the value looks like an e-mail address; returns it in lower case.
create or replace function private.valid_email(value text, field text) returns text
language plpgsql immutable
set search_path = ''
as $$
declare
  v text := lower(private.required_text(value, field, 320));
begin
  if v !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' then
    raise exception '%: not an e-mail address', field using errcode = '22023';
  end if;
  return v;
end
$$;
grant execute on function private.valid_email(text,text) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Classroom accounts
-- ---------------------------------------------------------------------------------------------

-- Classroom accounts: a profile account type only super admins set.
create table public.labs_classroom_accounts (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  set_by uuid references public.profiles (id) on delete set null,
  created_at timestamptz not null default now()
);
alter table public.labs_classroom_accounts enable row level security;
comment on table public.labs_classroom_accounts is
  'Profiles whose account type is classroom (no dream videos; classroom-safe templates only). Written by super admins.';
revoke all on public.labs_classroom_accounts from anon, authenticated, service_role;
grant select on public.labs_classroom_accounts to authenticated, service_role;

create index labs_classroom_accounts_set_by on public.labs_classroom_accounts (set_by);

create or replace function private.labs_is_classroom(uid uuid) returns boolean
language plpgsql stable security definer
set search_path = ''
as $$
begin
  return exists (select 1 from public.labs_classroom_accounts where user_id = uid);
end
$$;
comment on function private.labs_is_classroom(uuid) is 'Is the user a classroom account?';
grant execute on function private.labs_is_classroom(uuid) to authenticated, service_role;

create policy "labs_classroom_accounts: self or super admin" on public.labs_classroom_accounts
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- Account type (super admins): standard or classroom.
create or replace function private.labs_set_account_type(target_user_id uuid, account_type text) returns text
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('set account types');
  if account_type is null or account_type not in ('standard', 'classroom') then
    raise exception 'account_type: standard or classroom' using errcode = '22023';
  end if;
  if not exists (select 1 from public.profiles where id = target_user_id) then
    raise exception 'no user %', target_user_id using errcode = 'PT404';
  end if;
  if account_type = 'classroom' then
    insert into public.labs_classroom_accounts (user_id, set_by) values (target_user_id, (select auth.uid()))
    on conflict (user_id) do nothing;
  else
    delete from public.labs_classroom_accounts where user_id = target_user_id;
  end if;
  return account_type;
end
$$;
grant execute on function private.labs_set_account_type(uuid,text) to authenticated, service_role;

create or replace function public.labs_set_account_type(target_user_id uuid, account_type text) returns text
language sql security invoker
set search_path = ''
as $$ select private.labs_set_account_type(target_user_id, account_type) $$;
grant execute on function labs_set_account_type(uuid,text) to authenticated, service_role;
