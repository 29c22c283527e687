-- Payments and e-mail in SQL (migration 20261122030000_payments_email.sql).
--
-- 1. The Stripe event ordering rules, as data: scenarios of events applied in a given order,
--    each with the outcome expected per step and the state expected at the end.
-- 2. Premium follows the stored state (private.is_premium, used by the monthly award).
-- 3. Who may call what: the webhook/customer/log functions are the service role's alone.
-- 4. E-mail: the sending rules as each kind of caller (own verified address, others, super
--    admin, suppressed address, daily cap, idempotency), the log's RLS, and webhook events
--    (suppression, status only moving forward, replays).
begin;
create extension if not exists pgtap with schema extensions;
grant execute on all functions in schema extensions to anon, authenticated, service_role;

select plan(74);

insert into auth.users (id, email, email_confirmed_at) values
  ('99990000-0000-4000-8000-000000000001', 'pgtap-pay-owner@example.test', now()),
  ('99990000-0000-4000-8000-000000000002', 'pgtap-pay-stranger@example.test', now()),
  ('99990000-0000-4000-8000-000000000003', 'pgtap-pay-admin@example.test', now()),
  ('99990000-0000-4000-8000-000000000004', 'pgtap-pay-unverified@example.test', null);
update public.profiles set role = 'super_admin' where id = '99990000-0000-4000-8000-000000000003';

-- =========================================================================================
-- 1. Stripe events: order, ties, replays.
-- =========================================================================================
-- One row per step: the event (type, second, status, cancel flag) and the outcome expected.
-- All scenarios belong to the owner; each scenario is its own subscription (sub_pgtap_<name>).
create temp table stripe_steps (
  scenario text, step integer, event_id text, event_type text, at_second integer,
  status text, cancel boolean, paid boolean, expected text,
  primary key (scenario, step)
);
insert into stripe_steps values
  -- In Stripe's usual order: every event applies.
  ('in_order', 1, 'evt_io_1', 'customer.subscription.created', 0, 'incomplete', false, null, 'applied'),
  ('in_order', 2, 'evt_io_2', 'checkout.session.completed',    1, null,         null,  true, 'applied'),
  ('in_order', 3, 'evt_io_3', 'customer.subscription.updated', 2, 'active',     true,  null, 'applied'),
  ('in_order', 4, 'evt_io_4', 'customer.subscription.deleted', 3, 'canceled',   false, null, 'applied'),
  -- Reversed: only the newest applies; the older ones never move it back.
  ('reversed', 1, 'evt_rv_4', 'customer.subscription.deleted', 3, 'canceled',   false, null, 'applied'),
  ('reversed', 2, 'evt_rv_3', 'customer.subscription.updated', 2, 'active',     true,  null, 'stale'),
  ('reversed', 3, 'evt_rv_2', 'checkout.session.completed',    1, null,         null,  true, 'stale'),
  ('reversed', 4, 'evt_rv_1', 'customer.subscription.created', 0, 'incomplete', false, null, 'stale'),
  -- A replay (same event id) is acknowledged and changes nothing.
  ('replay',   1, 'evt_rp_1', 'customer.subscription.created', 0, 'active',     false, null, 'applied'),
  ('replay',   2, 'evt_rp_2', 'customer.subscription.updated', 1, 'past_due',   false, null, 'applied'),
  ('replay',   3, 'evt_rp_1', 'customer.subscription.created', 0, 'active',     false, null, 'replay'),
  -- Same second, incomplete vs active: the more settled status wins in either order.
  ('tie_a',    1, 'evt_ta_2', 'customer.subscription.updated', 5, 'active',     false, null, 'applied'),
  ('tie_a',    2, 'evt_ta_1', 'customer.subscription.created', 5, 'incomplete', false, null, 'stale'),
  ('tie_b',    1, 'evt_tb_1', 'customer.subscription.created', 5, 'incomplete', false, null, 'applied'),
  ('tie_b',    2, 'evt_tb_2', 'customer.subscription.updated', 5, 'active',     false, null, 'applied'),
  -- Same second, active vs canceled: canceled wins in either order.
  ('tie_c',    1, 'evt_tc_2', 'customer.subscription.deleted', 7, 'canceled',   false, null, 'applied'),
  ('tie_c',    2, 'evt_tc_1', 'customer.subscription.updated', 7, 'active',     true,  null, 'stale'),
  -- Same second, checkout vs subscription event: the subscription event (which knows the period
  -- end and cancel flag) wins in either order.
  ('tie_d',    1, 'evt_td_1', 'checkout.session.completed',    9, null,         null,  true, 'applied'),
  ('tie_d',    2, 'evt_td_zz', 'customer.subscription.updated', 9, 'active',    true,  null, 'applied'),
  ('tie_e',    1, 'evt_te_1', 'customer.subscription.updated', 9, 'active',     true,  null, 'applied'),
  ('tie_e',    2, 'evt_te_zz', 'checkout.session.completed',   9, null,         null,  true, 'stale'),
  -- An unpaid checkout links but sets no status; a payment failure before any state is kept.
  ('unpaid',   1, 'evt_up_1', 'invoice.payment_failed',        4, null,         null,  null, 'applied'),
  ('unpaid',   2, 'evt_up_2', 'checkout.session.completed',    5, null,         null,  false, 'applied'),
  ('unpaid',   3, 'evt_up_3', 'customer.subscription.updated', 3, 'past_due',   false, null, 'applied');

create temp table stripe_finals (scenario text primary key, status text, cancel boolean, period_end_second integer, failed_second integer);
insert into stripe_finals values
  ('in_order', 'canceled', false, 3, null),
  ('reversed', 'canceled', false, 3, null),
  ('replay',   'past_due', false, 1, null),
  ('tie_a',    'active',   false, 5, null),
  ('tie_b',    'active',   false, 5, null),
  ('tie_c',    'canceled', false, 7, null),
  ('tie_d',    'active',   true,  9, null),
  ('tie_e',    'active',   true,  9, null),
  ('unpaid',   'past_due', false, 3, 4);

-- The details the edge function would pass for a step (functions/_shared/payments.ts).
create function pg_temp.details(s stripe_steps) returns jsonb
language sql immutable as $$
  select case
    when s.event_type = 'checkout.session.completed' then jsonb_build_object(
      'subscription_id', 'sub_pgtap_' || s.scenario, 'customer_id', 'cus_pgtap_owner',
      'user_id', '99990000-0000-4000-8000-000000000001', 'paid', s.paid)
    when s.event_type = 'invoice.payment_failed' then jsonb_build_object(
      'subscription_id', 'sub_pgtap_' || s.scenario, 'customer_id', 'cus_pgtap_owner')
    else jsonb_build_object(
      'subscription_id', 'sub_pgtap_' || s.scenario, 'customer_id', 'cus_pgtap_owner',
      'user_id', '99990000-0000-4000-8000-000000000001', 'status', s.status,
      'current_period_end', to_timestamp(1900000000 + s.at_second * 86400), 'cancel_at_period_end', s.cancel)
  end
$$;

-- Applies a scenario's steps in order; returns the outcomes.
create function pg_temp.run_scenario(name text) returns text[]
language plpgsql as $$
declare
  s stripe_steps;
  outcomes text[] := '{}';
begin
  for s in select * from stripe_steps where scenario = name order by step loop
    outcomes := outcomes || private.apply_stripe_event(s.event_id, s.event_type, to_timestamp(1800000000 + s.at_second), pg_temp.details(s));
  end loop;
  return outcomes;
end
$$;

select is(pg_temp.run_scenario(f.scenario),
          (select array_agg(expected order by step) from stripe_steps s where s.scenario = f.scenario),
          'stripe events, ' || f.scenario || ': outcome per step')
  from stripe_finals f order by f.scenario;

select results_eq(
  $$select f.scenario, s.status, s.cancel_at_period_end, s.current_period_end, s.last_payment_failed_at, s.user_id
      from stripe_finals f join public.subscriptions s on s.stripe_subscription_id = 'sub_pgtap_' || f.scenario
     order by f.scenario$$,
  $$select scenario, status, cancel, to_timestamp(1900000000 + period_end_second * 86400),
           case when failed_second is null then null else to_timestamp(1800000000 + failed_second) end,
           '99990000-0000-4000-8000-000000000001'::uuid
      from stripe_finals order by scenario$$,
  'stripe events: each scenario ends in the newest event''s state (status, cancel flag, period end, failure time, user)');

select is(
  (select count(*)::integer from private.stripe_events where event_id like 'evt\_%' and event_id in (select event_id from stripe_steps)),
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
  '{"subscription_id": "sub_pgtap_stray", "customer_id": "cus_pgtap_stray", "user_id": "00000000-1111-4000-8000-000000000000", "status": "active"}'),
  'applied', 'an event for an unknown customer and user is applied');
select is((select user_id from public.subscriptions where stripe_subscription_id = 'sub_pgtap_stray'), null,
  '... and the subscription is kept without a user');
select is(private.apply_stripe_event('evt_other', 'customer.created', now(), '{}'), 'ignored', 'a type without a subscription is ignored');
select throws_ok(
  $$select private.apply_stripe_event('evt_nostatus', 'customer.subscription.updated', now(), '{"subscription_id": "sub_pgtap_x"}')$$,
  '22023', null, 'a subscription event without a status is an error (the webhook answers 5xx)');
select is((select count(*)::integer from private.stripe_events where event_id = 'evt_nostatus'), 0,
  '... and its event id is not recorded (the retry is not a replay)');

-- =========================================================================================
-- 2. Premium is derived from the stored state.
-- =========================================================================================
select ok(not private.is_premium('99990000-0000-4000-8000-000000000002'), 'no subscription: not premium');
select is(private.apply_stripe_event('evt_prem_1', 'customer.subscription.created', now() - interval '1 minute',
  '{"subscription_id": "sub_pgtap_prem", "customer_id": "cus_pgtap_prem", "user_id": "99990000-0000-4000-8000-000000000002", "status": "active"}'),
  'applied', 'the stranger subscribes');
select ok(private.is_premium('99990000-0000-4000-8000-000000000002'), 'active: premium');
select is((select awarded from private.award_monthly_drops(array['99990000-0000-4000-8000-000000000002'::uuid], '2040-01-01')), 1,
  'the monthly award runs for 2040-01-01');
select is((select amount from public.monthly_drop_awards
            where user_id = '99990000-0000-4000-8000-000000000002' and award_month = '2040-01-01'), 250, 'the monthly award gives a premium user 250');
select is(private.apply_stripe_event('evt_prem_2', 'customer.subscription.deleted', now(),
  '{"subscription_id": "sub_pgtap_prem", "customer_id": "cus_pgtap_prem", "status": "canceled"}'),
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
  ('public.record_email_event(text, jsonb, jsonb)');
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

create function pg_temp.act_as(uid text) returns void
language plpgsql as $$
begin
  perform set_config('request.jwt.claims', json_build_object('sub', uid, 'role', 'authenticated')::text, true);
  execute 'set local role authenticated';
end
$$;

-- Clients read their subscription's new columns, never the event position.
select pg_temp.act_as('99990000-0000-4000-8000-000000000001');
select results_eq(
  $$select status, cancel_at_period_end from public.subscriptions where status = 'active' and cancel_at_period_end$$,
  $$values ('active'::text, true), ('active'::text, true)$$,
  'the owner reads status and cancel_at_period_end of their subscriptions');
select throws_ok($$select stripe_event_id from public.subscriptions$$, '42501', null, 'the event position is not readable');
select is(public.caller_is_premium(), true, 'caller_is_premium: the owner (active subscriptions) is premium');
reset role;
select pg_temp.act_as('99990000-0000-4000-8000-000000000004');
select is(public.caller_is_premium(), false, 'caller_is_premium: a user without a subscription is not');
select throws_ok($$select private.apply_stripe_event('evt_x', 'customer.subscription.created', now(), '{}')$$, '42501', null,
  'the private function is not callable by clients either');
reset role;

-- =========================================================================================
-- 4. E-mail.
-- =========================================================================================
-- The owner, to their own verified address (any case), and again with the same key.
select pg_temp.act_as('99990000-0000-4000-8000-000000000001');
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

select pg_temp.act_as('99990000-0000-4000-8000-000000000004');
select throws_ok($$select * from public.begin_email_send('pgtap-pay-unverified@example.test', 'Hi', 'k1', 'h')$$,
  '42501', null, 'an unverified address is refused, even one''s own');
reset role;

select pg_temp.act_as('99990000-0000-4000-8000-000000000003');
select results_eq(
  $$select (message).to_address, existing from public.begin_email_send('anyone@example.com', 'From support', 'a1', 'h')$$,
  $$values ('anyone@example.com'::text, false)$$,
  'a super admin may send to anyone');
reset role;

-- The cap (lowered for the test; rolled back with everything else).
update private.email_settings set daily_cap = 3;
select pg_temp.act_as('99990000-0000-4000-8000-000000000001');
select lives_ok($$select * from public.begin_email_send('pgtap-pay-owner@example.test', 'Two', 'k4', 'h')$$, 'second send of the day');
select lives_ok($$select * from public.begin_email_send('pgtap-pay-owner@example.test', 'Three', 'k5', 'h')$$, 'third send of the day');
select throws_ok($$select * from public.begin_email_send('pgtap-pay-owner@example.test', 'Four', 'k6', 'h')$$,
  'PT429', 'daily e-mail limit of 3 reached; try again later', 'the fourth is over the cap');
select results_eq($$select existing from public.begin_email_send('pgtap-pay-owner@example.test', 'Hello', 'k1', 'h1')$$,
  $$values (true)$$, 'a retry of an earlier send is answered from the log even at the cap');
reset role;
select pg_temp.act_as('99990000-0000-4000-8000-000000000002');
select lives_ok($$select * from public.begin_email_send('pgtap-pay-stranger@example.test', 'Mine', 'k1', 'h')$$,
  'the cap is per user (another user still sends)');
reset role;

-- Older sends fall out of the 24-hour window.
update public.email_messages set created_at = now() - interval '25 hours'
 where user_id = '99990000-0000-4000-8000-000000000001' and idempotency_key = 'k1';
select pg_temp.act_as('99990000-0000-4000-8000-000000000001');
select lives_ok($$select * from public.begin_email_send('pgtap-pay-owner@example.test', 'Four', 'k6', 'h')$$,
  'the cap counts the last 24 hours');
reset role;
update private.email_settings set daily_cap = 20;

-- The log's read policy.
select pg_temp.act_as('99990000-0000-4000-8000-000000000002');
select results_eq($$select to_address from public.email_messages where user_id::text like '99990000-%'$$,
  $$values ('pgtap-pay-stranger@example.test'::text)$$, 'a user reads only their own sends');
reset role;
select pg_temp.act_as('99990000-0000-4000-8000-000000000003');
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

select pg_temp.act_as('99990000-0000-4000-8000-000000000003');
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

select * from finish();
rollback;
