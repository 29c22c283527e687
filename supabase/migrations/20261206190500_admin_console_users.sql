-- The admin console's user page (issue 37): one user by id, and one user's impersonation audit.

-- Super admins: one user as admin_list_users shows them (the console's user page).
create or replace function private.admin_get_user(target_user_id uuid)
returns table (
  id uuid, email text, full_name text, role text, is_ai boolean, is_active boolean,
  drops_balance integer, created_at timestamptz, token_usage jsonb
)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  return query
    select p.id, u.email::text, p.full_name, p.role, p.is_ai, p.is_active, p.drops_balance, p.created_at,
           private.usage_summary(p.id, date_trunc('month', now() at time zone 'UTC')::date)
      from public.profiles p
      join auth.users u on u.id = p.id
     where p.id = target_user_id;
end
$$;
grant execute on function private.admin_get_user(uuid) to authenticated, service_role;

create or replace function public.admin_get_user(target_user_id uuid)
returns table (
  id uuid, email text, full_name text, role text, is_ai boolean, is_active boolean,
  drops_balance integer, created_at timestamptz, token_usage jsonb
)
language sql stable
set search_path = ''
as $$ select * from private.admin_get_user($1) $$;
comment on function public.admin_get_user(uuid) is
  'Super admins: one user with e-mail, role, flags, drops balance and this month''s AI usage (as admin_list_users); no row when there is no such user.';
grant execute on function admin_get_user(uuid) to authenticated, service_role;

-- One user's sessions (the console's user page: GET /admin/impersonation/audit?target=).
create index impersonation_audit_target on public.impersonation_audit (target_id, created_at desc, id desc);
