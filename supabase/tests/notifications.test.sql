-- Notification delivery: who may reach devices, preferences, the outbox and the digest state
-- (a matrix per role), a token moving between accounts, the outbox written with the
-- notification, a reminder's moment, and quiet hours.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(30);

select tests.create_user(to_jsonb(u)) from (values 
  ('e2400000-0000-4000-8000-000000000001', 'pgtap-push-owner@example.test'),
  ('e2400000-0000-4000-8000-000000000002', 'pgtap-push-other@example.test')) u (id, email);

-- ---------------------------------------------------------------------------------------
-- Privileges

select is(tests.client_table_privileges(array['private.notification_deliveries', 'private.notification_digests']),
  null, 'no client role reaches the outbox or the digest state (unsubscribe tokens)');
select is(
  tests.client_function_grants(array[
    'public.claim_notification_deliveries(integer,integer,text[],timestamptz)',
    'public.start_notification_deliveries(bigint[],uuid)', 'public.record_notification_deliveries(jsonb)',
    'public.claim_expo_receipts(integer,integer)', 'public.claim_notification_digests(integer,integer,timestamptz)',
    'public.record_notification_digests(jsonb,timestamptz)',
    'public.unsubscribe_notification_digest(uuid)', 'private.prune_notifications(integer,integer,integer)']),
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
select tests.authenticate_as('e2400000-0000-4000-8000-000000000001');
select lives_ok($$select public.register_notification_device('expo', 'ExponentPushToken[pgtap-phone]')$$,
  'the owner registers a phone');
select is((select count(*)::int from public.notification_devices), 1, 'and sees it');
select is((select count(*)::int from public.notification_preferences), 1, 'and sees only their preferences');
select tests.authenticate_as('e2400000-0000-4000-8000-000000000002');
select is((select count(*)::int from public.notification_devices), 0, 'a stranger sees none of them');
select is((select count(*)::int from public.notification_preferences where user_id = 'e2400000-0000-4000-8000-000000000001'),
  0, 'nor the owner''s preferences');
update public.notification_preferences set daily_cap = 1 where user_id = 'e2400000-0000-4000-8000-000000000001';
delete from public.notification_devices where address = 'ExponentPushToken[pgtap-phone]';
select lives_ok($$select public.register_notification_device('expo', 'ExponentPushToken[pgtap-phone]')$$,
  'the same phone registered by another account...');
select is((select count(*)::int from public.notification_devices), 1, '...moves to it');
select tests.authenticate_as('e2400000-0000-4000-8000-000000000001');
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

-- ---------------------------------------------------------------------------------------
-- Web Push endpoints: what the database refuses of a client's choice (the allowlist of push
-- services is the api's, checked at registration and before each send)

select is(
  (select array_agg(a order by a) from unnest(array[
     'https://fcm.googleapis.com/fcm/send/abc', 'https://web.push.apple.com/QGx', 'https://push.example.net/x',
     'https://fcm.googleapis.com:443/wp/abc']) a
    where private.web_push_endpoint_problem(a) is not null),
  null, 'https endpoints on host names are accepted');
set local app.web_push_allow_loopback = 'off';
select is(
  (select array_agg(a order by a) from unnest(array[
     'http://127.0.0.1:5555/push/x', 'https://localhost/x', 'https://127.0.0.1/x', 'https://[::1]/x', 'https://10.0.0.1/x',
     'https://169.254.169.254/latest/meta-data', 'https://2130706433/x', 'https://0x7f.0x1/x', 'https://metadata/x',
     'https://push.corp.internal/x', 'https://printer.local/x', 'http://fcm.googleapis.com/fcm/send/x',
     'https://fcm.googleapis.com:8443/x', 'https://me@fcm.googleapis.com/x', 'ftp://fcm.googleapis.com/x']) a
    where private.web_push_endpoint_problem(a) is null),
  null, 'without the local stack''s setting: no loopback, IP literal, local name, http, port, credentials');
set local role authenticated;
select tests.authenticate_as('e2400000-0000-4000-8000-000000000001');
select throws_ok(
  $$insert into public.notification_devices (kind, address, key_p256dh, key_auth)
    values ('web_push', 'https://169.254.169.254/latest', repeat('A', 87), repeat('B', 22))$$,
  '23514', 'address: must name a push service by its host name (no IP address, no local name)',
  'a PostgREST insert of an IP endpoint is refused, naming the field');
select throws_ok(
  $$select public.register_notification_device('web_push', 'http://127.0.0.1:5555/push/x', repeat('A', 87), repeat('B', 22))$$,
  '23514', null, 'and so is loopback through the RPC');
reset role;
set local app.web_push_allow_loopback = 'on';
select is(private.web_push_endpoint_problem('http://127.0.0.1:5555/push/x'), null,
  'the local stacks (sql/local) accept loopback, for the fake push service');

-- ---------------------------------------------------------------------------------------
-- Nothing is queued for a deactivated profile or an account being deleted

insert into public.notification_devices (user_id, kind, address)
  values ('e2400000-0000-4000-8000-000000000001', 'expo', 'ExponentPushToken[pgtap-owner]');
update public.profiles set is_active = false where id = 'e2400000-0000-4000-8000-000000000001';
insert into written select 'inactive', private.notify('e2400000-0000-4000-8000-000000000001', 'team.member_added', '{"n": 1}');
select is((select count(*)::int from private.notification_deliveries where notification_id = (select id from written where what = 'inactive')),
  0, 'a deactivated profile''s notification is not queued');
update public.profiles set is_active = true where id = 'e2400000-0000-4000-8000-000000000001';
insert into private.account_deletions (user_id, requested_via) values ('e2400000-0000-4000-8000-000000000001', 'support');
insert into written select 'deleting', private.notify('e2400000-0000-4000-8000-000000000001', 'team.member_added', '{"n": 2}');
select is((select count(*)::int from private.notification_deliveries where notification_id = (select id from written where what = 'deleting')),
  0, 'nor that of an account being deleted');
delete from private.account_deletions where user_id = 'e2400000-0000-4000-8000-000000000001';
insert into written select 'live', private.notify('e2400000-0000-4000-8000-000000000001', 'team.member_added', '{"n": 3}');
select is((select count(*)::int from private.notification_deliveries where notification_id = (select id from written where what = 'live')),
  1, 'a live account''s is');

-- ---------------------------------------------------------------------------------------
-- Sessions: the last one ending forgets the devices

insert into auth.sessions (id, user_id) values
  ('e2400000-0000-4000-8000-0000000000a1', 'e2400000-0000-4000-8000-000000000001'),
  ('e2400000-0000-4000-8000-0000000000a2', 'e2400000-0000-4000-8000-000000000001');
delete from auth.sessions where id = 'e2400000-0000-4000-8000-0000000000a1';
select is((select count(*)::int from public.notification_devices where user_id = 'e2400000-0000-4000-8000-000000000001'),
  1, 'a sign-out with another session left keeps the devices');
delete from auth.sessions where user_id = 'e2400000-0000-4000-8000-000000000001';
select is((select count(*)::int from public.notification_devices where user_id = 'e2400000-0000-4000-8000-000000000001'),
  0, 'signing out everywhere (every session gone) forgets them');

select ok(private.notification_time_sensitive('workout.baton_pass') and private.notification_time_sensitive('workout.checkin_reminder')
      and not private.notification_time_sensitive('workout.battle_update'),
  'the baton pass and the check-in reminder are the time-sensitive types');

select * from finish();
rollback;
