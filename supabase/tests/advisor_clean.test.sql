-- The security review's database findings (issue 6), each as a regression test that fails on
-- the schema before 20261122000000_advisor_clean.sql:
--   finding 2  a team membership cannot outlive the organization membership (in the schema)
--   finding 3  a notebook's team/organization is re-checked when an entry lands in it
--   finding 4  ownership only to members; added members are told (notifications) and can leave
--   finding 6  bad input to SQL functions raises class 22 (the API answers 400), never a 500
--   finding 7  "not found" is PT404 (PostgREST answers 404)
--   finding 8  client roles do not read the internal scope columns
begin;
create extension if not exists pgtap with schema extensions;
grant execute on all functions in schema extensions to anon, authenticated;

select plan(55);

-- ---------------------------------------------------------------------------------------
-- People (c6000000-...-NN) and groups:
--   01 Olga  owner of O, admin of T          05 Nina  added to O by Olga (notifications)
--   02 Mark  member of O and T               06 Nora  member of O and T, publishes, then removed
--   03 Tess  member of O                     07 Sue   super admin
--   04 Stan  stranger
-- O = c60000a0-...-01 (O2 = -02, Stan's own); T = c60000c0-...-01.
-- ---------------------------------------------------------------------------------------
insert into auth.users (id, email, raw_user_meta_data) values
  ('c6000000-0000-4000-8000-000000000001', 'pgtap-adv-olga@example.test', '{"full_name": "Olga Owner"}'),
  ('c6000000-0000-4000-8000-000000000002', 'pgtap-adv-mark@example.test', '{"full_name": "Mark Member"}'),
  ('c6000000-0000-4000-8000-000000000003', 'pgtap-adv-tess@example.test', '{"full_name": "Tess Orgonly"}'),
  ('c6000000-0000-4000-8000-000000000004', 'pgtap-adv-stan@example.test', '{"full_name": "Stan Stranger"}'),
  ('c6000000-0000-4000-8000-000000000005', 'pgtap-adv-nina@example.test', '{"full_name": "Nina Newcomer"}'),
  ('c6000000-0000-4000-8000-000000000006', 'pgtap-adv-nora@example.test', '{"full_name": "Nora Former"}'),
  ('c6000000-0000-4000-8000-000000000007', 'pgtap-adv-sue@example.test', '{"full_name": "Sue Super"}');
update public.profiles set role = 'super_admin' where id = 'c6000000-0000-4000-8000-000000000007';
insert into public.organizations (id, name, owner_id) values
  ('c60000a0-0000-4000-8000-000000000001', 'Advisors', 'c6000000-0000-4000-8000-000000000001'),
  ('c60000a0-0000-4000-8000-000000000002', 'Stan''s', 'c6000000-0000-4000-8000-000000000004');
insert into public.organization_members (org_id, user_id, role) values
  ('c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000002', 'member'),
  ('c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000003', 'member'),
  ('c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000006', 'member');
insert into public.teams (id, name, org_id, admin_id) values
  ('c60000c0-0000-4000-8000-000000000001', 'Team T', 'c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000001');
insert into public.team_members (team_id, user_id, role) values
  ('c60000c0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000002', 'member'),
  ('c60000c0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000006', 'member');

create function pg_temp.act_as(who text) returns void
language sql as $$
  select set_config('request.jwt.claims', json_build_object('sub', 'c6000000-0000-4000-8000-0000000000' || who,
                    'role', 'authenticated')::text, true)
$$;
grant execute on function pg_temp.act_as(text) to authenticated;

-- Rows a write statement touched, run as the current role (RLS refusals touch 0 rows).
create function pg_temp.rows_affected(statement text) returns integer
language plpgsql as $$
declare
  n integer;
begin
  execute statement;
  get diagnostics n = row_count;
  return n;
end
$$;
grant execute on function pg_temp.rows_affected(text) to authenticated;

-- Readers (by number) who can read a journal_entries row whose meta_scope_id is neither null,
-- nor on their own entry, nor a team/organization of theirs. One statement per reader.
create function pg_temp.scope_ids_beyond_the_reader() returns text[]
language plpgsql as $$
declare
  who text;
  found_any boolean;
  result text[];
begin
  foreach who in array array['01', '02', '03', '04', '05', '06', '07'] loop
    perform pg_temp.act_as(who);
    execute $q$select exists (select 1 from public.journal_entries e
                 where e.meta_scope_id is not null and e.user_id <> (select auth.uid())
                   and e.meta_scope_id not in (select private.my_team_ids() union all select private.my_org_ids())
                   and not private.is_super_admin())$q$ into found_any;
    if found_any then
      result := result || who;
    end if;
  end loop;
  return result;
end
$$;
grant execute on function pg_temp.scope_ids_beyond_the_reader() to authenticated;

-- =======================================================================================
-- Finding 2: team membership hangs off organization membership.
-- =======================================================================================
select is((select org_id from public.team_members
            where team_id = 'c60000c0-0000-4000-8000-000000000001' and user_id = 'c6000000-0000-4000-8000-000000000002'),
  'c60000a0-0000-4000-8000-000000000001'::uuid,
  'finding 2: a team membership carries its team''s organization');
select is((select count(*)::int from pg_catalog.pg_constraint
            where conrelid = 'public.team_members'::regclass and contype = 'f'
              and confrelid = 'public.organization_members'::regclass and confdeltype = 'c'),
  1, 'finding 2: team_members (org_id, user_id) references organization_members, on delete cascade');

-- The schema alone, with the old trigger that cleaned up team memberships switched off.
alter table public.organization_members disable trigger organization_members_leave_teams;
delete from public.organization_members
 where org_id = 'c60000a0-0000-4000-8000-000000000001' and user_id = 'c6000000-0000-4000-8000-000000000002';
select is_empty($$select 1 from public.team_members where user_id = 'c6000000-0000-4000-8000-000000000002'$$,
  'finding 2: removing someone from the organization removes their team membership in the same statement');
alter table public.organization_members enable trigger organization_members_leave_teams;

-- An insert that got past the guard trigger (the race: the removal commits between the
-- guard's check and the insert) still fails on the key.
alter table public.team_members disable trigger team_members_guard;
select throws_ok(
  $$insert into public.team_members (team_id, user_id, role)
    values ('c60000c0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000004', 'member')$$,
  '23503', null,
  'finding 2: a team member who is not in the organization is refused by the foreign key, whatever the triggers do');
alter table public.team_members enable trigger team_members_guard;
insert into public.team_members (team_id, org_id, user_id, role)
values ('c60000c0-0000-4000-8000-000000000001', 'c60000a0-0000-4000-8000-000000000002', 'c6000000-0000-4000-8000-000000000003', 'member');
select is((select org_id from public.team_members where user_id = 'c6000000-0000-4000-8000-000000000003'),
  'c60000a0-0000-4000-8000-000000000001'::uuid,
  'finding 2: org_id is the team''s, whatever the writer sends');
delete from public.team_members where user_id = 'c6000000-0000-4000-8000-000000000003';

-- =======================================================================================
-- Finding 3: former members cannot publish through an old notebook.
-- =======================================================================================
set local role authenticated;
select pg_temp.act_as('06');
insert into public.notebooks (id, name, metadata_visibility, content_visibility, org_id) values
  ('c60000e0-0000-4000-8000-000000000001', 'Org notebook', 'org', 'org', 'c60000a0-0000-4000-8000-000000000001');
insert into public.notebooks (id, name, metadata_visibility, content_visibility, team_id) values
  ('c60000e0-0000-4000-8000-000000000002', 'Team notebook', 'team', 'user', 'c60000c0-0000-4000-8000-000000000001');
insert into public.notebooks (id, name) values ('c60000e0-0000-4000-8000-000000000003', 'Private notebook');
select lives_ok(
  $$select public.create_journal_entry('while a member', 'x', notebook_id => 'c60000e0-0000-4000-8000-000000000001')$$,
  'finding 3: a member publishes into the organization through their org notebook');
select lives_ok(
  $$insert into public.journal_entries (id, title) values ('c60000f0-0000-4000-8000-000000000001', 'kept private')$$,
  'finding 3: an entry of their own outside any notebook');

reset role;
delete from public.organization_members
 where org_id = 'c60000a0-0000-4000-8000-000000000001' and user_id = 'c6000000-0000-4000-8000-000000000006';
set local role authenticated;
select pg_temp.act_as('06');
-- Since issue 20 the old notebooks leave the organization (and its team) with their owner, so
-- what a former member puts in them stays theirs.
select results_eq(
  $$select metadata_visibility, content_visibility, team_id, org_id from public.notebooks
     where id in ('c60000e0-0000-4000-8000-000000000001', 'c60000e0-0000-4000-8000-000000000002') order by id$$,
  $$values ('user'::text, 'user'::text, null::uuid, null::uuid), ('user', 'user', null, null)$$,
  'finding 3: the old organization and team notebooks fell back to user when their owner left');
select lives_ok(
  $$select public.create_journal_entry('after removal', 'x', notebook_id => 'c60000e0-0000-4000-8000-000000000001')$$,
  'finding 3: a former member may still write in their old organization notebook, now private');
select lives_ok(
  $$select public.create_journal_entry('after removal', 'x', notebook_id => 'c60000e0-0000-4000-8000-000000000002')$$,
  'finding 3: and in the old team notebook (removal from the organization left the team too)');
select lives_ok(
  $$insert into public.journal_entries (title, notebook_id) values ('direct', 'c60000e0-0000-4000-8000-000000000001')$$,
  'finding 3: also by a direct insert');
select lives_ok(
  $$select public.update_journal_entry('c60000f0-0000-4000-8000-000000000001', '{"notebook_id": "c60000e0-0000-4000-8000-000000000001"}')$$,
  'finding 3: and move an entry into it');
select lives_ok(
  $$select public.create_journal_entry('mine', 'x', notebook_id => 'c60000e0-0000-4000-8000-000000000003')$$,
  'finding 3: their private notebook still works');
select lives_ok(
  $$select public.create_journal_entry('public anyway', 'x', notebook_id => 'c60000e0-0000-4000-8000-000000000001',
                                       metadata_visibility => 'public', content_visibility => 'public')$$,
  'finding 3: an entry with its own levels goes in it as before');
reset role;
select is_empty(
  $$select title from public.journal_entries
     where user_id = 'c6000000-0000-4000-8000-000000000006' and ('org' in (meta_scope, content_scope) or 'team' in (meta_scope, content_scope))$$,
  'finding 3: nothing of theirs is in the organization or its team any more (the entry written while a member left too)');

-- =======================================================================================
-- Finding 4: ownership only to members; the added are told and may leave.
-- =======================================================================================
delete from public.notifications; -- those of the setup above, made as postgres
set local role authenticated;
select pg_temp.act_as('01');
insert into public.organizations (id, name, owner_id)
values ('c60000a0-0000-4000-8000-000000000003', 'Olga''s second', 'c6000000-0000-4000-8000-000000000001');
insert into public.organization_members (org_id, user_id, role)
values ('c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000005', 'member');
select throws_ok(
  $$select public.transfer_organization_ownership('c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000004')$$,
  '22023', 'new_owner_id: the new owner must already be a member of the organization',
  'finding 4: ownership cannot go to someone outside the organization');
select throws_ok(
  $$select public.transfer_organization_ownership('c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-0000000000ff')$$,
  '22023', 'new_owner_id: the new owner must already be a member of the organization',
  'finding 4: an unknown user id gets the same answer');
select is(pg_temp.rows_affected($$select * from public.notifications$$), 0,
  'finding 4: adding a member or creating an organization tells the one who did it nothing');

select pg_temp.act_as('05');
select results_eq(
  $$select type, payload ->> 'organization_id', payload ->> 'organization_name', payload ->> 'role', payload ->> 'by', read_at
      from public.notifications$$,
  $$values ('organization.member_added', 'c60000a0-0000-4000-8000-000000000001', 'Advisors', 'member',
            'c6000000-0000-4000-8000-000000000001', null::timestamptz)$$,
  'finding 4: the added member is told who added them to which organization, unread');
select throws_ok(
  $$insert into public.notifications (user_id, type) values ('c6000000-0000-4000-8000-000000000005', 'organization.member_added')$$,
  '42501', null, 'notifications: nobody inserts them through the API roles, not even for themselves');
select throws_ok(
  $$update public.notifications set payload = '{"forged": true}'$$,
  '42501', null, 'notifications: the recipient cannot change what they were told');
select is(pg_temp.rows_affected($$update public.notifications set read_at = '2000-01-01'$$), 1,
  'notifications: the recipient marks theirs read');
select ok((select read_at > now() - interval '1 minute' from public.notifications),
  'notifications: the read time is the server''s, not the one the client sent');
select is(public.mark_notifications_read(), 0, 'mark_notifications_read: nothing left unread');
update public.notifications set read_at = null;
select is(public.mark_notifications_read(array[gen_random_uuid()]), 0,
  'mark_notifications_read: ids that are not the caller''s change nothing');
select is(public.mark_notifications_read(), 1, 'mark_notifications_read: marks the caller''s unread ones');

select pg_temp.act_as('01');
select is(pg_temp.rows_affected($$select * from public.notifications where user_id = 'c6000000-0000-4000-8000-000000000005'$$), 0,
  'notifications: nobody else reads them (the organization''s owner included)');
select is(pg_temp.rows_affected($$update public.notifications set read_at = null where user_id = 'c6000000-0000-4000-8000-000000000005'$$), 0,
  'notifications: nor marks them');
select ok(not has_function_privilege('authenticated', 'private.notify(uuid, text, jsonb)', 'execute')
          and not has_function_privilege('anon', 'private.notify(uuid, text, jsonb)', 'execute'),
  'notifications: the writer is not executable by client roles');

-- Made a team admin by the owner: told; then leaves the organization and so the team.
update public.teams set admin_id = 'c6000000-0000-4000-8000-000000000005' where id = 'c60000c0-0000-4000-8000-000000000001';
select pg_temp.act_as('05');
select is((select array_agg(type || ':' || (payload ->> 'role') order by created_at, type) from public.notifications),
  array['organization.member_added:member', 'team.member_added:admin'],
  'finding 4: made a team''s admin, the member is told that too');
select is(pg_temp.rows_affected($$delete from public.organization_members where user_id = 'c6000000-0000-4000-8000-000000000005'$$), 1,
  'finding 4: the added member leaves the organization');
reset role;
select is((select count(*)::int from public.team_members where user_id = 'c6000000-0000-4000-8000-000000000005')
        + (select count(*)::int from public.teams where admin_id = 'c6000000-0000-4000-8000-000000000005'), 0,
  'finding 4: and with it the team they were made admin of');

set local role authenticated;
select pg_temp.act_as('01');
select lives_ok(
  $$select public.transfer_organization_ownership('c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000003')$$,
  'finding 4: ownership goes to a member');
select pg_temp.act_as('03');
select is((select type from public.notifications where type like 'organization.ownership%'), 'organization.ownership_received',
  'finding 4: the new owner is told');

-- =======================================================================================
-- Finding 7: "not found" raises PT404, which PostgREST answers as 404.
-- =======================================================================================
select throws_ok($$select * from public.update_journal_entry(gen_random_uuid(), '{"title": "x"}')$$,
  'PT404', 'entry not found', 'finding 7: update_journal_entry of a missing entry is PT404');
select throws_ok($$select * from public.list_team_members(gen_random_uuid())$$,
  'PT404', 'team not found', 'finding 7: list_team_members of a missing team is PT404');
reset role;
select is((select array_agg(p.oid::regprocedure::text order by 1)
             from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
            where n.nspname in ('public', 'private') and p.prosrc ~ '''P0002'''),
  null, 'finding 7: no function of ours raises P0002 any more');

-- =======================================================================================
-- Finding 6: bad input raises class 22 (data exception), which the API answers with a 400.
-- =======================================================================================
set local role authenticated;
select pg_temp.act_as('06');
select throws_ok($$select public.update_journal_entry('c60000f0-0000-4000-8000-000000000001', '{"notebook_id": "nope"}')$$,
  '22P02', null, 'finding 6: a malformed uuid in a patch is 22P02');
select throws_ok($$select public.update_journal_entry('c60000f0-0000-4000-8000-000000000001', '{"tags": "solo"}')$$,
  '22023', null, 'finding 6: tags that are not an array are 22023');
select throws_ok($$select public.update_journal_entry('c60000f0-0000-4000-8000-000000000001', '[1]')$$,
  '22023', 'patch must be a JSON object', 'finding 6: a patch that is not an object is 22023');
select throws_ok($$select public.update_my_profile('"x"')$$,
  '22023', 'patch must be a JSON object', 'finding 6: a profile patch that is not an object is 22023');
select throws_ok($$insert into public.goals (title, target_date) values ('year zero', '0000-01-01')$$,
  '22008', null, 'finding 6: target_date 0000-01-01 is 22008 (out of range)');
select pg_temp.act_as('03');
select throws_ok($$select public.transfer_organization_ownership('c60000a0-0000-4000-8000-000000000001', null)$$,
  '22023', null, 'finding 6: a null new owner is 22023');

-- =======================================================================================
-- Finding 8: client roles do not read the internal scope columns.
-- =======================================================================================
reset role;
select set_config('request.jwt.claims', '', true);
-- By T's admin: an entry names only a team its owner belongs to (issue 20).
insert into public.journal_entries (id, user_id, title, metadata_visibility, content_visibility, team_id) values
  ('c60000f0-0000-4000-8000-000000000009', 'c6000000-0000-4000-8000-000000000001', 'public, text for the team',
   'public', 'team', 'c60000c0-0000-4000-8000-000000000001');
insert into public.journal_entry_contents (entry_id, content) values ('c60000f0-0000-4000-8000-000000000009', 'team text');
set local role anon;
select throws_ok($$select meta_scope_id from public.journal_entries$$, '42501', null,
  'finding 8: anon cannot read journal_entries.meta_scope_id');
select throws_ok($$select content_scope_id from public.journal_entries$$, '42501', null,
  'finding 8: anon cannot read journal_entries.content_scope_id (it named the team of a public entry''s text)');
select throws_ok($$select content_scope_id from public.journal_entry_contents$$, '42501', null,
  'finding 8: anon cannot read the scope columns of contents');
select throws_ok($$select meta_scope_id from public.notebooks$$, '42501', null,
  'finding 8: anon cannot read notebooks.meta_scope_id');
select results_eq(
  $$select title, content, content_hidden from public.journal_entry_details where id = 'c60000f0-0000-4000-8000-000000000009'$$,
  $$values ('public, text for the team', null::text, true)$$,
  'finding 8: anon still reads public entries through journal_entry_details (text hidden)');
set local role authenticated;
select pg_temp.act_as('04');
select throws_ok($$select meta_scope_id, content_scope_id from public.journal_entry_contents$$, '42501', null,
  'finding 8: signed-in clients cannot read the scope columns of contents');
-- journal_entries.meta_scope_id stays readable for signed-in clients (the feed's index
-- conditions name it): on every row they may read it is null, their own entry's, or a
-- team/organization they belong to. Checked for each person here and the super admin.
select is(pg_temp.scope_ids_beyond_the_reader(), null::text[],
  'finding 8: meta_scope_id tells a signed-in reader nothing they are not part of');

-- The hidden columns are withheld by column grants, so a column added later must be granted
-- on purpose (or journal_entry_details breaks for anon): these name exactly what is withheld.
reset role;
create function pg_temp.withheld(tbl regclass, who text) returns text[]
language sql stable as $$
  select coalesce(array_agg(a.attname::text order by a.attname), '{}')
    from pg_catalog.pg_attribute a
   where a.attrelid = tbl and a.attnum > 0 and not a.attisdropped
     and not has_column_privilege(who, tbl, a.attnum, 'select')
$$;
select is(pg_temp.withheld('public.journal_entries', 'anon'), array['content_scope_id', 'meta_scope_id'],
  'finding 8: anon reads every column of journal_entries but the two scope ids (grant new columns to anon)');
select is(pg_temp.withheld('public.journal_entries', 'authenticated'), '{}'::text[],
  'finding 8: signed-in clients read every column of journal_entries');
select is(pg_temp.withheld('public.journal_entry_contents', 'anon'), array['content_scope_id', 'meta_scope_id'],
  'finding 8: anon reads every column of journal_entry_contents but the two scope ids (grant new columns)');
select is(pg_temp.withheld('public.journal_entry_contents', 'authenticated'), array['content_scope_id', 'meta_scope_id'],
  'finding 8: signed-in clients read every column of journal_entry_contents but the two scope ids (grant new columns)');
select is(pg_temp.withheld('public.notebooks', 'anon'), array['meta_scope_id'],
  'finding 8: anon reads every column of notebooks but meta_scope_id (grant new columns to anon)');

select * from finish();
rollback;
