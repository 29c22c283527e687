-- Retention: each append-only table loses only rows past its keep, in bounded chunks, and a purge
-- changes no monthly figure, no badge and no balance (the ledger's sum); guards still refuse
-- every other delete; only trusted callers run it; the schedule.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(30);

-- A sends drops to B; A has AI usage, plays, impersonation writes; webhook events.
select tests.create_user(to_jsonb(u)) from (values 
  ('52000000-0000-4000-8000-00000000000a', 'pgtap-retention-a@example.test'),
  ('52000000-0000-4000-8000-00000000000b', 'pgtap-retention-b@example.test')) u (id, email);

-- Small chunks, so the job takes several runs.
update private.retention_policies set chunk_rows = 100;

-- AI usage: 150 rows 500 days ago, 3 rows 10 days ago (the insert trigger prices them and adds
-- them to the monthly sums).
insert into public.ai_usage (user_id, usage_type, model, input_tokens, output_tokens, created_at)
select '52000000-0000-4000-8000-00000000000a', 'tone_analysis', 'gpt-4o-mini', 1000 + g, 100, now() - interval '500 days' - g * interval '1 minute'
  from generate_series(1, 150) g;
insert into public.ai_usage (user_id, usage_type, model, input_tokens, output_tokens, created_at)
select '52000000-0000-4000-8000-00000000000a', 'tone_analysis', 'gpt-4o-mini', 1000, 100, now() - interval '10 days' - g * interval '1 minute'
  from generate_series(1, 3) g;
create temp table months_before as
  select month, usage_type, calls, input_tokens, output_tokens, image_count, cost_usd
    from public.ai_usage_monthly where user_id = '52000000-0000-4000-8000-00000000000a';

-- Sent drops: 120 judged 400 days ago (every third successful), one unjudged that old, 2 recent.
insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, content, date_sent, sent_day,
                                            bonus_drops_awarded)
select '52000000-0000-4000-8000-00000000000a', '52000000-0000-4000-8000-00000000000b', 'encouragement', 'old ' || g,
       now() - interval '400 days' - g * interval '1 hour', (now() - interval '400 days' - g * interval '1 hour')::date,
       case when g % 3 = 0 then 2 else 0 end
  from generate_series(1, 120) g;
insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, content, date_sent, sent_day)
values ('52000000-0000-4000-8000-00000000000a', '52000000-0000-4000-8000-00000000000b', 'encouragement', 'old unjudged',
        now() - interval '400 days', (now() - interval '400 days')::date),
       ('52000000-0000-4000-8000-00000000000a', '52000000-0000-4000-8000-00000000000b', 'encouragement', 'recent 1',
        now() - interval '2 days', (now() - interval '2 days')::date),
       ('52000000-0000-4000-8000-00000000000a', '52000000-0000-4000-8000-00000000000b', 'encouragement', 'recent 2',
        now() - interval '1 day', (now() - interval '1 day')::date);
-- Judged (out of the engagement queue): all but 'old unjudged' and 'recent 2'.
delete from private.encouragement_unjudged_drops q using public.encouragement_sent_drops d
 where q.drop_id = d.id and d.sender_id = '52000000-0000-4000-8000-00000000000a' and d.content not in ('old unjudged', 'recent 2');
select private.recalculate_encouragement_badges(array['52000000-0000-4000-8000-00000000000a'::uuid]);
create temp table badge_before as
  select level, total_sent, engagement_increases, success_rate, bonus_earned from public.encouragement_badges
   where user_id = '52000000-0000-4000-8000-00000000000a';

-- Plays, impersonation writes, webhook events, labs events (kept for ever).
insert into public.music_tracks (id, name, raw) values ('pgtap-retention-track', 'Song', '{}');
-- A monthly partition of plays eight months back, made by hand as the job makes them.
do $$
declare
  m date := (date_trunc('month', now() at time zone 'UTC') - interval '8 months')::date;
begin
  execute format('create table private.%I partition of public.music_plays for values from (%L) to (%L)',
                 'music_plays_y' || to_char(m, 'YYYY') || 'm' || to_char(m, 'MM'),
                 m::timestamp at time zone 'UTC', (m + interval '1 month')::timestamp at time zone 'UTC');
  insert into public.music_plays (user_id, played_at, track_id)
  select '52000000-0000-4000-8000-00000000000a', (m::timestamp at time zone 'UTC') + g * interval '1 hour', 'pgtap-retention-track'
    from generate_series(1, 40) g;
end
$$;
select ok(exists (select 1 from pg_trigger t join pg_class c on c.oid = t.tgrelid
                   where c.relname = 'music_plays_y' || to_char(now() at time zone 'UTC' - interval '8 months', 'YYYY"m"MM')
                     and t.tgname = 'zz_record_impersonated_write'),
  'a new partition carries the impersonation audit trigger (the event trigger)');
select ok(exists (select 1 from pg_trigger t where t.tgrelid = 'private.music_plays_default'::regclass
                     and t.tgname = 'zz_record_impersonated_write'),
  'so does the default partition');
insert into public.music_plays (user_id, played_at, track_id)
select '52000000-0000-4000-8000-00000000000a'::uuid, now() - interval '200 days' - g * interval '3 minutes', 'pgtap-retention-track'
  from generate_series(1, 30) g
union all
select '52000000-0000-4000-8000-00000000000a'::uuid, now() - g * interval '3 minutes', 'pgtap-retention-track' from generate_series(1, 5) g;
insert into public.impersonation_writes (session_id, admin_id, target_id, table_name, operation, created_at)
values (gen_random_uuid(), '52000000-0000-4000-8000-00000000000b', '52000000-0000-4000-8000-00000000000a', 'journal_entries', 'INSERT', now() - interval '800 days'),
       (gen_random_uuid(), '52000000-0000-4000-8000-00000000000b', '52000000-0000-4000-8000-00000000000a', 'journal_entries', 'INSERT', now() - interval '10 days');
insert into private.stripe_events (event_id, event_type, outcome, received_at) values
  ('evt_pgtap_retention_old', 'customer.subscription.updated', 'applied', now() - interval '100 days'),
  ('evt_pgtap_retention_new', 'customer.subscription.updated', 'applied', now() - interval '1 day');
insert into private.email_events (svix_id, event_type, payload, received_at) values
  ('msg_pgtap_retention_old', 'email.delivered', '{}', now() - interval '200 days'),
  ('msg_pgtap_retention_inbound', 'email.received', '{}', now() - interval '200 days'),
  ('msg_pgtap_retention_new', 'email.delivered', '{}', now() - interval '1 day');
insert into private.inbound_emails (email_id, svix_id, from_address, received_at)
values ('pgtap-retention-mail', 'msg_pgtap_retention_inbound', 'someone@example.test', now() - interval '200 days');

create temp table ledger_before as
  select p.id, p.drops_balance from public.profiles p where p.id::text like '52000000-%';

-- ---------------------------------------------------------------------------------------
-- The guards still refuse deletes outside a purge.
-- ---------------------------------------------------------------------------------------
select throws_ok($$delete from public.ai_usage where user_id = '52000000-0000-4000-8000-00000000000a'$$,
  '42501', null, 'ai_usage stays append-only outside a purge');
select throws_ok($$delete from public.impersonation_writes where target_id = '52000000-0000-4000-8000-00000000000a'$$,
  '42501', null, 'impersonation_writes stays immutable outside a purge');

-- Only trusted callers run the job.
set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "52000000-0000-4000-8000-00000000000a", "role": "authenticated"}', true);
select throws_ok($$select private.run_retention()$$, '42501', null, 'a user cannot run retention');
reset role;
select set_config('request.jwt.claims', '', true);

-- ---------------------------------------------------------------------------------------
-- Runs: the first deletes one chunk (100 rows) of the big tables and says more is due.
-- ---------------------------------------------------------------------------------------
select is((select (r -> 'deleted' ->> 'public.ai_usage')::int from (select private.run_retention() as r) x), 100,
  'one run deletes at most chunk_rows expired ai_usage rows');
select ok(exists (select 1 from private.job_runs where job = 'retention' and remaining > 0),
  'the run is logged with tables still behind');
do $$
declare
  runs integer := 1;
begin
  while (private.run_retention() ->> 'tables_with_more_due')::int > 0 loop
    runs := runs + 1;
    if runs > 20 then
      raise exception 'retention did not finish';
    end if;
  end loop;
end
$$;

select is((select count(*)::int from public.ai_usage where user_id = '52000000-0000-4000-8000-00000000000a'), 3,
  'ai_usage: the 150 rows past 400 days are gone, the 3 recent ones stay');
select results_eq(
  $$select month, usage_type, calls, input_tokens, output_tokens, image_count, cost_usd
      from public.ai_usage_monthly where user_id = '52000000-0000-4000-8000-00000000000a' order by month$$,
  $$select * from months_before order by month$$,
  'every monthly AI figure is unchanged by the purge');
select is(public.monthly_token_usage('52000000-0000-4000-8000-00000000000a',
            extract(year from now() - interval '500 days')::int, extract(month from now() - interval '500 days')::int) ->> 'calls',
          (select sum(calls)::text from months_before where month = date_trunc('month', (now() - interval '500 days') at time zone 'UTC')::date),
  'the purged month still reports its calls');

select results_eq(
  $$select content from public.encouragement_sent_drops where sender_id = '52000000-0000-4000-8000-00000000000a' order by content$$,
  $$values ('old unjudged'::text), ('recent 1'), ('recent 2')$$,
  'sent drops: judged drops past a year are gone; an unjudged one waits for its run; recent ones stay');
select results_eq(
  $$select total_sent, successes, bonus from private.encouragement_sent_drops_purged where sender_id = '52000000-0000-4000-8000-00000000000a'$$,
  $$values (120::bigint, 40::bigint, 80::bigint)$$,
  'the sender''s purged totals are kept');
select private.recalculate_encouragement_badges(array['52000000-0000-4000-8000-00000000000a'::uuid]);
select results_eq(
  $$select level, total_sent, engagement_increases, success_rate, bonus_earned from public.encouragement_badges
     where user_id = '52000000-0000-4000-8000-00000000000a'$$,
  $$select * from badge_before$$,
  'a full badge recalculation after the purge gives the same badge');

select is((select count(*)::int from public.music_plays where user_id = '52000000-0000-4000-8000-00000000000a'), 5,
  'plays past 180 days are gone (a whole month''s partition and the default partition''s old rows), recent ones stay');
select ok(to_regclass('private.music_plays_y' || to_char(now() at time zone 'UTC' - interval '8 months', 'YYYY"m"MM')) is null,
  'the expired month''s partition was dropped');
select ok(to_regclass('private.music_plays_y' || to_char(now() at time zone 'UTC' + interval '1 month', 'YYYY"m"MM')) is not null,
  'the job made next month''s partition');
select ok(exists (select 1 from pg_trigger t
                   where t.tgrelid = to_regclass('private.music_plays_y' || to_char(now() at time zone 'UTC' + interval '1 month', 'YYYY"m"MM'))
                     and t.tgname = 'zz_record_impersonated_write'),
  'which carries the impersonation audit trigger');
select is_empty(
  $$select c.oid::regclass::text from pg_catalog.pg_inherits i join pg_catalog.pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'public.music_plays'::regclass and not c.relrowsecurity$$,
  'every music_plays partition (the default one, those the job makes) has row-level security on');
select is((select count(*)::int from public.impersonation_writes where target_id = '52000000-0000-4000-8000-00000000000a'), 1,
  'impersonation writes past two years are gone');
select results_eq($$select event_id from private.stripe_events where event_id like 'evt_pgtap_retention%'$$,
  $$values ('evt_pgtap_retention_new'::text)$$, 'Stripe events past 90 days are gone');
select results_eq($$select svix_id from private.email_events where svix_id like 'msg_pgtap_retention%' order by svix_id$$,
  $$values ('msg_pgtap_retention_inbound'::text), ('msg_pgtap_retention_new')$$,
  'e-mail events past 180 days are gone, but the one that brought inbound mail stays with its mail');
select is((select count(*)::int from private.inbound_emails where email_id = 'pgtap-retention-mail'), 1, 'the inbound mail stays');

-- The ledger: no row removed, every balance still its sum.
select results_eq($$select p.id, p.drops_balance from public.profiles p where p.id::text like '52000000-%' order by 1$$,
  $$select * from ledger_before order by 1$$, 'balances are unchanged');
select is_empty(
  $$select p.id from public.profiles p
     where p.drops_balance <> (select coalesce(sum(t.amount), 0) from public.drops_transactions t where t.user_id = p.id)$$,
  'every balance equals the sum of its ledger rows after the purge');

-- A policy with keep null keeps everything; an unknown table is refused.
select is(private.purge_expired('public.labs_activity_events', 100), 0, 'labs activity events are kept (keep null)');
select throws_ok($$select private.purge_expired('public.drops_transactions', 100)$$, '22023', null,
  'the ledger has no retention policy');

-- Configurable: a shorter keep purges the recent AI rows too, the month's sums again unchanged.
update private.retention_policies set keep = interval '1 day' where table_name = 'public.ai_usage';
select is(private.purge_expired('public.ai_usage', 100), 3, 'a keep of one day purges the recent rows too');
select results_eq(
  $$select month, usage_type, calls, cost_usd from public.ai_usage_monthly where user_id = '52000000-0000-4000-8000-00000000000a' order by month$$,
  $$select month, usage_type, calls, cost_usd from months_before order by month$$,
  'and the monthly figures still stand');

-- The schedule.
select results_eq($$select schedule, command from cron.job where jobname = 'retention'$$,
  $$values ('*/10 3-5 * * *'::text, 'select private.run_retention()'::text)$$,
  'the retention job runs every 10 minutes from 03:00 to 05:59 UTC');
select is((select count(*)::int from private.retention_policies where keep is not null), 6,
  'six tables have a keep; two are kept for ever (labs events; bonus pairs, pruned by engagement runs)');

select * from finish();
rollback;
