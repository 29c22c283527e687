-- Benchmark fixture for encouragement drops: 100,000 users and 1,000,000 sent
-- drops over the last 30 days. 900,000 are already judged (30 % of them successful); the
-- newest 100,000 were sent 25 to 48 hours ago and are due for engagement processing; half
-- of their recipients wrote a journal entry three hours after receipt. Loaded in bulk with
-- triggers off; badges are then computed by the bench itself (timed).
-- Baselines: accounts are 90 days old except every tenth (3 days: too new to have
-- a baseline); four in five users wrote an entry 20 days ago (history before the baseline
-- period), and every fourth user also wrote once a day in the week before their drops (one
-- entry after a drop is then their usual pace, not more engagement).
-- BENCH_SCALE=k (the setting bench.scale) multiplies users, drops and due drops by k.
begin;
set local session_replication_role = replica;
create temporary table bench_enc_scale on commit drop as
  select coalesce(nullif(current_setting('bench.scale', true), '')::integer, 1) * 100000 as users;

create temporary table bench_enc_users on commit drop as
  select g as n, ('e2000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid as id
    from generate_series(1, (select users from bench_enc_scale)) g;

insert into auth.users (id, email) select id, 'bench-enc-' || n || '@bench.local' from bench_enc_users;
insert into public.profiles (id, full_name, avatar_url, created_at)
select id, 'Encourager ' || n, 'https://example.test/a/' || n || '.png',
       now() - case when n % 10 = 0 then interval '3 days' else interval '90 days' end
  from bench_enc_users;

create temporary table bench_enc_drops on commit drop as
  select g,
         1 + (g * 7919) % u as s,
         1 + ((g * 104729 + 13) % (u - 1) + (g * 7919) % u + 1) % u as r,
         case when g <= u then now() - interval '25 hours' - (g % 1380) * interval '1 minute'
              else now() - interval '2 days' - (g % 28) * interval '1 day' - (g % 1440) * interval '1 minute' end as sent
    from (select users::bigint as u from bench_enc_scale) k, generate_series(1::bigint, 10 * k.u) g;

insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, content, is_custom, date_sent, sent_day,
                                            engaged_at, bonus_drops_awarded, read_at)
select su.id, ru.id, 'encouragement', 'Keep going #' || d.g, d.g % 3 = 0, d.sent, (d.sent at time zone 'UTC')::date,
       case when d.g > k.users and d.g % 10 < 3 then d.sent + interval '2 hours' end,
       case when d.g > k.users and d.g % 10 < 3 then 2 else 0 end,
       case when d.g % 2 = 0 then d.sent + interval '1 hour' end
  from bench_enc_drops d
  cross join bench_enc_scale k
  join bench_enc_users su on su.n = d.s
  join bench_enc_users ru on ru.n = d.r;

-- History: an entry 20 days ago (four in five users); a daily entry 2 to 8 days ago (every fourth).
insert into public.journal_entries (user_id, title, created_at)
select id, 'bench history', now() - interval '20 days' - (n % 24) * interval '1 hour' from bench_enc_users where n % 5 <> 1;
insert into public.journal_entries (user_id, title, created_at)
select u.id, 'bench daily', now() - interval '2 days' - d * interval '1 day' - (u.n % 24) * interval '1 hour'
  from bench_enc_users u cross join generate_series(0, 6) d where u.n % 4 = 0;

-- Half of the due drops' recipients engage: an entry three hours after receipt.
insert into public.journal_entries (user_id, title, created_at)
select ru.id, 'bench entry', d.sent + interval '3 hours'
  from bench_enc_drops d join bench_enc_users ru on ru.n = d.r
 where d.g <= (select users from bench_enc_scale) and d.g % 2 = 0;
-- The due drops: the first `users` of the series, sent 25 to 48 hours ago (the judged ones 48
-- hours or more, now() being this transaction's).
create temporary table bench_enc_due as
select d.id from public.encouragement_sent_drops d where d.date_sent > now() - interval '48 hours';
commit;
-- Sending freezes each drop's recipient baseline, as it was sent, and queues the drop for
-- engagement processing (a trigger, off while loading): the due ones.
select private.freeze_engagement_baselines(array(select id from bench_enc_due));
select private.queue_unjudged_drops(array(select id from bench_enc_due));
drop table bench_enc_due;
analyze public.encouragement_sent_drops;
analyze public.journal_entries;
analyze private.encouragement_drop_baselines;
analyze private.encouragement_unjudged_drops;
