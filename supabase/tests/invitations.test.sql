-- Invitations by e-mail (supabase/schemas/invitations.sql), as PostgREST callers reach them:
-- who may invite, list and revoke; the token never readable; only the invited confirmed address
-- accepts; 409, 410, the daily limit; accepting makes the memberships and tells the inviter.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(24);

-- People (c9000000-...-NN): 01 Owen owner of O; 02 Tara team admin of T (member of O);
-- 03 Ivy the invitee (confirmed); 04 Sid a stranger; 05 Uma unconfirmed.
select tests.create_user(to_jsonb(u)) from (values
  ('c9000000-0000-4000-8000-000000000001', 'pgtap-inv-owen@example.test', '{"full_name": "Owen Owner"}', now()),
  ('c9000000-0000-4000-8000-000000000002', 'pgtap-inv-tara@example.test', '{"full_name": "Tara Teamadmin"}', now()),
  ('c9000000-0000-4000-8000-000000000003', 'pgtap-inv-ivy@example.test', '{"full_name": "Ivy Invitee"}', now()),
  ('c9000000-0000-4000-8000-000000000004', 'pgtap-inv-sid@example.test', '{"full_name": "Sid Stranger"}', now()),
  ('c9000000-0000-4000-8000-000000000005', 'pgtap-inv-uma@example.test', '{"full_name": "Uma Unconfirmed"}', null))
  u (id, email, raw_user_meta_data, email_confirmed_at);
insert into public.organizations (id, name, owner_id)
values ('c90000a0-0000-4000-8000-000000000001', 'Orchard', 'c9000000-0000-4000-8000-000000000001');
insert into public.organization_members (org_id, user_id, role)
values ('c90000a0-0000-4000-8000-000000000001', 'c9000000-0000-4000-8000-000000000002', 'member');
insert into public.teams (id, name, org_id, admin_id)
values ('c90000c0-0000-4000-8000-000000000001', 'Pickers', 'c90000a0-0000-4000-8000-000000000001',
        'c9000000-0000-4000-8000-000000000002');

select is(tests.client_table_privileges(array['public.invitations']), null,
  'no table-wide privilege for clients (reads through column grants); every write goes through the functions');
select ok(not has_column_privilege('authenticated', 'public.invitations', 'token_hash', 'SELECT'),
  'no client role reads the token''s hash');
select is(tests.client_function_grants(array['private.may_invite(uuid,uuid,uuid,boolean)',
  'private.usable_invitation(text,boolean)', 'private.join_on_invitation_accepted()']), null,
  'the internal helpers are granted to no client role');

-- The owner invites Ivy; the token comes back once (kept in t for the invitee's steps).
create temp table t (name text primary key, token text);
grant all on t to authenticated, anon;
set local role authenticated;
select tests.authenticate_as('c9000000-0000-4000-8000-000000000001');
insert into t select 'ivy', token from public.create_organization_invitation(
  'c90000a0-0000-4000-8000-000000000001', ' Pgtap-Inv-Ivy@Example.test ', 'member');
select is((select email from public.invitations where org_id = 'c90000a0-0000-4000-8000-000000000001'),
  'pgtap-inv-ivy@example.test', 'the address is stored trimmed and lower case');
select is((select char_length(token) from t where name = 'ivy'), 43, 'a 256-bit token, base64url');
select throws_ok($$select public.create_organization_invitation('c90000a0-0000-4000-8000-000000000001', 'nope', 'member')$$,
  '22023', 'email: must be an e-mail address', 'bad address: 22023 naming the field');
select throws_ok($$select public.create_organization_invitation('c90000a0-0000-4000-8000-000000000001', 'a@b.io', 'owner')$$,
  '23514', 'role: must be one of admin, member', 'bad role: naming the field');
select throws_ok($$select public.create_organization_invitation('c90000a0-0000-4000-8000-000000000001', 'pgtap-inv-tara@example.test', 'member')$$,
  'PT409', 'email: this address is already a member of the organization', 'a member''s address: 409');
select is((select count(*)::int from public.list_organization_invitations('c90000a0-0000-4000-8000-000000000001')), 1,
  'the owner lists the pending invitation');

-- The team admin: not the organization's invitations; the team's, without add_to_organization.
select tests.authenticate_as('c9000000-0000-4000-8000-000000000002');
select throws_ok($$select public.create_organization_invitation('c90000a0-0000-4000-8000-000000000001', 'a@b.io', 'member')$$,
  '42501', 'only the organization''s owner may invite people into it', 'a member does not invite into the organization');
select throws_ok($$select public.list_organization_invitations('c90000a0-0000-4000-8000-000000000001')$$,
  '42501', null, 'nor lists its invitations');
select throws_ok($$select public.create_team_invitation('c90000c0-0000-4000-8000-000000000001', 'a@b.io', 'member', true)$$,
  '42501', null, 'add_to_organization is the owner''s');
insert into t select 'ivy-team', token from public.create_team_invitation(
  'c90000c0-0000-4000-8000-000000000001', 'pgtap-inv-ivy@example.test', 'admin');
select is((select count(*)::int from public.invitations), 1, 'the team admin sees only the invitations they may');

-- A stranger: nothing found, nothing read.
select tests.authenticate_as('c9000000-0000-4000-8000-000000000004');
select throws_ok($$select public.create_organization_invitation('c90000a0-0000-4000-8000-000000000001', 'a@b.io', 'member')$$,
  'PT404', 'organization not found', 'a stranger learns nothing of the organization');
select is((select count(*)::int from public.invitations), 0, 'a stranger reads no invitation');
select throws_ok($$select public.accept_invitation((select token from t where name = 'ivy'))$$,
  '42501', null, 'another address cannot accept');

-- Anonymous: what the e-mail said.
set local role anon;
select tests.authenticate_as_anon();
select is((select organization_name || '/' || inviter_name || '/' || role from public.invitation_details((select token from t where name = 'ivy'))),
  'Orchard/Owen Owner/member', 'whoever holds the token reads the invitation');

-- Ivy accepts the organization's; the team's follows; the inviter is told.
set local role authenticated;
select tests.authenticate_as('c9000000-0000-4000-8000-000000000003');
select is((select status from public.accept_invitation((select token from t where name = 'ivy'))), 'accepted',
  'the invited confirmed address accepts');
select is((select role from public.organization_members where org_id = 'c90000a0-0000-4000-8000-000000000001'
            and user_id = 'c9000000-0000-4000-8000-000000000003'), 'member', 'and is a member');
select throws_ok($$select public.accept_invitation((select token from t where name = 'ivy'))$$,
  'PT410', 'This invitation has already been used.', 'single use: 410');
select is((select status from public.accept_invitation((select token from t where name = 'ivy-team'))), 'accepted',
  'now an organization member, the team invitation is accepted');
reset role;
select is((select array_agg(type || ':' || (payload ->> 'by') order by created_at) from public.notifications
            where user_id in ('c9000000-0000-4000-8000-000000000001', 'c9000000-0000-4000-8000-000000000002')
              and type = 'invitation.accepted'),
  array['invitation.accepted:c9000000-0000-4000-8000-000000000003', 'invitation.accepted:c9000000-0000-4000-8000-000000000003'],
  'each inviter is told');

-- Uma, unconfirmed, cannot accept even her own address's invitation; the daily limit holds.
set local role authenticated;
select tests.authenticate_as('c9000000-0000-4000-8000-000000000001');
insert into t select 'uma', token from public.create_organization_invitation(
  'c90000a0-0000-4000-8000-000000000001', 'pgtap-inv-uma@example.test', 'member');
select tests.authenticate_as('c9000000-0000-4000-8000-000000000005');
select throws_ok($$select public.accept_invitation((select token from t where name = 'uma'))$$,
  '42501', null, 'an unconfirmed address cannot accept');
reset role;
insert into private.invitation_limits (subject, max_per_day) values ('c9000000-0000-4000-8000-000000000001', 2);
set local role authenticated;
select tests.authenticate_as('c9000000-0000-4000-8000-000000000001');
select throws_ok($$select public.create_organization_invitation('c90000a0-0000-4000-8000-000000000001', 'c@d.io', 'member')$$,
  'PGRST', null, 'over the daily limit: refused (PostgREST answers 429 with Retry-After)');

select * from finish();
rollback;
