-- Journal visibility (SPEC "Visibility rules"), every read path, as each kind of viewer.
--
-- The matrix: metadata level x content level (16 pairs of user/team/org/public) x viewer
-- (owner, team member, org-but-not-team member, stranger, super admin, anonymous) x
-- (entry carrying its own levels, no notebook | entry at user/user inheriting a notebook
-- carrying the pair) = 192 assertions on public.journal_entry_details, each run as the
-- viewer's role and claims. The same fixtures then check the side paths per viewer: the
-- visible feed, stats (tags and moods), PostgREST-style embedding, the contents table and
-- mentions. Then: live inheritance, rule 5, deletions, write validation and write rights,
-- leaving a team or an organization, and the internal scope columns clients do not read.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(403);

-- ---------------------------------------------------------------------------------------
-- People and groups.
--   owner        b1000000-...-01  owns everything below, owner of org O1, admin of team T1
--   team_member  b1000000-...-02  member of O1 and T1
--   org_member   b1000000-...-03  member of O1 only
--   stranger     b1000000-...-04  no membership
--   super_admin  b1000000-...-05  profile role super_admin, no membership
-- O2 (with teams T2, T3) is a second organization of the owner, used for the deletion cases.
-- ---------------------------------------------------------------------------------------
select tests.create_user(to_jsonb(u)) from (values 
  ('b1000000-0000-4000-8000-000000000001', 'pgtap-vis-owner@example.test', '{"full_name": "Olga Owner"}'),
  ('b1000000-0000-4000-8000-000000000002', 'pgtap-vis-team@example.test', '{"full_name": "Tom Team"}'),
  ('b1000000-0000-4000-8000-000000000003', 'pgtap-vis-org@example.test', '{"full_name": "Orla Org"}'),
  ('b1000000-0000-4000-8000-000000000004', 'pgtap-vis-stranger@example.test', '{"full_name": "Stan Stranger"}'),
  ('b1000000-0000-4000-8000-000000000005', 'pgtap-vis-super@example.test', '{"full_name": "Sue Super"}')) u (id, email, raw_user_meta_data);
update public.profiles set role = 'super_admin' where id = 'b1000000-0000-4000-8000-000000000005';

create temp table viewers (viewer text primary key, user_id uuid, ord integer);
insert into viewers values
  ('owner',       'b1000000-0000-4000-8000-000000000001', 1),
  ('team_member', 'b1000000-0000-4000-8000-000000000002', 2),
  ('org_member',  'b1000000-0000-4000-8000-000000000003', 3),
  ('stranger',    'b1000000-0000-4000-8000-000000000004', 4),
  ('super_admin', 'b1000000-0000-4000-8000-000000000005', 5),
  ('anon',        null,                                   6);

create temp table levels (level text primary key, i integer);
insert into levels values ('user', 1), ('team', 2), ('org', 3), ('public', 4);

-- SPEC rules 3 and 6: may this viewer see something at this level (of O1/T1)?
create function pg_temp.may_see(level text, viewer text) returns boolean
language sql immutable as $$
  select viewer in ('owner', 'super_admin')
      or level = 'public'
      or (level = 'team' and viewer = 'team_member')
      or (level = 'org' and viewer in ('team_member', 'org_member'))
$$;

-- What the current role and claims get for one entry from the details view. PL/pgSQL on
-- purpose: its plans are re-made when the role changes (a SQL function's rewritten query,
-- row security included, can stay cached for the transaction across SET ROLE).
create function pg_temp.seen(entry uuid) returns text
language plpgsql stable as $$
declare
  result text;
begin
  select coalesce(max(
    case
      when d.content is null and d.content_hidden then 'metadata visible, content hidden'
      when d.content is not null and not d.content_hidden then format('metadata visible, content %L', d.content)
      else format('inconsistent: content %L, content_hidden %s', d.content, d.content_hidden)
    end), 'not visible')
    into result
    from public.journal_entry_details d where d.id = entry;
  return result;
end
$$;

-- The expected form of pg_temp.seen().
create function pg_temp.expect(meta_visible boolean, content_visible boolean, content text) returns text
language sql immutable as $$
  select case
    when not meta_visible then 'not visible'
    when content_visible then format('metadata visible, content %L', content)
    else 'metadata visible, content hidden'
  end
$$;

-- Rows a write statement touched, run as the current role (for "0 rows" refusals by RLS).
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

-- The 32 matrix entries: 16 pairs, each without a notebook and inheriting from a notebook.
create temp table vis_entries as
select m.level as meta, c.level as content, x.inherited,
       format('b10000e0-0000-4000-8000-000000000%s%s%s', m.i, c.i, x.inherited::integer)::uuid as entry_id,
       case when x.inherited then format('b10000b0-0000-4000-8000-0000000000%s%s', m.i, c.i)::uuid end as notebook_id,
       format('meta=%s content=%s %s', m.level, c.level, case when x.inherited then 'inherited' else 'no notebook' end) as label,
       m.i * 100 + c.i * 10 + x.inherited::integer as ord
  from levels m cross join levels c cross join (values (false), (true)) x(inherited);
alter table vis_entries add column content_text text;
update vis_entries set content_text = format('text of %s, @[Stan Stranger](b1000000-0000-4000-8000-000000000004)', label);

-- Every (entry x viewer) case with its expected outcome.
create temp table vis_cases as
select e.*, v.viewer, v.ord as viewer_ord,
       pg_temp.may_see(e.meta, v.viewer) as meta_visible,
       pg_temp.may_see(e.meta, v.viewer) and pg_temp.may_see(e.content, v.viewer) as content_visible
  from vis_entries e cross join viewers v;
alter table vis_cases add column expected text;
update vis_cases set expected = pg_temp.expect(meta_visible, content_visible, content_text);

-- One assertion per case of a viewer, run as whatever role and claims are current.
create function pg_temp.matrix_for(who text) returns setof text
language plpgsql as $$
declare
  c record;
begin
  for c in select * from vis_cases where viewer = who order by ord loop
    return next is(pg_temp.seen(c.entry_id), c.expected,
      format('%s viewer=%s: %s', c.label, c.viewer,
        case when not c.meta_visible then 'not visible'
             when c.content_visible then 'metadata and content visible'
             else 'metadata visible, content hidden' end));
  end loop;
end
$$;

-- The side paths over the same fixtures, as viewer `who` under the current role and claims.
-- Every description is 'viewer=<who>: ' and a fixed start; the arguments give how it ends
-- for this viewer (the wording most viewers share by default).

-- The visible feed against the details view, then journal_stats('visible'): tags, moods
-- and count. Signed-in viewers only (anon may call neither journal_feed nor journal_stats).
create function pg_temp.feed_and_stats_for(who text, tags text,
    moods text default 'counts the moods of visible entries only',
    feed_note text default null) returns setof text
language plpgsql as $$
declare
  says constant text := format('viewer=%s: ', who);
begin
  return next set_eq(
    $q$select id, content, content_hidden from public.journal_feed('visible', page_size => 100) where id::text like 'b10000e0-%'$q$,
    $q$select id, content, content_hidden from public.journal_entry_details where id::text like 'b10000e0-%'$q$,
    says || 'journal_feed(''visible'') returns the same matrix entries (and contents) as journal_entry_details'
      || coalesce(' (' || feed_note || ')', ''));
  -- The visible feed reads the ids its definer helper proposes under RLS: a proposal the
  -- policies refuse would come back as a short page (and end the client's paging early).
  return next is(
    (select count(*)::integer from public.journal_entries
      where id = any (private.visible_entry_page_ids(null, null, null, null, null, 'infinity', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 1000))),
    cardinality(private.visible_entry_page_ids(null, null, null, null, null, 'infinity', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 1000)),
    says || 'every id proposed for the visible feed is an entry the viewer may see (pages come back full)');
  return next is(
    (select coalesce(jsonb_agg(t order by t ->> 'tag'), '[]') from jsonb_array_elements(public.journal_stats('visible') -> 'tags') t
      where t ->> 'tag' like 'pgtap-vis-%'),
    (select coalesce(jsonb_agg(jsonb_build_object('tag', 'pgtap-vis-meta-' || level, 'count', 8) order by 'pgtap-vis-meta-' || level), '[]')
       from levels where pg_temp.may_see(level, who)),
    says || 'journal_stats(''visible'') ' || tags);
  return next is(
    (select coalesce(jsonb_agg(t order by t ->> 'mood'), '[]') from jsonb_array_elements(public.journal_stats('visible') -> 'moods') t
      where t ->> 'mood' like 'pgtap-vis-%'),
    (select coalesce(jsonb_agg(jsonb_build_object('mood', 'pgtap-vis-mood-' || level, 'count', 8) order by 'pgtap-vis-mood-' || level), '[]')
       from levels where pg_temp.may_see(level, who)),
    says || 'journal_stats(''visible'') ' || moods);
  return next is((public.journal_stats('visible') ->> 'count')::integer, (select count(*)::integer from public.journal_entry_details),
    says || 'journal_stats(''visible'') count equals the number of rows journal_entry_details shows');
end
$$;

-- PostgREST-style embedding notebooks -> entries -> contents, a direct select on
-- journal_entry_contents, then the mention rows of the stranger named in every text
-- (skipped when `mentions` is null: anon may not select journal_entry_mentions).
create function pg_temp.reads_for(who text, embedding text,
    contents text default 'returns exactly the allowed contents',
    mentions text default 'journal_entry_mentions rows are visible exactly where the content is') returns setof text
language plpgsql as $$
declare
  says constant text := format('viewer=%s: ', who);
begin
  return next set_eq(
    $q$select n.id as notebook_id, e.id as entry_id, e.content from public.notebooks n
        join lateral (select je.id, (select c.content from public.journal_entry_contents c where c.entry_id = je.id) as content
                        from public.journal_entries je where je.notebook_id = n.id) e on true
       where n.id::text like 'b10000b0-%'$q$,
    format($q$select notebook_id, entry_id, case when content_visible then content_text end from vis_cases
       where viewer = %L and inherited and meta_visible$q$, who),
    says || 'embedding notebooks -> journal_entries -> contents ' || embedding);
  return next set_eq(
    $q$select entry_id, content from public.journal_entry_contents where entry_id::text like 'b10000e0-%'$q$,
    format($q$select entry_id, content_text from vis_cases where viewer = %L and content_visible$q$, who),
    says || 'a direct select on journal_entry_contents ' || contents);
  if mentions is not null then
    return next set_eq(
      $q$select entry_id from public.journal_entry_mentions
         where entry_id::text like 'b10000e0-%' and mentioned_user_id = 'b1000000-0000-4000-8000-000000000004'$q$,
      format($q$select entry_id from vis_cases where viewer = %L and content_visible$q$, who),
      says || mentions);
  end if;
end
$$;

grant select on viewers, levels, vis_entries, vis_cases to anon, authenticated;
grant execute on function pg_temp.may_see(text, text), pg_temp.seen(uuid), pg_temp.expect(boolean, boolean, text),
  pg_temp.rows_affected(text), pg_temp.matrix_for(text), pg_temp.feed_and_stats_for(text, text, text, text),
  pg_temp.reads_for(text, text, text, text) to anon, authenticated;

-- ---------------------------------------------------------------------------------------
-- Fixtures, written by the owner through the API roles (org, team, memberships, notebooks,
-- entries, contents), so the write path is the clients' one.
-- ---------------------------------------------------------------------------------------
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);

insert into public.organizations (id, name, owner_id) values
  ('b10000a0-0000-4000-8000-000000000001', 'pgtap vis O1', 'b1000000-0000-4000-8000-000000000001'),
  ('b10000a0-0000-4000-8000-000000000002', 'pgtap vis O2', 'b1000000-0000-4000-8000-000000000001');
insert into public.organization_members (org_id, user_id, role) values
  ('b10000a0-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000002', 'member'),
  ('b10000a0-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000003', 'member'),
  ('b10000a0-0000-4000-8000-000000000002', 'b1000000-0000-4000-8000-000000000002', 'member'),
  ('b10000a0-0000-4000-8000-000000000002', 'b1000000-0000-4000-8000-000000000003', 'member');
insert into public.teams (id, name, org_id, admin_id) values
  ('b10000c0-0000-4000-8000-000000000001', 'pgtap vis T1', 'b10000a0-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000001'),
  ('b10000c0-0000-4000-8000-000000000002', 'pgtap vis T2', 'b10000a0-0000-4000-8000-000000000002', 'b1000000-0000-4000-8000-000000000001'),
  ('b10000c0-0000-4000-8000-000000000003', 'pgtap vis T3', 'b10000a0-0000-4000-8000-000000000002', 'b1000000-0000-4000-8000-000000000001');
insert into public.team_members (team_id, user_id, role) values
  ('b10000c0-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000002', 'member'),
  ('b10000c0-0000-4000-8000-000000000002', 'b1000000-0000-4000-8000-000000000002', 'member'),
  ('b10000c0-0000-4000-8000-000000000003', 'b1000000-0000-4000-8000-000000000002', 'member');

-- Matrix notebooks: one per pair, carrying the pair (with T1/O1 where a level needs them).
insert into public.notebooks (id, name, metadata_visibility, content_visibility, team_id, org_id)
select notebook_id, 'pgtap vis notebook ' || meta || '/' || content, meta, content,
       case when 'team' in (meta, content) then 'b10000c0-0000-4000-8000-000000000001'::uuid end,
       case when 'org' in (meta, content) then 'b10000a0-0000-4000-8000-000000000001'::uuid end
  from vis_entries where inherited;

-- Matrix entries: own levels without a notebook, or user/user inside the pair's notebook.
-- Tags and mood name the metadata level (for the stats checks).
insert into public.journal_entries (id, notebook_id, title, mood, tags, metadata_visibility, content_visibility, team_id, org_id)
select entry_id, notebook_id, 'pgtap vis ' || label, 'pgtap-vis-mood-' || meta, array['pgtap-vis-meta-' || meta],
       case when inherited then 'user' else meta end,
       case when inherited then 'user' else content end,
       case when not inherited and 'team' in (meta, content) then 'b10000c0-0000-4000-8000-000000000001'::uuid end,
       case when not inherited and 'org' in (meta, content) then 'b10000a0-0000-4000-8000-000000000001'::uuid end
  from vis_entries order by ord;
insert into public.journal_entry_contents (entry_id, content)
select entry_id, content_text from vis_entries order by ord;

reset role;
select set_config('request.jwt.claims', '', true);

-- =======================================================================================
-- Per viewer: the 32 matrix cases, then the side paths over the same fixtures.
-- =======================================================================================

-- ---------------------------------------------------------------------------------------
-- Viewer: owner.
-- ---------------------------------------------------------------------------------------
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select * from pg_temp.matrix_for('owner');
select * from pg_temp.feed_and_stats_for('owner',
  tags => 'counts the tags of visible entries only (8 per visible metadata level)');
select * from pg_temp.reads_for('owner', embedding => 'shows exactly the visible entries and contents');

-- ---------------------------------------------------------------------------------------
-- Viewer: member of the team (and so of its organization).
-- ---------------------------------------------------------------------------------------
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select * from pg_temp.matrix_for('team_member');
select * from pg_temp.feed_and_stats_for('team_member',
  tags => 'counts the tags of visible entries only (the private tag never shows)');
select * from pg_temp.reads_for('team_member', embedding => 'shows no invisible entry or content');

-- ---------------------------------------------------------------------------------------
-- Viewer: member of the organization, not of the team.
-- ---------------------------------------------------------------------------------------
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select * from pg_temp.matrix_for('org_member');
select * from pg_temp.feed_and_stats_for('org_member',
  tags => 'counts the tags of visible entries only (no private or team tag)');
select * from pg_temp.reads_for('org_member', embedding => 'shows no invisible entry or content');

-- ---------------------------------------------------------------------------------------
-- Viewer: a signed-in stranger (the user mentioned in every text, which grants nothing).
-- ---------------------------------------------------------------------------------------
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000004', 'role', 'authenticated')::text, true);
select * from pg_temp.matrix_for('stranger');
select * from pg_temp.feed_and_stats_for('stranger',
  tags => 'counts only the public entries'' tags', moods => 'counts only the public entries'' moods');
select is(public.journal_stats('own') -> 'tags', '[]'::jsonb,
  'viewer=stranger: journal_stats(''own'') shows none of the owner''s tags');
select * from pg_temp.reads_for('stranger', embedding => 'shows only public entries and contents',
  mentions => 'being mentioned grants nothing; mention rows are visible exactly where the content is');

-- ---------------------------------------------------------------------------------------
-- Viewer: super admin (no membership anywhere).
-- ---------------------------------------------------------------------------------------
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000005', 'role', 'authenticated')::text, true);
select * from pg_temp.matrix_for('super_admin');
select * from pg_temp.feed_and_stats_for('super_admin', feed_note => 'rule 6: super admins see everything',
  tags => 'counts every entry''s tags', moods => 'counts every entry''s moods');
select * from pg_temp.reads_for('super_admin', embedding => 'shows everything', contents => 'returns every content');

-- ---------------------------------------------------------------------------------------
-- Viewer: anonymous (the anon key, no user). No feed, stats or mentions: anon may call
-- neither journal_feed nor journal_stats, nor select journal_entry_mentions.
-- ---------------------------------------------------------------------------------------
set local role anon;
select set_config('request.jwt.claims', json_build_object('role', 'anon')::text, true);
select * from pg_temp.matrix_for('anon');
select * from pg_temp.reads_for('anon', embedding => 'shows only public entries and contents',
  contents => 'returns only public contents of public entries', mentions => null);

reset role;
select set_config('request.jwt.claims', '', true);

-- =======================================================================================
-- Live inheritance: changing a notebook's levels changes its inheriting entries at once
-- (same transaction, next statement). Separate fixtures, so each cause fails on its own.
--   NB-1 public/user, entry E-1 inheriting: metadata level changes.
--   NB-2 public/public, entry E-2 inheriting: content level narrows to user.
--   NB-3 public/user, entry E-3 inheriting: content level widens to public.
--   E-4 (no notebook) public/public: the owner narrows its content level through the API.
-- =======================================================================================
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
insert into public.notebooks (id, name, metadata_visibility, content_visibility) values
  ('b10000b1-0000-4000-8000-000000000001', 'pgtap live meta', 'public', 'user'),
  ('b10000b1-0000-4000-8000-000000000002', 'pgtap live content narrowing', 'public', 'public'),
  ('b10000b1-0000-4000-8000-000000000003', 'pgtap live content widening', 'public', 'user');
insert into public.journal_entries (id, notebook_id, title) values
  ('b10000e1-0000-4000-8000-000000000001', 'b10000b1-0000-4000-8000-000000000001', 'pgtap live E-1'),
  ('b10000e1-0000-4000-8000-000000000002', 'b10000b1-0000-4000-8000-000000000002', 'pgtap live E-2'),
  ('b10000e1-0000-4000-8000-000000000003', 'b10000b1-0000-4000-8000-000000000003', 'pgtap live E-3');
insert into public.journal_entries (id, title, metadata_visibility, content_visibility) values
  ('b10000e1-0000-4000-8000-000000000004', 'pgtap live E-4', 'public', 'public');
insert into public.journal_entry_contents (entry_id, content) values
  ('b10000e1-0000-4000-8000-000000000001', 'live text 1'),
  ('b10000e1-0000-4000-8000-000000000002', 'live text 2'),
  ('b10000e1-0000-4000-8000-000000000003', 'live text 3'),
  ('b10000e1-0000-4000-8000-000000000004', 'live text 4');

-- Metadata: public -> team T1 -> user.
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000004', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000001'), 'metadata visible, content hidden',
  'live: before the change, a stranger sees E-1''s metadata through its public notebook');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
update public.notebooks set metadata_visibility = 'team', team_id = 'b10000c0-0000-4000-8000-000000000001'
 where id = 'b10000b1-0000-4000-8000-000000000001';
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000004', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000001'), 'not visible',
  'live: after the notebook''s metadata level becomes team, the stranger no longer sees E-1 (next statement)');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000001'), 'metadata visible, content hidden',
  'live: after the notebook''s metadata level becomes team, the team member sees E-1''s metadata');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
update public.notebooks set metadata_visibility = 'user', team_id = null where id = 'b10000b1-0000-4000-8000-000000000001';
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000001'), 'not visible',
  'live: after the notebook''s metadata level becomes user, the team member no longer sees E-1');

-- Content narrowing: public -> user.
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000004', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000002'), 'metadata visible, content ''live text 2''',
  'live: before the change, a stranger reads E-2''s content through its public/public notebook');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
update public.notebooks set content_visibility = 'user' where id = 'b10000b1-0000-4000-8000-000000000002';
reset role;
select is((select content_scope from public.journal_entries where id = 'b10000e1-0000-4000-8000-000000000002'), 'user',
  'live: the inheriting entry''s effective content scope (journal_entries.content_scope) follows the notebook to user');
select is((select content_scope from public.journal_entry_contents where entry_id = 'b10000e1-0000-4000-8000-000000000002'), 'user',
  'live: the content row''s scope (journal_entry_contents.content_scope) follows the notebook to user');
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000004', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000002'), 'metadata visible, content hidden',
  'live: after the notebook''s content level becomes user, a stranger gets E-2 with content hidden (no leak)');
set local role anon;
select set_config('request.jwt.claims', json_build_object('role', 'anon')::text, true);
select is_empty($$select 1 from public.journal_entry_contents where entry_id = 'b10000e1-0000-4000-8000-000000000002'$$,
  'live: after the notebook''s content level becomes user, anon cannot read E-2''s content row directly');

-- Content widening: user -> public.
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
update public.notebooks set content_visibility = 'public' where id = 'b10000b1-0000-4000-8000-000000000003';
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000004', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000003'), 'metadata visible, content ''live text 3''',
  'live: after the notebook''s content level becomes public, a stranger reads E-3''s content');

-- An entry's own content level narrowed through the API (update_journal_entry).
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select lives_ok(
  $$select * from public.update_journal_entry('b10000e1-0000-4000-8000-000000000004', '{"content_visibility": "user"}')$$,
  'live: the owner narrows E-4''s content level from public to user through update_journal_entry');
set local role anon;
select set_config('request.jwt.claims', json_build_object('role', 'anon')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000004'), 'metadata visible, content hidden',
  'live: after update_journal_entry narrows the content level to user, anon gets E-4 with content hidden (no leak)');

-- =======================================================================================
-- Rule 5: an entry's explicit level wins over its notebook's.
--   NB-5 public/public (T1), E-5 explicit team/team, E-6 explicit team/(user: inherits public).
--   NB-6 public/team T1, E-7 explicit public/(user: inherits team).
-- =======================================================================================
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
insert into public.notebooks (id, name, metadata_visibility, content_visibility, team_id) values
  ('b10000b1-0000-4000-8000-000000000005', 'pgtap rule5 public', 'public', 'public', null),
  ('b10000b1-0000-4000-8000-000000000006', 'pgtap rule5 public/team', 'public', 'team', 'b10000c0-0000-4000-8000-000000000001');
insert into public.journal_entries (id, notebook_id, title, metadata_visibility, content_visibility, team_id) values
  ('b10000e1-0000-4000-8000-000000000005', 'b10000b1-0000-4000-8000-000000000005', 'pgtap rule5 E-5', 'team', 'team', 'b10000c0-0000-4000-8000-000000000001'),
  ('b10000e1-0000-4000-8000-000000000006', 'b10000b1-0000-4000-8000-000000000005', 'pgtap rule5 E-6', 'team', 'user', 'b10000c0-0000-4000-8000-000000000001'),
  ('b10000e1-0000-4000-8000-000000000007', 'b10000b1-0000-4000-8000-000000000006', 'pgtap rule5 E-7', 'public', 'user', null);
insert into public.journal_entry_contents (entry_id, content) values
  ('b10000e1-0000-4000-8000-000000000005', 'rule5 text 5'),
  ('b10000e1-0000-4000-8000-000000000006', 'rule5 text 6'),
  ('b10000e1-0000-4000-8000-000000000007', 'rule5 text 7');

set local role anon;
select set_config('request.jwt.claims', json_build_object('role', 'anon')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000005'), 'not visible',
  'rule 5: an explicit team/team entry in a public notebook is invisible to anon');
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000004', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000005'), 'not visible',
  'rule 5: an explicit team/team entry in a public notebook is invisible to a stranger');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000005'), 'not visible',
  'rule 5: an explicit team/team entry in a public notebook is invisible to an org member outside the team');
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000006'), 'not visible',
  'rule 5: explicit team metadata wins over the public notebook even when the content level inherits public');
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000007'), 'metadata visible, content hidden',
  'rule 5: explicit public metadata with inherited team content: an org member outside the team sees metadata only');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000005'), 'metadata visible, content ''rule5 text 5''',
  'rule 5: an explicit team/team entry in a public notebook is fully visible to the team member');
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000006'), 'metadata visible, content ''rule5 text 6''',
  'rule 5: explicit team metadata, content inheriting the notebook''s public level: the team member reads it');
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000007'), 'metadata visible, content ''rule5 text 7''',
  'rule 5: explicit public metadata with content inheriting the notebook''s team level: the team member reads it');

-- =======================================================================================
-- Deleting a team or an organization: entries shared with it fall back to owner-only,
-- and still exist. O2 has teams T2 and T3; the team member is in both, the org member in O2.
--   E-8 team/team T2, E-9 inheriting NB-7 team/team T2, E-10 team/team T3, E-11 org/org O2.
-- =======================================================================================
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
insert into public.notebooks (id, name, metadata_visibility, content_visibility, team_id) values
  ('b10000b1-0000-4000-8000-000000000007', 'pgtap deletion team notebook', 'team', 'team', 'b10000c0-0000-4000-8000-000000000002');
insert into public.journal_entries (id, notebook_id, title, metadata_visibility, content_visibility, team_id, org_id) values
  ('b10000e1-0000-4000-8000-000000000008', null, 'pgtap deletion E-8', 'team', 'team', 'b10000c0-0000-4000-8000-000000000002', null),
  ('b10000e1-0000-4000-8000-000000000009', 'b10000b1-0000-4000-8000-000000000007', 'pgtap deletion E-9', 'user', 'user', null, null),
  ('b10000e1-0000-4000-8000-000000000010', null, 'pgtap deletion E-10', 'team', 'team', 'b10000c0-0000-4000-8000-000000000003', null),
  ('b10000e1-0000-4000-8000-000000000011', null, 'pgtap deletion E-11', 'org', 'org', null, 'b10000a0-0000-4000-8000-000000000002');
insert into public.journal_entry_contents (entry_id, content) values
  ('b10000e1-0000-4000-8000-000000000008', 'deletion text 8'),
  ('b10000e1-0000-4000-8000-000000000009', 'deletion text 9'),
  ('b10000e1-0000-4000-8000-000000000010', 'deletion text 10'),
  ('b10000e1-0000-4000-8000-000000000011', 'deletion text 11');

select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select results_eq(
  $$select pg_temp.seen(id) from (values ('b10000e1-0000-4000-8000-000000000008'::uuid, 1), ('b10000e1-0000-4000-8000-000000000009', 2),
      ('b10000e1-0000-4000-8000-000000000010', 3), ('b10000e1-0000-4000-8000-000000000011', 4)) v(id, o) order by o$$,
  $$values ('metadata visible, content ''deletion text 8'''), ('metadata visible, content ''deletion text 9'''),
           ('metadata visible, content ''deletion text 10'''), ('metadata visible, content ''deletion text 11''')$$,
  'deletion: before any deletion, the team member reads E-8, E-9, E-10 and E-11');

-- The owner (T2's admin) deletes T2.
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$delete from public.teams where id = 'b10000c0-0000-4000-8000-000000000002'$$), 1,
  'deletion: the team admin deletes team T2');
select results_eq(
  $$select pg_temp.seen(id) from (values ('b10000e1-0000-4000-8000-000000000008'::uuid, 1), ('b10000e1-0000-4000-8000-000000000009', 2)) v(id, o) order by o$$,
  $$values ('metadata visible, content ''deletion text 8'''), ('metadata visible, content ''deletion text 9''')$$,
  'deletion: after T2 is deleted, the owner still reads E-8 and E-9 in full');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000008'), 'not visible',
  'deletion: after T2 is deleted, its former member no longer sees E-8 (team level falls back to owner-only)');
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000009'), 'not visible',
  'deletion: after T2 is deleted, its former member no longer sees E-9 (inherited from a notebook shared with T2)');
reset role;
select set_config('request.jwt.claims', '', true);
select results_eq(
  $$select id, metadata_visibility, content_visibility, team_id, meta_scope, content_scope from public.journal_entries
     where id = 'b10000e1-0000-4000-8000-000000000008'$$,
  $$values ('b10000e1-0000-4000-8000-000000000008'::uuid, 'user'::text, 'user'::text, null::uuid, 'user'::text, 'user'::text)$$,
  'deletion: E-8 still exists, with its levels fallen back to user and team_id cleared');
select results_eq(
  $$select metadata_visibility, content_visibility, team_id from public.notebooks where id = 'b10000b1-0000-4000-8000-000000000007'$$,
  $$values ('user'::text, 'user'::text, null::uuid)$$,
  'deletion: the notebook shared with T2 still exists, fallen back to user');
select is((select meta_scope from public.journal_entries where id = 'b10000e1-0000-4000-8000-000000000009'), 'user',
  'deletion: E-9 (inheriting) still exists, effective level user');

-- The owner deletes O2 (and with it T3).
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$delete from public.organizations where id = 'b10000a0-0000-4000-8000-000000000002'$$), 1,
  'deletion: the owner deletes organization O2');
select results_eq(
  $$select pg_temp.seen(id) from (values ('b10000e1-0000-4000-8000-000000000010'::uuid, 1), ('b10000e1-0000-4000-8000-000000000011', 2)) v(id, o) order by o$$,
  $$values ('metadata visible, content ''deletion text 10'''), ('metadata visible, content ''deletion text 11''')$$,
  'deletion: after O2 is deleted, the owner still reads E-10 (team of O2) and E-11 (org O2) in full');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select results_eq(
  $$select pg_temp.seen(id) from (values ('b10000e1-0000-4000-8000-000000000010'::uuid, 1), ('b10000e1-0000-4000-8000-000000000011', 2)) v(id, o) order by o$$,
  $$values ('not visible'), ('not visible')$$,
  'deletion: after O2 is deleted, the former team and org member sees neither E-10 nor E-11');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000011'), 'not visible',
  'deletion: after O2 is deleted, the former org member no longer sees E-11');
reset role;
select set_config('request.jwt.claims', '', true);
select results_eq(
  $$select id, metadata_visibility, content_visibility, team_id, org_id from public.journal_entries
     where id in ('b10000e1-0000-4000-8000-000000000010', 'b10000e1-0000-4000-8000-000000000011') order by id$$,
  $$values ('b10000e1-0000-4000-8000-000000000010'::uuid, 'user'::text, 'user'::text, null::uuid, null::uuid),
           ('b10000e1-0000-4000-8000-000000000011'::uuid, 'user'::text, 'user'::text, null::uuid, null::uuid)$$,
  'deletion: E-10 and E-11 still exist, fallen back to user with team_id/org_id cleared');
select is_empty($$select 1 from public.teams where id = 'b10000c0-0000-4000-8000-000000000003'$$,
  'deletion: deleting O2 deleted its team T3');

-- =======================================================================================
-- Deleting a notebook keeps its entries, detached.
--   NB-8 public/public: E-12 inherits both; E-13 explicit public metadata, inherits content.
-- =======================================================================================
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
insert into public.notebooks (id, name, metadata_visibility, content_visibility) values
  ('b10000b1-0000-4000-8000-000000000008', 'pgtap notebook to delete', 'public', 'public');
insert into public.journal_entries (id, notebook_id, title, metadata_visibility) values
  ('b10000e1-0000-4000-8000-000000000012', 'b10000b1-0000-4000-8000-000000000008', 'pgtap detached E-12', 'user'),
  ('b10000e1-0000-4000-8000-000000000013', 'b10000b1-0000-4000-8000-000000000008', 'pgtap detached E-13', 'public');
insert into public.journal_entry_contents (entry_id, content) values
  ('b10000e1-0000-4000-8000-000000000012', 'detached text 12'),
  ('b10000e1-0000-4000-8000-000000000013', 'detached text 13');
select is(pg_temp.rows_affected($$delete from public.notebooks where id = 'b10000b1-0000-4000-8000-000000000008'$$), 1,
  'notebook deletion: the owner deletes the notebook');
select results_eq(
  $$select id, notebook_id from public.journal_entries
     where id in ('b10000e1-0000-4000-8000-000000000012', 'b10000e1-0000-4000-8000-000000000013') order by id$$,
  $$values ('b10000e1-0000-4000-8000-000000000012'::uuid, null::uuid), ('b10000e1-0000-4000-8000-000000000013'::uuid, null::uuid)$$,
  'notebook deletion: its entries still exist, detached (notebook_id null)');
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000012'), 'metadata visible, content ''detached text 12''',
  'notebook deletion: the owner still reads a detached entry in full');
set local role anon;
select set_config('request.jwt.claims', json_build_object('role', 'anon')::text, true);
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000012'), 'not visible',
  'notebook deletion: a detached entry that inherited public is owner-only now (no notebook means user)');
select is(pg_temp.seen('b10000e1-0000-4000-8000-000000000013'), 'metadata visible, content hidden',
  'notebook deletion: a detached entry with explicit public metadata whose content inherited public shows content hidden to anon');

-- =======================================================================================
-- Write validation: refused with the listed SQLSTATE, and nothing is written.
-- =======================================================================================
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select throws_ok(
  $$insert into public.journal_entries (title, metadata_visibility) values ('pgtap invalid 1', 'friends')$$,
  '23514', 'metadata_visibility: must be one of user, team, org, public',
  'write: a metadata level outside user/team/org/public is refused (23514)');
select throws_ok(
  $$insert into public.journal_entries (title, content_visibility) values ('pgtap invalid 2', 'everyone')$$,
  '23514', 'content_visibility: must be one of user, team, org, public',
  'write: a content level outside user/team/org/public is refused (23514)');
select throws_ok(
  $$insert into public.journal_entries (title, metadata_visibility) values ('pgtap invalid 3', 'team')$$,
  '23514', 'team_id: required when a visibility is team',
  'write: metadata level team without team_id is refused (23514)');
select throws_ok(
  $$insert into public.journal_entries (title, content_visibility) values ('pgtap invalid 4', 'org')$$,
  '23514', 'org_id: required when a visibility is org',
  'write: content level org without org_id is refused (23514)');
select throws_ok(
  $$select * from public.create_journal_entry(title => 'pgtap invalid 5', content => 'x', metadata_visibility => 'secret')$$,
  '23514', 'metadata_visibility: must be one of user, team, org, public',
  'write: create_journal_entry with a level outside the four values is refused (23514)');
select throws_ok(
  $$select * from public.create_journal_entry(title => 'pgtap invalid 6', content => 'x', content_visibility => 'team')$$,
  '23514', 'team_id: required when a visibility is team',
  'write: create_journal_entry with content level team and no team_id is refused (23514)');
select throws_ok(
  $$select * from public.update_journal_entry('b10000e0-0000-4000-8000-000000000111', '{"metadata_visibility": "nope"}')$$,
  '23514', 'metadata_visibility: must be one of user, team, org, public',
  'write: update_journal_entry to a level outside the four values is refused (23514)');
select throws_ok(
  $$select * from public.update_journal_entry('b10000e0-0000-4000-8000-000000000111', '{"metadata_visibility": "org"}')$$,
  '23514', 'org_id: required when a visibility is org',
  'write: update_journal_entry to org level without org_id is refused (23514)');
select throws_ok(
  $$insert into public.notebooks (name, metadata_visibility) values ('pgtap invalid notebook 1', 'bogus')$$,
  '23514', 'metadata_visibility: must be one of user, team, org, public',
  'write: a notebook level outside the four values is refused (23514)');
select throws_ok(
  $$insert into public.notebooks (name, content_visibility) values ('pgtap invalid notebook 2', 'team')$$,
  '23514', 'team_id: required when a visibility is team',
  'write: a notebook with level team and no team_id is refused (23514)');
select throws_ok(
  $$insert into public.notebooks (name, metadata_visibility) values ('pgtap invalid notebook 3', 'org')$$,
  '23514', 'org_id: required when a visibility is org',
  'write: a notebook with level org and no org_id is refused (23514)');

-- Sharing into a team or organization one does not belong to; someone else's notebook.
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000004', 'role', 'authenticated')::text, true);
insert into public.journal_entries (id, title) values ('b10000e1-0000-4000-8000-000000000014', 'pgtap stranger own entry');
select throws_ok(
  $$insert into public.journal_entries (title, metadata_visibility, team_id)
    values ('pgtap invalid 7', 'team', 'b10000c0-0000-4000-8000-000000000001')$$,
  '22023', 'team_id: you are not a member of this team', 'write: a stranger cannot share an entry into team T1 (22023)');
select throws_ok(
  $$insert into public.journal_entries (title, content_visibility, org_id)
    values ('pgtap invalid 8', 'org', 'b10000a0-0000-4000-8000-000000000001')$$,
  '22023', 'org_id: you are not a member of this organization', 'write: a stranger cannot share an entry into organization O1 (22023)');
select throws_ok(
  $$select * from public.create_journal_entry(title => 'pgtap invalid 9', content => 'x', metadata_visibility => 'team',
      team_id => 'b10000c0-0000-4000-8000-000000000001')$$,
  '22023', 'team_id: you are not a member of this team', 'write: create_journal_entry into a team the writer is not in is refused (22023)');
select throws_ok(
  $$select * from public.update_journal_entry('b10000e1-0000-4000-8000-000000000014',
      '{"metadata_visibility": "org", "org_id": "b10000a0-0000-4000-8000-000000000001"}')$$,
  '22023', 'org_id: you are not a member of this organization',
  'write: update_journal_entry sharing one''s own entry into an organization one is not in is refused (22023)');
select throws_ok(
  $$insert into public.journal_entries (title, notebook_id) values ('pgtap invalid 10', 'b10000b0-0000-4000-8000-000000000044')$$,
  '22023', 'notebook_id: no such notebook of yours', 'write: an entry cannot be put in someone else''s (public) notebook (22023)');
select throws_ok(
  $$update public.journal_entries set notebook_id = 'b10000b0-0000-4000-8000-000000000044' where id = 'b10000e1-0000-4000-8000-000000000014'$$,
  '22023', 'notebook_id: no such notebook of yours', 'write: one''s own entry cannot be moved into someone else''s notebook (22023)');
select throws_ok(
  $$insert into public.notebooks (name, metadata_visibility, team_id) values ('pgtap invalid notebook 4', 'team', 'b10000c0-0000-4000-8000-000000000001')$$,
  '22023', 'team_id: you are not a member of this team', 'write: a stranger cannot share a notebook into team T1 (22023)');
select throws_ok(
  $$insert into public.notebooks (name, metadata_visibility, org_id) values ('pgtap invalid notebook 5', 'org', 'b10000a0-0000-4000-8000-000000000001')$$,
  '22023', 'org_id: you are not a member of this organization', 'write: a stranger cannot share a notebook into organization O1 (22023)');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select throws_ok(
  $$insert into public.journal_entries (title, metadata_visibility, team_id)
    values ('pgtap invalid 11', 'team', 'b10000c0-0000-4000-8000-000000000001')$$,
  '22023', 'team_id: you are not a member of this team',
  'write: an org member outside the team cannot share into the team (22023)');

reset role;
select set_config('request.jwt.claims', '', true);
select is_empty(
  $$select title from public.journal_entries where title like 'pgtap invalid%'
    union all select name from public.notebooks where name like 'pgtap invalid%'$$,
  'write: none of the refused writes left an entry or a notebook behind');
select results_eq(
  $$select e.metadata_visibility, e.team_id, e.org_id, e.notebook_id, m.metadata_visibility
      from public.journal_entries e, public.journal_entries m
     where e.id = 'b10000e1-0000-4000-8000-000000000014' and m.id = 'b10000e0-0000-4000-8000-000000000111'$$,
  $$values ('user'::text, null::uuid, null::uuid, null::uuid, 'user'::text)$$,
  'write: the entries targeted by refused updates are unchanged');

-- =======================================================================================
-- Only owners write entries and contents; nobody writes the derived scope columns.
-- Target: the public/public matrix entry without a notebook (everyone can read it).
-- =======================================================================================
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$update public.journal_entries set title = 'hijacked' where id = 'b10000e0-0000-4000-8000-000000000440'$$), 0,
  'write rights: a team member who can read a public entry cannot update it (0 rows)');
select is(pg_temp.rows_affected($$delete from public.journal_entries where id = 'b10000e0-0000-4000-8000-000000000440'$$), 0,
  'write rights: a team member cannot delete another user''s entry (0 rows)');
select is(pg_temp.rows_affected($$update public.journal_entry_contents set content = 'hijacked' where entry_id = 'b10000e0-0000-4000-8000-000000000440'$$), 0,
  'write rights: a team member cannot update another user''s content (0 rows)');
select throws_ok(
  $$delete from public.journal_entry_contents where entry_id = 'b10000e0-0000-4000-8000-000000000440'$$,
  '42501', 'permission denied for table journal_entry_contents',
  'write rights: clients cannot delete content rows directly (42501)');
select throws_ok(
  $$insert into public.journal_entry_contents (entry_id, content) values ('b10000e0-0000-4000-8000-000000000430', 'hijacked')$$,
  '42501', 'new row violates row-level security policy for table "journal_entry_contents"',
  'write rights: a team member cannot add content to another user''s entry (42501)');
select throws_ok(
  $$select * from public.update_journal_entry('b10000e0-0000-4000-8000-000000000440', '{"title": "hijacked"}')$$,
  '42501', 'only the owner may change this entry', 'write rights: update_journal_entry by a non-owner is refused (42501)');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000005', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$update public.journal_entries set title = 'hijacked' where id = 'b10000e0-0000-4000-8000-000000000110'$$), 0,
  'write rights: a super admin reads every entry but does not edit another user''s entry (0 rows)');
set local role anon;
select set_config('request.jwt.claims', json_build_object('role', 'anon')::text, true);
select throws_ok(
  $$update public.journal_entries set title = 'hijacked' where id = 'b10000e0-0000-4000-8000-000000000440'$$,
  '42501', 'permission denied for table journal_entries',
  'write rights: anon cannot update entries (42501)');
select throws_ok(
  $$insert into public.journal_entries (title) values ('pgtap anon entry')$$,
  '42501', 'permission denied for table journal_entries',
  'write rights: anon cannot create entries (42501)');

-- The derived scope columns, even by the owner.
set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select throws_ok(
  $$update public.journal_entries set meta_scope = 'public' where id = 'b10000e0-0000-4000-8000-000000000110'$$,
  '42501', 'permission denied for table journal_entries',
  'scope columns: the owner cannot write journal_entries.meta_scope (42501)');
select throws_ok(
  $$update public.journal_entries set content_scope = 'public', content_scope_id = null where id = 'b10000e0-0000-4000-8000-000000000110'$$,
  '42501', 'permission denied for table journal_entries',
  'scope columns: the owner cannot write journal_entries.content_scope (42501)');
select throws_ok(
  $$insert into public.journal_entries (title, meta_scope) values ('pgtap scope insert', 'public')$$,
  '42501', 'permission denied for table journal_entries',
  'scope columns: an insert naming meta_scope is refused (42501)');
select throws_ok(
  $$update public.journal_entry_contents set content_scope = 'public' where entry_id = 'b10000e0-0000-4000-8000-000000000110'$$,
  '42501', 'permission denied for table journal_entry_contents',
  'scope columns: the owner cannot write journal_entry_contents.content_scope (42501)');
select throws_ok(
  $$update public.journal_entry_contents set user_id = 'b1000000-0000-4000-8000-000000000004' where entry_id = 'b10000e0-0000-4000-8000-000000000110'$$,
  '42501', 'permission denied for table journal_entry_contents',
  'scope columns: the owner cannot write journal_entry_contents.user_id (42501)');

reset role;
select set_config('request.jwt.claims', '', true);
select results_eq(
  $$select e.title, c.content, e.meta_scope, c.content_scope from public.journal_entries e
      join public.journal_entry_contents c on c.entry_id = e.id
     where e.id in ('b10000e0-0000-4000-8000-000000000440', 'b10000e0-0000-4000-8000-000000000110') order by e.id$$,
  $$values ('pgtap vis meta=user content=user no notebook'::text, 'text of meta=user content=user no notebook, @[Stan Stranger](b1000000-0000-4000-8000-000000000004)'::text, 'user'::text, 'user'::text),
           ('pgtap vis meta=public content=public no notebook', 'text of meta=public content=public no notebook, @[Stan Stranger](b1000000-0000-4000-8000-000000000004)', 'public', 'public')$$,
  'write rights: after all refused writes, the targeted entries and contents are unchanged');

-- =======================================================================================
-- Leaving a team or an organization: what the member shared there leaves with
-- them, on every path, and being added again restores nothing. The team member (in O1 and
-- T1) shares six entries; the owner (T1's admin, O1's owner) and the org member read them.
--   L-1 team/team T1        L-2 org/org O1           L-3 org O1 / team T1 (mixed)
--   L-4 inherits NB-L1 (team/team T1)   L-5 inherits NB-L2 (org/org O1)   L-6 public / team T1
-- Expected reads (full = metadata and content, meta = content hidden, none = not visible),
-- as owner / org member, at each stage: before, after the owner removes them from T1, after
-- they leave O1 themselves, after both add them back.
-- =======================================================================================
create temp table leave_cases (entry_id uuid, label text, ord integer, content_text text,
  before_owner text, before_org text, team_owner text, team_org text, org_owner text, org_org text);
insert into leave_cases values
  ('b10000e2-0000-4000-8000-000000000001', 'L-1 team/team',       1, 'leave text 1', 'full', 'none', 'none', 'none', 'none', 'none'),
  ('b10000e2-0000-4000-8000-000000000002', 'L-2 org/org',         2, 'leave text 2', 'full', 'full', 'full', 'full', 'none', 'none'),
  ('b10000e2-0000-4000-8000-000000000003', 'L-3 org/team',        3, 'leave text 3', 'full', 'meta', 'meta', 'meta', 'none', 'none'),
  ('b10000e2-0000-4000-8000-000000000004', 'L-4 team notebook',   4, 'leave text 4', 'full', 'none', 'none', 'none', 'none', 'none'),
  ('b10000e2-0000-4000-8000-000000000005', 'L-5 org notebook',    5, 'leave text 5', 'full', 'full', 'full', 'full', 'none', 'none'),
  ('b10000e2-0000-4000-8000-000000000006', 'L-6 public/team',     6, 'leave text 6', 'full', 'meta', 'meta', 'meta', 'meta', 'meta');
grant select, update on leave_cases to authenticated;

-- One assertion per case for the current viewer at a stage (`expected` names the column).
create function pg_temp.leave_reads(who text, stage text, expected text) returns setof text
language plpgsql as $$
declare
  c record;
  code text;
begin
  for c in select * from leave_cases order by ord loop
    code := to_jsonb(c) ->> expected;
    return next is(pg_temp.seen(c.entry_id), pg_temp.expect(code <> 'none', code = 'full', c.content_text),
      format('leaving, %s: %s reads %s: %s', stage, who, c.label, code));
  end loop;
end
$$;
grant execute on function pg_temp.leave_reads(text, text, text) to authenticated;

set local role authenticated;
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
insert into public.notebooks (id, name, metadata_visibility, content_visibility, team_id, org_id) values
  ('b10000b2-0000-4000-8000-000000000001', 'pgtap leave team notebook', 'team', 'team', 'b10000c0-0000-4000-8000-000000000001', null),
  ('b10000b2-0000-4000-8000-000000000002', 'pgtap leave org notebook', 'org', 'org', null, 'b10000a0-0000-4000-8000-000000000001');
insert into public.journal_entries (id, notebook_id, title, metadata_visibility, content_visibility, team_id, org_id) values
  ('b10000e2-0000-4000-8000-000000000001', null, 'pgtap leave L-1', 'team', 'team', 'b10000c0-0000-4000-8000-000000000001', null),
  ('b10000e2-0000-4000-8000-000000000002', null, 'pgtap leave L-2', 'org', 'org', null, 'b10000a0-0000-4000-8000-000000000001'),
  ('b10000e2-0000-4000-8000-000000000003', null, 'pgtap leave L-3', 'org', 'team', 'b10000c0-0000-4000-8000-000000000001', 'b10000a0-0000-4000-8000-000000000001'),
  ('b10000e2-0000-4000-8000-000000000004', 'b10000b2-0000-4000-8000-000000000001', 'pgtap leave L-4', 'user', 'user', null, null),
  ('b10000e2-0000-4000-8000-000000000005', 'b10000b2-0000-4000-8000-000000000002', 'pgtap leave L-5', 'user', 'user', null, null),
  ('b10000e2-0000-4000-8000-000000000006', null, 'pgtap leave L-6', 'public', 'team', 'b10000c0-0000-4000-8000-000000000001', null);
insert into public.journal_entry_contents (entry_id, content) select entry_id, content_text from leave_cases;

select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select * from pg_temp.leave_reads('owner', 'before', 'before_owner');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select * from pg_temp.leave_reads('org member', 'before', 'before_org');

-- The owner, T1's admin, removes the member from T1.
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$delete from public.team_members
    where team_id = 'b10000c0-0000-4000-8000-000000000001' and user_id = 'b1000000-0000-4000-8000-000000000002'$$), 1,
  'leaving: T1''s admin removes the member from T1');
select * from pg_temp.leave_reads('owner', 'removed from T1', 'team_owner');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select * from pg_temp.leave_reads('org member', 'removed from T1', 'team_org');

-- The ex-member can no longer publish into T1, by any write path.
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select results_eq(
  $$select metadata_visibility, content_visibility, team_id, org_id, notebook_id from public.journal_entries
     where id::text like 'b10000e2-%' order by id$$,
  $$values ('user'::text, 'user'::text, null::uuid, null::uuid, null::uuid),
           ('org', 'org', null, 'b10000a0-0000-4000-8000-000000000001'::uuid, null),
           ('org', 'user', null, 'b10000a0-0000-4000-8000-000000000001', null),
           ('user', 'user', null, null, 'b10000b2-0000-4000-8000-000000000001'::uuid),
           ('user', 'user', null, null, 'b10000b2-0000-4000-8000-000000000002'),
           ('public', 'user', null, null, null)$$,
  'leaving: the levels that named T1 fell back to user and team_id is cleared (the member still reads all of them)');
select results_eq(
  $$select metadata_visibility, content_visibility, team_id from public.notebooks where id = 'b10000b2-0000-4000-8000-000000000001'$$,
  $$values ('user'::text, 'user'::text, null::uuid)$$, 'leaving: the notebook shared with T1 fell back to user');
select * from pg_temp.leave_reads('ex-member', 'removed from T1 (own entries)', 'before_owner');
select throws_ok(
  $$select * from public.update_journal_entry('b10000e2-0000-4000-8000-000000000001',
      '{"metadata_visibility": "team", "content_visibility": "team", "team_id": "b10000c0-0000-4000-8000-000000000001"}')$$,
  '22023', 'team_id: you are not a member of this team', 'leaving: update_journal_entry cannot share back into T1');
select throws_ok(
  $$update public.journal_entries set content_visibility = 'team', team_id = 'b10000c0-0000-4000-8000-000000000001'
     where id = 'b10000e2-0000-4000-8000-000000000003'$$,
  '22023', 'team_id: you are not a member of this team', 'leaving: a direct update (PostgREST PATCH) cannot share back into T1');
select throws_ok(
  $$update public.notebooks set metadata_visibility = 'team', content_visibility = 'team', team_id = 'b10000c0-0000-4000-8000-000000000001'
     where id = 'b10000b2-0000-4000-8000-000000000001'$$,
  '22023', 'team_id: you are not a member of this team', 'leaving: the notebook cannot be shared back into T1');
select throws_ok(
  $$select * from public.create_journal_entry(title => 'pgtap leave new', content => 'x', metadata_visibility => 'team',
      team_id => 'b10000c0-0000-4000-8000-000000000001')$$,
  '22023', 'team_id: you are not a member of this team', 'leaving: a new entry cannot go into T1');
select is(pg_temp.rows_affected($$update public.journal_entry_contents set content = 'edited after leaving'
    where entry_id in ('b10000e2-0000-4000-8000-000000000001', 'b10000e2-0000-4000-8000-000000000004')$$), 2,
  'leaving: the ex-member still edits their own texts (PostgREST PATCH on the content table)');
select lives_ok(
  $$select * from public.update_journal_entry('b10000e2-0000-4000-8000-000000000003', '{"content": "edited after leaving"}')$$,
  'leaving: and through update_journal_entry');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select results_eq(
  $$select pg_temp.seen(id) from (values ('b10000e2-0000-4000-8000-000000000001'::uuid, 1), ('b10000e2-0000-4000-8000-000000000003', 2),
      ('b10000e2-0000-4000-8000-000000000004', 3)) v(id, o) order by o$$,
  $$values ('not visible'), ('metadata visible, content hidden'), ('not visible')$$,
  'leaving: T1 reads none of the edited texts');

-- The member leaves O1 themselves (and with it any team of O1).
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select is(pg_temp.rows_affected($$delete from public.organization_members
    where org_id = 'b10000a0-0000-4000-8000-000000000001' and user_id = 'b1000000-0000-4000-8000-000000000002'$$), 1,
  'leaving: the member leaves O1');
select throws_ok(
  $$select * from public.update_journal_entry('b10000e2-0000-4000-8000-000000000002',
      '{"metadata_visibility": "org", "org_id": "b10000a0-0000-4000-8000-000000000001"}')$$,
  '22023', 'org_id: you are not a member of this organization', 'leaving: nothing can be shared back into O1');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
update leave_cases set content_text = 'edited after leaving' where ord in (1, 3, 4);
select * from pg_temp.leave_reads('owner', 'left O1', 'org_owner');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000003', 'role', 'authenticated')::text, true);
select * from pg_temp.leave_reads('org member', 'left O1', 'org_org');

-- Added back to O1 and T1: nothing is shared again until the member chooses to.
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
insert into public.organization_members (org_id, user_id, role) values
  ('b10000a0-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000002', 'member');
insert into public.team_members (team_id, user_id, role) values
  ('b10000c0-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000002', 'member');
select * from pg_temp.leave_reads('owner', 'added back', 'org_owner');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000002', 'role', 'authenticated')::text, true);
select lives_ok(
  $$select * from public.update_journal_entry('b10000e2-0000-4000-8000-000000000001',
      '{"metadata_visibility": "team", "content_visibility": "team", "team_id": "b10000c0-0000-4000-8000-000000000001"}')$$,
  'leaving: once added back, the member may share into T1 again');
select set_config('request.jwt.claims',
  json_build_object('sub', 'b1000000-0000-4000-8000-000000000001', 'role', 'authenticated')::text, true);
select is(pg_temp.seen('b10000e2-0000-4000-8000-000000000001'), 'metadata visible, content ''edited after leaving''',
  'leaving: and T1 reads what they share anew');

reset role;
select set_config('request.jwt.claims', '', true);
-- The invariant behind all of this: no entry or notebook names a group its owner is not in.
select is_empty(
  $$select id from public.journal_entries e
     where (e.team_id is not null and not exists (select 1 from public.team_members m where m.team_id = e.team_id and m.user_id = e.user_id))
        or (e.org_id is not null and not exists (select 1 from public.organization_members m where m.org_id = e.org_id and m.user_id = e.user_id))
    union all
    select id from public.notebooks n
     where (n.team_id is not null and not exists (select 1 from public.team_members m where m.team_id = n.team_id and m.user_id = n.user_id))
        or (n.org_id is not null and not exists (select 1 from public.organization_members m where m.org_id = n.org_id and m.user_id = n.user_id))$$,
  'leaving: no entry or notebook names a team or organization its owner does not belong to');
select throws_ok(
  $$insert into public.journal_entries (user_id, title, metadata_visibility, team_id)
    values ('b1000000-0000-4000-8000-000000000004', 'pgtap trusted write', 'team', 'b10000c0-0000-4000-8000-000000000001')$$,
  '23503', 'team_id: the owner is not a member of this team',
  'leaving: even a trusted session cannot share a stranger''s entry into a team (private.check_owner_membership)');
-- Rows left behind before the removal took entries along (made here by removing memberships
-- with triggers off) are put right by the migration's one-off fallback.
select tests.create_user(to_jsonb(u)) from (values ('b1000000-0000-4000-8000-000000000007', 'pgtap-vis-stale@example.test')) u (id, email);
insert into public.organization_members (org_id, user_id, role) values
  ('b10000a0-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000007', 'member');
insert into public.team_members (team_id, user_id, role) values
  ('b10000c0-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000007', 'member');
insert into public.notebooks (id, user_id, name, metadata_visibility, content_visibility, org_id) values
  ('b10000b2-0000-4000-8000-000000000007', 'b1000000-0000-4000-8000-000000000007', 'pgtap stale book', 'org', 'org', 'b10000a0-0000-4000-8000-000000000001');
insert into public.journal_entries (id, user_id, notebook_id, title, metadata_visibility, content_visibility, team_id, org_id) values
  ('b10000e2-0000-4000-8000-000000000071', 'b1000000-0000-4000-8000-000000000007', null, 'pgtap stale team', 'team', 'team', 'b10000c0-0000-4000-8000-000000000001', null),
  ('b10000e2-0000-4000-8000-000000000072', 'b1000000-0000-4000-8000-000000000007', 'b10000b2-0000-4000-8000-000000000007', 'pgtap stale inherits', 'user', 'user', null, null),
  ('b10000e2-0000-4000-8000-000000000073', 'b1000000-0000-4000-8000-000000000007', 'b10000b2-0000-4000-8000-000000000007', 'pgtap stale public in book', 'public', 'team', 'b10000c0-0000-4000-8000-000000000001', null);
set local session_replication_role = replica;
delete from public.team_members where user_id = 'b1000000-0000-4000-8000-000000000007';
delete from public.organization_members where user_id = 'b1000000-0000-4000-8000-000000000007';
set local session_replication_role = origin;
select is(private.unshare_where_owner_left(), 3, 'migration: the one-off fallback fixes the two entries and the notebook that named a group their owner left');
select results_eq(
  $$select title, metadata_visibility, content_visibility, team_id, org_id, notebook_id, meta_scope, content_scope
      from public.journal_entries where user_id = 'b1000000-0000-4000-8000-000000000007' order by id$$,
  $$values ('pgtap stale team'::text, 'user'::text, 'user'::text, null::uuid, null::uuid, null::uuid, 'user'::text, 'user'::text),
           ('pgtap stale inherits', 'user', 'user', null, null, 'b10000b2-0000-4000-8000-000000000007'::uuid, 'user', 'user'),
           ('pgtap stale public in book', 'public', 'user', null, null, null, 'public', 'user')$$,
  'migration: stale entries fall back as the cascade does (own levels to user, out of the notebook; inheriting ones follow the notebook)');
select results_eq(
  $$select metadata_visibility, content_visibility, org_id from public.notebooks where id = 'b10000b2-0000-4000-8000-000000000007'$$,
  $$values ('user'::text, 'user'::text, null::uuid)$$, 'migration: the stale notebook falls back to user');
select is(private.unshare_where_owner_left(), 0, 'migration: and a second run finds nothing');

-- Deleting an account whose entries and notebook are shared with a team and its organization:
-- the membership cascades and the entry cascades meet without error.
select tests.create_user(to_jsonb(u)) from (values ('b1000000-0000-4000-8000-000000000006', 'pgtap-vis-leaver@example.test')) u (id, email);
insert into public.organization_members (org_id, user_id, role) values
  ('b10000a0-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000006', 'member');
insert into public.team_members (team_id, user_id, role) values
  ('b10000c0-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000006', 'member');
insert into public.notebooks (id, user_id, name, metadata_visibility, content_visibility, team_id) values
  ('b10000b2-0000-4000-8000-000000000006', 'b1000000-0000-4000-8000-000000000006', 'pgtap leaver book', 'team', 'team', 'b10000c0-0000-4000-8000-000000000001');
insert into public.journal_entries (user_id, notebook_id, title, metadata_visibility, content_visibility, team_id, org_id) values
  ('b1000000-0000-4000-8000-000000000006', null, 'pgtap leaver team', 'team', 'org', 'b10000c0-0000-4000-8000-000000000001', 'b10000a0-0000-4000-8000-000000000001'),
  ('b1000000-0000-4000-8000-000000000006', 'b10000b2-0000-4000-8000-000000000006', 'pgtap leaver book entry', 'user', 'user', null, null);
select lives_ok($$delete from auth.users where id = 'b1000000-0000-4000-8000-000000000006'$$,
  'leaving: an account whose entries are shared with a team and an organization can be deleted');
select is((select count(*)::int from public.journal_entries where user_id = 'b1000000-0000-4000-8000-000000000006'), 0,
  'leaving: and its entries went with it');

-- =======================================================================================
-- A former member's old notebooks: they leave the organization and its team with their owner,
-- so nothing written or moved there later is shared. Then the internal scope columns, which
-- client roles do not read (anon none of them; signed-in clients only journal_entries'
-- meta_scope_id, which names nothing they are not part of).
-- People (c6000000-...-NN):
--   01 Olga  owner of O, admin of T          05 Nina  in no group
--   02 Mark  member of O and T               06 Nora  member of O and T, publishes, then removed
--   03 Tess  member of O                     07 Sue   super admin
--   04 Stan  stranger
-- O = c60000a0-...-01 (O2 = -02, Stan's own); T = c60000c0-...-01.
-- =======================================================================================
reset role;
select set_config('request.jwt.claims', '', true);
select tests.create_user(to_jsonb(u)) from (values 
  ('c6000000-0000-4000-8000-000000000001', 'pgtap-former-olga@example.test', '{"full_name": "Olga Owner"}'),
  ('c6000000-0000-4000-8000-000000000002', 'pgtap-former-mark@example.test', '{"full_name": "Mark Member"}'),
  ('c6000000-0000-4000-8000-000000000003', 'pgtap-former-tess@example.test', '{"full_name": "Tess Orgonly"}'),
  ('c6000000-0000-4000-8000-000000000004', 'pgtap-former-stan@example.test', '{"full_name": "Stan Stranger"}'),
  ('c6000000-0000-4000-8000-000000000005', 'pgtap-former-nina@example.test', '{"full_name": "Nina Newcomer"}'),
  ('c6000000-0000-4000-8000-000000000006', 'pgtap-former-nora@example.test', '{"full_name": "Nora Former"}'),
  ('c6000000-0000-4000-8000-000000000007', 'pgtap-former-sue@example.test', '{"full_name": "Sue Super"}')) u (id, email, raw_user_meta_data);
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
    perform tests.authenticate_as(('c6000000-0000-4000-8000-0000000000' || who)::uuid);
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

-- Former members cannot publish through an old notebook.
set local role authenticated;
select tests.authenticate_as('c6000000-0000-4000-8000-000000000006');
insert into public.notebooks (id, name, metadata_visibility, content_visibility, org_id) values
  ('c60000e0-0000-4000-8000-000000000001', 'Org notebook', 'org', 'org', 'c60000a0-0000-4000-8000-000000000001');
insert into public.notebooks (id, name, metadata_visibility, content_visibility, team_id) values
  ('c60000e0-0000-4000-8000-000000000002', 'Team notebook', 'team', 'user', 'c60000c0-0000-4000-8000-000000000001');
insert into public.notebooks (id, name) values ('c60000e0-0000-4000-8000-000000000003', 'Private notebook');
select lives_ok(
  $$select public.create_journal_entry('while a member', 'x', notebook_id => 'c60000e0-0000-4000-8000-000000000001')$$,
  'former member: while a member, publishes into the organization through their org notebook');
select lives_ok(
  $$insert into public.journal_entries (id, title) values ('c60000f0-0000-4000-8000-000000000001', 'kept private')$$,
  'former member: while a member, an entry of their own outside any notebook');

reset role;
delete from public.organization_members
 where org_id = 'c60000a0-0000-4000-8000-000000000001' and user_id = 'c6000000-0000-4000-8000-000000000006';
set local role authenticated;
select tests.authenticate_as('c6000000-0000-4000-8000-000000000006');
-- The old notebooks left the organization (and its team) with their owner, so what a former
-- member puts in them stays theirs.
select results_eq(
  $$select metadata_visibility, content_visibility, team_id, org_id from public.notebooks
     where id in ('c60000e0-0000-4000-8000-000000000001', 'c60000e0-0000-4000-8000-000000000002') order by id$$,
  $$values ('user'::text, 'user'::text, null::uuid, null::uuid), ('user', 'user', null, null)$$,
  'former member: the old organization and team notebooks fell back to user when their owner left');
select lives_ok(
  $$select public.create_journal_entry('after removal', 'x', notebook_id => 'c60000e0-0000-4000-8000-000000000001')$$,
  'former member: may still write in their old organization notebook, now private');
select lives_ok(
  $$select public.create_journal_entry('after removal', 'x', notebook_id => 'c60000e0-0000-4000-8000-000000000002')$$,
  'former member: and in the old team notebook (removal from the organization left the team too)');
select lives_ok(
  $$insert into public.journal_entries (title, notebook_id) values ('direct', 'c60000e0-0000-4000-8000-000000000001')$$,
  'former member: also by a direct insert');
select lives_ok(
  $$select public.update_journal_entry('c60000f0-0000-4000-8000-000000000001', '{"notebook_id": "c60000e0-0000-4000-8000-000000000001"}')$$,
  'former member: and move an entry into it');
select lives_ok(
  $$select public.create_journal_entry('mine', 'x', notebook_id => 'c60000e0-0000-4000-8000-000000000003')$$,
  'former member: their private notebook still works');
select lives_ok(
  $$select public.create_journal_entry('public anyway', 'x', notebook_id => 'c60000e0-0000-4000-8000-000000000001',
                                       metadata_visibility => 'public', content_visibility => 'public')$$,
  'former member: an entry with its own levels goes in it as before');
reset role;
select is_empty(
  $$select title from public.journal_entries
     where user_id = 'c6000000-0000-4000-8000-000000000006' and ('org' in (meta_scope, content_scope) or 'team' in (meta_scope, content_scope))$$,
  'former member: nothing of theirs is left in the organization or its team (the entry written while a member left too)');

-- Client roles do not read the internal scope columns.
reset role;
select set_config('request.jwt.claims', '', true);
-- Written by T's admin (an entry names only a team its owner belongs to).
insert into public.journal_entries (id, user_id, title, metadata_visibility, content_visibility, team_id) values
  ('c60000f0-0000-4000-8000-000000000009', 'c6000000-0000-4000-8000-000000000001', 'public, text for the team',
   'public', 'team', 'c60000c0-0000-4000-8000-000000000001');
insert into public.journal_entry_contents (entry_id, content) values ('c60000f0-0000-4000-8000-000000000009', 'team text');
set local role anon;
select throws_ok($$select meta_scope_id from public.journal_entries$$, '42501', null,
  'scope columns: anon cannot read journal_entries.meta_scope_id');
select throws_ok($$select content_scope_id from public.journal_entries$$, '42501', null,
  'scope columns: anon cannot read journal_entries.content_scope_id (it would name the team of a public entry''s text)');
select throws_ok($$select content_scope_id from public.journal_entry_contents$$, '42501', null,
  'scope columns: anon cannot read the scope columns of contents');
select throws_ok($$select meta_scope_id from public.notebooks$$, '42501', null,
  'scope columns: anon cannot read notebooks.meta_scope_id');
select results_eq(
  $$select title, content, content_hidden from public.journal_entry_details where id = 'c60000f0-0000-4000-8000-000000000009'$$,
  $$values ('public, text for the team', null::text, true)$$,
  'scope columns: anon still reads public entries through journal_entry_details (text hidden)');
set local role authenticated;
select tests.authenticate_as('c6000000-0000-4000-8000-000000000004');
select throws_ok($$select meta_scope_id, content_scope_id from public.journal_entry_contents$$, '42501', null,
  'scope columns: signed-in clients cannot read the scope columns of contents');
-- journal_entries.meta_scope_id stays readable for signed-in clients (the feed's index
-- conditions name it): on every row they may read it is null, their own entry's, or a
-- team/organization they belong to. Checked for each person here and the super admin.
select is(pg_temp.scope_ids_beyond_the_reader(), null::text[],
  'scope columns: meta_scope_id tells a signed-in reader nothing they are not part of');

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
  'scope columns: anon reads every column of journal_entries but the two scope ids (grant new columns to anon)');
select is(pg_temp.withheld('public.journal_entries', 'authenticated'), '{}'::text[],
  'scope columns: signed-in clients read every column of journal_entries');
select is(pg_temp.withheld('public.journal_entry_contents', 'anon'), array['content_scope_id', 'meta_scope_id'],
  'scope columns: anon reads every column of journal_entry_contents but the two scope ids (grant new columns)');
select is(pg_temp.withheld('public.journal_entry_contents', 'authenticated'), array['content_scope_id', 'meta_scope_id'],
  'scope columns: signed-in clients read every column of journal_entry_contents but the two scope ids (grant new columns)');
select is(pg_temp.withheld('public.notebooks', 'anon'), array['meta_scope_id'],
  'scope columns: anon reads every column of notebooks but meta_scope_id (grant new columns to anon)');

select * from finish();
rollback;
