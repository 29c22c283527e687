-- Organizations and teams: the "Who may" column of SPEC.md's Organizations and Teams
-- endpoint tables, row by row, positive and negative, each as the right kind of user
-- (owner, admin, member, non-member, super admin), enforced by RLS, guard triggers and the
-- SQL functions a client reaches through PostgREST. Then: team membership hangs off organization
-- membership (in the schema), ownership goes only to members, and members added are told.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(144);

-- ---------------------------------------------------------------------------------------
-- People (b2000000-...-NN):
--   01 Ona   creates organization O (owner)      06 Max   member of O, removed by Ona
--   02 Ada   admin of O                          07 Ned   joins O, then leaves
--   03 Mia   member of O                         08 Tia   member of O, admin of team T1
--   04 Nick  stranger (no membership)            09 Ulla  member of O, in no team at first
--   05 Sam   super admin (no membership)
-- O = b20000a0-...-01 (O2 = -02, deleted by its owner); T1 = b20000c0-...-01, T2 = -02.
-- ---------------------------------------------------------------------------------------
select tests.create_user(to_jsonb(u)) from (values 
  ('b2000000-0000-4000-8000-000000000001', 'pgtap-org-ona@example.test', '{"full_name": "Ona Owner"}'),
  ('b2000000-0000-4000-8000-000000000002', 'pgtap-org-ada@example.test', '{"full_name": "Ada Admin"}'),
  ('b2000000-0000-4000-8000-000000000003', 'pgtap-org-mia@example.test', '{"full_name": "Mia Member"}'),
  ('b2000000-0000-4000-8000-000000000004', 'pgtap-org-nick@example.test', '{"full_name": "Nick Nonmember"}'),
  ('b2000000-0000-4000-8000-000000000005', 'pgtap-org-sam@example.test', '{"full_name": "Sam Super"}'),
  ('b2000000-0000-4000-8000-000000000006', 'pgtap-org-max@example.test', '{"full_name": "Max Member"}'),
  ('b2000000-0000-4000-8000-000000000007', 'pgtap-org-ned@example.test', '{"full_name": "Ned Newcomer"}'),
  ('b2000000-0000-4000-8000-000000000008', 'pgtap-org-tia@example.test', '{"full_name": "Tia Teamadmin"}'),
  ('b2000000-0000-4000-8000-000000000009', 'pgtap-org-ulla@example.test', '{"full_name": "Ulla User"}')) u (id, email, raw_user_meta_data);
-- Ona's avatar: the public URL of her own folder in this project's avatars bucket (Vault's
-- project_url is the host), kept in a setting for the expectations below.
select set_config('tests.ona_avatar', rtrim(s.decrypted_secret, '/')
       || '/storage/v1/object/public/avatars/b2000000-0000-4000-8000-000000000001/ona.png', false)
  from vault.decrypted_secrets s where s.name = 'project_url';
update public.profiles set avatar_url = current_setting('tests.ona_avatar') where id = 'b2000000-0000-4000-8000-000000000001';
update public.profiles set role = 'super_admin' where id = 'b2000000-0000-4000-8000-000000000005';

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

set local role authenticated;

-- =======================================================================================
-- POST /api/organizations: any authenticated user; the creator becomes owner.
-- =======================================================================================
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select lives_ok(
  $$insert into public.organizations (id, name, description, owner_id)
    values ('b20000a0-0000-4000-8000-000000000001', 'pgtap Org', 'the test organization', 'b2000000-0000-4000-8000-000000000001')$$,
  'create org: an authenticated user creates an organization naming themselves owner');
select results_eq(
  $$select user_id, role from public.organization_members where org_id = 'b20000a0-0000-4000-8000-000000000001'$$,
  $$values ('b2000000-0000-4000-8000-000000000001'::uuid, 'owner'::text)$$,
  'create org: the creator is the organization''s only member, with role owner');
select results_eq(
  $$select name, description, owner_id, settings from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'$$,
  $$values ('pgtap Org'::text, 'the test organization'::text, 'b2000000-0000-4000-8000-000000000001'::uuid, '{}'::jsonb)$$,
  'create org: the creator reads it back (owner_id set, settings default {})');
select throws_ok(
  $$insert into public.organizations (name, owner_id) values ('pgtap Org for someone else', 'b2000000-0000-4000-8000-000000000004')$$,
  '42501', 'new row violates row-level security policy for table "organizations"',
  'create org: nobody creates an organization owned by someone else (42501)');

-- =======================================================================================
-- POST /api/organizations/:id/members: owners only; role owner is never inserted.
-- =======================================================================================
select lives_ok(
  $$insert into public.organization_members (org_id, user_id, role)
    values ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000002', 'admin')$$,
  'add member: the owner adds a member with role admin');
select lives_ok(
  $$insert into public.organization_members (org_id, user_id, role) values
      ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000003', 'member'),
      ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000006', 'member'),
      ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000008', 'member'),
      ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000009', 'member')$$,
  'add member: the owner adds members with role member');
select throws_ok(
  $$insert into public.organization_members (org_id, user_id, role)
    values ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000007', 'owner')$$,
  '42501', 'new row violates row-level security policy for table "organization_members"',
  'add member: even the owner cannot insert a member with role owner (ownership moves only by transfer) (42501)');
select results_eq(
  $$select user_id, role from public.organization_members where org_id = 'b20000a0-0000-4000-8000-000000000001' order by user_id$$,
  $$values ('b2000000-0000-4000-8000-000000000001'::uuid, 'owner'::text), ('b2000000-0000-4000-8000-000000000002'::uuid, 'admin'::text),
           ('b2000000-0000-4000-8000-000000000003'::uuid, 'member'::text), ('b2000000-0000-4000-8000-000000000006'::uuid, 'member'::text),
           ('b2000000-0000-4000-8000-000000000008'::uuid, 'member'::text), ('b2000000-0000-4000-8000-000000000009'::uuid, 'member'::text)$$,
  'add member: the organization has exactly one owner and the added admin and members');

-- =======================================================================================
-- As the organization's admin (Ada): reads, but none of the owner's rights.
-- =======================================================================================
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select results_eq(
  $$select id from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'$$,
  $$values ('b20000a0-0000-4000-8000-000000000001'::uuid)$$,
  'read org: an admin member reads the organization');
select throws_ok(
  $$insert into public.organization_members (org_id, user_id, role)
    values ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000007', 'member')$$,
  '42501', 'new row violates row-level security policy for table "organization_members"',
  'add member: an admin cannot add a member (42501)');
select throws_ok(
  $$insert into public.organization_members (org_id, user_id, role)
    values ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000007', 'admin')$$,
  '42501', 'new row violates row-level security policy for table "organization_members"',
  'add member: an admin cannot add an admin (42501)');
select is(pg_temp.rows_affected($$update public.organizations set name = 'renamed by admin' where id = 'b20000a0-0000-4000-8000-000000000001'$$), 0,
  'update org: an admin cannot update the organization (0 rows)');
select is(pg_temp.rows_affected($$delete from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'$$), 0,
  'delete org: an admin cannot delete the organization (0 rows)');
select is(pg_temp.rows_affected($$update public.organization_members set role = 'admin'
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000003'$$), 0,
  'change role: an admin cannot change a member''s role (0 rows)');
select is(pg_temp.rows_affected($$delete from public.organization_members
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000006'$$), 0,
  'remove member: an admin cannot remove another member (0 rows)');
select throws_ok(
  $$select public.transfer_organization_ownership('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000002')$$,
  '42501', 'only the current owner may transfer ownership', 'transfer: an admin cannot take ownership (42501)');

-- =======================================================================================
-- As a plain member (Mia).
-- =======================================================================================
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select results_eq(
  $$select id from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'$$,
  $$values ('b20000a0-0000-4000-8000-000000000001'::uuid)$$,
  'read org: a member reads the organization');
select is((select count(*)::integer from public.organization_members where org_id = 'b20000a0-0000-4000-8000-000000000001'), 6,
  'read members: a member reads the organization''s membership rows');
select throws_ok(
  $$insert into public.organization_members (org_id, user_id, role)
    values ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000007', 'member')$$,
  '42501', 'new row violates row-level security policy for table "organization_members"',
  'add member: a member cannot add a member (42501)');
select is(pg_temp.rows_affected($$update public.organizations set description = 'changed by member' where id = 'b20000a0-0000-4000-8000-000000000001'$$), 0,
  'update org: a member cannot update the organization (0 rows)');
select is(pg_temp.rows_affected($$delete from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'$$), 0,
  'delete org: a member cannot delete the organization (0 rows)');
select is(pg_temp.rows_affected($$update public.organization_members set role = 'admin'
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000003'$$), 0,
  'change role: a member cannot promote themselves (0 rows)');
select is(pg_temp.rows_affected($$delete from public.organization_members
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000006'$$), 0,
  'remove member: a member cannot remove another member (0 rows)');
select throws_ok(
  $$select public.transfer_organization_ownership('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000003')$$,
  '42501', 'only the current owner may transfer ownership', 'transfer: a member cannot take ownership (42501)');
select results_eq(
  $$select user_id, full_name, avatar_url, role, is_owner, joined_at is null
      from public.list_organization_members('b20000a0-0000-4000-8000-000000000001') order by is_owner desc, user_id$$,
  $$values ('b2000000-0000-4000-8000-000000000001'::uuid, 'Ona Owner'::text, current_setting('tests.ona_avatar'), 'owner'::text, true, true),
           ('b2000000-0000-4000-8000-000000000002'::uuid, 'Ada Admin'::text, null::text, 'admin'::text, false, false),
           ('b2000000-0000-4000-8000-000000000003'::uuid, 'Mia Member'::text, null::text, 'member'::text, false, false),
           ('b2000000-0000-4000-8000-000000000006'::uuid, 'Max Member'::text, null::text, 'member'::text, false, false),
           ('b2000000-0000-4000-8000-000000000008'::uuid, 'Tia Teamadmin'::text, null::text, 'member'::text, false, false),
           ('b2000000-0000-4000-8000-000000000009'::uuid, 'Ulla User'::text, null::text, 'member'::text, false, false)$$,
  'list_organization_members: a member gets names, avatars, roles and is_owner; joined_at is null for the owner only');
select is(
  (select user_id from public.list_organization_members('b20000a0-0000-4000-8000-000000000001') limit 1),
  'b2000000-0000-4000-8000-000000000001'::uuid,
  'list_organization_members: the owner comes first');

-- =======================================================================================
-- As a non-member (Nick).
-- =======================================================================================
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000004', 'role', 'authenticated')::text, true);
select is_empty($$select 1 from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'$$,
  'read org: a non-member does not see the organization');
select is_empty($$select 1 from public.organization_members where org_id = 'b20000a0-0000-4000-8000-000000000001'$$,
  'read members: a non-member sees none of its membership rows');
select throws_ok(
  $$select * from public.list_organization_members('b20000a0-0000-4000-8000-000000000001')$$,
  'PT404', 'organization not found', 'list_organization_members: a non-member is refused as if it did not exist (PT404)');
select throws_ok(
  $$select public.transfer_organization_ownership('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000004')$$,
  'PT404', 'organization not found', 'transfer: a non-member is refused as if it did not exist (PT404)');
select is(pg_temp.rows_affected($$update public.organizations set name = 'hijacked' where id = 'b20000a0-0000-4000-8000-000000000001'$$), 0,
  'update org: a non-member cannot update the organization (0 rows)');
select is(pg_temp.rows_affected($$delete from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'$$), 0,
  'delete org: a non-member cannot delete the organization (0 rows)');
select throws_ok(
  $$insert into public.organization_members (org_id, user_id, role)
    values ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000004', 'member')$$,
  '42501', 'new row violates row-level security policy for table "organization_members"',
  'add member: a non-member cannot add themselves (42501)');

-- =======================================================================================
-- As the owner (Ona): update, roles, removals.
-- =======================================================================================
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$update public.organizations
    set name = 'pgtap Org renamed', description = 'new description', settings = '{"color": "teal"}'
  where id = 'b20000a0-0000-4000-8000-000000000001'$$), 1,
  'update org: the owner updates name, description and settings');
select results_eq(
  $$select name, description, settings from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'$$,
  $$values ('pgtap Org renamed'::text, 'new description'::text, '{"color": "teal"}'::jsonb)$$,
  'update org: the owner''s changes are stored');
select is(pg_temp.rows_affected($$update public.organization_members set role = 'admin'
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000003'$$), 1,
  'change role: the owner makes a member admin');
select is((select role from public.organization_members
            where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000003'), 'admin',
  'change role: the new role is stored');
select is(pg_temp.rows_affected($$update public.organization_members set role = 'member'
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000003'$$), 1,
  'change role: the owner makes an admin member again');
select throws_ok(
  $$update public.organization_members set role = 'owner'
     where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000002'$$,
  '42501', 'new row violates row-level security policy for table "organization_members"',
  'change role: the owner cannot make anyone owner through the member row (42501)');
select is(pg_temp.rows_affected($$update public.organization_members set role = 'admin'
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000001'$$), 0,
  'change role: the owner''s own row cannot be changed (0 rows)');
select is(pg_temp.rows_affected($$delete from public.organization_members
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000001'$$), 0,
  'remove member: the owner row cannot be removed (0 rows)');
select is(pg_temp.rows_affected($$delete from public.organization_members
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000006'$$), 1,
  'remove member: the owner removes a member');
select lives_ok(
  $$insert into public.organization_members (org_id, user_id, role)
    values ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000007', 'member')$$,
  'add member: the owner adds Ned');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000007', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$delete from public.organization_members
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000007'$$), 1,
  'remove member: a member removes themselves');
select is_empty($$select 1 from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'$$,
  'read org: a member who left no longer sees the organization');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select results_eq(
  $$select user_id, role from public.organization_members where org_id = 'b20000a0-0000-4000-8000-000000000001' order by user_id$$,
  $$values ('b2000000-0000-4000-8000-000000000001'::uuid, 'owner'::text), ('b2000000-0000-4000-8000-000000000002'::uuid, 'admin'::text),
           ('b2000000-0000-4000-8000-000000000003'::uuid, 'member'::text), ('b2000000-0000-4000-8000-000000000008'::uuid, 'member'::text),
           ('b2000000-0000-4000-8000-000000000009'::uuid, 'member'::text)$$,
  'remove member: Max (removed) and Ned (left) are gone, everyone else is unchanged');

-- DELETE /api/organizations/:id by its owner (a second organization).
select lives_ok(
  $$insert into public.organizations (id, name, owner_id)
    values ('b20000a0-0000-4000-8000-000000000002', 'pgtap Org to delete', 'b2000000-0000-4000-8000-000000000001')$$,
  'delete org: the owner creates a second organization');
select is(pg_temp.rows_affected($$delete from public.organizations where id = 'b20000a0-0000-4000-8000-000000000002'$$), 1,
  'delete org: the owner deletes it');

-- =======================================================================================
-- Teams: POST /api/teams (organization members), the admin becomes an admin member.
-- =======================================================================================
select lives_ok(
  $$insert into public.teams (id, name, description, org_id, admin_id)
    values ('b20000c0-0000-4000-8000-000000000001', 'pgtap Team 1', 'first team', 'b20000a0-0000-4000-8000-000000000001',
            'b2000000-0000-4000-8000-000000000008')$$,
  'create team: the org owner creates T1 with Tia (an org member) as admin');
select results_eq(
  $$select user_id, role from public.team_members where team_id = 'b20000c0-0000-4000-8000-000000000001'$$,
  $$values ('b2000000-0000-4000-8000-000000000008'::uuid, 'admin'::text)$$,
  'create team: the team''s admin becomes its admin member');
select throws_ok(
  $$insert into public.teams (name, org_id, admin_id)
    values ('pgtap bad admin', 'b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000004')$$,
  '22023', 'admin_id: the team admin must be a member of the organization',
  'create team: the admin must be an organization member (22023)');

select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select lives_ok(
  $$insert into public.teams (id, name, org_id, admin_id)
    values ('b20000c0-0000-4000-8000-000000000002', 'pgtap Team 2', 'b20000a0-0000-4000-8000-000000000001',
            'b2000000-0000-4000-8000-000000000003')$$,
  'create team: a plain org member creates T2, as its admin');
select results_eq(
  $$select user_id, role from public.team_members where team_id = 'b20000c0-0000-4000-8000-000000000002'$$,
  $$values ('b2000000-0000-4000-8000-000000000003'::uuid, 'admin'::text)$$,
  'create team: the creating member is T2''s admin member');

select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000004', 'role', 'authenticated')::text, true);
select throws_ok(
  $$insert into public.teams (name, org_id, admin_id)
    values ('pgtap intruder team', 'b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000004')$$,
  '42501', 'new row violates row-level security policy for table "teams"',
  'create team: a non-member cannot create a team in the organization (42501)');
select is_empty($$select 1 from public.teams where org_id = 'b20000a0-0000-4000-8000-000000000001'$$,
  'read team: a non-member sees none of the organization''s teams');
select is_empty($$select 1 from public.team_members where team_id = 'b20000c0-0000-4000-8000-000000000001'$$,
  'read team members: a non-member sees none of T1''s membership rows');
select throws_ok(
  $$select * from public.list_team_members('b20000c0-0000-4000-8000-000000000001')$$,
  'PT404', 'team not found', 'list_team_members: a non-member is refused as if it did not exist (PT404)');
select is(pg_temp.rows_affected($$update public.teams set name = 'hijacked' where id = 'b20000c0-0000-4000-8000-000000000001'$$), 0,
  'update team: a non-member cannot update T1 (0 rows)');

-- =======================================================================================
-- As T1's admin (Tia, a plain org member): name, description and members.
-- =======================================================================================
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000008', 'role', 'authenticated')::text, true);
select lives_ok(
  $$insert into public.team_members (team_id, user_id, role) values
      ('b20000c0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000003', 'member'),
      ('b20000c0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000002', 'member')$$,
  'add team member: the team admin adds org members Mia and Ada');
select throws_ok(
  $$insert into public.team_members (team_id, user_id, role)
    values ('b20000c0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000004', 'member')$$,
  '22023', 'user_id: must already be a member of the team''s organization',
  'add team member: a user outside the organization cannot be added (22023)');
select throws_ok(
  $$insert into public.team_members (team_id, user_id, role)
    values ('b20000c0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000006', 'member')$$,
  '22023', 'user_id: must already be a member of the team''s organization',
  'add team member: a former org member cannot be added (22023)');
select is(pg_temp.rows_affected($$update public.teams set name = 'pgtap Team 1 renamed', description = 'renamed by its admin'
    where id = 'b20000c0-0000-4000-8000-000000000001'$$), 1,
  'update team: the team admin updates name and description');
select results_eq(
  $$select name, description, admin_id from public.teams where id = 'b20000c0-0000-4000-8000-000000000001'$$,
  $$values ('pgtap Team 1 renamed'::text, 'renamed by its admin'::text, 'b2000000-0000-4000-8000-000000000008'::uuid)$$,
  'update team: the team admin''s changes are stored');
select throws_ok(
  $$update public.teams set admin_id = 'b2000000-0000-4000-8000-000000000003' where id = 'b20000c0-0000-4000-8000-000000000001'$$,
  '42501', 'only organization owners may change admin_id',
  'update team: a team admin who is not the org owner cannot change admin_id (42501)');
select throws_ok(
  $$update public.team_members set role = 'member'
     where team_id = 'b20000c0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000008'$$,
  '42501', 'the team admin''s role cannot be changed here; change the team''s admin_id',
  'change team role: the team admin''s own role cannot be changed through team_members (42501)');
select throws_ok(
  $$delete from public.team_members
     where team_id = 'b20000c0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000008'$$,
  '42501', 'the team admin cannot be removed; change the team''s admin_id first',
  'remove team member: the team''s admin_id member cannot be removed (42501)');
select is(pg_temp.rows_affected($$update public.team_members set role = 'admin'
    where team_id = 'b20000c0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000002'$$), 1,
  'change team role: the team admin makes a member admin');
select is(pg_temp.rows_affected($$update public.team_members set role = 'member'
    where team_id = 'b20000c0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000002'$$), 1,
  'change team role: the team admin makes them member again');
select lives_ok(
  $$insert into public.team_members (team_id, user_id, role)
    values ('b20000c0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000009', 'member')$$,
  'add team member: the team admin adds Ulla');
select is(pg_temp.rows_affected($$delete from public.team_members
    where team_id = 'b20000c0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000009'$$), 1,
  'remove team member: the team admin removes a member');

-- =======================================================================================
-- As a plain member of T1 (Mia, who is T2's admin): no admin rights on T1.
-- =======================================================================================
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$update public.teams set name = 'renamed by member' where id = 'b20000c0-0000-4000-8000-000000000001'$$), 0,
  'update team: a non-admin team member cannot update name (0 rows)');
select is(pg_temp.rows_affected($$delete from public.teams where id = 'b20000c0-0000-4000-8000-000000000001'$$), 0,
  'delete team: a non-admin team member cannot delete the team (0 rows)');
select throws_ok(
  $$insert into public.team_members (team_id, user_id, role)
    values ('b20000c0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000009', 'member')$$,
  '42501', 'new row violates row-level security policy for table "team_members"',
  'add team member: a non-admin team member cannot add members (42501)');
select is(pg_temp.rows_affected($$update public.team_members set role = 'admin'
    where team_id = 'b20000c0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000003'$$), 0,
  'change team role: a non-admin team member cannot promote themselves (0 rows)');
select is(pg_temp.rows_affected($$delete from public.team_members
    where team_id = 'b20000c0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000002'$$), 0,
  'remove team member: a non-admin team member cannot remove another member (0 rows)');
select is(pg_temp.rows_affected($$delete from public.team_members
    where team_id = 'b20000c0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000003'$$), 1,
  'remove team member: a member removes themselves');
select lives_ok(
  $$insert into public.team_members (team_id, user_id, role)
    values ('b20000c0-0000-4000-8000-000000000002', 'b2000000-0000-4000-8000-000000000009', 'member')$$,
  'add team member: T2''s admin (a plain org member) adds Ulla to T2');

-- =======================================================================================
-- As an org member in no team of T1 (Ulla): reads teams and member lists.
-- =======================================================================================
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000009', 'role', 'authenticated')::text, true);
select set_eq(
  $$select id from public.teams where org_id = 'b20000a0-0000-4000-8000-000000000001'$$,
  $$values ('b20000c0-0000-4000-8000-000000000001'::uuid), ('b20000c0-0000-4000-8000-000000000002'::uuid)$$,
  'read team: an organization member reads all of its teams');
select results_eq(
  $$select user_id, full_name, role, is_admin, joined_at is null
      from public.list_team_members('b20000c0-0000-4000-8000-000000000001') order by is_admin desc, user_id$$,
  $$values ('b2000000-0000-4000-8000-000000000008'::uuid, 'Tia Teamadmin'::text, 'admin'::text, true, true),
           ('b2000000-0000-4000-8000-000000000002'::uuid, 'Ada Admin'::text, 'member'::text, false, false)$$,
  'list_team_members: an org member outside the team gets the members; joined_at is null for the admin only');
select is(pg_temp.rows_affected($$delete from public.teams where id = 'b20000c0-0000-4000-8000-000000000002'$$), 0,
  'delete team: a team member who is not its admin cannot delete it (0 rows)');
select is(pg_temp.rows_affected($$update public.teams set admin_id = 'b2000000-0000-4000-8000-000000000009' where id = 'b20000c0-0000-4000-8000-000000000002'$$), 0,
  'update team: a team member cannot make themselves admin (0 rows)');

select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$delete from public.teams where id = 'b20000c0-0000-4000-8000-000000000002'$$), 1,
  'delete team: the team admin deletes T2');
select is_empty($$select 1 from public.team_members where team_id = 'b20000c0-0000-4000-8000-000000000002'$$,
  'delete team: its memberships are gone');

-- =======================================================================================
-- As the org owner (Ona), not a member of T1: admin_id is the owner's to change.
-- =======================================================================================
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select throws_ok(
  $$update public.teams set name = 'renamed by org owner' where id = 'b20000c0-0000-4000-8000-000000000001'$$,
  '42501', 'only team admins may change the team''s name, description and settings',
  'update team: the org owner, not a team admin, cannot change the name (42501)');
select throws_ok(
  $$update public.teams set admin_id = 'b2000000-0000-4000-8000-000000000004' where id = 'b20000c0-0000-4000-8000-000000000001'$$,
  '22023', 'admin_id: the team admin must be a member of the organization',
  'update team: the new admin must be an organization member (22023)');
select is(pg_temp.rows_affected($$update public.teams set admin_id = 'b2000000-0000-4000-8000-000000000002'
    where id = 'b20000c0-0000-4000-8000-000000000001'$$), 1,
  'update team: the org owner changes T1''s admin_id to Ada');
select results_eq(
  $$select t.admin_id, m.role from public.teams t
      join public.team_members m on m.team_id = t.id and m.user_id = t.admin_id
     where t.id = 'b20000c0-0000-4000-8000-000000000001'$$,
  $$values ('b2000000-0000-4000-8000-000000000002'::uuid, 'admin'::text)$$,
  'update team: the new admin is stored and is an admin member');

-- Leaving an organization means leaving its teams.
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select lives_ok(
  $$insert into public.team_members (team_id, user_id, role)
    values ('b20000c0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000009', 'member')$$,
  'add team member: the new team admin adds Ulla to T1');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$delete from public.organization_members
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000009'$$), 1,
  'remove member: the owner removes Ulla from the organization');
reset role;
select set_config('request.jwt.claims', '', true);
select is_empty($$select 1 from public.team_members where user_id = 'b2000000-0000-4000-8000-000000000009'$$,
  'remove member: someone removed from an organization is removed from its teams');

-- A team admin who leaves the organization hands the team to the organization's owner.
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$delete from public.organization_members
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000002'$$), 1,
  'remove member: T1''s admin (Ada) leaves the organization');
reset role;
select set_config('request.jwt.claims', '', true);
select is((select admin_id from public.teams where id = 'b20000c0-0000-4000-8000-000000000001'),
  'b2000000-0000-4000-8000-000000000001'::uuid,
  'remove member: the team whose admin left now has the organization owner as admin_id');
select results_eq(
  $$select user_id, role from public.team_members
     where team_id = 'b20000c0-0000-4000-8000-000000000001'
       and user_id in ('b2000000-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000002')$$,
  $$values ('b2000000-0000-4000-8000-000000000001'::uuid, 'admin'::text)$$,
  'remove member: the org owner is T1''s admin member and the leaver is no longer in T1');

-- =======================================================================================
-- POST /api/organizations/:id/transfer-ownership: the current owner only.
-- =======================================================================================
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select throws_ok(
  $$select public.transfer_organization_ownership('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-0000000000ff')$$,
  '22023', 'new_owner_id: the new owner must already be a member of the organization',
  'transfer: an unknown user id is refused (22023)');
select throws_ok(
  $$select public.transfer_organization_ownership('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000004')$$,
  '22023', 'new_owner_id: the new owner must already be a member of the organization',
  'transfer: an existing user outside the organization gets the same answer as an unknown id (22023)');
select is(
  (select owner_id from public.transfer_organization_ownership('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000003')),
  'b2000000-0000-4000-8000-000000000003'::uuid,
  'transfer: the current owner hands the organization to Mia; the function returns the updated organization');
select is((select owner_id from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'),
  'b2000000-0000-4000-8000-000000000003'::uuid, 'transfer: organizations.owner_id is the new owner');
select results_eq(
  $$select user_id, role from public.organization_members where org_id = 'b20000a0-0000-4000-8000-000000000001'
     and role in ('owner', 'admin') order by user_id$$,
  $$values ('b2000000-0000-4000-8000-000000000001'::uuid, 'admin'::text), ('b2000000-0000-4000-8000-000000000003'::uuid, 'owner'::text)$$,
  'transfer: the old owner is now admin, the new owner is the single owner row');
select is(pg_temp.rows_affected($$update public.organizations set name = 'old owner rename' where id = 'b20000a0-0000-4000-8000-000000000001'$$), 0,
  'transfer: the old owner can no longer update the organization (0 rows)');
select throws_ok(
  $$select public.transfer_organization_ownership('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000001')$$,
  '42501', 'only the current owner may transfer ownership', 'transfer: the old owner cannot take it back (42501)');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$update public.organizations set name = 'pgtap Org by Mia' where id = 'b20000a0-0000-4000-8000-000000000001'$$), 1,
  'transfer: the new owner updates the organization');
select lives_ok(
  $$insert into public.organization_members (org_id, user_id, role)
    values ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000006', 'member')$$,
  'transfer: the new owner adds members');

-- =======================================================================================
-- Super admin (Sam, no membership): full access to organizations and teams.
-- =======================================================================================
select set_config('request.jwt.claims',
  json_build_object('sub', 'b2000000-0000-4000-8000-000000000005', 'role', 'authenticated')::text, true);
select results_eq(
  $$select id, owner_id from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'$$,
  $$values ('b20000a0-0000-4000-8000-000000000001'::uuid, 'b2000000-0000-4000-8000-000000000003'::uuid)$$,
  'super admin: reads the organization');
select set_eq(
  $$select user_id, role from public.list_organization_members('b20000a0-0000-4000-8000-000000000001')$$,
  $$values ('b2000000-0000-4000-8000-000000000003'::uuid, 'owner'::text), ('b2000000-0000-4000-8000-000000000001'::uuid, 'admin'::text),
           ('b2000000-0000-4000-8000-000000000006'::uuid, 'member'::text), ('b2000000-0000-4000-8000-000000000008'::uuid, 'member'::text)$$,
  'super admin: list_organization_members works without membership');
select results_eq(
  $$select id, admin_id from public.teams where org_id = 'b20000a0-0000-4000-8000-000000000001'$$,
  $$values ('b20000c0-0000-4000-8000-000000000001'::uuid, 'b2000000-0000-4000-8000-000000000001'::uuid)$$,
  'super admin: reads the organization''s teams');
select set_eq(
  $$select user_id, role, is_admin from public.list_team_members('b20000c0-0000-4000-8000-000000000001')$$,
  $$values ('b2000000-0000-4000-8000-000000000001'::uuid, 'admin'::text, true), ('b2000000-0000-4000-8000-000000000008'::uuid, 'admin'::text, false)$$,
  'super admin: list_team_members works without membership');
select is(pg_temp.rows_affected($$update public.organizations set description = 'edited by super admin'
    where id = 'b20000a0-0000-4000-8000-000000000001'$$), 1,
  'super admin: updates the organization');
select lives_ok(
  $$insert into public.organization_members (org_id, user_id, role)
    values ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000004', 'member')$$,
  'super admin: adds a member');
select throws_ok(
  $$insert into public.organization_members (org_id, user_id, role)
    values ('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000007', 'owner')$$,
  '42501', 'new row violates row-level security policy for table "organization_members"',
  'super admin: cannot insert a member with role owner either (42501)');
select is(pg_temp.rows_affected($$update public.organization_members set role = 'admin'
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000004'$$), 1,
  'super admin: changes a member''s role');
select is(pg_temp.rows_affected($$delete from public.organization_members
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000003'$$), 0,
  'super admin: the owner row cannot be removed even by a super admin (0 rows)');
select is(pg_temp.rows_affected($$delete from public.organization_members
    where org_id = 'b20000a0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000006'$$), 1,
  'super admin: removes a member');
select is(
  (select owner_id from public.transfer_organization_ownership('b20000a0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000001')),
  'b2000000-0000-4000-8000-000000000001'::uuid,
  'super admin: transfers ownership');
select is(pg_temp.rows_affected($$update public.teams set name = 'renamed by super admin', description = 'super'
    where id = 'b20000c0-0000-4000-8000-000000000001'$$), 1,
  'super admin: updates a team''s name and description');
select is(pg_temp.rows_affected($$update public.teams set admin_id = 'b2000000-0000-4000-8000-000000000004'
    where id = 'b20000c0-0000-4000-8000-000000000001'$$), 1,
  'super admin: changes a team''s admin_id');
select lives_ok(
  $$insert into public.team_members (team_id, user_id, role)
    values ('b20000c0-0000-4000-8000-000000000001', 'b2000000-0000-4000-8000-000000000003', 'member')$$,
  'super admin: adds a team member');
select throws_ok(
  $$update public.team_members set role = 'member'
     where team_id = 'b20000c0-0000-4000-8000-000000000001' and user_id = 'b2000000-0000-4000-8000-000000000004'$$,
  '42501', 'the team admin''s role cannot be changed here; change the team''s admin_id',
  'super admin: the team admin''s role is not changed through team_members either (42501)');
select is(pg_temp.rows_affected($$delete from public.teams where id = 'b20000c0-0000-4000-8000-000000000001'$$), 1,
  'super admin: deletes a team');
select is(pg_temp.rows_affected($$delete from public.organizations where id = 'b20000a0-0000-4000-8000-000000000001'$$), 1,
  'super admin: deletes the organization');

reset role;
select set_config('request.jwt.claims', '', true);
select is_empty(
  $$select 1 from public.organization_members where org_id = 'b20000a0-0000-4000-8000-000000000001'
    union all select 1 from public.teams where org_id = 'b20000a0-0000-4000-8000-000000000001'
    union all select 1 from public.team_members where user_id::text like 'b2000000-%'$$,
  'delete org: deleting the organization deleted its memberships, teams and team memberships');

-- =======================================================================================
-- Team membership hangs off organization membership; ownership goes only to members; members
-- added to an organization or made a team's admin are told, in notifications only they read.
-- People (c6000000-...-NN):
--   01 Olga  owner of O, admin of T          05 Nina  added to O by Olga
--   02 Mark  member of O and T               06 Nora  member of O and T
--   03 Tess  member of O                     07 Sue   super admin
--   04 Stan  stranger
-- O = c60000a0-...-01 (O2 = -02, Stan's own); T = c60000c0-...-01.
-- =======================================================================================
reset role;
select set_config('request.jwt.claims', '', true);
select tests.create_user(to_jsonb(u)) from (values 
  ('c6000000-0000-4000-8000-000000000001', 'pgtap-member-olga@example.test', '{"full_name": "Olga Owner"}'),
  ('c6000000-0000-4000-8000-000000000002', 'pgtap-member-mark@example.test', '{"full_name": "Mark Member"}'),
  ('c6000000-0000-4000-8000-000000000003', 'pgtap-member-tess@example.test', '{"full_name": "Tess Orgonly"}'),
  ('c6000000-0000-4000-8000-000000000004', 'pgtap-member-stan@example.test', '{"full_name": "Stan Stranger"}'),
  ('c6000000-0000-4000-8000-000000000005', 'pgtap-member-nina@example.test', '{"full_name": "Nina Newcomer"}'),
  ('c6000000-0000-4000-8000-000000000006', 'pgtap-member-nora@example.test', '{"full_name": "Nora Former"}'),
  ('c6000000-0000-4000-8000-000000000007', 'pgtap-member-sue@example.test', '{"full_name": "Sue Super"}')) u (id, email, raw_user_meta_data);
update public.profiles set role = 'super_admin' where id = 'c6000000-0000-4000-8000-000000000007';
insert into public.organizations (id, name, owner_id) values
  ('c60000a0-0000-4000-8000-000000000001', 'Orchard', 'c6000000-0000-4000-8000-000000000001'),
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

-- A team membership cannot outlive the organization membership: the schema holds it.
select is((select org_id from public.team_members
            where team_id = 'c60000c0-0000-4000-8000-000000000001' and user_id = 'c6000000-0000-4000-8000-000000000002'),
  'c60000a0-0000-4000-8000-000000000001'::uuid,
  'team membership: carries its team''s organization');
select is((select count(*)::int from pg_catalog.pg_constraint
            where conrelid = 'public.team_members'::regclass and contype = 'f'
              and confrelid = 'public.organization_members'::regclass and confdeltype = 'c'),
  1, 'team membership: team_members (org_id, user_id) references organization_members, on delete cascade');

-- The foreign key alone, with the trigger that also removes the team memberships switched off.
alter table public.organization_members disable trigger organization_members_leave_teams;
delete from public.organization_members
 where org_id = 'c60000a0-0000-4000-8000-000000000001' and user_id = 'c6000000-0000-4000-8000-000000000002';
select is_empty($$select 1 from public.team_members where user_id = 'c6000000-0000-4000-8000-000000000002'$$,
  'team membership: removing someone from the organization removes their team membership in the same statement');
alter table public.organization_members enable trigger organization_members_leave_teams;

-- An insert that got past the guard trigger (the race: the removal commits between the
-- guard's check and the insert) still fails on the key.
alter table public.team_members disable trigger team_members_guard;
select throws_ok(
  $$insert into public.team_members (team_id, user_id, role)
    values ('c60000c0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000004', 'member')$$,
  '23503', null,
  'team membership: a team member who is not in the organization is refused by the foreign key, whatever the triggers do');
alter table public.team_members enable trigger team_members_guard;
insert into public.team_members (team_id, org_id, user_id, role)
values ('c60000c0-0000-4000-8000-000000000001', 'c60000a0-0000-4000-8000-000000000002', 'c6000000-0000-4000-8000-000000000003', 'member');
select is((select org_id from public.team_members where user_id = 'c6000000-0000-4000-8000-000000000003'),
  'c60000a0-0000-4000-8000-000000000001'::uuid,
  'team membership: org_id is the team''s, whatever the writer sends');
delete from public.team_members where user_id = 'c6000000-0000-4000-8000-000000000003';

-- Ownership only to members; the added are told and may leave.
delete from public.notifications; -- those the setup made (as postgres)
set local role authenticated;
select tests.authenticate_as('c6000000-0000-4000-8000-000000000001');
insert into public.organizations (id, name, owner_id)
values ('c60000a0-0000-4000-8000-000000000003', 'Olga''s second', 'c6000000-0000-4000-8000-000000000001');
insert into public.organization_members (org_id, user_id, role)
values ('c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000005', 'member');
select throws_ok(
  $$select public.transfer_organization_ownership('c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000004')$$,
  '22023', 'new_owner_id: the new owner must already be a member of the organization',
  'ownership: cannot go to someone outside the organization');
select throws_ok(
  $$select public.transfer_organization_ownership('c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-0000000000ff')$$,
  '22023', 'new_owner_id: the new owner must already be a member of the organization',
  'ownership: an unknown user id gets the same answer');
select is(pg_temp.rows_affected($$select * from public.notifications$$), 0,
  'notifications: adding a member or creating an organization tells the one who did it nothing');

select tests.authenticate_as('c6000000-0000-4000-8000-000000000005');
select results_eq(
  $$select type, payload ->> 'organization_id', payload ->> 'organization_name', payload ->> 'role', payload ->> 'by', read_at
      from public.notifications$$,
  $$values ('organization.member_added', 'c60000a0-0000-4000-8000-000000000001', 'Orchard', 'member',
            'c6000000-0000-4000-8000-000000000001', null::timestamptz)$$,
  'notifications: the added member is told who added them to which organization, unread');
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

select tests.authenticate_as('c6000000-0000-4000-8000-000000000001');
select is(pg_temp.rows_affected($$select * from public.notifications where user_id = 'c6000000-0000-4000-8000-000000000005'$$), 0,
  'notifications: nobody else reads them (the organization''s owner included)');
select is(pg_temp.rows_affected($$update public.notifications set read_at = null where user_id = 'c6000000-0000-4000-8000-000000000005'$$), 0,
  'notifications: nor marks them');
select ok(not has_function_privilege('authenticated', 'private.notify(uuid, text, jsonb)', 'execute')
          and not has_function_privilege('anon', 'private.notify(uuid, text, jsonb)', 'execute'),
  'notifications: the writer is not executable by client roles');

-- Made a team admin by the owner: told; then leaves the organization and so the team.
update public.teams set admin_id = 'c6000000-0000-4000-8000-000000000005' where id = 'c60000c0-0000-4000-8000-000000000001';
select tests.authenticate_as('c6000000-0000-4000-8000-000000000005');
select is((select array_agg(type || ':' || (payload ->> 'role') order by created_at, type) from public.notifications),
  array['organization.member_added:member', 'team.member_added:admin'],
  'notifications: made a team''s admin, the member is told that too');
select is(pg_temp.rows_affected($$delete from public.organization_members where user_id = 'c6000000-0000-4000-8000-000000000005'$$), 1,
  'leaving: the added member leaves the organization');
reset role;
select is((select count(*)::int from public.team_members where user_id = 'c6000000-0000-4000-8000-000000000005')
        + (select count(*)::int from public.teams where admin_id = 'c6000000-0000-4000-8000-000000000005'), 0,
  'leaving: and with it the team they were made admin of');

set local role authenticated;
select tests.authenticate_as('c6000000-0000-4000-8000-000000000001');
select lives_ok(
  $$select public.transfer_organization_ownership('c60000a0-0000-4000-8000-000000000001', 'c6000000-0000-4000-8000-000000000003')$$,
  'ownership: goes to a member');
select tests.authenticate_as('c6000000-0000-4000-8000-000000000003');
select is((select type from public.notifications where type like 'organization.ownership%'), 'organization.ownership_received',
  'notifications: the new owner is told');
reset role;

select * from finish();
rollback;
