-- Account deletion in SQL, for what the HTTP test (tests/user_deletion_test.ts) leaves out
-- because other tests read the same global rows beside it: an admin's stamps on prices,
-- conversion rates and the encouragement config become the deletion's tombstone, the append-only
-- triggers accept that change and nothing else, and the rows step is refused without a request.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql
set local search_path = extensions;

select plan(13);

select tests.create_user(to_jsonb(u)) from (values 
  ('44444444-0000-4000-8000-000000000001', 'leaving-admin@deletion.test'),
  ('44444444-0000-4000-8000-000000000002', 'staying-admin@deletion.test')) u (id, email);
update public.profiles set role = 'super_admin' where id::text like '44444444-0000-4000-8000-%';

-- The leaving admin sets a price, a rate and the encouragement config.
select set_config('request.jwt.claims', json_build_object(
  'sub', '44444444-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
insert into public.ai_prices (model, unit, usd_per_unit) values ('deletion-test-model', 'input_1m_tokens', 2);
insert into public.token_conversion_rates (tokens_per_drop) values (1234);
select private.update_encouragement_config(jsonb_build_object(
  'daily_allowance', (select daily_allowance from public.encouragement_config)));
select set_config('request.jwt.claims', '', true);

select throws_ok(
  $$update public.ai_prices set created_by = gen_random_uuid() where model = 'deletion-test-model'$$,
  '42501', null, 'a price''s setter cannot be rewritten to just any id');
select throws_ok(
  $$select private.delete_account_rows('44444444-0000-4000-8000-000000000001')$$,
  'PT404', null, 'the rows step needs a requested deletion');

select set_config('request.jwt.claims', json_build_object(
  'sub', '44444444-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select lives_ok(
  $$select public.admin_delete_account('44444444-0000-4000-8000-000000000001', 'DELETE')$$,
  'a super admin asks for the deletion');
select set_config('request.jwt.claims', '', true);
select lives_ok($$select private.delete_account_rows('44444444-0000-4000-8000-000000000001')$$, 'the rows step runs');

select is((select created_by from public.ai_prices where model = 'deletion-test-model'),
          (select tombstone_id from private.account_deletions where user_id = '44444444-0000-4000-8000-000000000001'),
          'the price keeps its row, set by the tombstone');
select is((select created_by from public.token_conversion_rates where tokens_per_drop = 1234),
          (select tombstone_id from private.account_deletions where user_id = '44444444-0000-4000-8000-000000000001'),
          'the conversion rate keeps its row, set by the tombstone');
select is((select updated_by from public.encouragement_config),
          (select tombstone_id from private.account_deletions where user_id = '44444444-0000-4000-8000-000000000001'),
          'the encouragement config names the tombstone');
select is((select count(*)::int from auth.users where id = '44444444-0000-4000-8000-000000000001'), 0,
          'the auth user is gone');
select throws_ok(
  $$update public.ai_prices set usd_per_unit = 3,
           created_by = (select tombstone_id from private.account_deletions limit 1)
     where model = 'deletion-test-model'$$,
  '42501', null, 'a tombstone does not open the row to other changes');

-- The last super admin: admins being deleted do not count, so two cannot delete each other away.
select tests.create_user(to_jsonb(u)) from (values 
  ('44444444-0000-4000-8000-000000000003', 'third-admin@deletion.test')) u (id, email);
update public.profiles set role = 'super_admin' where id = '44444444-0000-4000-8000-000000000003';
select set_config('request.jwt.claims', json_build_object(
  'sub', '44444444-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
update public.profiles set role = 'user'
 where role = 'super_admin' and id not in ('44444444-0000-4000-8000-000000000002', '44444444-0000-4000-8000-000000000003');
select lives_ok($$select public.admin_delete_account('44444444-0000-4000-8000-000000000002', 'DELETE')$$,
                'one of two super admins deletes the other');
select throws_ok($$select public.admin_delete_account('44444444-0000-4000-8000-000000000003', 'DELETE')$$,
                 'PT409', null, 'the remaining one cannot delete themselves: the other is already being deleted');
select set_config('request.jwt.claims', '', true);
select throws_ok($$update public.profiles set role = 'user' where id = '44444444-0000-4000-8000-000000000003'$$,
                 'PT409', null, 'nor be demoted');

-- Realtime: a token of an account being deleted reads no notifications (hosted Realtime checks
-- each change with the subscriber's claims and no pre-request).
select private.notify('44444444-0000-4000-8000-000000000002', 'fixture.hello');
select set_config('request.jwt.claims', json_build_object(
  'sub', '44444444-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
set local role authenticated;
select is((select count(*)::int from public.notifications), 0, 'the account being deleted reads no notification');
reset role;
select set_config('request.jwt.claims', '', true);

select * from finish();
rollback;
