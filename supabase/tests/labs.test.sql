-- Labs and impersonation in SQL.
--
-- 1. Who reads what, as data: each role (owner, stranger, super admin, anonymous) against each
--    secret (contact fields, decline reasons, message bodies) and each listing.
-- 2. State moves of submissions (only pending moves; reason required; 404/409).
-- 3. Convergence and anomaly math against numbers worked out by hand.
-- 4. Competition scoring with the SPEC weights and the competition window; what scores
--    (curated public templates of others, once per user, template and kind).
-- 5. The outreach cap (the concurrency of it is tested over HTTP: tests/labs_outreach_test.ts).
-- 6. Impersonation audit rows are immutable; only super admins start sessions.
-- 7. Submitter ids are not in public tables; the kit waitlist answers alike; replications are
--    removed by super admins only, with an immutable audit row.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(76);

select tests.create_user(to_jsonb(u)) from (values 
  ('13130000-0000-4000-8000-000000000001', 'pgtap-labs-owner@example.test'),
  ('13130000-0000-4000-8000-000000000002', 'pgtap-labs-stranger@example.test'),
  ('13130000-0000-4000-8000-000000000003', 'pgtap-labs-admin@example.test'),
  ('13130000-0000-4000-8000-000000000004', 'pgtap-labs-classroom@example.test')) u (id, email);
update public.profiles set role = 'super_admin' where id = '13130000-0000-4000-8000-000000000003';
insert into public.labs_classroom_accounts (user_id) values ('13130000-0000-4000-8000-000000000004');

-- Submissions by the owner: a sponsor approved, one declined, one pending.
select tests.authenticate_as('13130000-0000-4000-8000-000000000001');
set local role authenticated;
create temp table ids as
  select (select id from public.labs_submit_sponsor('Acme Labs', 'gold', 'Boss@Acme.test', 'Bo Ss')) as approved,
         (select id from public.labs_submit_sponsor('Nope Inc', 'bronze', 'no@nope.test', 'No Body')) as declined,
         (select id from public.labs_submit_sponsor('Later Ltd', 'silver', 'l@later.test', 'La Ter')) as pending;
reset role;
grant select on ids to anon, authenticated;

select tests.authenticate_as('13130000-0000-4000-8000-000000000003');
set local role authenticated;
select is((select status from public.labs_review('sponsor', (select approved from ids), 'approve')), 'approved', 'a super admin approves a pending sponsor');
select throws_ok(format('select public.labs_review(''sponsor'', %L, ''decline'', null)', (select declined from ids)), '23514', 'reason: must not be empty',
  'a decline without a reason is refused');
select is((select status from public.labs_review('sponsor', (select declined from ids), 'decline', 'Out of scope')), 'declined', 'declined with a reason');
select throws_ok(format('select public.labs_review(''sponsor'', %L, ''approve'')', (select approved from ids)), 'PT409', null, 'an approved record does not move again');
select throws_ok(format('select public.labs_review(''sponsor'', %L, ''decline'', ''x'')', (select declined from ids)), 'PT409', null, 'a declined record does not move again');
select throws_ok('select public.labs_review(''sponsor'', ''13130000-0000-4000-8000-0000000000ff'', ''approve'')', 'PT404', null, 'unknown id');
select is((select record ->> 'contact_email' from public.labs_pending('sponsor') where id = (select pending from ids)), 'l@later.test',
  'the review queue shows contact fields to super admins');
reset role;

-- =========================================================================================
-- 1. Who reads what: (who, what, expected) as data.
-- =========================================================================================
create temp table visibility (who text, what text, expected bigint);
insert into visibility values
  -- Public listing: approved only, for everyone.
  ('anon', 'listed sponsors of the owner', 1), ('2', 'listed sponsors of the owner', 1), ('1', 'listed sponsors of the owner', 3),
  ('3', 'listed sponsors of the owner', 3),
  -- The review queue with contact fields: super admins only.
  ('2', 'review queue', -1), ('1', 'review queue', -1), ('anon', 'review queue', -1);

create function pg_temp.look(what text) returns bigint language plpgsql as $$
begin
  if what = 'listed sponsors of the owner' then
    return (select count(*) from public.labs_sponsors
             where id in ((select approved from ids), (select declined from ids), (select pending from ids)));
  elsif what = 'review queue' then
    begin
      return (select count(*) from public.labs_pending('sponsor'));
    exception when insufficient_privilege then return -1;
    end;
  end if;
end $$;
grant execute on function pg_temp.look(text) to anon, authenticated;

create function pg_temp.check_visibility() returns setof text language plpgsql as $$
declare v record; got bigint;
begin
  for v in select * from visibility loop
    if v.who = 'anon' then
      perform tests.authenticate_as_anon();
    else
      perform tests.authenticate_as(('13130000-0000-4000-8000-00000000000' || v.who)::uuid);
    end if;
    execute format('set local role %I', case when v.who = 'anon' then 'anon' else 'authenticated' end);
    got := pg_temp.look(v.what);
    reset role;
    return next is(got, v.expected, format('%s sees %s: %s', v.who, v.what, v.expected));
  end loop;
end $$;
select * from pg_temp.check_visibility();

-- Secrets sit where no client role reads them, whoever the caller.
select ok(not has_table_privilege('authenticated', 'private.labs_sponsor_private', 'select'), 'contact fields and reasons: no client role reads the table');
select ok(not has_table_privilege('anon', 'private.labs_sponsor_private', 'select'), 'anon neither');
select ok(not has_table_privilege('authenticated', 'private.labs_opportunity_private', 'select')
       and not has_table_privilege('authenticated', 'private.labs_dream_video_private', 'select'), 'nor the other kinds''');
select is((select decline_reason from private.labs_sponsor_private where sponsor_id = (select declined from ids)), 'Out of scope', 'the reason is stored');
select ok(not exists (select 1 from information_schema.columns where table_schema = 'public' and table_name = 'labs_sponsors'
                       and column_name in ('contact_email', 'contact_name', 'decline_reason')), 'no secret column on the public table');
select is((select array_agg(table_name || '.' || column_name order by table_name, column_name) from information_schema.columns
            where table_schema = 'public' and table_name like 'labs%' and column_name in ('applicant_id', 'submitter_id', 'recipient_id')),
          null, 'no public labs table says who submitted a record or who receives a message');
select ok(not has_table_privilege('authenticated', 'public.labs_sponsors', 'update') and not has_table_privilege('authenticated', 'public.labs_sponsors', 'insert'),
  'status moves only through the review function');

-- Message bodies: sender and recipient only; super admins see none.
select tests.create_user(to_jsonb(u)) from (values ('13130000-0000-4000-8000-000000000005', 'pgtap-labs-sender@example.test')) u (id, email);
select tests.authenticate_as('13130000-0000-4000-8000-000000000005');
set local role authenticated;
select isnt(public.labs_send_sponsor_message((select approved from ids), 'Hi Acme ' || g)::text, null, 'message ' || g || ' sent')
  from generate_series(1, 5) g;
select throws_ok(format('select public.labs_send_sponsor_message(%L, ''sixth'')', (select approved from ids)), 'PT429', null,
  'the sixth message to one sponsor within 24 hours is refused');
select throws_ok(format('select public.labs_send_sponsor_message(%L, ''x'')', (select pending from ids)), 'PT404', null,
  'only approved sponsors take messages');
select is((select count(*) from public.labs_sponsor_messages), 5::bigint, 'the sender reads their messages');
reset role;
select tests.authenticate_as('13130000-0000-4000-8000-000000000001');
set local role authenticated;
select is((select count(*) from public.labs_sponsor_messages), 5::bigint, 'the recipient (the sponsor''s applicant) reads them');
reset role;
select tests.authenticate_as('13130000-0000-4000-8000-000000000003');
set local role authenticated;
select is((select count(*) from public.labs_sponsor_messages), 0::bigint, 'a super admin reads none');
reset role;
select tests.authenticate_as('13130000-0000-4000-8000-000000000002');
set local role authenticated;
select is((select count(*) from public.labs_sponsor_messages), 0::bigint, 'a stranger reads none');
reset role;
select is((select count(*) from pg_policies where tablename = 'labs_sponsor_messages' and cmd in ('SELECT', 'ALL')), 1::bigint,
  'one read policy on messages (sender or recipient): none grants super admins');
-- A day later the cap has room again.
update public.labs_sponsor_messages set created_at = now() - interval '25 hours' where sender_id = '13130000-0000-4000-8000-000000000005';
select tests.authenticate_as('13130000-0000-4000-8000-000000000005');
set local role authenticated;
select lives_ok(format('select public.labs_send_sponsor_message(%L, ''a day later'')', (select approved from ids)), 'the cap is per 24 hours');
reset role;

-- =========================================================================================
-- 3. Convergence and anomalies.
-- =========================================================================================
insert into public.labs_experiments (id, owner_id, title, calculator, is_template, is_public, predicted_values) values
  ('13130000-0000-4000-8000-0000000000a1', '13130000-0000-4000-8000-000000000001', 'Convergence', 'resonance', true, true,
   '{"calculator": "resonance", "optimal_inputs": {}, "calculator_outputs": {"outputs": [{"label": "Q", "value": 100, "unit": ""}]}}');
-- 10 reports: 9 at 100..104 (within 5 %), one at 200. Mean = (100+101+102+103+104+100+101+102+103+200)/10 = 111.6.
insert into public.labs_replications (clone_id, template_id, user_id, measured_value, predicted_value, confirmed)
select '13130000-0000-4000-8000-0000000000a1', '13130000-0000-4000-8000-0000000000a1',
       case when v.n <= 5 then '13130000-0000-4000-8000-000000000001'::uuid else '13130000-0000-4000-8000-000000000002'::uuid end,
       v.value, 100, abs(v.value - 100) <= 5
  from (values (1, 100), (2, 101), (3, 102), (4, 103), (5, 104), (6, 100), (7, 101), (8, 102), (9, 103), (10, 200)) v(n, value);
select is((select replications from private.labs_template_stats(array['13130000-0000-4000-8000-0000000000a1'::uuid])), 10, '10 replications');
select is((select independent_confirmations from private.labs_template_stats(array['13130000-0000-4000-8000-0000000000a1'::uuid])), 2,
  'confirmations count distinct users, not reports');
select is((select round(mean::numeric, 4) from private.labs_template_stats(array['13130000-0000-4000-8000-0000000000a1'::uuid])), 111.6000, 'mean');
-- Sample sd: deviations² of 9 values near 101.9..111.6 plus (200 − 111.6)²; 2·sd ≈ 61.8, so only 200 is an anomaly.
select is((select round(stddev::numeric, 4) from private.labs_template_stats(array['13130000-0000-4000-8000-0000000000a1'::uuid])),
          (select round(stddev_samp(x)::numeric, 4) from unnest(array[100, 101, 102, 103, 104, 100, 101, 102, 103, 200]::float8[]) x), 'sample standard deviation');
select is((select anomalies from private.labs_template_stats(array['13130000-0000-4000-8000-0000000000a1'::uuid])), 1, 'one anomaly (more than 2 sd from the mean)');
select is((select array_agg(measured_value) from private.labs_template_replications('13130000-0000-4000-8000-0000000000a1') where is_anomaly),
  array[200::float8], 'the anomaly is the 200');
select is((select robust from private.labs_template_stats(array['13130000-0000-4000-8000-0000000000a1'::uuid])), false, 'not robust with 2 confirmations');
-- 50 distinct confirming users make it robust; 49 do not.
select tests.create_user(jsonb_build_object('id', ('13130000-0000-4000-8001-' || lpad(g::text, 12, '0'))::uuid,
         'email', 'pgtap-labs-rep-' || g || '@example.test'))
  from generate_series(1, 48) g;
insert into public.labs_replications (clone_id, template_id, user_id, measured_value, predicted_value, confirmed)
select '13130000-0000-4000-8000-0000000000a1', '13130000-0000-4000-8000-0000000000a1', ('13130000-0000-4000-8001-' || lpad(g::text, 12, '0'))::uuid, 101, 100, true
  from generate_series(1, 47) g;
select is((select (independent_confirmations, robust)::text from private.labs_template_stats(array['13130000-0000-4000-8000-0000000000a1'::uuid])), '(49,f)',
  '49 independent confirmations: not yet robust');
insert into public.labs_replications (clone_id, template_id, user_id, measured_value, predicted_value, confirmed)
values ('13130000-0000-4000-8000-0000000000a1', '13130000-0000-4000-8000-0000000000a1', '13130000-0000-4000-8001-000000000048', 95.1, 100, true);
select is((select (independent_confirmations, robust)::text from private.labs_template_stats(array['13130000-0000-4000-8000-0000000000a1'::uuid])), '(50,t)',
  '50 independent confirmations: robust');

-- Values at the ends of double precision: numeric arithmetic, no overflow, an exact mean.
insert into public.labs_experiments (id, owner_id, title, calculator, is_template, is_public) values
  ('13130000-0000-4000-8000-0000000000a2', '13130000-0000-4000-8000-000000000001', 'Extremes', 'coil', true, true);
insert into public.labs_replications (clone_id, template_id, user_id, measured_value)
select '13130000-0000-4000-8000-0000000000a2', '13130000-0000-4000-8000-0000000000a2', '13130000-0000-4000-8000-000000000001', v
  from unnest(array[1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308]::float8[]) v;
select lives_ok('select * from private.labs_template_stats(array[''13130000-0000-4000-8000-0000000000a2''::uuid])',
  'statistics of values near ±1.8e308 do not overflow');
select is((select mean from private.labs_template_stats(array['13130000-0000-4000-8000-0000000000a2'::uuid])), 0::numeric, 'their mean is exact');
select tests.authenticate_as('13130000-0000-4000-8000-000000000002');
set local role authenticated;
select lives_ok('select * from public.labs_template_list(101)', 'the catalogue still lists');
reset role;

-- Classroom accounts: classroom-safe templates only, in listings and clones.
select tests.authenticate_as('13130000-0000-4000-8000-000000000004');
set local role authenticated;
select is((select count(*) from public.labs_experiments where id = '13130000-0000-4000-8000-0000000000a1'), 0::bigint, 'a classroom account does not see an adult_only template');
select throws_ok('select public.labs_clone_template(''13130000-0000-4000-8000-0000000000a1'')', '42501', null, 'nor clones it');
reset role;
update public.labs_experiments set safety_level = 'classroom_safe', min_grade_band = '9-12' where id = '13130000-0000-4000-8000-0000000000a1';
select tests.authenticate_as('13130000-0000-4000-8000-000000000004');
set local role authenticated;
select is((select count(*) from public.labs_experiments where id = '13130000-0000-4000-8000-0000000000a1'), 1::bigint, 'classroom_safe: listed');
select lives_ok('select public.labs_clone_template(''13130000-0000-4000-8000-0000000000a1'')', 'and cloned');
select throws_ok('select public.labs_set_template_safety(''13130000-0000-4000-8000-0000000000a1'', ''adult_only'')', '42501', null,
  'only super admins change safety levels');
select throws_ok('select public.labs_submit_dream_video(''x'', ''https://v.example/x'')', '42501', null, 'classroom accounts submit no dream videos');
reset role;

-- =========================================================================================
-- 4. Competition scoring.
-- =========================================================================================
insert into public.labs_competitions (id, slug, title, starts_at) values
  ('13130000-0000-4000-8000-0000000000c1', 'pgtap-cup', 'pgTAP cup', now() - interval '1 day');
insert into public.labs_competition_participants (competition_id, user_id) values
  ('13130000-0000-4000-8000-0000000000c1', '13130000-0000-4000-8000-000000000001'),
  ('13130000-0000-4000-8000-0000000000c1', '13130000-0000-4000-8000-000000000002');
-- Owner: clone 1 + completion 5 + confirmed 25 + refuted 5 + build 10 = 46, plus an event before the start (not counted).
delete from public.labs_activity_events where user_id in ('13130000-0000-4000-8000-000000000001', '13130000-0000-4000-8000-000000000002');
insert into public.labs_activity_events (user_id, kind, created_at) values
  ('13130000-0000-4000-8000-000000000001', 'clone', now()), ('13130000-0000-4000-8000-000000000001', 'completion', now()),
  ('13130000-0000-4000-8000-000000000001', 'replication_confirmed', now()), ('13130000-0000-4000-8000-000000000001', 'replication_refuted', now()),
  ('13130000-0000-4000-8000-000000000001', 'build', now()), ('13130000-0000-4000-8000-000000000001', 'build', now() - interval '2 days'),
  ('13130000-0000-4000-8000-000000000002', 'clone', now()), ('13130000-0000-4000-8000-000000000002', 'clone', now());
select tests.authenticate_as('13130000-0000-4000-8000-000000000002');
set local role authenticated;
select throws_ok('select public.labs_recompute_competitions()', '42501', null, 'a user cannot run the recompute');
reset role;
select set_config('request.jwt.claims', '', true);
select is((select participants from public.labs_recompute_competitions() where slug = 'pgtap-cup'), 2, 'recompute scores both participants');
select is((select array_agg(score order by score desc) from public.labs_competition_participants where competition_id = '13130000-0000-4000-8000-0000000000c1'),
  array[46, 2], 'scores follow the SPEC weights inside the window');
select isnt((select last_scored_at from public.labs_competitions where slug = 'pgtap-cup'), null, 'last_scored_at is set');

-- What scores: user 5 farms the owner's public template (three clones, each completed with a
-- build, a replication on each) and their own template; one of each kind is recorded.
select tests.authenticate_as('13130000-0000-4000-8000-000000000005');
set local role authenticated;
select lives_ok($$select public.labs_complete_clone((public.labs_clone_template('13130000-0000-4000-8000-0000000000a1')).id, true)
                    from generate_series(1, 3)$$, 'three clones of a public template of someone else, each completed with a build');
select lives_ok($$select public.labs_report_replication(e.id, to_jsonb(100)) from public.labs_experiments e
                   where e.owner_id = '13130000-0000-4000-8000-000000000005' and e.cloned_from = '13130000-0000-4000-8000-0000000000a1'$$,
  'a confirming replication on each clone');
insert into public.labs_experiments (title, calculator, is_template) values ('Own', 'coil', true);
select lives_ok($$select public.labs_complete_clone((public.labs_clone_template(e.id)).id, true) from public.labs_experiments e
                   where e.owner_id = '13130000-0000-4000-8000-000000000005' and e.is_template$$, 'a clone of one''s own template, completed');
reset role;
select is((select array_agg(kind order by id) from public.labs_activity_events
            where user_id = '13130000-0000-4000-8000-000000000005' and template_id = '13130000-0000-4000-8000-0000000000a1'),
          array['clone', 'completion', 'build', 'replication_confirmed'], 'one scored event of each kind for the template');
select is((select count(*) from public.labs_activity_events e join public.labs_experiments t on t.id = e.template_id
            where e.user_id = '13130000-0000-4000-8000-000000000005' and t.owner_id = '13130000-0000-4000-8000-000000000005'),
          0::bigint, 'nothing for one''s own template');

-- Only curated templates score: a public template of someone else without a golden spec can be
-- cloned, completed, built and replicated, and earns nothing; no client role writes a golden spec.
insert into public.labs_experiments (id, owner_id, title, calculator, is_template, is_public) values
  ('13130000-0000-4000-8000-0000000000a3', '13130000-0000-4000-8000-000000000001', 'Uncurated', 'coil', true, true);
select tests.authenticate_as('13130000-0000-4000-8000-000000000005');
set local role authenticated;
select lives_ok($$select public.labs_report_replication(
                     (public.labs_complete_clone((public.labs_clone_template('13130000-0000-4000-8000-0000000000a3')).id, true)).id, to_jsonb(3))$$,
  'an uncurated public template: clone, completion with a build, replication');
reset role;
select is((select count(*) from public.labs_activity_events
            where user_id = '13130000-0000-4000-8000-000000000005' and template_id = '13130000-0000-4000-8000-0000000000a3'),
          0::bigint, 'none of it scores');
select ok(not exists (select 1 from unnest(array['anon', 'authenticated', 'service_role']) r(role), unnest(array['insert', 'update']) p(priv)
                       where has_column_privilege(r.role, 'public.labs_experiments', 'predicted_values', p.priv)),
  'no client role inserts or updates predicted_values (the golden-spec function is the only path)');

-- =========================================================================================
-- 7. Kit waitlist and replication removal.
-- =========================================================================================
select tests.authenticate_as_anon();
set local role anon;
select lives_ok($$insert into public.labs_kit_waitlist (email) values ('PgTap-Kit@Example.test')$$, 'anonymous signs up (address normalised)');
select lives_ok($$insert into public.labs_kit_waitlist (email) values ('pgtap-kit@example.test')$$, 'the same address again: the same answer');
select throws_ok($$insert into public.labs_kit_waitlist (email, user_id) values ('pgtap-kit@example.test', '13130000-0000-4000-8000-000000000001')$$,
  '42501', null, 'naming a user is refused whether or not the address is listed');
reset role;
select is((select count(*) from public.labs_kit_waitlist where email = 'pgtap-kit@example.test'), 1::bigint, 'one row for the address');

select tests.authenticate_as('13130000-0000-4000-8000-000000000001');
set local role authenticated;
select throws_ok(format('select public.labs_remove_replication(%L, ''mine'')',
                        (select id from public.labs_replications where template_id = '13130000-0000-4000-8000-0000000000a2' limit 1)),
  '42501', null, 'a user cannot remove a replication, not even their own');
reset role;
select tests.authenticate_as('13130000-0000-4000-8000-000000000003');
set local role authenticated;
select is((select user_id from public.labs_remove_replication(
             (select id from public.labs_replications where template_id = '13130000-0000-4000-8000-0000000000a2' and measured_value = 1e308),
             'not a measurement')),
          '13130000-0000-4000-8000-000000000001'::uuid, 'a super admin removes one, recorded with its reporter');
select is((select (measured_value, removed_by, reason)::text from public.labs_replication_removals
            where template_id = '13130000-0000-4000-8000-0000000000a2'),
          '(1e+308,13130000-0000-4000-8000-000000000003,"not a measurement")', 'the audit row keeps the value, the admin and the reason');
select throws_ok('delete from public.labs_replication_removals', '42501', null, 'nobody deletes removal records');
reset role;

-- =========================================================================================
-- 6. Impersonation audit.
-- =========================================================================================
select tests.authenticate_as('13130000-0000-4000-8000-000000000002');
set local role authenticated;
select throws_ok('select * from public.start_impersonation(''13130000-0000-4000-8000-000000000001'', ''x'')', '42501', null, 'users cannot impersonate');
reset role;
select tests.authenticate_as('13130000-0000-4000-8000-000000000003');
set local role authenticated;
select isnt((select session_id from public.start_impersonation('13130000-0000-4000-8000-000000000001', 'support ticket')), null, 'a super admin starts a session');
select throws_ok('update public.impersonation_audit set reason = ''x''', '42501', null, 'a super admin cannot edit audit rows');
reset role;
select throws_ok('delete from public.impersonation_audit', '42501', null, 'nor can the database owner delete them');

select * from finish();
rollback;
