-- =============================================================================================
-- Write rate limits
-- =============================================================================================
-- One budget of mutating requests per caller across both paths (docs/rate_limits.md): a signed-in
-- user is counted by their id, an anonymous caller by their address. PostgREST counts in its
-- pre-request function (private.check_request calls private.limit_writes); /api counts once per
-- mutating request (public.take_api_write, from the credential middleware) and marks the PostgREST
-- calls it then makes for that request with a secret header, so they are not counted again.
-- Reads are never counted: PostgREST runs GET, HEAD and POST to a stable function in a read-only
-- transaction, and only a read-write transaction can write.

-- The limits: one default row per kind of caller (subject '*'), and overrides for one user id or
-- one address. No row for a kind: that kind is not limited.
create table private.write_rate_limits (
  subject_kind text not null check (subject_kind in ('user', 'address')),
  subject text not null default '*',
  max_writes integer not null check (max_writes >= 0),
  window_seconds integer not null check (window_seconds between 1 and 86400),
  primary key (subject_kind, subject)
);
alter table private.write_rate_limits enable row level security;
comment on table private.write_rate_limits is
  'Mutating requests allowed per window: subject ''*'' is the default of its kind (user: a signed-in user''s id, '
  'address: an anonymous caller''s address); other rows override it for one user or address.';

-- Counters per caller and fixed window. Unlogged: a count lost in a crash only forgives a few
-- writes, and no WAL is written for every counted request.
create unlogged table private.write_rate_counters (
  subject text not null,
  window_start timestamptz not null,
  writes integer not null,
  primary key (subject, window_start)
);
alter table private.write_rate_counters enable row level security;
comment on table private.write_rate_counters is
  'Mutating requests counted per caller (user:<id>, address:<ip>) and window; past windows are deleted every few minutes.';

-- The secret /api sends (x-api-write-pass) on the PostgREST calls it makes for a request it has
-- counted already. Made on first use; only the service role can read it (public.api_write_pass).
create table private.api_write_secret (
  singleton boolean primary key default true check (singleton),
  secret text not null default replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')
);
alter table private.api_write_secret enable row level security;
comment on table private.api_write_secret is
  'The secret /api sends on PostgREST calls made for a request it counted already (one row, made on first use).';

-- The client's address from the request headers the gateway sets: cf-connecting-ip (hosted:
-- Cloudflare sets it and overwrites a client's), else the last x-forwarded-for entry (appended by
-- the nearest proxy; the entries before it are the client's to write). The local gateway replaces
-- x-forwarded-for with the peer address. An IPv6 address counts by its /64 (one subscriber's
-- block: rotating addresses inside it is free). 'unknown' when neither is there (or it is no
-- address): such a caller is not counted, rather than pooled with every other one.
create or replace function private.client_address(headers jsonb) returns text
language plpgsql immutable
set search_path = ''
as $$
declare
  raw text := coalesce(nullif(btrim(headers ->> 'cf-connecting-ip'), ''),
                       nullif(btrim(regexp_replace(headers ->> 'x-forwarded-for', '^.*,', '')), ''));
  addr inet;
begin
  if raw is null then
    return 'unknown';
  end if;
  begin
    addr := raw::inet;
  exception when invalid_text_representation then
    return 'unknown';
  end;
  if family(addr) = 6 then
    return set_masklen(addr, 64)::cidr::text;
  end if;
  return host(addr);
end
$$;
comment on function private.client_address(jsonb) is
  'The caller''s address: cf-connecting-ip, else the last x-forwarded-for entry (IPv6 by its /64), else ''unknown'' (not counted).';

-- Counts one mutating request of the subject, unless its window's budget is spent: then nothing is
-- counted and retry_after_seconds says when the window ends (null: allowed). One primary-key probe
-- of the limits and one upsert of the counter (which holds the counter's row lock until the
-- transaction ends: one caller's concurrent writes through PostgREST queue on it).
create or replace function private.take_write(subject_kind text, subject text)
returns table (retry_after_seconds integer, message text)
language plpgsql
set search_path = ''
as $$
declare
  lim record;
  this_window timestamptz;
  counted integer;
  retry integer;
begin
  if subject_kind = 'address' and subject = 'unknown' then
    return query select null::integer, null::text; -- no address known: nobody to count
    return;
  end if;
  select l.max_writes, l.window_seconds into lim
    from private.write_rate_limits l
   where l.subject_kind = take_write.subject_kind and l.subject in (take_write.subject, '*')
   order by l.subject = '*'
   limit 1;
  if not found then
    return query select null::integer, null::text;
    return;
  end if;
  this_window := to_timestamp(floor(extract(epoch from now()) / lim.window_seconds) * lim.window_seconds);
  if lim.max_writes > 0 then
    insert into private.write_rate_counters as c (subject, window_start, writes)
    values (take_write.subject_kind || ':' || take_write.subject, this_window, 1)
    on conflict on constraint write_rate_counters_pkey do update set writes = c.writes + 1
      where c.writes < lim.max_writes
    returning c.writes into counted;
  end if;
  if counted is not null then
    return query select null::integer, null::text;
    return;
  end if;
  retry := greatest(1, ceil(extract(epoch from this_window - now()) + lim.window_seconds)::integer);
  return query select retry, format('Too many writes: at most %s every %s seconds. Try again in %s seconds.',
                                    lim.max_writes, lim.window_seconds, retry);
end
$$;
comment on function private.take_write(text, text) is
  'Counts one mutating request of a user or address, or says (retry_after_seconds, message) when its budget is spent.';

-- Part of PostgREST's pre-request (private.check_request): a request that can write (a read-write
-- transaction: POST, PATCH, PUT, DELETE, or POST to a volatile function) is counted against the
-- user, or the address of an anonymous caller; over the budget it is a 429 with Retry-After and
-- nothing of it runs (the raise rolls the whole transaction back, the count included). Not
-- counted: reads, the service role, and the calls /api makes for a request it counted (its secret
-- in x-api-write-pass). A write that fails later in its transaction is rolled back with its count.
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
comment on function private.limit_writes() is
  'PostgREST pre-request part: counts a mutating request of a user or anonymous address; 429 with Retry-After over the budget.';
grant execute on function private.limit_writes() to anon, authenticated, service_role;

-- For /api (service role only): counts one mutating request, of the user (their token verified by
-- /api) or, for a public route, of the address in the request's headers. A user whose account is
-- being deleted is refused (401) first, as PostgREST's pre-request refuses their token.
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
comment on function private.take_api_write(uuid, jsonb) is
  'Counts one mutating /api request of a user, or of an anonymous caller''s address (401 for an account being deleted).';
grant execute on function private.take_api_write(uuid, jsonb) to service_role;

create or replace function public.take_api_write(user_id uuid, request_headers jsonb)
returns table (retry_after_seconds integer, message text)
language sql security invoker
set search_path = ''
as $$ select * from private.take_api_write(user_id, request_headers) $$;
comment on function public.take_api_write(uuid, jsonb) is
  'For /api (service role): counts one mutating request of a user, or of an anonymous caller''s address; '
  'retry_after_seconds and message when the budget is spent (nothing counted then).';
grant execute on function public.take_api_write(uuid, jsonb) to service_role;

-- For /api (service role only): the secret it sends on the PostgREST calls of a counted request.
create or replace function private.api_write_pass() returns text
language plpgsql security definer
set search_path = ''
as $$
begin
  insert into private.api_write_secret default values on conflict do nothing;
  return (select s.secret from private.api_write_secret s);
end
$$;
comment on function private.api_write_pass() is 'The write pass secret, made on first use.';
grant execute on function private.api_write_pass() to service_role;

create or replace function public.api_write_pass() returns text
language sql security invoker
set search_path = ''
as $$ select private.api_write_pass() $$;
comment on function public.api_write_pass() is
  'For /api (service role): the secret (x-api-write-pass) that marks its PostgREST calls as counted already.';
grant execute on function public.api_write_pass() to service_role;

-- The pg_cron job (a migration schedules it): counters of windows that have ended.
create or replace function private.prune_write_rate_counters() returns integer
language sql
set search_path = ''
as $$
  with gone as (
    delete from private.write_rate_counters c
     where c.window_start < now() - make_interval(secs => coalesce(
             (select max(l.window_seconds) from private.write_rate_limits l), 86400))
    returning 1)
  select count(*)::integer from gone
$$;
comment on function private.prune_write_rate_counters() is
  'Deletes write counters of ended windows (older than the longest configured window); returns how many.';
