-- The write limit parses the request's headers only when they can matter: /api's pass is
-- looked for with a string search first, and an anonymous caller's address needs them.
create or replace function private.limit_writes() returns void
language plpgsql security definer
set search_path = ''
as $$
declare
  claims jsonb;
  headers jsonb;
  verdict record;
begin
  if coalesce(current_setting('request.method', true), '') in ('', 'GET', 'HEAD', 'OPTIONS')
     or current_setting('transaction_read_only') = 'on' then
    return;
  end if;
  claims := coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb, '{}');
  if claims ->> 'role' = 'service_role' then
    return;
  end if;
  -- The headers are parsed only when they can matter (a string search first: most writes are a
  -- user's own, without /api's pass).
  if strpos(current_setting('request.headers', true), 'x-api-write-pass') > 0 then
    headers := current_setting('request.headers', true)::jsonb;
    if exists (select 1 from private.api_write_secret s where s.secret = headers ->> 'x-api-write-pass') then
      return;
    end if;
  end if;
  if claims ->> 'role' = 'authenticated' and claims ? 'sub' then
    select * into verdict from private.take_write('user', claims ->> 'sub');
  else
    headers := coalesce(nullif(current_setting('request.headers', true), '')::jsonb, '{}');
    select * into verdict from private.take_write('address', private.client_address(headers));
  end if;
  if verdict.retry_after_seconds is not null then
    raise sqlstate 'PGRST' using
      message = json_build_object('code', 'PT429', 'message', verdict.message,
                                  'hint', 'Reads are not limited; writes are counted per user, or per address when signed out.')::text,
      detail = json_build_object('status', 429,
                                 'headers', json_build_object('Retry-After', verdict.retry_after_seconds::text))::text;
  end if;
end
$$;
