-- Monthly drops: 30 (250 for premium) once per user per calendar month, the all-users job
-- and its pg_cron schedule, subscriptions' client access, and the edge-function job helper.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(53);

-- R: regular, P: premium (active subscription), C: canceled subscription, I: inactive,
-- U: claims their own month, S: super admin.
select tests.create_user(to_jsonb(u)) from (values 
  ('33333333-0000-4000-8000-00000000000a', 'pgtap-monthly-regular@example.test'),
  ('33333333-0000-4000-8000-00000000000b', 'pgtap-monthly-premium@example.test'),
  ('33333333-0000-4000-8000-00000000000c', 'pgtap-monthly-canceled@example.test'),
  ('33333333-0000-4000-8000-00000000000d', 'pgtap-monthly-inactive@example.test'),
  ('33333333-0000-4000-8000-00000000000e', 'pgtap-monthly-self@example.test'),
  ('33333333-0000-4000-8000-00000000000f', 'pgtap-monthly-admin@example.test')) u (id, email);
update public.profiles set is_active = false where id = '33333333-0000-4000-8000-00000000000d';
update public.profiles set role = 'super_admin' where id = '33333333-0000-4000-8000-00000000000f';
insert into public.subscriptions (user_id, stripe_customer_id, stripe_subscription_id, status) values
  ('33333333-0000-4000-8000-00000000000b', 'cus_pgtap_premium', 'sub_pgtap_premium', 'active'),
  ('33333333-0000-4000-8000-00000000000c', 'cus_pgtap_canceled', 'sub_pgtap_canceled', 'canceled');

create temp table this_month as select private.current_award_month() as month;
grant select on this_month to public;

select is(private.current_award_month(), date_trunc('month', now() at time zone 'UTC')::date,
  'the award month is the first day of the current UTC month');

-- ---------------------------------------------------------------------------------------
-- The schedule.
-- ---------------------------------------------------------------------------------------
select results_eq(
  $$select schedule, active from cron.job where jobname = 'award-monthly-drops'$$,
  $$values ('0 0 1 * *'::text, true)$$,
  'the cron job award-monthly-drops exists, active, at 0 0 1 * *');
select matches(
  (select command from cron.job where jobname = 'award-monthly-drops'),
  '/api/drops/cron/award-monthly-all',
  'the cron job calls the chunked endpoint (each chunk its own transaction)');

-- ---------------------------------------------------------------------------------------
-- Premium.
-- ---------------------------------------------------------------------------------------
select ok(private.is_premium('33333333-0000-4000-8000-00000000000b'), 'an active subscription makes a user premium');
select ok(not private.is_premium('33333333-0000-4000-8000-00000000000c'), 'a canceled subscription does not');
select ok(not private.is_premium('33333333-0000-4000-8000-00000000000a'), 'no subscription: not premium');

-- ---------------------------------------------------------------------------------------
-- award_monthly_drops(): the caller's own month.
-- ---------------------------------------------------------------------------------------
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', '33333333-0000-4000-8000-00000000000e', 'role', 'authenticated')::text, true);
select results_eq(
  $$select awarded, amount, award_month, balance from public.award_monthly_drops()$$,
  $$select true, 30, month, 80 from this_month$$,
  'a user claims their month: awarded, 30 drops, balance 50 + 30');
select results_eq(
  $$select awarded, amount, award_month, balance from public.award_monthly_drops()$$,
  $$select false, 30, month, 80 from this_month$$,
  'claiming again in the same month awards nothing (and reports the earlier amount)');
select throws_ok(
  $$select * from public.award_monthly_drops_all()$$,
  '42501', 'only the scheduler, the service role or a super admin may award all users',
  'an authenticated non-admin cannot call award_monthly_drops_all');
select throws_ok(
  $$insert into public.monthly_drop_awards (user_id, award_month, amount)
    select '33333333-0000-4000-8000-00000000000e', month + 31, 30 from this_month$$,
  '42501', 'permission denied for table monthly_drop_awards',
  'a user cannot insert award rows directly');
select results_eq(
  $$select user_id, amount from public.monthly_drop_awards where user_id::text like '33333333-0000-4000-8000-%'$$,
  $$values ('33333333-0000-4000-8000-00000000000e'::uuid, 30)$$,
  'a user reads only their own award rows');
reset role;

set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', '33333333-0000-4000-8000-00000000000d', 'role', 'authenticated')::text, true);
select results_eq(
  $$select awarded, amount, balance from public.award_monthly_drops()$$,
  $$values (false, null::integer, 50)$$,
  'an inactive user claiming their month is not awarded');
reset role;

set local role anon;
select set_config('request.jwt.claims', json_build_object('role', 'anon')::text, true);
select throws_ok($$select * from public.award_monthly_drops()$$, '42501', null,
  'anon cannot call award_monthly_drops');
select throws_ok($$select * from public.award_monthly_drops_all()$$, '42501', null,
  'anon cannot call award_monthly_drops_all');
reset role;
select set_config('request.jwt.claims', '', true);

select results_eq(
  $$select count(*)::integer, sum(amount)::integer from public.drops_transactions
     where user_id = '33333333-0000-4000-8000-00000000000e' and type = 'monthly_recurring'$$,
  $$values (1, 30)$$,
  'the user''s ledger holds exactly one monthly_recurring row of 30');

-- ---------------------------------------------------------------------------------------
-- award_monthly_drops_all(): every active user, once.
-- ---------------------------------------------------------------------------------------
-- Other users may exist (seed, other suites): expect what the database says is due.
create temp table expected_run as
  select (select count(*)::integer from public.profiles p
           where p.is_active
             and not exists (select 1 from public.monthly_drop_awards a, this_month m
                              where a.user_id = p.id and a.award_month = m.month)) as awarded,
         (select count(*)::integer from public.profiles) as total;
select ok((select awarded from expected_run) >= 4, 'at least the four new active test users are due this month');

create temp table first_run as select * from public.award_monthly_drops_all();
select results_eq(
  $$select awarded, skipped, award_month from first_run$$,
  $$select e.awarded, e.total - e.awarded, m.month from expected_run e, this_month m$$,
  'the first run (direct session, as pg_cron) awards every due active user and reports the rest as skipped');

select results_eq(
  $$select p.id, p.drops_balance, a.amount
      from public.profiles p
      left join public.monthly_drop_awards a on a.user_id = p.id and a.award_month = (select month from this_month)
     where p.id::text like '33333333-0000-4000-8000-%' order by p.id$$,
  $$values ('33333333-0000-4000-8000-00000000000a'::uuid, 80, 30),
           ('33333333-0000-4000-8000-00000000000b'::uuid, 300, 250),
           ('33333333-0000-4000-8000-00000000000c'::uuid, 80, 30),
           ('33333333-0000-4000-8000-00000000000d'::uuid, 50, null::integer),
           ('33333333-0000-4000-8000-00000000000e'::uuid, 80, 30),
           ('33333333-0000-4000-8000-00000000000f'::uuid, 80, 30)$$,
  'regular 30, premium 250, canceled subscription 30, inactive nothing, already-awarded not again');
select results_eq(
  $$select amount, type, description, item_type from public.drops_transactions
     where user_id = '33333333-0000-4000-8000-00000000000b' and type = 'monthly_recurring'$$,
  $$select 250, 'monthly_recurring'::text, 'Monthly drops for ' || to_char(month, 'YYYY-MM'), 'month'::text from this_month$$,
  'the premium user''s ledger row: 250, monthly_recurring, described with the month');
select is_empty(
  $$select id from public.drops_transactions where user_id = '33333333-0000-4000-8000-00000000000d' and type = 'monthly_recurring'$$,
  'the inactive user has no monthly ledger row');

create temp table second_run as select * from public.award_monthly_drops_all();
select results_eq(
  $$select awarded, skipped, award_month from second_run$$,
  $$select 0, e.total, m.month from expected_run e, this_month m$$,
  'a second run in the same month awards nobody and skips everyone');

-- One award per user and month, and one ledger row per award.
select is_empty(
  $$select user_id from public.drops_transactions
     where type = 'monthly_recurring' and description = 'Monthly drops for ' || to_char((select month from this_month), 'YYYY-MM')
     group by user_id having count(*) > 1$$,
  'no user has two monthly ledger rows for this month');
select is(
  (select count(*)::integer from public.drops_transactions
    where type = 'monthly_recurring' and description = 'Monthly drops for ' || to_char((select month from this_month), 'YYYY-MM')
      and user_id::text like '33333333-0000-4000-8000-%'),
  (select count(*)::integer from public.monthly_drop_awards
    where award_month = (select month from this_month) and user_id::text like '33333333-0000-4000-8000-%'),
  'each award row has exactly one ledger row');
select throws_ok(
  $$insert into public.monthly_drop_awards (user_id, award_month, amount)
    select '33333333-0000-4000-8000-00000000000a', month, 30 from this_month$$,
  '23505', null,
  'a second award row for the same user and month violates the primary key');
select throws_ok(
  $$insert into public.monthly_drop_awards (user_id, award_month, amount)
    values ('33333333-0000-4000-8000-00000000000a', '2020-01-15', 30)$$,
  '23514', null,
  'an award month must be the first day of a month');
select is_empty(
  $$select p.id from public.profiles p
     where p.drops_balance <> coalesce((select sum(amount) from public.drops_transactions t where t.user_id = p.id), 0)$$,
  'every balance still equals its ledger sum');

-- Who else may run it: a super admin and the service role (nothing left to award).
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', '33333333-0000-4000-8000-00000000000f', 'role', 'authenticated')::text, true);
select results_eq($$select awarded from public.award_monthly_drops_all()$$, $$values (0)$$,
  'a super admin may run award_monthly_drops_all');
reset role;
set local role service_role;
select set_config('request.jwt.claims', json_build_object('role', 'service_role')::text, true);
select results_eq($$select awarded from public.award_monthly_drops_all()$$, $$values (0)$$,
  'the service role may run award_monthly_drops_all');
reset role;
select set_config('request.jwt.claims', '', true);

-- Reactivated later in the month: the next run awards them.
update public.profiles set is_active = true where id = '33333333-0000-4000-8000-00000000000d';
select results_eq($$select awarded from public.award_monthly_drops_all()$$, $$values (1)$$,
  'a user reactivated during the month is awarded by the next run, once');
select is((select drops_balance from public.profiles where id = '33333333-0000-4000-8000-00000000000d'), 80,
  'the reactivated user has 50 + 30');

-- ---------------------------------------------------------------------------------------
-- Subscriptions: read-only for clients, provider ids never.
-- ---------------------------------------------------------------------------------------
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', '33333333-0000-4000-8000-00000000000b', 'role', 'authenticated')::text, true);
select results_eq(
  $$select user_id, status from public.subscriptions$$,
  $$values ('33333333-0000-4000-8000-00000000000b'::uuid, 'active'::text)$$,
  'a user reads the granted columns of their own subscription, and no one else''s');
select throws_ok($$select stripe_customer_id from public.subscriptions$$, '42501',
  'permission denied for table subscriptions', 'stripe_customer_id is not selectable by authenticated');
select throws_ok($$select stripe_subscription_id from public.subscriptions$$, '42501',
  'permission denied for table subscriptions', 'stripe_subscription_id is not selectable by authenticated');
select throws_ok($$select * from public.subscriptions$$, '42501',
  'permission denied for table subscriptions', 'select * is refused (it includes the provider ids)');
select throws_ok($$select id from public.subscriptions where stripe_customer_id = 'cus_pgtap_premium'$$, '42501',
  'permission denied for table subscriptions', 'provider ids cannot be probed through a where clause');
select throws_ok(
  $$insert into public.subscriptions (user_id, status) values ('33333333-0000-4000-8000-00000000000b', 'active')$$,
  '42501', 'permission denied for table subscriptions', 'a user cannot insert a subscription');
select throws_ok(
  $$update public.subscriptions set status = 'active' where user_id = '33333333-0000-4000-8000-00000000000b'$$,
  '42501', 'permission denied for table subscriptions', 'a user cannot update a subscription');
select throws_ok(
  $$delete from public.subscriptions where user_id = '33333333-0000-4000-8000-00000000000b'$$,
  '42501', 'permission denied for table subscriptions', 'a user cannot delete a subscription');
reset role;

set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', '33333333-0000-4000-8000-00000000000a', 'role', 'authenticated')::text, true);
select is_empty($$select id from public.subscriptions where user_id::text like '33333333-0000-4000-8000-%'$$,
  'a user without a subscription sees none of the others''');
reset role;

set local role anon;
select set_config('request.jwt.claims', json_build_object('role', 'anon')::text, true);
select throws_ok($$select id, status from public.subscriptions$$, '42501',
  'permission denied for table subscriptions', 'anon cannot read subscriptions');
reset role;
select set_config('request.jwt.claims', '', true);

-- ---------------------------------------------------------------------------------------
-- private.schedule_edge_function_job: a pg_cron job that POSTs to an edge function with
-- the cron secret read from Vault at run time.
-- ---------------------------------------------------------------------------------------
insert into vault.secrets (name, secret) values
  ('project_url', 'http://127.0.0.1:54321'),
  ('DROPS_CRON_SECRET', 'pgtap-drops-cron-secret')
on conflict (name) do nothing;

select ok(not has_function_privilege('authenticated', 'private.schedule_edge_function_job(text, text, text, text, integer)', 'EXECUTE')
          and not has_function_privilege('anon', 'private.schedule_edge_function_job(text, text, text, text, integer)', 'EXECUTE'),
  'API roles cannot schedule jobs');
select throws_ok(
  $$select private.schedule_edge_function_job('x-test-job', '0 * * * *', 'https://evil.example/x', 'DROPS_CRON_SECRET')$$,
  '22023', null, 'a function path that is not /api/... is refused');
select throws_ok(
  $$select private.schedule_edge_function_job('x-test-job', '0 * * * *', '/api/x''); drop table x; --', 'DROPS_CRON_SECRET')$$,
  '22023', null, 'a function path with SQL in it is refused');
select throws_ok(
  $$select private.schedule_edge_function_job('x-test-job', '0 * * * *', '/api/drops/cron/award-monthly-all', 'drops''secret')$$,
  '22023', null, 'a secret name that is not an upper-case variable name is refused');

create temp table scheduled as
  select private.schedule_edge_function_job('x-test-job', '0 * * * *', '/api/drops/cron/award-monthly-all', 'DROPS_CRON_SECRET') as jobid;
select results_eq(
  $$select jobid, schedule, active from cron.job where jobname = 'x-test-job'$$,
  $$select jobid, '0 * * * *'::text, true from scheduled$$,
  'the helper creates an active cron job with the schedule and returns its id');
select ok(
  (select command ~ 'net\.http_post' and command ~ 'vault\.decrypted_secrets'
          and command ~ '''project_url''' and command ~ '''DROPS_CRON_SECRET'''
          and command ~ '/functions/v1' and command ~ '/api/drops/cron/award-monthly-all'
     from cron.job where jobname = 'x-test-job'),
  'the job''s command calls net.http_post with the project URL and the named secret from Vault');
select ok(
  (select position((select decrypted_secret from vault.decrypted_secrets where name = 'DROPS_CRON_SECRET') in command) = 0
     from cron.job where jobname = 'x-test-job'),
  'the secret''s value is not copied into cron.job (it is read from Vault at run time)');

-- Run the job's command as pg_cron would.
create temp table queue_before as select coalesce(max(id), 0) as max_id from net.http_request_queue;
do $$ begin execute (select command from cron.job where jobname = 'x-test-job'); end $$;
select results_eq(
  $$select method, url, headers ->> 'x-cron-secret', headers ->> 'Content-Type', timeout_milliseconds
      from net.http_request_queue where id > (select max_id from queue_before)$$,
  $$select 'POST'::text,
           (select decrypted_secret from vault.decrypted_secrets where name = 'project_url') || '/functions/v1/api/drops/cron/award-monthly-all',
           (select decrypted_secret from vault.decrypted_secrets where name = 'DROPS_CRON_SECRET'),
           'application/json'::text,
           60000$$,
  'running the command queues one POST to <project_url>/functions/v1/api/... with the x-cron-secret from Vault');
select ok(
  (select convert_from(body, 'UTF8')::jsonb ? 'scheduled_at' from net.http_request_queue where id > (select max_id from queue_before)),
  'the request body carries scheduled_at');

-- Rescheduling under the same name replaces the job.
select lives_ok(
  $$select private.schedule_edge_function_job('x-test-job', '30 2 * * *', '/api/drops/cron/award-monthly-all', 'DROPS_CRON_SECRET')$$,
  'scheduling the same job name again succeeds');
select results_eq(
  $$select count(*)::integer, min(schedule) from cron.job where jobname = 'x-test-job'$$,
  $$values (1, '30 2 * * *'::text)$$,
  'rescheduling updates the one job rather than adding a second');

select ok(cron.unschedule('x-test-job'), 'the test job is unscheduled');
select is_empty($$select jobid from cron.job where jobname = 'x-test-job'$$, 'the test job is gone');

select * from finish();
rollback;
