-- Benchmark fixture for the visibility feed (issue 3): 1,000,000 entries by 50,000 authors
-- in 2,000 organizations and 10,000 teams (5 teams and 25 authors per organization, 5 authors
-- per team); levels 70 % user, 15 % team, 10 % org, 5 % public. A viewer belongs to 5
-- organizations and 20 teams and wrote 200 entries of their own.
--
-- Loaded in bulk with triggers off (session_replication_role = replica), so the derived
-- scope columns the triggers maintain are computed here with the same rules.
-- BENCH_SCALE=k (the setting bench.scale): k times the authors, organizations, teams and entries
-- (each viewer still sees as much: the same groups, a longer history around them).
begin;
set local session_replication_role = replica;
create temporary table bench_feed_scale on commit drop as
  select coalesce(nullif(current_setting('bench.scale', true), '')::integer, 1) as k;

create temporary table bench_authors on commit drop as
  select g as n, gen_random_uuid() as id from bench_feed_scale, generate_series(1, 50000 * k) g;
create temporary table bench_orgs on commit drop as
  select g as n, gen_random_uuid() as id from bench_feed_scale, generate_series(1, 2000 * k) g;
create temporary table bench_teams on commit drop as
  select g as n, gen_random_uuid() as id, ((g - 1) % (2000 * k)) + 1 as org_n from bench_feed_scale, generate_series(1, 10000 * k) g;

insert into auth.users (id, email) select id, 'bench-author-' || n || '@bench.local' from bench_authors;
insert into public.profiles (id, full_name) select id, 'Author ' || n from bench_authors;

insert into public.organizations (id, name, owner_id)
select o.id, 'Bench org ' || o.n, a.id from bench_orgs o join bench_authors a on a.n = o.n;
-- Author n belongs to organization ((n - 1) % 2000) + 1 and team ((n - 1) % 10000) + 1.
insert into public.organization_members (org_id, user_id, role)
select o.id, a.id, case when a.n <= 2000 * (select k from bench_feed_scale) then 'owner' else 'member' end
  from bench_authors a join bench_orgs o on o.n = ((a.n - 1) % (2000 * (select k from bench_feed_scale))) + 1;
insert into public.teams (id, name, org_id, admin_id)
select t.id, 'Bench team ' || t.n, o.id, a.id
  from bench_teams t join bench_orgs o on o.n = t.org_n join bench_authors a on a.n = t.n;
insert into public.team_members (team_id, org_id, user_id, role)
select t.id, o.id, a.id, case when a.n = t.n then 'admin' else 'member' end
  from bench_authors a join bench_teams t on t.n = ((a.n - 1) % (10000 * (select k from bench_feed_scale))) + 1 join bench_orgs o on o.n = t.org_n;

-- The viewer: organizations 1..5 and 20 of their teams.
insert into auth.users (id, email) values ('b0000000-0000-4000-8000-00000000beef', 'bench-viewer@bench.local');
insert into public.profiles (id, full_name) values ('b0000000-0000-4000-8000-00000000beef', 'Bench Viewer');
insert into public.organization_members (org_id, user_id, role)
select id, 'b0000000-0000-4000-8000-00000000beef', 'member' from bench_orgs where n <= 5;
insert into public.team_members (team_id, org_id, user_id, role)
select t.id, o.id, 'b0000000-0000-4000-8000-00000000beef', 'member'
  from bench_teams t join bench_orgs o on o.n = t.org_n where t.org_n <= 5 and t.n <= 8000 * (select k from bench_feed_scale);

-- Entry i: author ((i - 1) % 50000) + 1, one minute older than entry i - 1.
create temporary table bench_entries on commit drop as
select i,
       gen_random_uuid() as id,
       a.id as user_id,
       timestamptz '2026-11-01 00:00:00+00' - make_interval(mins => i) as created_at,
       case when h < 70 then 'user' when h < 85 then 'team' when h < 95 then 'org' else 'public' end as meta,
       t.id as team_id,
       o.id as org_id,
       (i / 7) % 2 = 0 as same_content_level
  from (select i, ((i::bigint * 2654435761) % 100)::int as h from bench_feed_scale, generate_series(1, 1000000 * k) i) s
  join bench_authors a on a.n = ((s.i - 1) % (50000 * (select k from bench_feed_scale))) + 1
  join bench_teams t on t.n = ((a.n - 1) % (10000 * (select k from bench_feed_scale))) + 1
  join bench_orgs o on o.n = ((a.n - 1) % (2000 * (select k from bench_feed_scale))) + 1;

insert into public.journal_entries (id, user_id, title, mood, tags, metadata_visibility, content_visibility,
  team_id, org_id, meta_scope, meta_scope_id, content_scope, content_scope_id, created_at, updated_at)
select id, user_id, 'Entry ' || i, (array['joyful', 'calm', 'tired', 'hopeful'])[1 + i % 4], array['t' || (i % 50)],
       meta, content_level,
       case when 'team' in (meta, content_level) then team_id end,
       case when 'org' in (meta, content_level) then org_id end,
       meta, case meta when 'team' then team_id when 'org' then org_id end,
       content_level, case content_level when 'team' then team_id when 'org' then org_id end,
       created_at, created_at
  from (select *, case when same_content_level then meta else 'user' end as content_level from bench_entries) e;

insert into public.journal_entry_contents (entry_id, user_id, content, content_scope, content_scope_id,
  meta_scope, meta_scope_id, mentions_indexed_at)
select e.id, e.user_id, 'Text of entry ' || b.i || '. ' || repeat('Lorem ipsum dolor sit amet. ', 4),
       e.content_scope, e.content_scope_id, e.meta_scope, e.meta_scope_id, e.created_at
  from public.journal_entries e join bench_entries b on b.id = e.id;

-- The viewer's own 200 entries, spread over the same history.
insert into public.journal_entries (user_id, title, meta_scope, content_scope, created_at, updated_at)
select 'b0000000-0000-4000-8000-00000000beef', 'My entry ' || g, 'user', 'user',
       timestamptz '2026-11-01 00:00:00+00' - make_interval(mins => g * 5000 + 7),
       timestamptz '2026-11-01 00:00:00+00' - make_interval(mins => g * 5000 + 7)
  from generate_series(1, 200) g;
insert into public.journal_entry_contents (entry_id, user_id, content)
select id, user_id, 'My private text ' || title from public.journal_entries
 where user_id = 'b0000000-0000-4000-8000-00000000beef';

commit;
analyze;
