-- The write rate limit in SQL (rate_limits.sql): PostgREST's pre-request counts a request that
-- can write against its user or anonymous address, exactly up to the configured budget, then
-- refuses it in PostgREST's PGRST format (status 429, Retry-After); reads, the service role and
-- /api's passed calls are not counted; the client address rule; the defaults and the cleanup job.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = extensions;

select plan(24);

-- A request as PostgREST sets it up before calling the pre-request.
create function pg_temp.as_request(method text, claims jsonb, headers jsonb default '{}') returns void
language sql as $$
  select set_config('request.method', method, true),
         set_config('request.jwt.claims', claims::text, true),
         set_config('request.headers', headers::text, true);
$$;
create function pg_temp.counted(subject text) returns integer
language sql as $$
  select coalesce(sum(writes), 0)::integer from private.write_rate_counters c where c.subject = counted.subject
$$;

-- (The test stack raises the budgets of these rows, scripts/lib/write_limits.ts; the migration's
-- values are checked in tests/ratelimit_test.ts.)
select results_eq(
  $$select subject_kind, window_seconds from private.write_rate_limits where subject = '*' order by subject_kind$$,
  $$values ('address', 300), ('user', 300)$$,
  'a default budget per 5 minutes for each kind of caller: users and anonymous addresses');

insert into private.write_rate_limits (subject_kind, subject, max_writes, window_seconds)
values ('user', '00000000-0000-4000-8000-00000000a11c', 2, 300), ('address', '192.0.2.10', 1, 60);

select pg_temp.as_request('PATCH', '{"role": "authenticated", "sub": "00000000-0000-4000-8000-00000000a11c"}');
select lives_ok('select private.limit_writes()', 'first write of a budget of 2');
select lives_ok('select private.limit_writes()', 'second write');
select is(pg_temp.counted('user:00000000-0000-4000-8000-00000000a11c'), 2, 'both counted against the user');
select throws_ok('select private.limit_writes()', 'PGRST', null, 'the third is refused with PostgREST''s raise format');
select is(pg_temp.counted('user:00000000-0000-4000-8000-00000000a11c'), 2, 'a refused write is not counted');

-- The refusal as PostgREST reads it: message {code, message, hint}, detail {status, headers}.
create function pg_temp.refusal() returns table (message jsonb, detail jsonb)
language plpgsql as $$
declare m text; d text;
begin
  perform private.limit_writes();
  return;
exception when sqlstate 'PGRST' then
  get stacked diagnostics m = message_text, d = pg_exception_detail;
  return query select m::jsonb, d::jsonb;
end
$$;
select is((select message ->> 'code' from pg_temp.refusal()), 'PT429', 'code PT429');
select matches((select message ->> 'message' from pg_temp.refusal()),
  '^Too many writes: at most 2 every 300 seconds\. Try again in \d+ seconds\.$', 'the message says when to retry');
select is((select (detail ->> 'status')::int from pg_temp.refusal()), 429, 'HTTP status 429');
select ok((select (detail -> 'headers' ->> 'Retry-After')::int between 1 and 300 from pg_temp.refusal()),
  'Retry-After: the seconds left in the window');
select ok((select (detail -> 'headers' ->> 'Retry-After') = substring(message ->> 'message' from 'in (\d+) seconds') from pg_temp.refusal()),
  'the header and the message name the same wait');

select pg_temp.as_request('GET', '{"role": "authenticated", "sub": "00000000-0000-4000-8000-00000000a11c"}');
select lives_ok('select private.limit_writes()', 'a GET is never counted, even over the budget');
select pg_temp.as_request('HEAD', '{"role": "authenticated", "sub": "00000000-0000-4000-8000-00000000a11c"}');
select lives_ok('select private.limit_writes()', 'nor a HEAD');
select pg_temp.as_request('POST', '{"role": "service_role"}');
select lives_ok('select private.limit_writes()', 'the service role is not limited');

-- /api's calls carry the secret; any other value counts as usual.
select pg_temp.as_request('POST', '{"role": "authenticated", "sub": "00000000-0000-4000-8000-00000000a11c"}',
                          jsonb_build_object('x-api-write-pass', private.api_write_pass()));
select lives_ok('select private.limit_writes()', 'a call /api counted already passes with the secret');
select pg_temp.as_request('POST', '{"role": "authenticated", "sub": "00000000-0000-4000-8000-00000000a11c"}',
                          '{"x-api-write-pass": "guessed"}');
select throws_ok('select private.limit_writes()', 'PGRST', null, 'a wrong secret is no pass');

-- Anonymous callers: by address.
select pg_temp.as_request('POST', '{"role": "anon"}', '{"x-forwarded-for": "10.9.9.9, 192.0.2.10"}');
select lives_ok('select private.limit_writes()', 'an anonymous write, counted by the last x-forwarded-for entry');
select throws_ok('select private.limit_writes()', 'PGRST', null, 'the address''s budget of 1 is spent');
select is(
  array[private.client_address('{"cf-connecting-ip": "198.51.100.2", "x-forwarded-for": "192.0.2.10"}'),
        private.client_address('{"x-forwarded-for": "203.0.113.1,  192.0.2.11 "}'),
        private.client_address('{}')],
  array['198.51.100.2', '192.0.2.11', 'unknown'],
  'the address: cf-connecting-ip, else the last x-forwarded-for entry, else unknown');
select is(
  array[private.client_address('{"cf-connecting-ip": "2001:db8:1:2:aaaa::1"}'),
        private.client_address('{"cf-connecting-ip": "2001:db8:1:2:bbbb::9"}'),
        private.client_address('{"x-forwarded-for": "not an address"}')],
  array['2001:db8:1:2::/64', '2001:db8:1:2::/64', 'unknown'],
  'an IPv6 caller counts by its /64 (rotating inside it buys nothing); no address is unknown');
do $$ begin perform private.take_write('address', 'unknown'); perform private.take_write('address', 'unknown'); end $$;
select is((select count(*)::int from private.write_rate_counters where subject = 'address:unknown'), 0,
  'a caller without a known address is not counted, never pooled with the others');

-- /api's count, with a verdict instead of an error.
select is((select retry_after_seconds is not null from public.take_api_write('00000000-0000-4000-8000-00000000a11c', null)),
  true, 'take_api_write shares the user''s budget and says when to retry');
select ok(not has_function_privilege('authenticated', 'public.take_api_write(uuid, jsonb)', 'execute')
          and not has_function_privilege('anon', 'public.api_write_pass()', 'execute')
          and not has_function_privilege('authenticated', 'public.api_write_pass()', 'execute'),
  'only the service role counts /api writes or reads the secret');

select ok(exists (select 1 from cron.job where jobname = 'write-rate-counters-cleanup'
                    and command like '%private.prune_write_rate_counters()%'),
  'a pg_cron job deletes the counters of ended windows');

select * from finish();
rollback;
