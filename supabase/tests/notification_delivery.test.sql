-- Notification delivery: who may reach devices, preferences, the outbox and the digest state
-- (a matrix per role), a token moving between accounts, the outbox written with the
-- notification, a reminder's moment, and quiet hours.
begin;
create extension if not exists pgtap with schema extensions;
grant execute on all functions in schema extensions to anon, authenticated;

select plan(19);

insert into auth.users (id, email) values
  ('e2400000-0000-4000-8000-000000000001', 'pgtap-push-owner@example.test'),
  ('e2400000-0000-4000-8000-000000000002', 'pgtap-push-other@example.test');

create function pg_temp.act_as(who text) returns void
language sql as $$
  select set_config('request.jwt.claims', json_build_object('sub', 'e2400000-0000-4000-8000-0000000000' || who,
                    'role', 'authenticated')::text, true)
$$;
grant execute on function pg_temp.act_as(text) to authenticated;

-- ---------------------------------------------------------------------------------------
-- Privileges

select is(
  (select array_agg(format('%s %s %s', r, t, p) order by r, t, p)
     from unnest(array['anon', 'authenticated']) r,
          unnest(array['private.notification_deliveries', 'private.notification_digests']) t,
          unnest(array['SELECT', 'INSERT', 'UPDATE', 'DELETE']) p
    where has_table_privilege(r, t, p)),
  null, 'no client role reaches the outbox or the digest state (unsubscribe tokens)');
select is(
  (select array_agg(format('%s %s', r, f) order by r, f)
     from unnest(array['anon', 'authenticated']) r,
          unnest(array['public.claim_notification_deliveries(integer,integer,text[],timestamptz)',
                       'public.start_notification_deliveries(bigint[],uuid)', 'public.record_notification_deliveries(jsonb)',
                       'public.claim_expo_receipts(integer,integer)', 'public.claim_notification_digests(integer,integer,timestamptz)',
                       'public.record_notification_digests(jsonb,timestamptz)',
                       'public.unsubscribe_notification_digest(uuid)', 'private.prune_notifications(integer,integer,integer)']) f
    where has_function_privilege(r, f, 'EXECUTE')),
  null, 'the sender''s, digest''s and retention''s functions are the service role''s only');
select ok(not has_table_privilege('anon', 'public.notification_devices', 'SELECT')
      and not has_table_privilege('anon', 'public.notification_preferences', 'SELECT'),
  'anonymous callers read no devices and no preferences');
select ok(not has_column_privilege('authenticated', 'public.notification_devices', 'user_id', 'UPDATE')
      and not has_column_privilege('authenticated', 'public.notification_devices', 'address', 'UPDATE'),
  'a device''s owner and address are not changed by update (registering again moves or refreshes it)');

-- ---------------------------------------------------------------------------------------
-- Each user's preferences exist with the defaults

select is(
  (select format('%s %s %s-%s %s %s', p.push_enabled, p.daily_cap, p.quiet_hours_start, p.quiet_hours_end, p.email_digest, p.digest_hour)
     from public.notification_preferences p where p.user_id = 'e2400000-0000-4000-8000-000000000001'),
  't 20 22:00:00-07:00:00 f 8', 'a new user gets the defaults');

-- ---------------------------------------------------------------------------------------
-- Owners and strangers

set local role authenticated;
select pg_temp.act_as('01');
select lives_ok($$select public.register_notification_device('expo', 'ExponentPushToken[pgtap-phone]')$$,
  'the owner registers a phone');
select is((select count(*)::int from public.notification_devices), 1, 'and sees it');
select is((select count(*)::int from public.notification_preferences), 1, 'and sees only their preferences');
select pg_temp.act_as('02');
select is((select count(*)::int from public.notification_devices), 0, 'a stranger sees none of them');
select is((select count(*)::int from public.notification_preferences where user_id = 'e2400000-0000-4000-8000-000000000001'),
  0, 'nor the owner''s preferences');
update public.notification_preferences set daily_cap = 1 where user_id = 'e2400000-0000-4000-8000-000000000001';
delete from public.notification_devices where address = 'ExponentPushToken[pgtap-phone]';
select lives_ok($$select public.register_notification_device('expo', 'ExponentPushToken[pgtap-phone]')$$,
  'the same phone registered by another account...');
select is((select count(*)::int from public.notification_devices), 1, '...moves to it');
select pg_temp.act_as('01');
select is((select count(*)::int from public.notification_devices), 0, 'and leaves the first account');
reset role;
select is((select daily_cap from public.notification_preferences where user_id = 'e2400000-0000-4000-8000-000000000001'),
  20::smallint, 'the stranger''s update changed nothing');

-- ---------------------------------------------------------------------------------------
-- The outbox

create temporary table written (what text, id uuid);
insert into written select 'phone', private.notify('e2400000-0000-4000-8000-000000000002', 'team.member_added', '{}');
insert into written select 'none', private.notify('e2400000-0000-4000-8000-000000000001', 'team.member_added', '{}');
insert into written select 'reminder', private.notify('e2400000-0000-4000-8000-000000000002', 'workout.checkin_reminder',
  '{"date": "2030-01-01", "windowStartsAt": "2030-01-01T18:00:00+00:00"}');
select is((select count(*)::int from private.notification_deliveries where notification_id = (select id from written where what = 'phone')),
  1, 'a notification is queued for each device, in its own transaction');
select is((select count(*)::int from private.notification_deliveries where notification_id = (select id from written where what = 'none')),
  0, 'no device, no row');
select is(
  (select format('%s %s', d.deliver_after, d.expires_at) from private.notification_deliveries d
    where d.notification_id = (select id from written where what = 'reminder')),
  format('%s %s', '2030-01-01 17:30:00+00'::timestamptz, '2030-01-01 18:00:00+00'::timestamptz),
  'a check-in reminder is due 30 minutes before its window and expires when it starts');

-- ---------------------------------------------------------------------------------------
-- Quiet hours, in the user's zone

select is(private.quiet_hours_end(p, 'Europe/Paris', '2030-01-01 22:30:00+00'), '2030-01-02 06:00:00+00'::timestamptz,
  'inside 22:00-07:00 Paris time, a push waits until 07:00 there')
  from public.notification_preferences p where p.user_id = 'e2400000-0000-4000-8000-000000000001';
select is(private.quiet_hours_end(p, 'Europe/Paris', '2030-01-01 12:00:00+00'), null,
  'outside them it goes at once')
  from public.notification_preferences p where p.user_id = 'e2400000-0000-4000-8000-000000000001';

select * from finish();
rollback;
