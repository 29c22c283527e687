-- AI usage and cost: who may read and write the usage, aggregate, price, rate and
-- audit tables and call their functions (a matrix as data, run as each kind of caller);
-- costs from the effective-dated prices; the monthly aggregate; daily caps; the detected-mood
-- rules of the entry path; role changes (audit, last super admin).
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(143);

-- ---------------------------------------------------------------------------------------
-- People: O (owner of usage), X (another user), S (super admin).
select tests.create_user(to_jsonb(u)) from (values 
  ('a7000000-0000-4000-8000-00000000000a', 'pgtap-ai-owner@example.test'),
  ('a7000000-0000-4000-8000-00000000000b', 'pgtap-ai-other@example.test'),
  ('a7000000-0000-4000-8000-00000000000c', 'pgtap-ai-super@example.test')) u (id, email);
update public.profiles set role = 'super_admin' where id = 'a7000000-0000-4000-8000-00000000000c';

create temp table callers (who text primary key, role text, sub uuid);
insert into callers values
  ('owner', 'authenticated', 'a7000000-0000-4000-8000-00000000000a'),
  ('other', 'authenticated', 'a7000000-0000-4000-8000-00000000000b'),
  ('super_admin', 'authenticated', 'a7000000-0000-4000-8000-00000000000c'),
  ('anon', 'anon', null),
  ('service_role', 'service_role', null);
grant select on callers to public;

-- Runs a statement as a caller; returns its single value as text, or 'error <sqlstate>'.
-- Unless `keep`, the statement runs inside a savepoint that is always rolled back, so the
-- matrix leaves no trace and its cases are independent.
create function pg_temp.as_caller(who text, statement text, keep boolean default false) returns text
language plpgsql as $$
declare
  c callers;
  result text;
begin
  select * into c from callers where callers.who = as_caller.who;
  perform set_config('request.jwt.claims',
    json_build_object('role', c.role, 'sub', c.sub)::text, true);
  execute format('set local role %I', c.role);
  begin
    execute statement into result;
    if not keep then
      raise exception using errcode = 'ZZ000', message = coalesce(result, '<null>');
    end if;
  exception
    when sqlstate 'ZZ000' then result := sqlerrm;
    when others then result := 'error ' || sqlstate;
  end;
  reset role;
  perform set_config('request.jwt.claims', '', true);
  return result;
end
$$;
grant execute on function pg_temp.as_caller(text, text, boolean) to public;

-- Fixture usage: two rows of O, one of X.
select lives_ok($$
  select public.record_ai_usage('a7000000-0000-4000-8000-00000000000a', 'tone_analysis', 'gpt-4o-mini', 1000000, 1000000);
  select public.record_ai_usage('a7000000-0000-4000-8000-00000000000a', 'entry_background', 'dall-e-3', 0, 0, 1, 'hd');
  select public.record_ai_usage('a7000000-0000-4000-8000-00000000000b', 'tone_pack_image', 'gpt-image-1', 100, 4160, 1, 'hd');
$$, 'record_ai_usage records calls for any user (as the migration owner)');

-- ---------------------------------------------------------------------------------------
-- The access matrix: (caller, what, statement, expected).
create temp table access_cases (ord serial, who text, what text, statement text, expected text);
insert into access_cases (who, what, statement, expected)
select w.who, a.what, a.statement, a.expected[w.i]
  from (values ('owner', 1), ('other', 2), ('super_admin', 3), ('anon', 4), ('service_role', 5)) w(who, i)
  cross join (values
    -- what                                   statement                                                                                           owner, other, super, anon, service
    ('reads ai_usage rows of the fixture',
     $$select count(*) from public.ai_usage where user_id::text like 'a7000000-%'$$,                                                           array['2', '1', '3', 'error 42501', '3']),
    ('reads ai_usage_monthly of the fixture',
     $$select count(*) from public.ai_usage_monthly where user_id::text like 'a7000000-%'$$,                                                   array['2', '1', '3', 'error 42501', '3']),
    ('inserts a usage row directly',
     $$insert into public.ai_usage (user_id, usage_type, model) values ('a7000000-0000-4000-8000-00000000000a', 'tone_analysis', 'm') returning 1$$, array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
    ('changes a usage row',
     $$update public.ai_usage set cost_usd = 0 where user_id = 'a7000000-0000-4000-8000-00000000000a' returning 1$$,                          array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
    ('changes the monthly aggregate',
     $$update public.ai_usage_monthly set calls = 0 where user_id = 'a7000000-0000-4000-8000-00000000000a' returning 1$$,                  array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
    ('calls record_ai_usage',
     $$select (public.record_ai_usage('a7000000-0000-4000-8000-00000000000b', 'tone_analysis', 'gpt-4o-mini', 1)).cost_usd::text$$,        array['error 42501', 'error 42501', 'error 42501', 'error 42501', '0.0000001500']),
    ('calls apply_tone_analysis',
     $$select public.apply_tone_analysis(gen_random_uuid(), 'a7000000-0000-4000-8000-00000000000a', null, 'x')::text$$,                     array['error 42501', 'error 42501', 'error 42501', 'error 42501', '{"mood": null, "cost_usd": null, "updated_at": null, "mood_applied": false}']),
    ('reads O''s month (monthly_token_usage)',
     $$select public.monthly_token_usage('a7000000-0000-4000-8000-00000000000a', extract(year from now() at time zone 'UTC')::int, extract(month from now() at time zone 'UTC')::int) ->> 'total_cost'$$,
                                                                                                                                            array['0.83', 'error 42501', '0.83', 'error 42501', '0.83']),
    ('reads prices',
     $$select count(*) from public.ai_prices where model = 'gpt-4o-mini'$$,                                                                   array['0', '0', '2', 'error 42501', '2']),
    ('adds a price',
     $$insert into public.ai_prices (model, unit, usd_per_unit) values ('pgtap-model', 'image_hd', 1) returning 1$$,                          array['error 42501', 'error 42501', '1', 'error 42501', 'error 42501']),
    ('changes a price',
     $$update public.ai_prices set usd_per_unit = 0 where model = 'gpt-4o-mini' returning 1$$,                                                array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
    ('adds a conversion rate',
     $$insert into public.token_conversion_rates (tokens_per_drop) values (500) returning 1$$,                                                array['error 42501', 'error 42501', '1', 'error 42501', 'error 42501']),
    ('reads the current conversion rate (one is set below)',
     $$select count(*) from public.current_token_conversion_rate()$$,                                                                         array['0', '0', '1', 'error 42501', '1']),
    ('reads the role audit',
     $$select count(*) >= 0 from public.role_changes$$,                                                                                       array['true', 'true', 'true', 'error 42501', 'true']),
    ('lists users (admin_list_users)',
     $$select count(*) from public.admin_list_users('pgtap-ai-')$$,                                                                           array['error 42501', 'error 42501', '3', 'error 42501', '3']),
    ('promotes X (set_user_role)',
     $$select public.set_user_role('a7000000-0000-4000-8000-00000000000b', 'super_admin') ->> 'role'$$,                                      array['error 42501', 'error 42501', 'super_admin', 'error 42501', 'super_admin']),
    ('claims a tone analysis call for itself',
     $$select public.claim_ai_call('tone_analysis')::text$$,                                                                                  array['true', 'true', 'true', 'error 42501', 'error 42501'])
  ) a(what, statement, expected);

insert into public.token_conversion_rates (tokens_per_drop) values (1000);

select is(pg_temp.as_caller(c.who, c.statement), c.expected, format('%s %s', c.who, c.what))
  from access_cases c order by c.what, c.ord;

-- The audit reads are rows for super admins only (RLS), whatever the count above says.
select is(pg_temp.as_caller('owner', $$select count(*) from public.role_changes$$), '0', 'users see no role audit rows');

-- ---------------------------------------------------------------------------------------
-- Costs: computed in SQL at write time from the prices in force then.
select is((select cost_usd from public.ai_usage where user_id = 'a7000000-0000-4000-8000-00000000000a' and usage_type = 'tone_analysis'),
  0.75::numeric, 'tone: 1M input ($0.15) + 1M output ($0.60) = $0.75');
select is((select cost_usd from public.ai_usage where user_id = 'a7000000-0000-4000-8000-00000000000a' and usage_type = 'entry_background'),
  0.08::numeric, 'an HD DALL-E 3 image: $0.080');
select is((select cost_usd from public.ai_usage where user_id = 'a7000000-0000-4000-8000-00000000000b'),
  (100 * 5.0 + 4160 * 40.0) / 1000000, 'a GPT-image HD image: 100 input tokens at $5/M + 4160 output tokens at $40/M');
select is(private.ai_cost('dall-e-3', 0, 0, 2, 'standard', now()), 0.080::numeric, 'two standard DALL-E 3 images: $0.080');
select is(private.ai_cost('unpriced-model', 1000, 1000, 1, 'hd', now()), 0::numeric, 'a model without prices costs 0');
select is(private.ai_cost('gpt-4o-mini', 1000000, 0, 0, null, '2024-01-01T00:00:00Z'), 0::numeric,
  'before a price''s effective_at it does not apply');

-- A new price applies from its moment on; the cost a row got is never rewritten.
insert into public.ai_prices (model, unit, usd_per_unit, effective_at) values ('gpt-4o-mini', 'input_1m_tokens', 0.30, now());
select is(private.ai_price('gpt-4o-mini', 'input_1m_tokens', now()), 0.30::numeric, 'the newest effective price is used');
select is(private.ai_price('gpt-4o-mini', 'input_1m_tokens', now() - interval '1 second'), 0.15::numeric, 'the earlier price still covers earlier moments');
select is((select cost_usd from public.ai_usage where user_id = 'a7000000-0000-4000-8000-00000000000a' and usage_type = 'tone_analysis'),
  0.75::numeric, 'a price change does not rewrite a past cost');
select throws_ok($$insert into public.ai_prices (model, unit, usd_per_unit, effective_at) values ('gpt-4o-mini', 'input_1m_tokens', 9, '2020-01-01')$$,
  '22023', 'effective_at: must not be in the past', 'prices cannot be backdated');
select throws_ok($$delete from public.ai_prices where model = 'gpt-4o-mini'$$, '42501', null, 'prices are append-only (even for the owner)');
select throws_ok($$update public.ai_usage set model = 'x'$$, '42501', null, 'usage rows are append-only (even for the owner)');
select throws_ok($$select public.record_ai_usage('a7000000-0000-4000-8000-00000000000a', 'mining', 'gpt-4o-mini')$$,
  '22023', null, 'an unknown usage type is refused');
select throws_ok($$select public.record_ai_usage(gen_random_uuid(), 'tone_analysis', 'gpt-4o-mini')$$,
  'PT404', null, 'an unknown user is refused');

-- ---------------------------------------------------------------------------------------
-- The monthly aggregate: per UTC calendar month, in the inserting transaction.
set local timezone = 'Pacific/Auckland';
insert into public.ai_usage (user_id, usage_type, model, input_tokens, created_at) values
  ('a7000000-0000-4000-8000-00000000000b', 'tone_analysis', 'gpt-4o-mini', 1000000, '2025-12-31T23:59:59.999999+00'),
  ('a7000000-0000-4000-8000-00000000000b', 'tone_analysis', 'gpt-4o-mini', 2000000, '2026-01-01T00:00:00+00'),
  ('a7000000-0000-4000-8000-00000000000b', 'tone_analysis', 'gpt-4o-mini', 4000000, '2026-01-01T09:00:00+13');  -- 2025-12-31 20:00 UTC
reset timezone;
select results_eq(
  $$select month, calls, input_tokens, cost_usd from public.ai_usage_monthly
     where user_id = 'a7000000-0000-4000-8000-00000000000b' and month < '2026-02-01' order by month$$,
  $$values ('2025-12-01'::date, 2, 5000000::bigint, 0.75::numeric), ('2026-01-01'::date, 1, 2000000::bigint, 0.30::numeric)$$,
  'rows land in their UTC calendar month, whatever the session time zone');
select is(public.monthly_token_usage('a7000000-0000-4000-8000-00000000000b', 2025, 12),
  '{"user_id": "a7000000-0000-4000-8000-00000000000b", "year": 2025, "month": 12, "calls": 2, "total_cost": 0.75, "total_tokens": 5000000,
    "breakdown": {"Tone": {"calls": 2, "cost": 0.75, "images": 0, "tokens": 5000000},
                  "Images": {"calls": 0, "cost": 0, "images": 0, "tokens": 0},
                  "Packs": {"calls": 0, "cost": 0, "images": 0, "tokens": 0}}}'::jsonb,
  'monthly_token_usage: totals and the Tone/Images/Packs breakdown');
select is((select sum(cost_usd) from public.ai_usage_monthly where user_id::text like 'a7000000-%'),
          (select sum(cost_usd) from public.ai_usage where user_id::text like 'a7000000-%'),
  'the aggregate equals the rows');
select throws_ok($$select public.monthly_token_usage('a7000000-0000-4000-8000-00000000000b', 2026, 13)$$, '22023', 'month: must be between 1 and 12', 'month 13 is refused');
insert into private.ai_usage_types values ('pgtap_notes', 'Notes', null);
select is(public.monthly_token_usage('a7000000-0000-4000-8000-00000000000b', 2025, 12) -> 'breakdown' -> 'Notes',
  '{"calls": 0, "cost": 0, "images": 0, "tokens": 0}'::jsonb, 'a category another area adds appears in every breakdown');

-- ---------------------------------------------------------------------------------------
-- Daily caps.
update private.ai_usage_types set daily_cap_per_user = 2 where usage_type = 'entry_background';
select is(pg_temp.as_caller('other', $$select public.claim_ai_call('entry_background')::text$$, true), 'true', 'cap 2: first call');
select is(pg_temp.as_caller('other', $$select public.claim_ai_call('entry_background')::text$$, true), 'true', 'cap 2: second call');
select is(pg_temp.as_caller('other', $$select public.claim_ai_call('entry_background')::text$$, true), 'false', 'cap 2: third call refused');
select is(pg_temp.as_caller('owner', $$select public.claim_ai_call('entry_background')::text$$, true), 'true', 'another user has their own count');
select is((select calls from private.ai_daily_calls where user_id = 'a7000000-0000-4000-8000-00000000000b' and usage_type = 'entry_background'),
  2, 'a refused claim does not count');
select is(pg_temp.as_caller('owner', $$select public.claim_ai_call('note_analysis')::text$$, true), 'true', 'no cap: always allowed');
select is((select daily_cap_per_user from private.ai_usage_types where usage_type = 'tone_pack_image'), 40,
  'tone pack images have a default cap (40 a day: two full packs)');
-- Several calls at once (images), the api's cap, giving back.
update private.ai_usage_types set daily_cap_per_user = 5 where usage_type = 'tone_pack_image';
select is(pg_temp.as_caller('other', $$select public.claim_ai_calls('tone_pack_image', 3)::jsonb - 'day'$$, true),
  '{"counted": true, "granted": 3}', 'cap 5: three images granted');
select is(pg_temp.as_caller('other', $$select public.claim_ai_calls('tone_pack_image', 4) ->> 'granted'$$, true),
  '2', 'cap 5: of four more, the two left are granted');
select is(pg_temp.as_caller('other', $$select public.claim_ai_calls('tone_pack_image', 1) ->> 'granted'$$, true),
  '0', 'cap 5: none left');
select is(pg_temp.as_caller('other', $$select public.claim_ai_calls('tone_pack_image', 1, 7) ->> 'granted'$$, true),
  '1', 'the api''s cap (daily_cap) replaces the default');
select is(pg_temp.as_caller('other', $$select public.claim_ai_calls('tone_pack_image', 9, 0)::jsonb - 'day'$$, true),
  '{"counted": false, "granted": 9}', 'daily_cap 0: no cap, nothing counted');
select is(pg_temp.as_caller('other', $$select public.claim_ai_calls('tone_pack_image', 0)::text$$, true), 'error 22023', 'wanted 0 is refused');
select is(pg_temp.as_caller('other', $$select public.claim_ai_calls('tone_pack_image', 1, -1)::text$$, true), 'error 22023', 'a negative cap is refused');
select is(pg_temp.as_caller('other', $$select public.release_ai_calls('a7000000-0000-4000-8000-00000000000b', 'tone_pack_image', (now() at time zone 'UTC')::date, 6)::text$$, true),
  'error 42501', 'a user cannot give calls back (they could spend past the cap)');
select is(pg_temp.as_caller('service_role', $$select public.release_ai_calls('a7000000-0000-4000-8000-00000000000b', 'tone_pack_image', (now() at time zone 'UTC')::date, 2)::text$$, true),
  '4', 'the service role gives two back: four left counted');
select is(pg_temp.as_caller('service_role', $$select public.release_ai_calls('a7000000-0000-4000-8000-00000000000b', 'tone_pack_image', (now() at time zone 'UTC')::date, 50)::text$$, true),
  '1', 'never below the calls billed that day (the usage row recorded above), nor below zero');
select is(pg_temp.as_caller('anon', $$select public.claim_ai_calls('tone_pack_image', 1)::text$$, true), 'error 42501', 'anonymous callers claim nothing');
select is(pg_temp.as_caller('owner', $$select public.claim_ai_call('mining')::text$$, true), 'error 22023', 'an unknown type is refused');
update private.ai_usage_types set daily_cap_per_user = 0 where usage_type = 'tone_pack_image';
select is(pg_temp.as_caller('owner', $$select public.claim_ai_call('tone_pack_image')::text$$, true), 'false', 'cap 0: nothing allowed');
select ok(exists (select 1 from cron.job where jobname = 'ai-daily-calls-cleanup' and command like '%delete from private.ai_daily_calls%'),
  'old day counters are deleted by a nightly job');

-- ---------------------------------------------------------------------------------------
-- The entry path's detected mood.
insert into public.journal_entries (id, user_id, title) values
  ('a70000e0-0000-4000-8000-000000000001', 'a7000000-0000-4000-8000-00000000000a', 'Detected'),
  ('a70000e0-0000-4000-8000-000000000002', 'a7000000-0000-4000-8000-00000000000a', 'Chosen');
insert into public.journal_entry_contents (entry_id, content) values
  ('a70000e0-0000-4000-8000-000000000001', 'a good day'),
  ('a70000e0-0000-4000-8000-000000000002', 'a hard day');
update public.journal_entries set mood = 'proud' where id = 'a70000e0-0000-4000-8000-000000000002';

set local role service_role;
select is(public.apply_tone_analysis('a70000e0-0000-4000-8000-000000000001', 'a7000000-0000-4000-8000-00000000000a', 'joyful',
    encode(sha256(convert_to('a good day', 'UTF8')), 'hex'), 'gpt-4o-mini', 100, 10) ->> 'mood', 'joyful',
  'apply_tone_analysis sets a detected mood on an entry without one');
select is(public.apply_tone_analysis('a70000e0-0000-4000-8000-000000000002', 'a7000000-0000-4000-8000-00000000000a', 'sad',
    encode(sha256(convert_to('a hard day', 'UTF8')), 'hex'), 'gpt-4o-mini', 100, 10) ->> 'mood_applied', 'false',
  'a mood the user chose is never overwritten');
select is(public.apply_tone_analysis('a70000e0-0000-4000-8000-000000000001', 'a7000000-0000-4000-8000-00000000000a', 'calm',
    encode(sha256(convert_to('older text', 'UTF8')), 'hex'), 'gpt-4o-mini', 100, 10) ->> 'mood_applied', 'false',
  'an analysis of text that has changed since is not applied');
select is(public.apply_tone_analysis('a70000e0-0000-4000-8000-000000000001', 'a7000000-0000-4000-8000-00000000000b', 'calm',
    encode(sha256(convert_to('a good day', 'UTF8')), 'hex'), null, 0, 0) ->> 'mood_applied', 'false',
  'the mood of someone else''s entry is not applied');
reset role;
select results_eq(
  $$select mood, mood_detected from public.journal_entries where id::text like 'a70000e0-%' order by id$$,
  $$values ('joyful'::text, true), ('proud'::text, false)$$,
  'stored: the detected mood flagged, the chosen one not');
select is((select count(*)::int from public.ai_usage where entry_id = 'a70000e0-0000-4000-8000-000000000001'), 2,
  'each billed analysis is a usage row referencing the entry');
update public.journal_entries set mood = 'content' where id = 'a70000e0-0000-4000-8000-000000000001';
select is((select mood_detected from public.journal_entries where id = 'a70000e0-0000-4000-8000-000000000001'), false,
  'any other change of the mood makes it the user''s choice');

-- ---------------------------------------------------------------------------------------
-- Role changes: audited; the last super admin stays.
select is((select count(*)::int from public.role_changes where user_id = 'a7000000-0000-4000-8000-00000000000b'), 0,
  'the matrix''s promotions were rolled back with their savepoints');
update public.profiles set role = 'super_admin' where id = 'a7000000-0000-4000-8000-00000000000b';
select results_eq(
  $$select old_role, new_role, changed_by, changed_via from public.role_changes where user_id = 'a7000000-0000-4000-8000-00000000000b'$$,
  $$values ('user'::text, 'super_admin'::text, null::uuid, 'database'::text)$$,
  'a change from a database session is audited with no actor');
-- Everyone else steps down, so C and X are the last two.
update public.profiles set role = 'user' where role = 'super_admin' and id not in ('a7000000-0000-4000-8000-00000000000b', 'a7000000-0000-4000-8000-00000000000c');
select lives_ok($$update public.profiles set role = 'user' where id = 'a7000000-0000-4000-8000-00000000000b'$$, 'one of two super admins may be demoted');
select throws_ok($$update public.profiles set role = 'user' where id = 'a7000000-0000-4000-8000-00000000000c'$$,
  'PT409', 'the last super admin cannot be demoted', 'the last super admin cannot be demoted (a database session)');
select is(pg_temp.as_caller('super_admin', $$select public.set_user_role('a7000000-0000-4000-8000-00000000000c', 'user')::text$$),
  'error PT409', 'nor through set_user_role by themselves');
select is(pg_temp.as_caller('super_admin', $$select public.set_user_role('a7000000-0000-4000-8000-00000000000c', 'super_admin') ->> 'changed'$$),
  'false', 'setting the role a user already has changes nothing');
select is(pg_temp.as_caller('super_admin', $$select public.set_user_role(gen_random_uuid(), 'user')::text$$), 'error PT404', 'an unknown user is 404');
select is(pg_temp.as_caller('super_admin', $$select public.set_user_role('a7000000-0000-4000-8000-00000000000a', 'owner')::text$$), 'error 22023', 'an unknown role is 400');
select results_eq($$select old_role, new_role from public.role_changes where user_id = 'a7000000-0000-4000-8000-00000000000c'$$,
  $$values ('user'::text, 'super_admin'::text)$$, 'refused changes leave no audit row (only the fixture''s promotion is there)');

select * from finish();
rollback;
