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
  -- A super admin is never refused (asked only on a refusal, so ordinary writes pay nothing):
  -- a budget set too low from the console can always be set back.
  if counted is not null
     or (take_write.subject_kind = 'user' and exists (
           select 1 from public.profiles p
            where p.id = case when take_write.subject ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                              then take_write.subject::uuid end
              and p.role = 'super_admin')) then
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

-- ---------------------------------------------------------------------------------------------
-- Settings changed from the admin console (its Features page), audited
-- ---------------------------------------------------------------------------------------------
-- Every change a super admin makes there: who, when, which setting (such as
-- write_rate_limits:user:*), the value before (null: there was no row) and after. Read and
-- written only through the functions below.
create table private.setting_changes (
  id bigint generated always as identity primary key,
  changed_by uuid references public.profiles (id) on delete set null,
  changed_at timestamptz not null default now(),
  setting text not null check (char_length(setting) between 1 and 300),
  old_value jsonb,
  new_value jsonb
);
alter table private.setting_changes enable row level security;
comment on table private.setting_changes is
  'Settings changed from the admin console: who, when, which setting, the value before (null: none) and after.';

create index setting_changes_newest on private.setting_changes (changed_at desc, id desc);

create index setting_changes_by on private.setting_changes (changed_by);

-- Super admins: sets one write budget, the default of a kind of caller (subject '*') or the
-- override of one user id or address, and records the change. Each field is validated by name.
create or replace function private.admin_set_write_rate_limit(
  subject_kind text, subject text, max_writes integer, window_seconds integer
) returns table (id bigint, changed_by uuid, changed_at timestamptz, setting text, old_value jsonb, new_value jsonb)
language plpgsql security definer
set search_path = ''
as $$
declare
  who text := btrim(coalesce(subject, ''));
  before jsonb;
  after jsonb;
begin
  perform private.require_trusted_caller('change write rate limits');
  perform private.check_required('subject_kind', subject_kind);
  perform private.check_one_of('subject_kind', subject_kind, array['user', 'address']);
  perform private.check_required('max_writes', max_writes);
  perform private.check_between('max_writes', max_writes, 0, 1000000000);
  perform private.check_required('window_seconds', window_seconds);
  perform private.check_between('window_seconds', window_seconds, 1, 86400);
  if who = '' then
    raise exception 'subject: must not be empty (''*'' is the default of its kind)' using errcode = '23514';
  end if;
  -- A default that stops everyone is a lockout, not a limit: overrides of one subject may be 0.
  if who = '*' and max_writes < 10 then
    raise exception 'max_writes: the default of every % must allow at least 10 writes per window', subject_kind
      using errcode = '22023';
  end if;
  if who <> '*' and subject_kind = 'user' then
    if who !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
      raise exception 'subject: a user id (uuid) or ''*''' using errcode = '23514';
    end if;
    who := lower(who);
  elsif who <> '*' then
    -- One address, never a range (inet would read 10.0.0.0/8 as one host), and no IPv4-mapped
    -- IPv6 (its /64 would pool every IPv4 caller).
    if position('/' in who) > 0 or who ~* '^::ffff:' then
      raise exception 'subject: one IP address (no range, no IPv4-mapped IPv6) or ''*''' using errcode = '23514';
    end if;
    -- The form private.client_address gives the address (IPv6: its /64), so the row matches.
    who := private.client_address(jsonb_build_object('cf-connecting-ip', who));
    if who = 'unknown' then
      raise exception 'subject: an IP address or ''*''' using errcode = '23514';
    end if;
  end if;
  select jsonb_build_object('max_writes', l.max_writes, 'window_seconds', l.window_seconds) into before
    from private.write_rate_limits l
   where l.subject_kind = admin_set_write_rate_limit.subject_kind and l.subject = who
     for update;
  -- A merge (the migrations' one insert of this table stays the defaults' row, as
  -- tests/ratelimit_test.ts reads them); the row, when there is one, is locked above.
  merge into private.write_rate_limits l
  using (select admin_set_write_rate_limit.subject_kind as kind, who as subject_text,
                admin_set_write_rate_limit.max_writes as writes, admin_set_write_rate_limit.window_seconds as secs) v
     on l.subject_kind = v.kind and l.subject = v.subject_text
   when matched then update set max_writes = v.writes, window_seconds = v.secs
   when not matched then insert (subject_kind, subject, max_writes, window_seconds)
                         values (v.kind, v.subject_text, v.writes, v.secs);
  after := jsonb_build_object('max_writes', max_writes, 'window_seconds', window_seconds);
  return query
    insert into private.setting_changes as c (changed_by, setting, old_value, new_value)
    values ((select auth.uid()), format('write_rate_limits:%s:%s', subject_kind, who), before, after)
    returning c.id, c.changed_by, c.changed_at, c.setting, c.old_value, c.new_value;
end
$$;
comment on function private.admin_set_write_rate_limit(text, text, integer, integer) is
  'Super admins: sets the write budget of a kind of caller (subject *) or of one user id or address; audited in private.setting_changes.';
grant execute on function private.admin_set_write_rate_limit(text, text, integer, integer) to authenticated, service_role;

create or replace function public.admin_set_write_rate_limit(
  subject_kind text, subject text, max_writes integer, window_seconds integer
) returns table (id bigint, changed_by uuid, changed_at timestamptz, setting text, old_value jsonb, new_value jsonb)
language sql security invoker
set search_path = ''
as $$ select * from private.admin_set_write_rate_limit(subject_kind, subject, max_writes, window_seconds) $$;
comment on function public.admin_set_write_rate_limit(text, text, integer, integer) is
  'Super admins: sets one write budget (subject * is the default of its kind); returns the audit row (who, when, old, new).';
grant execute on function public.admin_set_write_rate_limit(text, text, integer, integer) to authenticated, service_role;

-- Super admins: the changes, newest first (keyset: before_time, before_id).
create or replace function private.admin_setting_changes(
  page_size integer default 50, before_time timestamptz default null, before_id bigint default null
) returns table (id bigint, changed_by uuid, changed_by_email text, changed_at timestamptz, setting text,
                 old_value jsonb, new_value jsonb)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('read the settings audit');
  return query
    select c.id, c.changed_by, u.email::text, c.changed_at, c.setting, c.old_value, c.new_value
      from private.setting_changes c
      left join auth.users u on u.id = c.changed_by
     where before_time is null or (c.changed_at, c.id) < (before_time, before_id)
     order by c.changed_at desc, c.id desc
     limit least(greatest(coalesce(page_size, 50), 1), 101);
end
$$;
grant execute on function private.admin_setting_changes(integer, timestamptz, bigint) to authenticated, service_role;

create or replace function public.admin_setting_changes(
  page_size integer default 50, before_time timestamptz default null, before_id bigint default null
) returns table (id bigint, changed_by uuid, changed_by_email text, changed_at timestamptz, setting text,
                 old_value jsonb, new_value jsonb)
language sql stable security invoker
set search_path = ''
as $$ select * from private.admin_setting_changes(page_size, before_time, before_id) $$;
comment on function public.admin_setting_changes(integer, timestamptz, bigint) is
  'Super admins: settings changed from the admin console (who, when, old, new), newest first.';
grant execute on function public.admin_setting_changes(integer, timestamptz, bigint) to authenticated, service_role;

-- Super admins: the limits that live in database rows: write budgets, AI daily caps per usage
-- type (the api may override one with AI_DAILY_CAP_<TYPE>), the e-mail daily cap.
create or replace function private.admin_limit_settings() returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('read the limit settings');
  return jsonb_build_object(
    'write_rate_limits', coalesce((
      select jsonb_agg(jsonb_build_object('subject_kind', l.subject_kind, 'subject', l.subject,
                                          'max_writes', l.max_writes, 'window_seconds', l.window_seconds)
                       order by l.subject_kind, l.subject <> '*', l.subject)
        from private.write_rate_limits l), '[]'::jsonb),
    'ai_usage_types', coalesce((
      select jsonb_agg(jsonb_build_object('usage_type', t.usage_type, 'category', t.category,
                                          'daily_cap_per_user', t.daily_cap_per_user) order by t.usage_type)
        from private.ai_usage_types t), '[]'::jsonb),
    'email_daily_cap', (select s.daily_cap from private.email_settings s));
end
$$;
grant execute on function private.admin_limit_settings() to authenticated, service_role;

create or replace function public.admin_limit_settings() returns jsonb
language sql stable security invoker
set search_path = ''
as $$ select private.admin_limit_settings() $$;
comment on function public.admin_limit_settings() is
  'Super admins: the limits kept in database rows (write budgets, AI daily caps per type, the e-mail daily cap).';
grant execute on function public.admin_limit_settings() to authenticated, service_role;
