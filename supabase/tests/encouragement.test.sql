-- Encouragement drops: the send function (allowance, custom cap, the checks, nothing written
-- on refusal), engagement judging and the bonus-once rules, badge recalculation across every
-- level boundary, milestones, who may read what, and the schedules.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(139);

-- A drop is judged once it has left the engagement queue.
create function pg_temp.judged(drop_id uuid) returns boolean language sql as $$
  select not exists (select 1 from private.encouragement_unjudged_drops q where q.drop_id = judged.drop_id) $$;

-- S: sender, R: recipient, T: another recipient, X: stranger, I: inactive, A: AI user,
-- B: badge climber, Z: super admin.
select tests.create_user(to_jsonb(u)) from (values 
  ('e1000000-0000-4000-8000-00000000000a', 'pgtap-enc-sender@example.test'),
  ('e1000000-0000-4000-8000-00000000000b', 'pgtap-enc-recipient@example.test'),
  ('e1000000-0000-4000-8000-00000000000c', 'pgtap-enc-other@example.test'),
  ('e1000000-0000-4000-8000-00000000000d', 'pgtap-enc-stranger@example.test'),
  ('e1000000-0000-4000-8000-00000000000e', 'pgtap-enc-inactive@example.test'),
  ('e1000000-0000-4000-8000-00000000000f', 'pgtap-enc-ai@example.test'),
  ('e1000000-0000-4000-8000-000000000010', 'pgtap-enc-climber@example.test'),
  ('e1000000-0000-4000-8000-000000000011', 'pgtap-enc-admin@example.test')) u (id, email);
update public.profiles set is_active = false where id = 'e1000000-0000-4000-8000-00000000000e';
update public.profiles set is_ai = true where id = 'e1000000-0000-4000-8000-00000000000f';
update public.profiles set role = 'super_admin' where id = 'e1000000-0000-4000-8000-000000000011';

insert into public.encouragement_templates (id, type, title, content, is_approved) values
  ('e1000000-0000-4000-8000-0000000000f1', 'encouragement', 'You got this', 'Keep going!', true),
  ('e1000000-0000-4000-8000-0000000000f2', 'encouragement', 'Draft', 'Not yet approved', false),
  ('e1000000-0000-4000-8000-0000000000f3', 'science_tidbit', 'Octopus', 'Octopuses have three hearts.', true);
-- An entry only its owner (the stranger) can see, and a public one.
insert into public.journal_entries (id, user_id, title) values
  ('e1000000-0000-4000-8000-0000000000e1', 'e1000000-0000-4000-8000-00000000000d', 'private entry');
insert into public.journal_entries (id, user_id, title, metadata_visibility, content_visibility) values
  ('e1000000-0000-4000-8000-0000000000e2', 'e1000000-0000-4000-8000-00000000000d', 'public entry', 'public', 'public');

-- ---------------------------------------------------------------------------------------
-- Configuration and definitions
-- ---------------------------------------------------------------------------------------
select results_eq(
  $$select daily_allowance, bonus_per_engagement, engagement_window_hours, max_custom_per_day from public.encouragement_config$$,
  $$values (5, 2, 24, 3)$$, 'the configuration has SPEC''s defaults');
select results_eq(
  $$select level, name, min_successful_drops, color from public.encouragement_badge_definitions order by level$$,
  $$values (1, 'Seedling', 0, '#90EE90'), (2, 'Sprout', 6, '#7CFC00'), (3, 'Bloom', 21, '#FF69B4'),
           (4, 'Pollinator', 51, '#FFD700'), (5, 'Hive Keeper', 151, '#FF8C00'), (6, 'Queen Bee', 501, '#9370DB'),
           (7, 'Hive Legend', 1501, '#FFD700')$$,
  'the seven badge definitions of SPEC');
select results_eq(
  $$select full_name, is_ai from public.profiles where id = private.assistant_user_id()$$,
  $$values ('Hive Assistant'::text, false)$$, 'the assistant system user exists with a name');
select isnt((select avatar_url from public.profiles where id = private.assistant_user_id()), null, 'the assistant has an avatar');

-- ---------------------------------------------------------------------------------------
-- Sending, as S
-- ---------------------------------------------------------------------------------------
set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "e1000000-0000-4000-8000-00000000000a", "role": "authenticated"}', true);

select results_eq($$select public.my_encouragement_drops() - 'day'$$,
  $$values ('{"daily_allowance": 5, "drops_used": 0, "bonus_drops_earned": 0, "total_available": 5, "custom_used": 0, "custom_remaining": 3}'::jsonb)$$,
  'before the first send: the configured allowance, nothing used');
select is((public.my_encouragement_drops() ->> 'day')::date, (now() at time zone 'UTC')::date, 'the record is for the UTC day');

select throws_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000a', 'encouragement', null, 'hi me')$$,
  '22023', 'recipient_id: you cannot send a drop to yourself', 'no drop to oneself');
select throws_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000e', 'encouragement', null, 'hi')$$,
  'PT404', null, 'no drop to an inactive user');
select throws_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-0000000000ff', 'encouragement', null, 'hi')$$,
  'PT404', null, 'no drop to an unknown user');
select throws_ok($$select public.send_encouragement_drop(private.assistant_user_id(), 'encouragement', null, 'hi')$$,
  'PT404', null, 'no drop to the assistant');
select throws_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000b', 'encouragement', 'e1000000-0000-4000-8000-0000000000f2')$$,
  'PT404', null, 'an unapproved template is refused');
select throws_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000b', 'media', 'e1000000-0000-4000-8000-0000000000f1')$$,
  'PT404', null, 'a template of another type is refused');
select throws_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000b', 'encouragement', 'e1000000-0000-4000-8000-0000000000f1', 'both')$$,
  '22023', 'template_id, content: give exactly one of them', 'a template and content together are refused');
select throws_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000b', 'encouragement')$$,
  '22023', 'template_id, content: give exactly one of them', 'neither a template nor content is refused');
select throws_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000b', 'gift', null, 'hi')$$,
  '22023', 'drop_type: must be one of encouragement, media, science_tidbit', 'an unknown drop type is refused');
select throws_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000b', 'encouragement', null, 'hi', 'e1000000-0000-4000-8000-0000000000e1')$$,
  'PT404', null, 'an entry the sender cannot see is refused');
select is((select count(*)::integer from public.encouragement_sent_drops where sender_id = 'e1000000-0000-4000-8000-00000000000a'), 0,
  'refused sends wrote no drop');
select is((public.my_encouragement_drops() ->> 'drops_used')::integer, 0, 'refused sends used no allowance');

select lives_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000b', 'encouragement', null, 'custom one', 'e1000000-0000-4000-8000-0000000000e2')$$,
  'a custom drop about a public entry is sent');
select lives_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000b', 'encouragement', null, 'custom two')$$, 'custom drop 2');
select lives_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000c', 'encouragement', null, 'custom three')$$, 'custom drop 3');
select throws_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000b', 'encouragement', null, 'custom four')$$,
  'PT429', 'Custom drop limit reached: 3 custom drops per day; send a template instead', 'the fourth custom drop hits the custom cap');
select lives_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000b', 'encouragement', 'e1000000-0000-4000-8000-0000000000f1')$$,
  'a template drop still goes out after the custom cap');
select lives_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000c', 'science_tidbit', 'e1000000-0000-4000-8000-0000000000f3')$$,
  'the fifth drop of the allowance');
select throws_ok($$select public.send_encouragement_drop('e1000000-0000-4000-8000-00000000000b', 'encouragement', 'e1000000-0000-4000-8000-0000000000f1')$$,
  'PT429', 'No encouragement drops left today: all 5 used (allowance 5 + bonus 0); more tomorrow (UTC)',
  'the sixth drop exceeds the allowance');
select results_eq($$select public.my_encouragement_drops() - 'day'$$,
  $$values ('{"daily_allowance": 5, "drops_used": 5, "bonus_drops_earned": 0, "total_available": 0, "custom_used": 3, "custom_remaining": 0}'::jsonb)$$,
  'the record: 5 used, 3 of them custom, none left');
select is((select count(*)::integer from public.encouragement_sent_drops where sender_id = 'e1000000-0000-4000-8000-00000000000a'), 5,
  'exactly five drops were written');
select results_eq(
  $$select content, is_custom, entry_id from public.encouragement_sent_drops
     where sender_id = 'e1000000-0000-4000-8000-00000000000a' and template_id = 'e1000000-0000-4000-8000-0000000000f1'$$,
  $$values ('Keep going!'::text, false, null::uuid)$$, 'a template drop carries the template''s content');
select results_eq($$select total_sent, level from public.encouragement_badges where user_id = 'e1000000-0000-4000-8000-00000000000a'$$,
  $$values (5, 1)$$, 'the sender''s badge was recalculated after each send');
select results_eq($$select level from public.encouragement_badge_milestones where user_id = 'e1000000-0000-4000-8000-00000000000a'$$,
  $$values (1)$$, 'the first send reached Seedling: one milestone');
-- Reads as the sender.
select is((select count(*)::integer from public.encouragement_daily_drops), 1, 'a user reads only their own daily record');
select throws_ok($$update public.encouragement_daily_drops set drops_used = 0$$, '42501', null, 'a user cannot reset their record');
select throws_ok($$insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, content)
                   values ('e1000000-0000-4000-8000-00000000000a', 'e1000000-0000-4000-8000-00000000000b', 'encouragement', 'x')$$,
  '42501', null, 'a user cannot write drops directly (only through the send function)');
select throws_ok($$select public.process_encouragement_engagement()$$, '42501', null, 'a user cannot run engagement processing');
select throws_ok($$select public.claim_ai_job_chunk('analyze-notes', 5)$$, '42501', null, 'a user cannot claim AI job chunks');
select throws_ok($$select public.send_assistant_drop('e1000000-0000-4000-8000-00000000000b', 'hi')$$, '42501', null,
  'a user cannot send assistant drops');
select throws_ok($$select public.update_encouragement_config('{"daily_allowance": 50}')$$, '42501', null,
  'a user cannot change the configuration');
select throws_ok($$insert into public.encouragement_templates (type, title, content) values ('encouragement', 't', 'c')$$,
  '42501', null, 'a user cannot create templates');
select results_eq($$select title from public.encouragement_templates where id::text like 'e1000000-%' order by title$$,
  $$values ('Octopus'::text), ('You got this')$$, 'a user sees approved templates only');
select is((select usage_count from public.encouragement_templates where id = 'e1000000-0000-4000-8000-0000000000f1'), 1,
  'the template''s usage count went up');
reset role;

-- The recipient and a stranger.
set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "e1000000-0000-4000-8000-00000000000b", "role": "authenticated"}', true);
select is((select count(*)::integer from public.encouragement_sent_drops), 3, 'the recipient reads the three drops sent to them');
select is((select count(*)::integer from public.received_encouragement_drops()), 3, 'received_encouragement_drops lists them');
select is((select count(*)::integer from public.received_encouragement_drops(true)), 3, 'all three are unread');
select lives_ok($$select public.mark_encouragement_drop_read((select id from public.encouragement_sent_drops order by date_sent, id limit 1))$$,
  'the recipient marks one read');
select is((select count(*)::integer from public.received_encouragement_drops(true)), 2, 'two remain unread');
select is((select count(*)::integer from public.notifications where type = 'encouragement.drop_received'), 3,
  'the recipient was notified of each drop');
select results_eq($$select total_sent from public.encouragement_badges where user_id = 'e1000000-0000-4000-8000-00000000000a'$$,
  $$values (5)$$, 'badges are readable by every signed-in user');
select is((select count(*)::integer from public.encouragement_badge_milestones where user_id = 'e1000000-0000-4000-8000-00000000000a'), 1,
  'milestones are readable by every signed-in user');
select is((select count(*)::integer from public.encouragement_daily_drops where user_id = 'e1000000-0000-4000-8000-00000000000a'), 0,
  'another user''s daily record is not readable');
reset role;
set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "e1000000-0000-4000-8000-00000000000d", "role": "authenticated"}', true);
select is((select count(*)::integer from public.encouragement_sent_drops), 0, 'a stranger reads no drops');
select throws_ok($$select public.mark_encouragement_drop_read((select id from public.encouragement_sent_drops limit 1))$$,
  'PT404', null, 'a stranger cannot mark a drop read');
select is((select count(*)::integer from public.encouragement_config_changes), 0, 'a user reads no configuration changes');
select is((select count(*)::integer from public.encouragement_config), 1, 'a user reads the configuration');
reset role;
set local role anon;
select set_config('request.jwt.claims', '{"role": "anon"}', true);
select throws_ok($$select count(*) from public.encouragement_badges$$, '42501', null, 'anonymous callers read no badges');
select throws_ok($$select count(*) from public.encouragement_templates$$, '42501', null, 'anonymous callers read no templates');
select throws_ok($$select public.encouragement_leaderboard()$$, '42501', null, 'anonymous callers get no leaderboard');
reset role;

-- ---------------------------------------------------------------------------------------
-- Configuration changes (super admin)
-- ---------------------------------------------------------------------------------------
set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "e1000000-0000-4000-8000-000000000011", "role": "authenticated"}', true);
select throws_ok($$select public.update_encouragement_config('{"daily_allowance": 0}')$$, '22023',
  'daily_allowance: must be an integer between 1 and 100', 'zero is refused');
select throws_ok($$select public.update_encouragement_config('{"engagement_window_hours": 2.5}')$$, '22023',
  'engagement_window_hours: must be an integer between 1 and 168', 'a fraction is refused');
select throws_ok($$select public.update_encouragement_config('{"colour": 1}')$$, '22023', 'colour: not an accepted field',
  'an unknown key is refused');
select results_eq($$select daily_allowance, max_custom_per_day from public.update_encouragement_config('{"daily_allowance": 7, "max_custom_per_day": 4}')$$,
  $$values (7, 4)$$, 'a super admin changes two values');
select results_eq($$select changed_by, old_values ->> 'daily_allowance', new_values ->> 'daily_allowance' from public.encouragement_config_changes
                     where changed_by = 'e1000000-0000-4000-8000-000000000011'$$,
  $$values ('e1000000-0000-4000-8000-000000000011'::uuid, '5', '7')$$, 'the change is recorded with who and the values');
select lives_ok($$select public.update_encouragement_config('{"daily_allowance": 5, "max_custom_per_day": 3}')$$, 'and changed back');
reset role;

-- ---------------------------------------------------------------------------------------
-- Engagement: drops sent earlier (written directly), then one processing run. R, T and A are
-- established recipients (accounts 60 days old; R and A wrote three weeks ago, before the
-- 7-day baseline period), so one entry after a drop is more than their baseline.
--   d1 S->R 30 h ago, R wrote an entry 2 h later            engaged, bonus 2
--   d2 S->R 29 h ago, same UTC day as d1 (forced)           engaged, no bonus (pair already paid that day)
--   d3 S->T 30 h ago, T did nothing                         judged, not engaged
--   d4 S->A (AI user) 30 h ago, A wrote an entry            engaged, no bonus
--   d5 S->T 2 h ago, no engagement yet, window open         not judged yet
--   d6 S->R 50 h ago (another day), R checked in on a goal  engaged, bonus 2
--   d7 assistant->R 30 h ago, R wrote                       no bonus
--   d8 R->R (oneself, written directly) 30 h ago            no bonus
-- ---------------------------------------------------------------------------------------
create temp table at_ as select now() as t0, ((now() - interval '30 hours') at time zone 'UTC')::date as day1;
grant select on at_ to public;
-- Account ages are immutable for clients (guard trigger): set here with triggers off.
set local session_replication_role = replica;
update public.profiles set created_at = now() - interval '60 days'
 where id in ('e1000000-0000-4000-8000-00000000000b', 'e1000000-0000-4000-8000-00000000000c', 'e1000000-0000-4000-8000-00000000000f');
set local session_replication_role = origin;
insert into public.journal_entries (user_id, title, created_at) values
  ('e1000000-0000-4000-8000-00000000000b', 'three weeks ago', now() - interval '21 days'),
  ('e1000000-0000-4000-8000-00000000000f', 'three weeks ago', now() - interval '21 days');
-- The drops, written after the history their baselines are frozen from.
insert into public.encouragement_sent_drops (id, sender_id, recipient_id, drop_type, content, date_sent, sent_day, is_system) values
  ('e1000000-0000-4000-8000-0000000000d1', 'e1000000-0000-4000-8000-00000000000a', 'e1000000-0000-4000-8000-00000000000b', 'encouragement', 'd1', now() - interval '30 hours', (select day1 from at_), false),
  ('e1000000-0000-4000-8000-0000000000d2', 'e1000000-0000-4000-8000-00000000000a', 'e1000000-0000-4000-8000-00000000000b', 'encouragement', 'd2', now() - interval '29 hours', (select day1 from at_), false),
  ('e1000000-0000-4000-8000-0000000000d3', 'e1000000-0000-4000-8000-00000000000a', 'e1000000-0000-4000-8000-00000000000c', 'encouragement', 'd3', now() - interval '30 hours', (select day1 from at_), false),
  ('e1000000-0000-4000-8000-0000000000d4', 'e1000000-0000-4000-8000-00000000000a', 'e1000000-0000-4000-8000-00000000000f', 'encouragement', 'd4', now() - interval '30 hours', (select day1 from at_), false),
  ('e1000000-0000-4000-8000-0000000000d5', 'e1000000-0000-4000-8000-00000000000a', 'e1000000-0000-4000-8000-00000000000c', 'encouragement', 'd5', now() - interval '2 hours', (select day1 from at_) + 1, false),
  ('e1000000-0000-4000-8000-0000000000d6', 'e1000000-0000-4000-8000-00000000000a', 'e1000000-0000-4000-8000-00000000000b', 'encouragement', 'd6', now() - interval '50 hours', (select day1 from at_) - 1, false),
  ('e1000000-0000-4000-8000-0000000000d7', private.assistant_user_id(), 'e1000000-0000-4000-8000-00000000000b', 'encouragement', 'd7', now() - interval '30 hours', (select day1 from at_), true),
  ('e1000000-0000-4000-8000-0000000000d8', 'e1000000-0000-4000-8000-00000000000b', 'e1000000-0000-4000-8000-00000000000b', 'encouragement', 'd8', now() - interval '30 hours', (select day1 from at_), false);
-- The sends above (today) are judged too; keep them out of this scenario.
delete from private.encouragement_unjudged_drops q using public.encouragement_sent_drops d
 where q.drop_id = d.id and d.sender_id = 'e1000000-0000-4000-8000-00000000000a' and d.content not like 'd_';
insert into public.journal_entries (user_id, title, created_at) values
  ('e1000000-0000-4000-8000-00000000000b', 'after d1', now() - interval '28 hours'),
  ('e1000000-0000-4000-8000-00000000000f', 'ai writes', now() - interval '28 hours');
-- Sends recalculate the sender's badge; these were written directly, so recalculate once.
select private.recalculate_encouragement_badges(array['e1000000-0000-4000-8000-00000000000a'::uuid]);
insert into public.goals (id, user_id, title) values ('e1000000-0000-4000-8000-0000000000a1', 'e1000000-0000-4000-8000-00000000000b', 'g');
insert into public.goal_check_ins (goal_id, user_id, created_at) values
  ('e1000000-0000-4000-8000-0000000000a1', 'e1000000-0000-4000-8000-00000000000b', now() - interval '49 hours');

-- In chunks of one drop (rolled back afterwards): each chunk judges the oldest unjudged drop,
-- says what remains, and the chunks end with the judgement of one run (compared below).
do $$
declare
  r jsonb;
  firsts text := '';
  remainders text := '';
  got text;
begin
  begin
    loop
      r := public.process_encouragement_engagement(1);
      exit when (r ->> 'judged')::int = 0;
      firsts := firsts || (select content from public.encouragement_sent_drops
                             where id::text like 'e1000000-0000-4000-8000-0000000000d%' and pg_temp.judged(id)
                             order by date_sent desc, content desc limit 1) || ' ';
      remainders := remainders || (r ->> 'remaining') || ' ';
    end loop;
    select firsts || '|' || remainders || '|' || string_agg(content || ':' || engaged_at is not null || ':' || bonus_drops_awarded, ' ' order by content)
           || '|' || (select bonus_earned from public.encouragement_daily_drops
                       where user_id = 'e1000000-0000-4000-8000-00000000000a' and day = private.utc_today())
      into got
      from public.encouragement_sent_drops where id::text like 'e1000000-0000-4000-8000-0000000000d%' and pg_temp.judged(id);
    raise exception using errcode = 'P0001', message = got;
  exception when sqlstate 'P0001' then
    got := sqlerrm;
  end;
  perform set_config('test.chunked', got, true);
end
$$;
select is(split_part(current_setting('test.chunked'), '|', 1), 'd6 d1 d3 d4 d7 d8 d2 ',
  'chunks of one judge the oldest unjudged drop first (d6, then the 30-hour-old ones, d2 last)');
select is(split_part(current_setting('test.chunked'), '|', 2), '6 5 4 3 2 1 0 ', 'each chunk says how many due drops remain');
create temp table rows_before_run as
  select id, ctid::text as at from public.encouragement_sent_drops where id::text like 'e1000000-0000-4000-8000-0000000000d%';
select results_eq($$select (r ->> 'judged')::int, (r ->> 'engaged')::int, (r ->> 'bonuses_awarded')::int
                      from (select public.process_encouragement_engagement() as r) x$$,
  $$values (7, 6, 2)$$, 'one run judges 7 drops, 6 engaged, 2 bonuses');
select results_eq(
  $$select d.content, d.ctid::text <> b.at from public.encouragement_sent_drops d join rows_before_run b on b.id = d.id
     where d.content in ('d1', 'd3', 'd5') order by d.content$$,
  $$values ('d1'::text, true), ('d3', false), ('d5', false)$$,
  'judging rewrites only engaged drops: d3 (judged, not engaged) and d5 (still in its window) keep their row version');
select results_eq(
  $$select d.content from private.encouragement_unjudged_drops q join public.encouragement_sent_drops d on d.id = q.drop_id
     where d.id::text like 'e1000000-0000-4000-8000-0000000000d%'$$,
  $$values ('d5'::text)$$, 'the queue keeps only the drop still inside its window');
select is(split_part(current_setting('test.chunked'), '|', 3) || '|' || split_part(current_setting('test.chunked'), '|', 4),
  (select string_agg(content || ':' || engaged_at is not null || ':' || bonus_drops_awarded, ' ' order by content)
     from public.encouragement_sent_drops where id::text like 'e1000000-0000-4000-8000-0000000000d%' and pg_temp.judged(id))
  || '|' || (select bonus_earned from public.encouragement_daily_drops
              where user_id = 'e1000000-0000-4000-8000-00000000000a' and day = private.utc_today()),
  'the chunks judged as the one run: the same drops engaged, the same bonuses, the same capacity');
select results_eq(
  $$select content, pg_temp.judged(id), engaged_at is not null, bonus_drops_awarded from public.encouragement_sent_drops
     where id::text like 'e1000000-0000-4000-8000-0000000000d%' order by content$$,
  $$values ('d1'::text, true, true, 2), ('d2', true, true, 0), ('d3', true, false, 0), ('d4', true, true, 0),
           ('d5', false, false, 0), ('d6', true, true, 2), ('d7', true, true, 0), ('d8', true, true, 0)$$,
  'each drop judged as the rules say');
select results_eq($$select bonus_earned, total_available from public.encouragement_daily_drops
                     where user_id = 'e1000000-0000-4000-8000-00000000000a' and day = private.utc_today()$$,
  $$values (4, 4)$$, 'the bonus raised today''s capacity: 5 + 4 - 5 = 4');
select results_eq($$select engagement_increases, bonus_earned, total_sent, success_rate from public.encouragement_badges
                     where user_id = 'e1000000-0000-4000-8000-00000000000a'$$,
  $$values (2, 4, 11, 18.18::numeric)$$, 'the badge counts 2 successful drops of 11 sent (today''s 5 and the 6 earlier ones)');
create temp table incremental_badge as
  select total_sent, engagement_increases, success_rate, bonus_earned, consecutive_days, level
    from public.encouragement_badges where user_id = 'e1000000-0000-4000-8000-00000000000a';
select private.recalculate_encouragement_badges(array['e1000000-0000-4000-8000-00000000000a'::uuid]);
select results_eq(
  $$select total_sent, engagement_increases, success_rate, bonus_earned, consecutive_days, level
      from public.encouragement_badges where user_id = 'e1000000-0000-4000-8000-00000000000a'$$,
  $$select * from incremental_badge$$,
  'the run''s incremental badge update equals a full recalculation from the drops');
-- The chunked walk over every profile (a lost badge included) gives the same badge. It runs in a
-- subtransaction rolled back afterwards (it would also write the badges of the other senders
-- this file wrote drops for directly, which later tests expect unwritten).
do $$
declare
  cursor_id uuid;
  chunks integer := 0;
  got text;
begin
  begin
    update public.encouragement_badges set total_sent = 0, engagement_increases = 0
     where user_id = 'e1000000-0000-4000-8000-00000000000a';
    loop
      select c.last_id into cursor_id from private.recalculate_encouragement_badges_chunk(cursor_id, 3, null) c;
      chunks := chunks + 1;
      exit when cursor_id is null;
    end loop;
    select chunks || ' ' || row(total_sent, engagement_increases, success_rate, bonus_earned, consecutive_days, level)::text
      into got from public.encouragement_badges where user_id = 'e1000000-0000-4000-8000-00000000000a';
    raise exception using errcode = 'P0001', message = got;
  exception when sqlstate 'P0001' then
    got := sqlerrm;
  end;
  perform set_config('test.walked_badge', got, true);
end
$$;
select ok(split_part(current_setting('test.walked_badge'), ' ', 1)::integer > 1, 'the walk took several chunks');
select is(split_part(current_setting('test.walked_badge'), ' ', 2),
  (select row(total_sent, engagement_increases, success_rate, bonus_earned, consecutive_days, level)::text from incremental_badge),
  'the chunked recalculation of every badge (chunks of 3 users, id order) restores the badge from the drops');
-- The walk visits every sender, badge holder and sender with purged totals, never the other
-- profiles: two walkers over id ranges (split at C), chunks of 2, give exactly the badges of a full
-- recalculation of all of them. Setup, both runs and the comparison in a rolled-back
-- subtransaction: X holds a badge whose drops are gone; I's drops were all purged (no badge yet).
do $$
declare
  cursor_id uuid;
  split constant uuid := 'e1000000-0000-4000-8000-00000000000c';
  full_recalc text;
  walked text;
  got text;
begin
  begin
    insert into public.encouragement_badges (user_id, level, total_sent, engagement_increases)
    values ('e1000000-0000-4000-8000-00000000000d', 1, 5, 1);
    insert into private.encouragement_sent_drops_purged (sender_id, total_sent, successes, bonus, last_day)
    values ('e1000000-0000-4000-8000-00000000000e', 7, 6, 12, private.utc_today() - 10);
    begin
      perform private.recalculate_encouragement_badges(array(
        select d.sender_id from public.encouragement_sent_drops d where d.sender_id is not null
        union select b.user_id from public.encouragement_badges b
        union select r.sender_id from private.encouragement_sent_drops_purged r));
      select string_agg(row(user_id, level, total_sent, engagement_increases, success_rate, bonus_earned, consecutive_days,
                            last_sent_day, progress_to_next)::text, ' ' order by user_id)
        into full_recalc from public.encouragement_badges;
      raise exception using errcode = 'P0001';
    exception when sqlstate 'P0001' then
      null;
    end;
    loop
      select c.last_id into cursor_id from private.recalculate_encouragement_badges_chunk(cursor_id, 2, split) c;
      exit when cursor_id is null;
    end loop;
    cursor_id := split;
    loop
      select c.last_id into cursor_id from private.recalculate_encouragement_badges_chunk(cursor_id, 2, null) c;
      exit when cursor_id is null;
    end loop;
    select string_agg(row(user_id, level, total_sent, engagement_increases, success_rate, bonus_earned, consecutive_days,
                          last_sent_day, progress_to_next)::text, ' ' order by user_id)
      into walked from public.encouragement_badges;
    select concat_ws('|', full_recalc = walked,
             (select total_sent || ' ' || engagement_increases || ' ' || level from public.encouragement_badges
               where user_id = 'e1000000-0000-4000-8000-00000000000d'),
             (select total_sent || ' ' || engagement_increases || ' ' || bonus_earned || ' ' || level from public.encouragement_badges
               where user_id = 'e1000000-0000-4000-8000-00000000000e'),
             (select count(*) from public.encouragement_badges
               where user_id in ('e1000000-0000-4000-8000-000000000011', private.assistant_user_id())),
             (select count(*) from public.encouragement_badges where user_id::text like 'e1000000-%'))
      into got;
    raise exception using errcode = 'P0001', message = got;
  exception when sqlstate 'P0001' then
    got := sqlerrm;
  end;
  perform set_config('test.walk', got, true);
end
$$;
select is(split_part(current_setting('test.walk'), '|', 1), 't',
  'two walkers over id ranges in chunks of 2 write exactly the badges of a full recalculation of every sender, holder and purged sender');
select is(split_part(current_setting('test.walk'), '|', 2), '0 0 1',
  'a badge whose drops are gone is walked too: recalculated to nothing sent (its level kept)');
select is(split_part(current_setting('test.walk'), '|', 3), '7 6 12 2',
  'a sender whose drops were all purged gets the badge of the purged totals (Sprout at 6 successes)');
select is(split_part(current_setting('test.walk'), '|', 4), '0',
  'a profile that never sent and the assistant get no badge');
select ok(split_part(current_setting('test.walk'), '|', 5)::integer between 3 and 8,
  'the walk wrote the badges of this file''s senders and holders only');
select is((select sum(amount)::integer from public.drops_transactions where user_id = 'e1000000-0000-4000-8000-00000000000a'), 50,
  'the drops ledger is untouched (only the signup bonus)');
select results_eq($$select (r ->> 'judged')::int, (r ->> 'bonuses_awarded')::int from (select public.process_encouragement_engagement() as r) x$$,
  $$values (0, 0)$$, 'a second run judges nothing and pays nothing');
select is((select bonus_earned from public.encouragement_daily_drops where user_id = 'e1000000-0000-4000-8000-00000000000a' and day = private.utc_today()),
  4, 'the bonus was paid once');
-- A drop unjudged by accident of timing cannot be paid for a pair already paid that day.
update public.encouragement_sent_drops set bonus_drops_awarded = 0
 where id = 'e1000000-0000-4000-8000-0000000000d1';
select is(private.queue_unjudged_drops(array['e1000000-0000-4000-8000-0000000000d1'::uuid]), 1, 'the judged drop is queued again');
select is((select (public.process_encouragement_engagement() ->> 'bonuses_awarded')::int), 0,
  're-judging a drop of an already paid pair and day pays nothing');
-- Runs of this transaction only (finished_at defaults to its now()): the hourly cron job may log one meanwhile.
select is((select count(*)::integer from private.job_runs where job = 'process-engagement' and finished_at = now()), 3, 'each run is logged');

-- ---------------------------------------------------------------------------------------
-- Engagement means the recipient became more engaged than their baseline.
--   F, a farmer, sent one drop each to five fresh accounts P1..P5 (created 31 h ago), 30 h
--   ago; each wrote one entry 28 h ago.                                   none engaged
--   G sent, 30 h ago, to
--     Y  a fresh account that wrote before the drop and after it            not engaged
--     N  an old account that never wrote before the drop, wrote after      not engaged
--     Q  an old account that wrote once a day all week, wrote once after   not engaged (its usual pace)
--     W  the same week, wrote twice after                                  engaged at its second entry
-- ---------------------------------------------------------------------------------------
select tests.create_user(jsonb_build_object('id', ('e1000002-0000-4000-8000-0000000002' || lpad(g::text, 2, '0'))::uuid,
         'email', 'pgtap-enc-baseline-' || g || '@example.test'))
  from generate_series(0, 10) g;
-- 00 F, 01..05 P1..P5, 06 G, 07 Y, 08 N, 09 Q, 10 W
set local session_replication_role = replica;
update public.profiles set created_at = now() - interval '31 hours'
 where id::text between 'e1000002-0000-4000-8000-000000000201' and 'e1000002-0000-4000-8000-000000000205'
    or id = 'e1000002-0000-4000-8000-000000000207';
update public.profiles set created_at = now() - interval '60 days'
 where id in ('e1000002-0000-4000-8000-000000000208', 'e1000002-0000-4000-8000-000000000209', 'e1000002-0000-4000-8000-000000000210');
set local session_replication_role = origin;
-- After the drop: one entry each (P1..P5, Y, N, Q), two for W.
insert into public.journal_entries (user_id, title, created_at)
select ('e1000002-0000-4000-8000-0000000002' || lpad(g::text, 2, '0'))::uuid, 'after the drop', now() - interval '28 hours'
  from generate_series(1, 10) g where g <> 6;
insert into public.journal_entries (user_id, title, created_at) values
  ('e1000002-0000-4000-8000-000000000210', 'after the drop, again', now() - interval '27 hours'),
  ('e1000002-0000-4000-8000-000000000207', 'before the drop', now() - interval '31 hours');
-- Q and W wrote once a day in the week before the drop.
insert into public.journal_entries (user_id, title, created_at)
select u, 'daily', now() - interval '31 hours' - d * interval '1 day'
  from unnest(array['e1000002-0000-4000-8000-000000000209', 'e1000002-0000-4000-8000-000000000210']::uuid[]) u,
       generate_series(0, 6) d;

-- The drops, written after the history their baselines are frozen from.
insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, content, date_sent, sent_day)
select case when g <= 5 then 'e1000002-0000-4000-8000-000000000200' else 'e1000002-0000-4000-8000-000000000206' end::uuid,
       ('e1000002-0000-4000-8000-0000000002' || lpad(g::text, 2, '0'))::uuid, 'encouragement', 'baseline ' || g,
       now() - interval '30 hours', (select day1 from at_)
  from generate_series(1, 10) g where g <> 6;
select results_eq($$select (r ->> 'judged')::int, (r ->> 'engaged')::int, (r ->> 'bonuses_awarded')::int
                      from (select public.process_encouragement_engagement() as r) x$$,
  $$values (9, 1, 1)$$, 'baseline: of nine drops whose recipients all wrote after them, one counts as more engagement');
select results_eq(
  $$select count(*)::int, count(engaged_at)::int, sum(bonus_drops_awarded)::int from public.encouragement_sent_drops
     where sender_id = 'e1000002-0000-4000-8000-000000000200'$$,
  $$values (5, 0, 0)$$, 'baseline: five fresh accounts writing one entry each after a drop earn the farmer nothing');
select results_eq(
  $$select engagement_increases, success_rate, bonus_earned from public.encouragement_badges_of(array['e1000002-0000-4000-8000-000000000200'::uuid])$$,
  $$values (0, 0.00::numeric, 0)$$, 'baseline: the farmer''s badge shows no success and no bonus');
select results_eq(
  $$select right(recipient_id::text, 2), engaged_at, bonus_drops_awarded from public.encouragement_sent_drops
     where sender_id = 'e1000002-0000-4000-8000-000000000206' order by recipient_id$$,
  $$values ('07'::text, null::timestamptz, 0), ('08', null, 0), ('09', null, 0), ('10', now() - interval '27 hours', 2)$$,
  'baseline: a young account, an account without earlier entries and a regular at their usual pace do not count; '
  'a regular who wrote more than usual does, at the entry that passed their baseline');
select is((select bonus_earned from public.encouragement_daily_drops where user_id = 'e1000002-0000-4000-8000-000000000206' and day = private.utc_today()),
  2, 'baseline: the genuine engagement paid its sender the bonus');

-- ---------------------------------------------------------------------------------------
-- Bonus pairs are pruned once no unjudged drop can read them.
-- ---------------------------------------------------------------------------------------
create temp table pairs_before as select sender_id, recipient_id, day from private.encouragement_bonus_pairs;
insert into private.encouragement_bonus_pairs (sender_id, recipient_id, day, drop_id)
select gen_random_uuid(), gen_random_uuid(), private.utc_today() - 30 - g % 5, gen_random_uuid() from generate_series(1, 25) g;
select is(private.prune_encouragement_bonus_pairs(10), 10, 'pruning: one call deletes at most its chunk');
select is((select count(*)::int from private.encouragement_bonus_pairs where day < private.utc_today() - 8), 15,
  'pruning: the rest of the old pairs wait for the next chunk');
select is((select (public.process_encouragement_engagement() ->> 'bonus_pairs_pruned')::int), 15,
  'pruning: the hourly engagement run prunes the rest');
select set_eq($$select sender_id, recipient_id, day from private.encouragement_bonus_pairs$$,
  $$select * from pairs_before$$, 'pruning: the pairs of the last 8 days stay (they still guard drops being judged)');
-- A drop still unjudged from 40 days ago (a backlog) keeps the pairs of its day.
insert into public.encouragement_sent_drops (id, sender_id, recipient_id, drop_type, content, date_sent, sent_day) values
  ('e1000002-0000-4000-8000-0000000002ff', 'e1000002-0000-4000-8000-000000000206', 'e1000002-0000-4000-8000-000000000210',
   'encouragement', 'backlog', now() - interval '40 days', ((now() - interval '40 days') at time zone 'UTC')::date);
insert into private.encouragement_bonus_pairs (sender_id, recipient_id, day, drop_id) values
  (gen_random_uuid(), gen_random_uuid(), ((now() - interval '40 days') at time zone 'UTC')::date, gen_random_uuid()),
  (gen_random_uuid(), gen_random_uuid(), ((now() - interval '45 days') at time zone 'UTC')::date, gen_random_uuid());
select is(private.prune_encouragement_bonus_pairs(100), 1, 'pruning: only pairs older than the oldest unjudged drop go');
select is((select count(*)::int from private.encouragement_bonus_pairs where day = ((now() - interval '40 days') at time zone 'UTC')::date),
  1, 'pruning: the unjudged drop''s day keeps its pairs');
delete from public.encouragement_sent_drops where id = 'e1000002-0000-4000-8000-0000000002ff';

-- ---------------------------------------------------------------------------------------
-- Badges across every level boundary (B's successful drops written directly).
-- ---------------------------------------------------------------------------------------
create function pg_temp.climb_to(successes integer) returns integer language plpgsql as $$
declare have integer;
begin
  select count(*) into have from public.encouragement_sent_drops
   where sender_id = 'e1000000-0000-4000-8000-000000000010' and bonus_drops_awarded > 0;
  insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, content, bonus_drops_awarded)
  select 'e1000000-0000-4000-8000-000000000010', 'e1000000-0000-4000-8000-00000000000b', 'encouragement', 'climb', 2
    from generate_series(1, successes - have);
  delete from private.encouragement_unjudged_drops q using public.encouragement_sent_drops d
   where q.drop_id = d.id and d.sender_id = 'e1000000-0000-4000-8000-000000000010';
  perform private.recalculate_encouragement_badges(array['e1000000-0000-4000-8000-000000000010'::uuid]);
  return (select level from public.encouragement_badges where user_id = 'e1000000-0000-4000-8000-000000000010');
end $$;
select is(pg_temp.climb_to(5), 1, '5 successful drops: Seedling');
select is(pg_temp.climb_to(6), 2, '6: Sprout');
select is(pg_temp.climb_to(20), 2, '20: still Sprout');
select is((select progress_to_next from public.encouragement_badges where user_id = 'e1000000-0000-4000-8000-000000000010'),
  93.33::numeric, 'progress from Sprout (6) to Bloom (21) at 20: 14/15');
select is(pg_temp.climb_to(21), 3, '21: Bloom');
select is(pg_temp.climb_to(50), 3, '50: still Bloom');
select is(pg_temp.climb_to(51), 4, '51: Pollinator');
select is(pg_temp.climb_to(150), 4, '150: still Pollinator');
select is(pg_temp.climb_to(151), 5, '151: Hive Keeper');
select is(pg_temp.climb_to(500), 5, '500: still Hive Keeper');
select is(pg_temp.climb_to(501), 6, '501: Queen Bee');
select is(pg_temp.climb_to(1500), 6, '1500: still Queen Bee');
select is(pg_temp.climb_to(1501), 7, '1501: Hive Legend');
select results_eq($$select total_sent, engagement_increases, success_rate, bonus_earned, consecutive_days, progress_to_next
                     from public.encouragement_badges where user_id = 'e1000000-0000-4000-8000-000000000010'$$,
  $$values (1501, 1501, 100.00::numeric, 3002, 1, 100.00::numeric)$$, 'the top level''s stats: all successful, progress 100');
select results_eq($$select level from public.encouragement_badge_milestones where user_id = 'e1000000-0000-4000-8000-000000000010' order by level$$,
  $$values (1), (2), (3), (4), (5), (6), (7)$$, 'one milestone per level reached');
select is((select stats from public.encouragement_badge_milestones where user_id = 'e1000000-0000-4000-8000-000000000010' and level = 4),
  '{"total_sent": 51, "engagement_increases": 51, "success_rate": 100.00, "bonus_earned": 102, "consecutive_days": 1}'::jsonb,
  'a milestone keeps the stats at the moment it was reached');
delete from public.encouragement_sent_drops where sender_id = 'e1000000-0000-4000-8000-000000000010';
select is(pg_temp.climb_to(0), 7, 'a level is never lost (all drops gone, still Hive Legend)');
select is((select count(*)::integer from public.encouragement_badge_milestones where user_id = 'e1000000-0000-4000-8000-000000000010'), 7,
  'and no milestone is written twice');

-- Consecutive days: sends today, yesterday and the day before, then a gap.
insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, content, sent_day)
select 'e1000000-0000-4000-8000-00000000000c', 'e1000000-0000-4000-8000-00000000000b', 'encouragement', 'streak', private.utc_today() - d
  from unnest(array[0, 1, 2, 4, 5]) d;
delete from private.encouragement_unjudged_drops q using public.encouragement_sent_drops d
 where q.drop_id = d.id and d.content = 'streak';
select lives_ok($$select private.recalculate_encouragement_badges(array['e1000000-0000-4000-8000-00000000000c'::uuid])$$, 'recalculate T');
select is((select consecutive_days from public.encouragement_badges where user_id = 'e1000000-0000-4000-8000-00000000000c'), 3,
  'three consecutive UTC days ending today');
update public.encouragement_badges set last_sent_day = private.utc_today() - 2 where user_id = 'e1000000-0000-4000-8000-00000000000c';
select is((select consecutive_days from public.encouragement_badges_of(array['e1000000-0000-4000-8000-00000000000c'::uuid])), 0,
  'a run whose last day is before yesterday reads as 0 without any recalculation');
update public.encouragement_badges set last_sent_day = private.utc_today() where user_id = 'e1000000-0000-4000-8000-00000000000c';

-- ---------------------------------------------------------------------------------------
-- Leaderboard and badges_of
-- ---------------------------------------------------------------------------------------
set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "e1000000-0000-4000-8000-00000000000d", "role": "authenticated"}', true);
select results_eq($$select user_id from public.encouragement_leaderboard(100) where user_id::text like 'e1000000-%'$$,
  $$values ('e1000000-0000-4000-8000-00000000000a'::uuid), ('e1000000-0000-4000-8000-00000000000c'), ('e1000000-0000-4000-8000-000000000010')$$,
  'leaderboard: most engagement increases first; a tie at 0 and 0 % goes by user id');
select throws_ok($$select * from public.encouragement_leaderboard(101)$$, '22023', 'limit: must be between 1 and 100', 'limit 101 is refused');
select results_eq($$select level, name, total_sent from public.encouragement_badges_of(array['e1000000-0000-4000-8000-00000000000d'::uuid])$$,
  $$values (1, 'Seedling'::text, 0)$$, 'a user who never sent has the starting badge (nothing written)');
select is((select count(*)::integer from public.encouragement_badges_of(array['e1000000-0000-4000-8000-0000000000ff'::uuid, private.assistant_user_id()])),
  0, 'unknown users and the assistant have no badge');
reset role;

-- ---------------------------------------------------------------------------------------
-- Schedules
-- ---------------------------------------------------------------------------------------
select results_eq($$select schedule, command from cron.job where jobname = 'process-engagement'$$,
  $$values ('*/5 * * * *'::text, 'select public.process_encouragement_engagement()'::text)$$,
  'engagement processing runs a chunk every 5 minutes in SQL');
select results_eq($$select schedule from cron.job where jobname in ('analyze-notes', 'generate-daily-drops') order by jobname$$,
  $$values ('0 2 * * *'::text), ('0 9 * * *')$$, 'the AI jobs run at 02:00 and 09:00 UTC');
select matches((select command from cron.job where jobname = 'generate-daily-drops'),
  'DROPS_CRON_SECRET', 'the daily-drops job reads its secret from Vault');
select is((select private.continue_ai_job('generate-daily-drops', '/api/x', 'DROPS_CRON_SECRET')), false,
  'the continuation job calls nothing while no user is due');
insert into private.ai_job_queue (job, day, user_id) values ('generate-daily-drops', private.utc_today(), 'e1000000-0000-4000-8000-00000000000b');
select is(private.ai_job_stalled('generate-daily-drops'), false, 'a user queued just now is left to the running invocation');
update private.ai_job_queue set queued_at = now() - interval '2 minutes' where user_id = 'e1000000-0000-4000-8000-00000000000b';
select is(private.ai_job_stalled('generate-daily-drops'), true, 'a user unclaimed for over a minute makes the continuation call again');
update private.ai_job_queue set status = 'running', claimed_at = now() - interval '1 minute' where user_id = 'e1000000-0000-4000-8000-00000000000b';
select is(private.ai_job_stalled('generate-daily-drops'), false, 'a claim within its lease is left alone');
update private.ai_job_queue set claimed_at = now() - interval '11 minutes' where user_id = 'e1000000-0000-4000-8000-00000000000b';
select is(private.ai_job_stalled('generate-daily-drops'), true, 'a claim whose lease ran out is worked again');

-- Baselines are frozen as drops are written, by every path.
select ok(private.send_assistant_drop('e1000000-0000-4000-8000-00000000000c', 'hello from the assistant'),
  'the assistant sends a drop');
select is((select count(*)::integer from public.encouragement_sent_drops d
            where not exists (select 1 from private.encouragement_drop_baselines b where b.drop_id = d.id)), 0,
  'every drop written (sends, the assistant''s, direct inserts) has its recipient baseline frozen');
-- The engagement queue follows its drops.
select is((select q.date_sent from private.encouragement_unjudged_drops q join public.encouragement_sent_drops d on d.id = q.drop_id
            where d.recipient_id = 'e1000000-0000-4000-8000-00000000000c' and d.is_system),
  now(), 'the assistant''s drop is queued for engagement processing as it is written');
update public.encouragement_sent_drops set date_sent = now() - interval '3 days'
 where recipient_id = 'e1000000-0000-4000-8000-00000000000c' and is_system;
select is((select q.date_sent from private.encouragement_unjudged_drops q join public.encouragement_sent_drops d on d.id = q.drop_id
            where d.recipient_id = 'e1000000-0000-4000-8000-00000000000c' and d.is_system),
  now() - interval '3 days', 'a drop whose date_sent changes keeps its place in the queue');
select is((select count(*)::integer from private.encouragement_unjudged_drops q
             join public.encouragement_sent_drops d on d.id = q.drop_id
             left join private.encouragement_drop_baselines b on b.drop_id = d.id
            where (q.date_sent, q.sent_day, q.sender_id, q.recipient_id, q.is_system, q.baseline_activity, q.baseline_established)
                  is distinct from (d.date_sent, d.sent_day, d.sender_id, d.recipient_id, d.is_system,
                                    coalesce(b.activity, 0), coalesce(b.established, false))), 0,
  'each queued drop carries its drop''s time, day, parties, kind and frozen baseline (judging reads the queue alone)');
-- What a sender's account deletion does to their drops (sender_id set null by the foreign key).
update public.encouragement_sent_drops set sender_id = null
 where recipient_id = 'e1000000-0000-4000-8000-00000000000c' and is_system;
select is((select q.sender_id from private.encouragement_unjudged_drops q join public.encouragement_sent_drops d on d.id = q.drop_id
            where d.recipient_id = 'e1000000-0000-4000-8000-00000000000c' and d.is_system),
  null, 'a drop whose sender is gone is queued without a sender (no bonus is paid to nobody)');
delete from public.encouragement_sent_drops where recipient_id = 'e1000000-0000-4000-8000-00000000000c' and is_system;
select is((select count(*)::integer from private.encouragement_unjudged_drops q
            where not exists (select 1 from public.encouragement_sent_drops d where d.id = q.drop_id)), 0,
  'a deleted drop leaves the queue');

reset role;
select set_config('request.jwt.claims', '', true);
-- Recent senders (SPEC: badges recalculated during cron processing for recent senders): those
-- who sent since the previous run started (less a minute); X's drop (no badge yet) is that
-- recent, I's (sent 30 minutes ago, before the previous run) was left to its send.
insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, content, date_sent, sent_day) values
  ('e1000000-0000-4000-8000-00000000000d', 'e1000000-0000-4000-8000-00000000000b', 'encouragement', 'recent', now(), private.utc_today()),
  ('e1000000-0000-4000-8000-00000000000e', 'e1000000-0000-4000-8000-00000000000b', 'encouragement', 'earlier',
   now() - interval '30 minutes', private.utc_today());
select ok((select count(*) from private.job_runs where job = 'process-engagement' and started_at > now() - interval '29 minutes') > 0,
  'a previous engagement run started in the last minutes');
select lives_ok($$select public.process_encouragement_engagement()$$, 'an engagement run');
select results_eq(
  $$select user_id, total_sent from public.encouragement_badges
     where user_id in ('e1000000-0000-4000-8000-00000000000d', 'e1000000-0000-4000-8000-00000000000e')$$,
  $$values ('e1000000-0000-4000-8000-00000000000d'::uuid, 1)$$,
  'the run recalculates the senders since the previous run, not everyone of the last two hours again');

select * from finish();
rollback;
