-- What GET /api/admin/health needs from the database: the migrations recorded as applied.
create or replace function public.applied_migrations()
returns table (version text, name text)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may read the migration history' using errcode = '42501';
  end if;
  return query select m.version, m.name from supabase_migrations.schema_migrations m order by m.version;
end
$$;
comment on function public.applied_migrations() is 'Super admins: migrations recorded as applied (for the health page).';
grant execute on function public.applied_migrations() to authenticated, service_role;
