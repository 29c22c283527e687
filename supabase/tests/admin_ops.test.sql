-- The admin console's operations: only super admins read the queues and jobs or run a job now;
-- a run now executes the command cron.job holds under the name (never the caller's SQL), is
-- audited with who ran it, and is refused for an unknown name; the audit table is closed to clients.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(11);

select tests.create_user(to_jsonb(u)) from (values
  ('53000000-0000-4000-8000-00000000000a', 'pgtap-ops-admin@example.test'),
  ('53000000-0000-4000-8000-00000000000b', 'pgtap-ops-user@example.test')) u (id, email);
update public.profiles set role = 'super_admin' where id = '53000000-0000-4000-8000-00000000000a';
select cron.schedule('pgtap-ops-job', '0 0 1 1 *', $$insert into private.job_runs (job, started_at) values ('pgtap-ops-job', now())$$);

select is(tests.client_table_privileges(array['private.cron_manual_runs']), null, 'clients reach no audit row');

set local role authenticated;
select tests.authenticate_as('53000000-0000-4000-8000-00000000000b');
select throws_ok($$select public.run_cron_job('pgtap-ops-job')$$, '42501', null, 'a user cannot run a job');
select throws_ok($$select public.admin_cron_jobs()$$, '42501', null, 'nor list the jobs');
select throws_ok($$select public.admin_ops_status()$$, '42501', null, 'nor read the queues');

select tests.authenticate_as('53000000-0000-4000-8000-00000000000a');
select throws_ok($$select public.run_cron_job('pgtap-no-such-job')$$, 'PT404', 'no scheduled job named pgtap-no-such-job', 'an unknown name: 404');
select throws_ok($$select public.run_cron_job('pgtap-ops-job; select 1')$$, 'PT404', null, 'a name is only looked up, never run');
select is((public.run_cron_job('pgtap-ops-job')) ->> 'status', 'succeeded', 'a super admin runs the job now');
select ok(jsonb_array_length(public.admin_cron_jobs() -> 'jobs') > 0, 'and lists the jobs');
select ok(public.admin_ops_status() ? 'queues', 'and reads the queues');
reset role;

select is((select count(*)::int from private.job_runs where job = 'pgtap-ops-job'), 1, 'the stored command ran once');
select is((select run_by from private.cron_manual_runs where job_name = 'pgtap-ops-job'),
          '53000000-0000-4000-8000-00000000000a'::uuid, 'audited with who ran it');

select * from finish();
rollback;
