-- Payments and e-mail in SQL.
--
-- 1. The Stripe event rules, as data: scenarios of events applied in a given order, each with
--    the state read from Stripe for it, the outcome expected per step and the state expected at
--    the end (the latest read wins); bad values refused with class-22 errors, and recorded as
--    ignored.
-- 2. Premium follows the stored state (private.is_premium, used by the monthly award).
-- 3. Who may call what: the webhook/customer/log functions are the service role's alone.
-- 4. E-mail: the sending rules as each kind of caller (own verified address, others, super
--    admin, suppressed address, daily cap, idempotency), the log's RLS, and webhook events
--    (suppression, status only moving forward, replays, bad values refused and recorded as ignored).
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(106);

select tests.create_user(to_jsonb(u)) from (values 
  ('99990000-0000-4000-8000-000000000001', 'pgtap-pay-owner@example.test', now()),
  ('99990000-0000-4000-8000-000000000002', 'pgtap-pay-stranger@example.test', now()),
  ('99990000-0000-4000-8000-000000000003', 'pgtap-pay-admin@example.test', now()),
  ('99990000-0000-4000-8000-000000000004', 'pgtap-pay-unverified@example.test', null)) u (id, email, email_confirmed_at);
update public.profiles set role = 'super_admin' where id = '99990000-0000-4000-8000-000000000003';

-- =========================================================================================
-- 1. Stripe events: the state stored is the latest read of Stripe; replays; bad values.
-- =========================================================================================
-- One row per step: the event (id, type, second), the state the webhook read from Stripe for
-- it (status, cancel flag) and when it read it (fetched_second), and the outcome expected.
-- All scenarios belong to the owner; each scenario is its own subscription (sub_pgtap_<name>).
create temp table stripe_steps (
  scenario text, step integer, event_id text, event_type text, at_second integer,
  status text, cancel boolean, fetched_second integer, expected text,
  primary key (scenario, step)
);
insert into stripe_steps values
  -- In Stripe's usual order: every event applies.
  ('in_order', 1, 'evt_io_1', 'customer.subscription.created', 0, 'incomplete', false, 1, 'applied'),
  ('in_order', 2, 'evt_io_2', 'checkout.session.completed',    1, 'active',     false, 2, 'applied'),
  ('in_order', 3, 'evt_io_3', 'customer.subscription.updated', 2, 'active',     true,  3, 'applied'),
  ('in_order', 4, 'evt_io_4', 'customer.subscription.deleted', 3, 'canceled',   false, 4, 'applied'),
  -- Events delivered newest first: each reads Stripe later, and Stripe says canceled each time.
  ('reversed', 1, 'evt_rv_4', 'customer.subscription.deleted', 3, 'canceled',   false, 4, 'applied'),
  ('reversed', 2, 'evt_rv_3', 'customer.subscription.updated', 2, 'canceled',   false, 5, 'applied'),
  ('reversed', 3, 'evt_rv_1', 'customer.subscription.created', 0, 'canceled',   false, 6, 'applied'),
  -- A read applied after a later read (two deliveries racing) changes nothing.
  ('race',     1, 'evt_rc_2', 'customer.subscription.updated', 2, 'canceled',   false, 8, 'applied'),
  ('race',     2, 'evt_rc_1', 'customer.subscription.updated', 1, 'active',     true,  7, 'stale'),
  -- A replay (same event id) is acknowledged and changes nothing.
  ('replay',   1, 'evt_rp_1', 'customer.subscription.created', 0, 'active',     false, 1, 'applied'),
  ('replay',   2, 'evt_rp_2', 'customer.subscription.updated', 1, 'past_due',   false, 2, 'applied'),
  ('replay',   3, 'evt_rp_1', 'customer.subscription.created', 0, 'active',     false, 3, 'replay'),
  -- One second, equally settled statuses, ids sorting against the real order: the later read
  -- decides (the old rule took the higher event id and stored active).
  ('tie',      1, 'evt_ti_aa', 'customer.subscription.updated', 5, 'active',    false, 6, 'applied'),
  ('tie',      2, 'evt_ti_zz', 'customer.subscription.updated', 5, 'past_due',  false, 7, 'applied'),
  -- A payment failure whose read is older still records the failure time.
  ('failed',   1, 'evt_pf_2', 'customer.subscription.updated', 5, 'past_due',   false, 9, 'applied'),
  ('failed',   2, 'evt_pf_1', 'invoice.payment_failed',        4, 'active',     false, 8, 'applied'),
  -- Canceled at the period end: still active (premium) until then.
  ('at_end',   1, 'evt_ae_1', 'customer.subscription.updated', 2, 'active',     true,  3, 'applied');

create temp table stripe_finals (scenario text primary key, status text, cancel boolean, failed_second integer);
insert into stripe_finals values
  ('in_order', 'canceled', false, null),
  ('reversed', 'canceled', false, null),
  ('race',     'canceled', false, null),
  ('replay',   'past_due', false, null),
  ('tie',      'past_due', false, null),
  ('failed',   'past_due', false, 4),
  ('at_end',   'active',   true,  null);

-- Event times are recent (the database refuses events from the future); reads come after.
create function pg_temp.event_time(second integer) returns timestamptz
language sql stable as $$ select date_trunc('second', now()) - interval '1 hour' + make_interval(secs => second) $$;

-- The details the edge function would pass for a step (functions/_shared/payments.ts).
create function pg_temp.details(s stripe_steps) returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'subscription_id', 'sub_pgtap_' || s.scenario, 'customer_id', 'cus_pgtap_owner',
    'user_id', '99990000-0000-4000-8000-000000000001', 'status', s.status,
    'current_period_end', pg_temp.event_time(s.at_second) + interval '30 days', 'cancel_at_period_end', s.cancel,
    'fetched_at', pg_temp.event_time(s.fetched_second) + interval '30 minutes')
$$;

-- Applies a scenario's steps in order; returns the outcomes.
create function pg_temp.run_scenario(name text) returns text[]
language plpgsql as $$
declare
  s stripe_steps;
  outcomes text[] := '{}';
begin
  for s in select * from stripe_steps where scenario = name order by step loop
    outcomes := outcomes || private.apply_stripe_event(s.event_id, s.event_type, pg_temp.event_time(s.at_second), pg_temp.details(s));
  end loop;
  return outcomes;
end
$$;

select is(pg_temp.run_scenario(f.scenario),
          (select array_agg(expected order by step) from stripe_steps s where s.scenario = f.scenario),
          'stripe events, ' || f.scenario || ': outcome per step')
  from stripe_finals f order by f.scenario;

select results_eq(
  $$select f.scenario, s.status, s.cancel_at_period_end, s.last_payment_failed_at, s.user_id
      from stripe_finals f join public.subscriptions s on s.stripe_subscription_id = 'sub_pgtap_' || f.scenario
     order by f.scenario$$,
  $$select scenario, status, cancel,
           case when failed_second is null then null else pg_temp.event_time(failed_second) end,
           '99990000-0000-4000-8000-000000000001'::uuid
      from stripe_finals order by scenario$$,
  'stripe events: each scenario ends in the latest read of Stripe (status, cancel flag, failure time, user)');

select is(
  (select count(*)::integer from private.stripe_events where event_id in (select event_id from stripe_steps)),
  (select count(distinct event_id)::integer from stripe_steps),
  'every event id is recorded exactly once');
select results_eq(
  $$select outcome, count(*)::integer from private.stripe_events where event_id in (select event_id from stripe_steps) group by outcome order by outcome$$,
  $$select expected, count(*)::integer from stripe_steps where expected <> 'replay' group by expected order by expected$$,
  'each recorded event keeps its outcome (applied or stale)');
select is((select stripe_customer_id from private.stripe_customers where user_id = '99990000-0000-4000-8000-000000000001'),
  'cus_pgtap_owner', 'a checkout remembers the user''s Stripe customer');
select is(private.remember_stripe_customer('99990000-0000-4000-8000-000000000001', 'cus_pgtap_second'), 'cus_pgtap_owner',
  'remembering another customer keeps the first (first write wins)');
select is(private.replace_stripe_customer('99990000-0000-4000-8000-000000000001', 'cus_pgtap_not_stored', 'cus_pgtap_new'), 'cus_pgtap_owner',
  'replacing a customer that is not the stored one changes nothing (a concurrent replacement won)');
select is(private.replace_stripe_customer('99990000-0000-4000-8000-000000000001', 'cus_pgtap_owner', 'cus_pgtap_new'), 'cus_pgtap_new',
  'replacing the stored customer stores the new one');
update private.stripe_customers set stripe_customer_id = 'cus_pgtap_owner' where user_id = '99990000-0000-4000-8000-000000000001';

-- A subscription for nobody we know: kept, unlinked; a user id that is no profile is ignored.
select is(private.apply_stripe_event('evt_stray', 'customer.subscription.created', now(),
  jsonb_build_object('subscription_id', 'sub_pgtap_stray', 'customer_id', 'cus_pgtap_stray', 'user_id', '00000000-1111-4000-8000-000000000000',
                     'status', 'active', 'cancel_at_period_end', false, 'fetched_at', now())),
  'applied', 'an event for an unknown customer and user is applied');
select is((select user_id from public.subscriptions where stripe_subscription_id = 'sub_pgtap_stray'), null,
  '... and the subscription is kept without a user');
select is(private.apply_stripe_event('evt_other', 'customer.created', now(), '{}'), 'ignored', 'a type without a subscription is ignored');

-- Values Stripe never sends are refused with class-22 errors (the webhook records them as ignored).
create function pg_temp.good_details() returns jsonb language sql stable as $$
  select jsonb_build_object('subscription_id', 'sub_pgtap_bad', 'customer_id', 'cus_pgtap_bad', 'status', 'active',
                            'cancel_at_period_end', false, 'current_period_end', '2027-01-01T00:00:00Z', 'fetched_at', now())
$$;
select throws_ok(format('select private.apply_stripe_event(%L, %L, %L, %L)', e.id, 'customer.subscription.updated', e.created, e.details),
  e.code, e.message, 'refused: ' || e.what)
  from (values
    ('an event id that is not one', 'not-an-event', now(), pg_temp.good_details(), '22023', 'id: not a Stripe event id'),
    ('an event from the future', 'evt_bad_1', now() + interval '2 days', pg_temp.good_details(), '22008', 'created: out of range'),
    ('an event from 1970', 'evt_bad_2', 'epoch'::timestamptz, pg_temp.good_details(), '22008', 'created: out of range'),
    ('no status', 'evt_bad_3', now(), pg_temp.good_details() - 'status', '22023', 'status: required'),
    ('an unknown status', 'evt_bad_4', now(), pg_temp.good_details() || '{"status": "sort of"}', '22023', 'status: not a valid value'),
    ('a status that is a number', 'evt_bad_5', now(), pg_temp.good_details() || '{"status": 1}', '22023', 'status: must be a string, not number'),
    ('a cancel flag that is a string', 'evt_bad_6', now(), pg_temp.good_details() || '{"cancel_at_period_end": "yes"}', '22023', 'cancel_at_period_end: must be a boolean'),
    ('no read time', 'evt_bad_7', now(), pg_temp.good_details() - 'fetched_at', '22023', 'fetched_at: required (when the subscription was read from Stripe)'),
    ('a read time days ahead', 'evt_bad_8', now(), pg_temp.good_details() || jsonb_build_object('fetched_at', now() + interval '2 days'), '22008', 'fetched_at: out of range'),
    ('a period end of "garbage"', 'evt_bad_9', now(), pg_temp.good_details() || '{"current_period_end": "garbage"}', '22007', 'current_period_end: not a time'),
    ('a period end of 2026-02-30', 'evt_bad_10', now(), pg_temp.good_details() || '{"current_period_end": "2026-02-30T00:00:00Z"}', '22008', 'current_period_end: not a valid date or time'),
    ('a period end of 0000-00-00', 'evt_bad_11', now(), pg_temp.good_details() || '{"current_period_end": "0000-00-00"}', '22008', 'current_period_end: not a valid date or time'),
    ('a period end that is a number', 'evt_bad_12', now(), pg_temp.good_details() || '{"current_period_end": 1700000000}', '22023', 'current_period_end: must be a time string, not number'),
    ('a subscription id that is a number', 'evt_bad_13', now(), pg_temp.good_details() || '{"subscription_id": 42}', '22023', 'subscription_id: must be a string, not number'),
    ('a customer that is not one', 'evt_bad_14', now(), pg_temp.good_details() || '{"customer_id": "acct_1"}', '22023', 'customer_id: not a valid value')
  ) e(what, id, created, details, code, message);
select is((select count(*)::integer from private.stripe_events where event_id like 'evt\_bad\_%'), 0,
  '... and a refused event is not recorded (its transaction is rolled back)');
-- A read time a little ahead of the database's clock (an edge clock running fast) counts as now,
-- so it cannot pin a state that a later read should replace.
select is(private.apply_stripe_event('evt_ahead_1', 'customer.subscription.updated', now(),
  pg_temp.good_details() || jsonb_build_object('subscription_id', 'sub_pgtap_ahead', 'fetched_at', now() + interval '10 minutes')),
  'applied', 'a read time ahead of the clock is applied');
select is((select stripe_fetched_at from public.subscriptions where stripe_subscription_id = 'sub_pgtap_ahead'), now(),
  '... as read now');
select is(private.record_ignored_stripe_event('evt_bad_1', 'customer.subscription.updated', now() + interval '2 days', 'created: out of range'), 'ignored',
  'the webhook records a refused event as ignored');
select results_eq($$select outcome, reason, event_created from private.stripe_events where event_id = 'evt_bad_1'$$,
  $$values ('ignored'::text, 'created: out of range'::text, null::timestamptz)$$, '... with its reason, and no time it cannot vouch for');
select is(private.record_ignored_stripe_event('evt_bad_1', 'customer.subscription.updated', now(), 'again'), 'replay',
  'the same event again is a replay');
select is(private.apply_stripe_event('evt_bad_1', 'customer.subscription.updated', now(), pg_temp.good_details()), 'replay',
  '... also when it arrives well-formed');

-- =========================================================================================
-- 2. Premium is derived from the stored state.
-- =========================================================================================
select ok(not private.is_premium('99990000-0000-4000-8000-000000000002'), 'no subscription: not premium');
select is(private.apply_stripe_event('evt_prem_1', 'customer.subscription.created', now() - interval '1 minute',
  jsonb_build_object('subscription_id', 'sub_pgtap_prem', 'customer_id', 'cus_pgtap_prem', 'user_id', '99990000-0000-4000-8000-000000000002',
                     'status', 'active', 'cancel_at_period_end', false, 'fetched_at', now() - interval '1 minute')),
  'applied', 'the stranger subscribes');
select ok(private.is_premium('99990000-0000-4000-8000-000000000002'), 'active: premium');
select is((select awarded from private.award_monthly_drops(array['99990000-0000-4000-8000-000000000002'::uuid], '2040-01-01')), 1,
  'the monthly award runs for 2040-01-01');
select is((select amount from public.monthly_drop_awards
            where user_id = '99990000-0000-4000-8000-000000000002' and award_month = '2040-01-01'), 250, 'the monthly award gives a premium user 250');
select is(private.apply_stripe_event('evt_prem_2', 'customer.subscription.deleted', now(),
  jsonb_build_object('subscription_id', 'sub_pgtap_prem', 'customer_id', 'cus_pgtap_prem', 'status', 'canceled',
                     'cancel_at_period_end', false, 'fetched_at', now())),
  'applied', 'the subscription is canceled');
select ok(not private.is_premium('99990000-0000-4000-8000-000000000002'), 'canceled: not premium');
select is((select awarded from private.award_monthly_drops(array['99990000-0000-4000-8000-000000000002'::uuid], '2040-02-01')), 1,
  'the monthly award runs for 2040-02-01');
select is((select amount from public.monthly_drop_awards
            where user_id = '99990000-0000-4000-8000-000000000002' and award_month = '2040-02-01'), 30, 'and the next award is 30 again');

-- =========================================================================================
-- 3. Who may call what.
-- =========================================================================================
create temp table service_only (signature text primary key);
insert into service_only values
  ('public.apply_stripe_event(text, text, timestamp with time zone, jsonb)'),
  ('public.stripe_customer_of(uuid)'),
  ('public.remember_stripe_customer(uuid, text)'),
  ('public.replace_stripe_customer(uuid, text, text)'),
  ('public.finish_email_send(uuid, text, text, text)'),
  ('public.record_email_event(text, jsonb, jsonb)'),
  ('public.record_ignored_stripe_event(text, text, timestamp with time zone, text)'),
  ('public.record_ignored_email_event(text, text, jsonb, text)');
grant select on service_only to public;
select is(
  (select array_agg(signature order by signature) from service_only
    where has_function_privilege('anon', signature, 'execute') or has_function_privilege('authenticated', signature, 'execute')),
  null, 'the webhook, customer and log-outcome functions are not executable by anon or authenticated');
select ok((select bool_and(has_function_privilege('service_role', signature, 'execute')) from service_only),
  'the service role may execute them');
select ok(has_function_privilege('authenticated', 'public.begin_email_send(text, text, text, text)', 'execute')
          and not has_function_privilege('anon', 'public.begin_email_send(text, text, text, text)', 'execute'),
  'begin_email_send: signed-in users only');
select is(
  (select array_agg(c.relname::text order by c.relname) from pg_class c
    where c.relnamespace = 'private'::regnamespace
      and c.relname in ('stripe_customers', 'stripe_events', 'email_settings', 'email_suppressions', 'email_events', 'inbound_emails')
      and (has_table_privilege('authenticated', c.oid, 'select') or has_table_privilege('service_role', c.oid, 'select')
           or has_table_privilege('anon', c.oid, 'select'))),
  null, 'customers, events, settings, suppressions and inbound mail are readable by no API role');

-- Clients read their subscription's new columns, never the event position.
select tests.authenticate_as('99990000-0000-4000-8000-000000000001');
set local role authenticated;
select results_eq(
  $$select status, cancel_at_period_end from public.subscriptions where status = 'active' and cancel_at_period_end$$,
  $$values ('active'::text, true)$$,
  'the owner reads status and cancel_at_period_end of their subscriptions');
select throws_ok($$select stripe_event_id from public.subscriptions$$, '42501', null, 'the event position is not readable');
select is(public.caller_is_premium(), true, 'caller_is_premium: the owner (active subscriptions) is premium');
reset role;
select tests.authenticate_as('99990000-0000-4000-8000-000000000004');
set local role authenticated;
select is(public.caller_is_premium(), false, 'caller_is_premium: a user without a subscription is not');
select throws_ok($$select private.apply_stripe_event('evt_x', 'customer.subscription.created', now(), '{}')$$, '42501', null,
  'the private function is not callable by clients either');
reset role;

-- =========================================================================================
-- 4. E-mail.
-- =========================================================================================
-- The owner, to their own verified address (any case), and again with the same key.
select tests.authenticate_as('99990000-0000-4000-8000-000000000001');
set local role authenticated;
select results_eq(
  $$select (message).to_address, (message).status, existing from public.begin_email_send('PGTAP-Pay-Owner@example.test', 'Hello', 'k1', 'h1')$$,
  $$values ('pgtap-pay-owner@example.test'::text, 'sending'::text, false)$$,
  'a user may send to their own verified address (logged lower-case, status sending)');
select results_eq(
  $$select (message).subject, existing from public.begin_email_send('pgtap-pay-owner@example.test', 'Hello', 'k1', 'h1')$$,
  $$values ('Hello'::text, true)$$,
  'the same idempotency key and request returns the logged row');
select throws_ok($$select * from public.begin_email_send('pgtap-pay-owner@example.test', 'Other', 'k1', 'h2')$$,
  'PT409', 'Idempotency-Key: already used for a different e-mail', 'the same key for another request is 409');
select throws_ok($$select * from public.begin_email_send('pgtap-pay-stranger@example.test', 'Hi', 'k2', 'h')$$,
  '42501', 'to: you may send e-mail only to your own verified address', 'another user''s address is refused');
select throws_ok($$select * from public.begin_email_send('anyone@example.com', 'Hi', 'k3', 'h')$$,
  '42501', null, 'an outside address is refused');
select throws_ok($$insert into public.email_messages (user_id, to_address, subject, idempotency_key, request_hash)
                   values ('99990000-0000-4000-8000-000000000001', 'x@example.com', 's', 'k', 'h')$$,
  '42501', null, 'the log cannot be written directly');
select throws_ok($$update public.email_messages set status = 'delivered'$$, '42501', null, 'nor updated');
reset role;

select tests.authenticate_as('99990000-0000-4000-8000-000000000004');
set local role authenticated;
select throws_ok($$select * from public.begin_email_send('pgtap-pay-unverified@example.test', 'Hi', 'k1', 'h')$$,
  '42501', null, 'an unverified address is refused, even one''s own');
reset role;

select tests.authenticate_as('99990000-0000-4000-8000-000000000003');
set local role authenticated;
select results_eq(
  $$select (message).to_address, existing from public.begin_email_send('anyone@example.com', 'From support', 'a1', 'h')$$,
  $$values ('anyone@example.com'::text, false)$$,
  'a super admin may send to anyone');
reset role;

-- The cap (lowered for the test; rolled back with everything else).
update private.email_settings set daily_cap = 3;
select tests.authenticate_as('99990000-0000-4000-8000-000000000001');
set local role authenticated;
select lives_ok($$select * from public.begin_email_send('pgtap-pay-owner@example.test', 'Two', 'k4', 'h')$$, 'second send of the day');
select lives_ok($$select * from public.begin_email_send('pgtap-pay-owner@example.test', 'Three', 'k5', 'h')$$, 'third send of the day');
select throws_ok($$select * from public.begin_email_send('pgtap-pay-owner@example.test', 'Four', 'k6', 'h')$$,
  'PT429', 'daily e-mail limit of 3 reached; try again later', 'the fourth is over the cap');
select results_eq($$select existing from public.begin_email_send('pgtap-pay-owner@example.test', 'Hello', 'k1', 'h1')$$,
  $$values (true)$$, 'a retry of an earlier send is answered from the log even at the cap');
reset role;
select tests.authenticate_as('99990000-0000-4000-8000-000000000002');
set local role authenticated;
select lives_ok($$select * from public.begin_email_send('pgtap-pay-stranger@example.test', 'Mine', 'k1', 'h')$$,
  'the cap is per user (another user still sends)');
reset role;

-- Older sends fall out of the 24-hour window.
update public.email_messages set created_at = now() - interval '25 hours'
 where user_id = '99990000-0000-4000-8000-000000000001' and idempotency_key = 'k1';
select tests.authenticate_as('99990000-0000-4000-8000-000000000001');
set local role authenticated;
select lives_ok($$select * from public.begin_email_send('pgtap-pay-owner@example.test', 'Four', 'k6', 'h')$$,
  'the cap counts the last 24 hours');
reset role;
update private.email_settings set daily_cap = 20;

-- The log's read policy.
select tests.authenticate_as('99990000-0000-4000-8000-000000000002');
set local role authenticated;
select results_eq($$select to_address from public.email_messages where user_id::text like '99990000-%'$$,
  $$values ('pgtap-pay-stranger@example.test'::text)$$, 'a user reads only their own sends');
reset role;
select tests.authenticate_as('99990000-0000-4000-8000-000000000003');
set local role authenticated;
select is((select count(*)::integer from public.email_messages where user_id::text like '99990000-%'), 6,
  'a super admin reads every send');
reset role;
set local role anon;
select throws_ok($$select id from public.email_messages$$, '42501', null, 'anon reads no sends');
reset role;

-- The provider's answer and webhook events.
select is((select status from private.finish_email_send(
  (select id from public.email_messages where idempotency_key = 'a1'), 'email_pgtap_a1', 'sent', null)), 'sent',
  'finish_email_send records the provider id and status');
select is(private.record_email_event('msg_pgtap_1',
  '{"type": "email.delivered", "data": {"email_id": "email_pgtap_a1", "to": ["anyone@example.com"]}}', null),
  'stored', 'a delivery event is stored');
select is((select status from public.email_messages where provider_id = 'email_pgtap_a1'), 'delivered', 'and moves the send to delivered');
select is(private.record_email_event('msg_pgtap_2',
  '{"type": "email.sent", "data": {"email_id": "email_pgtap_a1", "to": ["anyone@example.com"]}}', null),
  'stored', 'a late sent event is stored');
select is((select status from public.email_messages where provider_id = 'email_pgtap_a1'), 'delivered', 'but does not move the status back');
select is((select status from private.finish_email_send(
  (select id from public.email_messages where idempotency_key = 'a1'), 'email_pgtap_a1', 'failed', 'late')), 'delivered',
  'nor does a late failure from the endpoint');
select is(private.record_email_event('msg_pgtap_1', '{"type": "email.bounced", "data": {"to": ["x@example.com"]}}', null),
  'replay', 'the same svix id again is a replay');
select is((select count(*)::integer from private.email_suppressions where address = 'x@example.com'), 0, '... and changes nothing');

select is(private.record_email_event('msg_pgtap_3',
  '{"type": "email.bounced", "data": {"email_id": "e3", "to": ["Soft@Example.com"], "bounce": {"type": "Transient"}}}', null),
  'stored', 'a transient bounce is stored');
select is((select count(*)::integer from private.email_suppressions where address = 'soft@example.com'), 0, 'but suppresses nothing');
select is(private.record_email_event('msg_pgtap_4',
  '{"type": "email.bounced", "data": {"email_id": "e4", "to": ["Hard@Example.com", "other@example.com"], "bounce": {"type": "Permanent"}}}', null),
  'stored', 'a hard bounce is stored');
select results_eq($$select address, reason from private.email_suppressions where svix_id = 'msg_pgtap_4' order by address$$,
  $$values ('hard@example.com'::text, 'bounced'::text), ('other@example.com', 'bounced')$$,
  'and suppresses each recipient, lower-cased');
select is(private.record_email_event('msg_pgtap_5', '{"type": "email.complained", "data": {"email_id": "e5", "to": ["annoyed@example.com"]}}', null),
  'stored', 'a complaint is stored');
select is((select reason from private.email_suppressions where address = 'annoyed@example.com'), 'complained', 'and suppresses the address');

select tests.authenticate_as('99990000-0000-4000-8000-000000000003');
set local role authenticated;
select throws_ok($$select * from public.begin_email_send('HARD@example.com', 'Again', 'a2', 'h')$$,
  'PT422', 'to: hard@example.com bounced or complained earlier; e-mail to it is suppressed',
  'a suppressed address is refused, even for a super admin');
reset role;

select is(private.record_email_event('msg_pgtap_6',
  '{"type": "email.received", "created_at": "2026-11-22T10:00:00Z", "data": {"email_id": "in_pgtap_1", "from": "Reader <r@example.com>", "to": ["inbox@example.test"], "subject": "Q"}}',
  '{"text": "body", "html": "<p>body</p>"}'),
  'stored', 'an inbound event is stored');
select results_eq($$select from_address, to_addresses, subject, text_body, html_body, received_at from private.inbound_emails where email_id = 'in_pgtap_1'$$,
  $$values ('Reader <r@example.com>'::text, array['inbox@example.test'], 'Q'::text, 'body'::text, '<p>body</p>'::text, '2026-11-22T10:00:00Z'::timestamptz)$$,
  'with its metadata and the body fetched separately');

-- Values Resend never sends are refused with class-22 errors (the webhook records them as ignored).
select throws_ok(format('select private.record_email_event(%L, %L, null)', 'msg_pgtap_bad_' || e.n, e.payload),
  e.code, e.message, 'refused: ' || e.what)
  from (values
    (1, 'created_at "garbage"', '{"type": "email.received", "created_at": "garbage", "data": {"email_id": "in_bad", "from": "a@b.c", "to": []}}'::jsonb, '22007', 'created_at: not a time'),
    (2, 'created_at "0000-00-00"', '{"type": "email.received", "created_at": "0000-00-00", "data": {"email_id": "in_bad", "from": "a@b.c", "to": []}}', '22008', 'created_at: not a valid date or time'),
    (3, 'created_at "2026-02-30T00:00:00Z"', '{"type": "email.received", "data": {"created_at": "2026-02-30T00:00:00Z", "email_id": "in_bad", "from": "a@b.c", "to": []}}', '22008', 'data.created_at: not a valid date or time'),
    (4, 'created_at "now"', '{"type": "email.received", "created_at": "now", "data": {"email_id": "in_bad", "from": "a@b.c", "to": []}}', '22007', 'created_at: not a time'),
    (5, 'to a string', '{"type": "email.bounced", "data": {"email_id": "e6", "to": "x@example.com"}}', '22023', 'data.to: must be a list of at most 50 addresses'),
    (6, 'to [null]', '{"type": "email.complained", "data": {"email_id": "e6", "to": [null]}}', '22023', 'data.to: must be a list of at most 50 addresses'),
    (7, 'no type', '{"data": {}}', '22023', 'type: required'),
    (8, 'data a list', '{"type": "email.sent", "data": []}', '22023', 'data: must be an object'),
    (9, 'email_id a number', '{"type": "email.sent", "data": {"email_id": 5}}', '22023', 'data.email_id: must be a string, not number'),
    (10, 'bounce a string', '{"type": "email.bounced", "data": {"email_id": "e6", "bounce": "Permanent"}}', '22023', 'data.bounce: must be an object')
  ) e(n, what, payload, code, message);
select is((select count(*)::integer from private.email_events where svix_id like 'msg\_pgtap\_bad\_%'), 0, '... and nothing of them is stored');
select is(private.record_ignored_email_event('msg_pgtap_bad_1', 'email.received', '{"type": "email.received", "created_at": "garbage"}', 'created_at: not a time'),
  'ignored', 'the webhook records a refused event as ignored');
select results_eq($$select event_type, outcome, reason, payload ->> 'created_at' from private.email_events where svix_id = 'msg_pgtap_bad_1'$$,
  $$values ('email.received'::text, 'ignored'::text, 'created_at: not a time'::text, 'garbage'::text)$$,
  '... with its reason and the payload as received');
select is(private.record_email_event('msg_pgtap_bad_1', '{"type": "email.sent", "data": {}}', null), 'replay',
  'the same svix id again is a replay');

select * from finish();
rollback;
