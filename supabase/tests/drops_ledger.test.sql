-- The drops ledger: signup bonus once, balance = sum of deltas, never below zero,
-- append-only, admin adjustments and recomputation, and what clients may do.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql
-- Users written as GoTrue's role writes them (test-only grants, rolled back with the file).
grant usage on schema tests, private to supabase_auth_admin;
grant execute on function tests.create_user(jsonb), private.new_auth_user(jsonb) to supabase_auth_admin;
grant usage on schema extensions to supabase_auth_admin;
-- postgres is not GoTrue's role (nor a superuser, as on hosted): it joins it by its CREATEROLE.
grant supabase_auth_admin to postgres;

select plan(62);

-- A: a regular user, B: another regular user, S: a super admin, D: a user to delete.
select tests.create_user(to_jsonb(u)) from (values 
  ('22222222-0000-4000-8000-00000000000a', 'pgtap-ledger-a@example.test'),
  ('22222222-0000-4000-8000-00000000000b', 'pgtap-ledger-b@example.test'),
  ('22222222-0000-4000-8000-00000000000c', 'pgtap-ledger-s@example.test'),
  ('22222222-0000-4000-8000-00000000000d', 'pgtap-ledger-d@example.test')) u (id, email);
update public.profiles set role = 'super_admin' where id = '22222222-0000-4000-8000-00000000000c';

-- Every balance that differs from its ledger sum (should be none, at every point).
create function pg_temp.balance_mismatches() returns setof text
language sql stable as $$
  select format('%s: balance %s, ledger %s', p.id, p.drops_balance, coalesce(l.total, 0))
    from public.profiles p
    left join (select user_id, sum(amount) as total from public.drops_transactions group by user_id) l
      on l.user_id = p.id
   where p.drops_balance is distinct from coalesce(l.total, 0)::integer
$$;

-- ---------------------------------------------------------------------------------------
-- Signup bonus: exactly once, for every new user (E is created by the auth server, as on
-- Supabase: as supabase_auth_admin).
-- ---------------------------------------------------------------------------------------
set local role supabase_auth_admin;
select tests.create_user(to_jsonb(u)) from (values ('22222222-0000-4000-8000-00000000000e', 'pgtap-ledger-e@example.test')) u (id, email);
reset role;
select results_eq(
  $$select user_id, amount, type, description, item_id, reason, source, created_by
      from public.drops_transactions
     where user_id in ('22222222-0000-4000-8000-00000000000a', '22222222-0000-4000-8000-00000000000e') order by user_id$$,
  $$values ('22222222-0000-4000-8000-00000000000a'::uuid, 50, 'signup_bonus'::text, 'Welcome bonus'::text, null::uuid, null::text, null::text, null::uuid),
           ('22222222-0000-4000-8000-00000000000e', 50, 'signup_bonus', 'Welcome bonus', null, null, null, null)$$,
  'a new user''s ledger holds exactly one row: the 50-drop signup bonus (the auth server''s users too)');
select results_eq(
  $$select drops_balance from public.profiles
     where id in ('22222222-0000-4000-8000-00000000000a', '22222222-0000-4000-8000-00000000000e') order by id$$,
  $$values (50), (50)$$,
  'a new user''s balance is 50');
delete from auth.users where id = '22222222-0000-4000-8000-00000000000e';
select is_empty(
  $$insert into public.drops_transactions (user_id, amount, type, description)
    values ('22222222-0000-4000-8000-00000000000a', 50, 'signup_bonus', 'Welcome bonus')
    on conflict (user_id) where type = 'signup_bonus' do nothing
    returning id$$,
  'granting the signup bonus again (the trigger''s insert) is a no-op');
select throws_ok(
  $$insert into public.drops_transactions (user_id, amount, type, description)
    values ('22222222-0000-4000-8000-00000000000a', 50, 'signup_bonus', 'Welcome bonus')$$,
  '23505', 'duplicate key value violates unique constraint "drops_transactions_one_signup_bonus"',
  'a second signup_bonus row, inserted directly as postgres, violates the unique index');
select results_eq(
  $$select count(*)::integer, sum(amount)::integer from public.drops_transactions
     where user_id = '22222222-0000-4000-8000-00000000000a' and type = 'signup_bonus'$$,
  $$values (1, 50)$$,
  'still exactly one signup bonus');
select is((select drops_balance from public.profiles where id = '22222222-0000-4000-8000-00000000000a'), 50,
  'the balance is still 50 after the refused duplicates');
select lives_ok(
  $$insert into public.drops_transactions (user_id, amount, type, description)
    values ('22222222-0000-4000-8000-00000000000a', 50, 'purchase', 'Not a bonus')$$,
  'other types are not limited to one row per user');

-- ---------------------------------------------------------------------------------------
-- The balance invariant through a series of adjustments (direct session: no claims).
-- ---------------------------------------------------------------------------------------
select lives_ok(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000a', 100, 'credit one')$$,
  'admin_adjust_drops +100 from a direct session');
select lives_ok(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000a', -30, 'debit one')$$,
  'admin_adjust_drops -30 from a direct session');
select lives_ok(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000b', -50, 'spend the whole bonus')$$,
  'admin_adjust_drops can take a balance to exactly zero');
select results_eq(
  $$select id, drops_balance from public.profiles where id::text like '22222222-0000-4000-8000-%' order by id$$,
  $$values ('22222222-0000-4000-8000-00000000000a'::uuid, 170),
           ('22222222-0000-4000-8000-00000000000b'::uuid, 0),
           ('22222222-0000-4000-8000-00000000000c'::uuid, 50),
           ('22222222-0000-4000-8000-00000000000d'::uuid, 50)$$,
  'balances after the adjustments: 50+50+100-30, 50-50, and untouched 50s');

-- One statement with several deltas for several users (the statement trigger sums per user).
select lives_ok(
  $$insert into public.drops_transactions (user_id, amount, type, description) values
      ('22222222-0000-4000-8000-00000000000a', 5, 'purchase', 'a +5'),
      ('22222222-0000-4000-8000-00000000000a', -25, 'purchase', 'a -25'),
      ('22222222-0000-4000-8000-00000000000b', 7, 'refund', 'b +7'),
      ('22222222-0000-4000-8000-00000000000a', 3, 'refund', 'a +3')$$,
  'a multi-row insert for several users');
select results_eq(
  $$select id, drops_balance from public.profiles where id in ('22222222-0000-4000-8000-00000000000a', '22222222-0000-4000-8000-00000000000b') order by id$$,
  $$values ('22222222-0000-4000-8000-00000000000a'::uuid, 153), ('22222222-0000-4000-8000-00000000000b'::uuid, 7)$$,
  'a multi-row insert moves each user''s balance by the sum of their rows');

-- A longer series of pseudo-random adjustments, refused ones included.
do $$
declare
  users uuid[] := array['22222222-0000-4000-8000-00000000000a', '22222222-0000-4000-8000-00000000000b',
                        '22222222-0000-4000-8000-00000000000c', '22222222-0000-4000-8000-00000000000d'];
  i integer;
begin
  for i in 1..60 loop
    continue when ((i * 37) % 61) - 35 = 0;
    begin
      perform public.admin_adjust_drops(users[1 + i % 4], ((i * 37) % 61) - 35, 'series ' || i);
    exception when check_violation then
      null; -- would go below zero: refused, and the series goes on
    end;
  end loop;
end
$$;
select is_empty('select * from pg_temp.balance_mismatches()',
  'after a series of adjustments every user''s balance equals the sum of their ledger rows');
select is(
  (select count(*)::integer from public.drops_transactions where reason like 'series %'),
  (select count(*)::integer from public.drops_transactions where type = 'admin_adjustment' and reason like 'series %'),
  'every adjustment of the series is an admin_adjustment row');
select ok(
  (select count(*) from public.drops_transactions where reason like 'series %') between 1 and 59,
  'the series both applied and refused some adjustments (so both paths were exercised)');
select is_empty(
  $$select id from public.profiles where drops_balance < 0$$,
  'no balance is negative');

-- ---------------------------------------------------------------------------------------
-- Never below zero.
-- ---------------------------------------------------------------------------------------
create temp table ledger_before as
  select (select drops_balance from public.profiles where id = '22222222-0000-4000-8000-00000000000d') as balance,
         (select count(*) from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000d') as rows;
select throws_ok(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000d',
      -((select drops_balance from public.profiles where id = '22222222-0000-4000-8000-00000000000d') + 1), 'too much')$$,
  '23514', 'insufficient drops: the balance cannot go below zero',
  'a debit one drop beyond the balance is refused');
select throws_ok(
  $$insert into public.drops_transactions (user_id, amount, type, description)
    values ('22222222-0000-4000-8000-00000000000d', -100000, 'purchase', 'overdraft')$$,
  '23514', null,
  'a direct overdraft insert, even as postgres, is refused by the balance check');
select results_eq(
  $$select (select drops_balance from public.profiles where id = '22222222-0000-4000-8000-00000000000d'),
           (select count(*) from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000d')$$,
  $$select balance, rows from ledger_before$$,
  'refused debits leave the balance and the ledger unchanged');
select throws_ok(
  $$insert into public.drops_transactions (user_id, amount, type, description)
    values ('22222222-0000-4000-8000-00000000000d', 0, 'purchase', 'nothing')$$,
  '23514', null,
  'a zero delta is refused');
select throws_ok(
  $$update public.profiles set drops_balance = 1000 where id = '22222222-0000-4000-8000-00000000000d'$$,
  '42501', 'drops_balance changes only through the drops ledger',
  'not even postgres writes drops_balance directly');

-- ---------------------------------------------------------------------------------------
-- Append-only.
-- ---------------------------------------------------------------------------------------
select throws_ok(
  $$update public.drops_transactions set amount = 1000 where user_id = '22222222-0000-4000-8000-00000000000a'$$,
  '42501', 'drops_transactions is append-only',
  'updating ledger rows is refused, even for postgres');
select throws_ok(
  $$delete from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000a'$$,
  '42501', 'drops_transactions is append-only',
  'deleting ledger rows is refused, even for postgres');
select throws_ok(
  $$truncate public.drops_transactions$$,
  '42501', 'drops_transactions is append-only',
  'truncating the ledger is refused, even for postgres');
select is((select count(*)::integer from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000a' and type = 'signup_bonus'), 1,
  'the ledger rows are intact after the refused changes');

-- ---------------------------------------------------------------------------------------
-- admin_adjust_drops: who, and what it records.
-- ---------------------------------------------------------------------------------------
select results_eq(
  $$select amount, type, reason, source, created_by, description
      from public.admin_adjust_drops('22222222-0000-4000-8000-00000000000d', 12, '  dashboard grant  ')$$,
  $$values (12, 'admin_adjustment'::text, 'dashboard grant'::text, 'admin'::text, null::uuid, 'Adjustment: dashboard grant'::text)$$,
  'from a direct session: recorded with the trimmed reason, default source admin and no created_by');

-- A regular user.
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', '22222222-0000-4000-8000-00000000000a', 'role', 'authenticated')::text, true);
select throws_ok(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000a', 1000, 'gift to myself')$$,
  '42501', 'only super admins may adjust drops',
  'a regular user cannot adjust their own drops');
select throws_ok(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000b', -1, 'take from another')$$,
  '42501', 'only super admins may adjust drops',
  'a regular user cannot adjust another user''s drops');
select throws_ok(
  $$select public.recompute_drops_balance('22222222-0000-4000-8000-00000000000a')$$,
  '42501', 'only super admins may recompute balances',
  'a regular user cannot call recompute_drops_balance');
select throws_ok(
  $$insert into public.drops_transactions (user_id, amount, type, description)
    values ('22222222-0000-4000-8000-00000000000a', 1000, 'purchase', 'free money')$$,
  '42501', 'permission denied for table drops_transactions',
  'a user cannot insert into drops_transactions directly');
select throws_ok(
  $$update public.drops_transactions set amount = 1000 where user_id = '22222222-0000-4000-8000-00000000000a'$$,
  '42501', 'permission denied for table drops_transactions',
  'a user cannot update drops_transactions');
select throws_ok(
  $$delete from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000a'$$,
  '42501', 'permission denied for table drops_transactions',
  'a user cannot delete from drops_transactions');
select is_empty(
  $$select id from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000b'$$,
  'a user cannot read another user''s ledger rows');
select is(
  (select count(*)::integer from public.drops_transactions),
  (select count(*)::integer from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000a'),
  'every ledger row a user can read is their own');
select ok(
  (select count(*) from public.drops_transactions) > 3,
  'a user reads their own ledger rows');
reset role;

-- A super admin through the API.
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', '22222222-0000-4000-8000-00000000000c', 'role', 'authenticated')::text, true);
select results_eq(
  $$select user_id, amount, type, reason, source, created_by
      from public.admin_adjust_drops('22222222-0000-4000-8000-00000000000b', 40, 'Support: failed purchase', 'api')$$,
  $$values ('22222222-0000-4000-8000-00000000000b'::uuid, 40, 'admin_adjustment'::text, 'Support: failed purchase'::text, 'api'::text,
            '22222222-0000-4000-8000-00000000000c'::uuid)$$,
  'a super admin adjusts another user''s drops; reason, source and created_by are recorded');
select throws_ok(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000b', 40, null)$$,
  '22023', 'reason is required',
  'a null reason is refused');
select throws_ok(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000b', 40, '   ')$$,
  '22023', 'reason is required',
  'a blank reason is refused');
select throws_ok(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000b', 0, 'zero')$$,
  '22023', 'delta must be a non-zero integer',
  'a zero delta is refused');
select throws_ok(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-0000000000ff', 10, 'nobody')$$,
  'PT404', null,
  'an unknown user is refused (PT404: PostgREST answers 404)');
select ok(
  (select count(*) from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000b') > 0,
  'a super admin reads another user''s ledger rows');
select is(
  public.recompute_drops_balance('22222222-0000-4000-8000-00000000000b'),
  (select sum(amount)::integer from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000b'),
  'a super admin may recompute a balance');
reset role;

-- The service role.
set local role service_role;
select set_config('request.jwt.claims', json_build_object('role', 'service_role')::text, true);
select is(
  (public.admin_adjust_drops('22222222-0000-4000-8000-00000000000b', 1, 'service grant', 'webhook')).source,
  'webhook',
  'the service role may adjust drops');
reset role;
select set_config('request.jwt.claims', '', true);

select is(
  (select count(*)::integer from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000b'
      and reason in ('Support: failed purchase', 'service grant')),
  2,
  'refused calls wrote nothing; the two allowed adjustments are in the ledger');

-- Anonymous callers.
set local role anon;
select set_config('request.jwt.claims', json_build_object('role', 'anon')::text, true);
select throws_ok($$select * from public.drops_transactions$$, '42501', 'permission denied for table drops_transactions',
  'anon cannot read the ledger');
select throws_ok($$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000a', 1, 'anon')$$, '42501', null,
  'anon cannot call admin_adjust_drops');
reset role;
select set_config('request.jwt.claims', '', true);

-- ---------------------------------------------------------------------------------------
-- Recomputation and private.ledger_balance.
-- ---------------------------------------------------------------------------------------
select is(
  private.ledger_balance('22222222-0000-4000-8000-00000000000a'),
  (select sum(amount)::integer from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000a'),
  'private.ledger_balance is the sum of the user''s deltas');
select is(private.ledger_balance('22222222-0000-4000-8000-0000000000ff'), 0,
  'private.ledger_balance of a user without rows is 0');
select is(
  public.recompute_drops_balance('22222222-0000-4000-8000-00000000000a'),
  private.ledger_balance('22222222-0000-4000-8000-00000000000a'),
  'recompute_drops_balance returns the ledger sum (a no-op when all is well)');
-- Corrupt a balance the only way possible (the recompute flag), then repair it.
set local app.recomputing_balance = 'on';
update public.profiles set drops_balance = 999 where id = '22222222-0000-4000-8000-00000000000a';
set local app.recomputing_balance = 'off';
select is(
  public.recompute_drops_balance('22222222-0000-4000-8000-00000000000a'),
  private.ledger_balance('22222222-0000-4000-8000-00000000000a'),
  'recompute_drops_balance repairs a drifted balance and returns the ledger sum');
select is((select drops_balance from public.profiles where id = '22222222-0000-4000-8000-00000000000a'),
  private.ledger_balance('22222222-0000-4000-8000-00000000000a'),
  'after recomputation the stored balance equals the ledger sum');
select is(current_setting('app.recomputing_balance', true), 'off',
  'recompute_drops_balance switches its bypass flag off again');
select throws_ok(
  $$update public.profiles set drops_balance = 5 where id = '22222222-0000-4000-8000-00000000000a'$$,
  '42501', 'drops_balance changes only through the drops ledger',
  'after a recomputation direct balance writes are refused again');
select throws_ok(
  $$select public.recompute_drops_balance('22222222-0000-4000-8000-0000000000ff')$$,
  'PT404', null,
  'recompute_drops_balance of an unknown user is refused (PT404: PostgREST answers 404)');

-- ---------------------------------------------------------------------------------------
-- Deleting the auth user removes the profile and its ledger rows.
-- ---------------------------------------------------------------------------------------
select lives_ok(
  $$delete from auth.users where id = '22222222-0000-4000-8000-00000000000d'$$,
  'deleting an auth user with ledger rows succeeds');
select is_empty(
  $$select id from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000d'
    union all select null from public.profiles where id = '22222222-0000-4000-8000-00000000000d'$$,
  'the cascade removed the profile and every ledger row of the deleted user');

-- On Supabase the auth server deletes users as supabase_auth_admin: the cascade works for it.
set local role supabase_auth_admin;
select lives_ok(
  $$delete from auth.users where id = '22222222-0000-4000-8000-00000000000b'$$,
  'the auth server (supabase_auth_admin) can delete a user with ledger rows');
reset role;
select is_empty(
  $$select id from public.drops_transactions where user_id = '22222222-0000-4000-8000-00000000000b'$$,
  'that cascade removed the deleted user''s ledger rows too');

select is_empty('select * from pg_temp.balance_mismatches()',
  'at the end every user''s balance still equals the sum of their ledger rows');

-- A too-long reason is refused, but must not be reported as a balance problem.
select throws_ok(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000a', 5, repeat('x', 1001))$$,
  '23514', null,
  'a reason over 1000 characters is refused');
select throws_matching(
  $$select public.admin_adjust_drops('22222222-0000-4000-8000-00000000000a', 5, repeat('x', 1001))$$,
  '^(?!insufficient drops)',
  'a too-long reason (or source) is not reported as "insufficient drops"');

select * from finish();
rollback;
