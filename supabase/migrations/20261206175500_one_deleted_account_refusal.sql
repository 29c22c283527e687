-- One refusal of an account being deleted, said by PostgREST's pre-request and by /api's write
-- count alike (it was written in both); public.request_allowed, which /api no longer calls, goes.

create or replace function private.refuse_deleted_account(user_id uuid) returns void
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if exists (select 1 from private.account_deletions d where d.user_id = refuse_deleted_account.user_id) then
    raise exception 'This account has been deleted'
      using errcode = 'PT401', hint = 'Its data is being removed; sign up again to start over.';
  end if;
end
$$;

comment on function private.refuse_deleted_account(uuid) is
  '401 (PT401) when the user''s account is being deleted.';
grant execute on function private.refuse_deleted_account(uuid) to authenticated, service_role;

create or replace function private.check_request() returns void
language plpgsql
set search_path = ''
as $$
begin
  perform private.refuse_ended_impersonation();
  -- Anonymous requests have no account (and anon may not run the definer below).
  if (select auth.uid()) is not null then
    perform private.refuse_deleted_account((select auth.uid()));
  end if;
  perform private.limit_writes();
end
$$;

create or replace function private.take_api_write(user_id uuid, request_headers jsonb)
returns table (retry_after_seconds integer, message text)
language plpgsql security definer
set search_path = ''
as $$
begin
  if user_id is not null then
    perform private.refuse_deleted_account(user_id);
    return query select * from private.take_write('user', user_id::text);
  else
    return query select * from private.take_write('address', private.client_address(coalesce(request_headers, '{}')));
  end if;
end
$$;

drop function public.request_allowed();
