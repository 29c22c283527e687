-- =============================================================================================
-- Journal: the feed
-- =============================================================================================
-- journal_feed and the visible page's candidates (GET /api/journal). The area's overview:
-- journal/tables.sql.

-- The visible feed's candidates: its four index-ordered branches (own, my teams, my
-- organizations, public; for super admins own and everyone else's) in one security definer
-- function that reads the caller's memberships once and returns the page's ids. It can only
-- propose, never widen: journal_feed reads the ids as the caller. Its branches are the
-- metadata policy spelled out; if they ever admitted an entry the policy does not, the page
-- would come back short, which supabase/tests/journal_visibility.test.sql checks.
create or replace function private.visible_entry_page_ids(
  team_id uuid, org_id uuid, notebook_id uuid, mood text, tag text,
  cursor_at timestamptz, cursor_id uuid, n integer
) returns uuid[]
language plpgsql stable security definer
set search_path = ''
set plan_cache_mode = force_generic_plan
set jit = off -- as journal_feed: its generic plan passes jit_above_cost at 10,000,000 entries
as $$
declare
  me uuid := auth.uid();
begin
  if me is null then
    return '{}'::uuid[];
  end if;
  return array(
    with my_teams as (select m.team_id from public.team_members m where m.user_id = me),
    my_orgs as (select m.org_id from public.organization_members m where m.user_id = me)
    select u.id from (
      (select e.id, e.created_at from public.journal_entries e
        where e.user_id = me
          and (visible_entry_page_ids.team_id is null or (e.meta_scope = 'team' and e.meta_scope_id = visible_entry_page_ids.team_id))
          and (visible_entry_page_ids.org_id is null or (e.meta_scope = 'org' and e.meta_scope_id = visible_entry_page_ids.org_id))
          and (visible_entry_page_ids.notebook_id is null or e.notebook_id = visible_entry_page_ids.notebook_id)
          and (visible_entry_page_ids.mood is null or e.mood = visible_entry_page_ids.mood)
          and (visible_entry_page_ids.tag is null or e.tags @> array[visible_entry_page_ids.tag])
          and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
        order by e.created_at desc, e.id desc limit n)
      union all
      (select e.id, e.created_at from my_teams t cross join lateral (
         select e.id, e.created_at from public.journal_entries e
          where visible_entry_page_ids.org_id is null
            and e.meta_scope = 'team' and e.meta_scope_id = t.team_id and e.user_id <> me
            and (visible_entry_page_ids.team_id is null or t.team_id = visible_entry_page_ids.team_id)
            and (visible_entry_page_ids.notebook_id is null or e.notebook_id = visible_entry_page_ids.notebook_id)
            and (visible_entry_page_ids.mood is null or e.mood = visible_entry_page_ids.mood)
            and (visible_entry_page_ids.tag is null or e.tags @> array[visible_entry_page_ids.tag])
            and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
          order by e.created_at desc, e.id desc limit n) e)
      union all
      (select e.id, e.created_at from my_orgs o cross join lateral (
         select e.id, e.created_at from public.journal_entries e
          where visible_entry_page_ids.team_id is null
            and e.meta_scope = 'org' and e.meta_scope_id = o.org_id and e.user_id <> me
            and (visible_entry_page_ids.org_id is null or o.org_id = visible_entry_page_ids.org_id)
            and (visible_entry_page_ids.notebook_id is null or e.notebook_id = visible_entry_page_ids.notebook_id)
            and (visible_entry_page_ids.mood is null or e.mood = visible_entry_page_ids.mood)
            and (visible_entry_page_ids.tag is null or e.tags @> array[visible_entry_page_ids.tag])
            and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
          order by e.created_at desc, e.id desc limit n) e)
      union all
      (select e.id, e.created_at from public.journal_entries e
        where visible_entry_page_ids.team_id is null and visible_entry_page_ids.org_id is null
          and e.meta_scope = 'public' and e.user_id <> me
          and (visible_entry_page_ids.notebook_id is null or e.notebook_id = visible_entry_page_ids.notebook_id)
          and (visible_entry_page_ids.mood is null or e.mood = visible_entry_page_ids.mood)
          and (visible_entry_page_ids.tag is null or e.tags @> array[visible_entry_page_ids.tag])
          and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
        order by e.created_at desc, e.id desc limit n)
    ) u
    order by u.created_at desc, u.id desc
    limit n);
end
$$;
comment on function private.visible_entry_page_ids(uuid, uuid, uuid, text, text, timestamptz, uuid, integer) is
  'Ids of the caller''s next visible-feed page (metadata visibility, filters, keyset cursor), newest first; '
  'journal_feed reads them under RLS. Proposes only: never returns rows or content.';
grant execute on function private.visible_entry_page_ids(uuid, uuid, uuid, text, text, timestamptz, uuid, integer) to authenticated;

/*
 * GET /api/journal (scope own) and ?scope=visible: one page, newest first, after an optional
 * (before_created_at, before_id) cursor; the cursor is an index condition.
 *
 * PL/pgSQL, whose statements keep their plans for the session (a SQL function with a SET
 * clause is planned again on every call), with plan_cache_mode forced to generic so each
 * branch stays read newest-first from its own index. Without a search the visible page's
 * candidates come from private.visible_entry_page_ids (the branches, memberships read once)
 * and are then selected as the caller, so the policies of journal_entries and
 * journal_entry_contents decide every row returned, content included. A search must not match
 * content the caller may not read, so it runs as the caller: four branches under RLS. The
 * viewer's tone icons are read once per page; so are the page's authors
 * (private.author_cards, journal/entries.sql: one call with the page's authors).
 *
 * jit off, here and in visible_entry_page_ids, whoever calls: a generic plan's estimate grows
 * with the table (its optional filters make the public branch look like a whole-index scan:
 * cost 119,895 at 10,000,000 entries), past jit_above_cost (100,000), and compiling took
 * 50-60 ms for a page that runs in 1 ms. PostgREST's roles have jit off already (role
 * settings); a session that sets its role, a pooler in session mode or service_role do not.
 */
create or replace function public.journal_feed(
  scope text default 'own',
  team_id uuid default null,
  org_id uuid default null,
  notebook_id uuid default null,
  mood text default null,
  tag text default null,
  search text default null,
  before_created_at timestamptz default null,
  before_id uuid default null,
  page_size integer default 50
) returns setof public.journal_entry_details
language plpgsql stable
set search_path = ''
set plan_cache_mode = force_generic_plan
set jit = off
as $$
declare
  me uuid := auth.uid(); -- a plain expression: no query per call
  -- No cursor: start after the newest possible entry (keeps the cursor an index condition).
  cursor_at timestamptz := coalesce(journal_feed.before_created_at, 'infinity'::timestamptz);
  cursor_id uuid := coalesce(journal_feed.before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid);
  n integer := least(greatest(coalesce(journal_feed.page_size, 50), 1), 200);
  -- The viewer's icons once per page (mood -> URL), not one lookup per entry; set below for a
  -- signed-in viewer only (anon may not call the helper).
  icons jsonb;
  page_ids uuid[]; -- the visible page's candidates (no search)
  pattern text := '%' || replace(replace(replace(journal_feed.search, '\', '\\'), '%', '\%'), '_', '\_') || '%';
begin
  if me is null and journal_feed.scope is distinct from 'visible' then
    return; -- an anonymous caller has no entries of their own
  end if;
  if me is not null then
    icons := private.viewer_tone_icons();
  end if;
  if journal_feed.scope is distinct from 'visible' then
    return query
      with p as materialized (
          select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                 e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at, e.meta_scope, e.content_scope, e.row_version
            from public.journal_entries e
           where e.user_id = me
             and (journal_feed.team_id is null or (e.meta_scope = 'team' and e.meta_scope_id = journal_feed.team_id))
             and (journal_feed.org_id is null or (e.meta_scope = 'org' and e.meta_scope_id = journal_feed.org_id))
             and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
             and (journal_feed.mood is null or e.mood = journal_feed.mood)
             and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
             and (journal_feed.search is null or e.title ilike pattern or exists (
                   select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
             and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
           order by e.created_at desc, e.id desc
           limit n),
      authors as (select * from private.author_cards(array(select p.user_id from p)))
      select p.id, p.user_id, p.notebook_id, p.title, coalesce(c.content, ''), false, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, icons ->> p.mood, private.entry_track(p.music_track_id),
             a.full_name, a.avatar_url, p.meta_scope,
             case when array_position('{user,team,org,public}'::text[], p.content_scope)
                       > array_position('{user,team,org,public}'::text[], p.meta_scope)
                  then p.meta_scope else p.content_scope end,
             p.row_version
        from p
        left join public.journal_entry_contents c on c.entry_id = p.id
        left join authors a on a.user_id = p.user_id
       order by p.created_at desc, p.id desc;
  elsif me is null then
    -- Anonymous callers: public entries (rule 3, public is anyone), as journal_entry_details
    -- shows them to anon; the policies for anon decide the rows and the text.
    return query
      with p as materialized (
          select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                 e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at, e.meta_scope, e.content_scope, e.row_version
            from public.journal_entries e
           where e.meta_scope = 'public' and journal_feed.team_id is null and journal_feed.org_id is null
             and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
             and (journal_feed.mood is null or e.mood = journal_feed.mood)
             and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
             and (journal_feed.search is null or e.title ilike pattern or exists (
                   select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
             and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
           order by e.created_at desc, e.id desc
           limit n),
      authors as (select * from private.author_cards(array(select p.user_id from p)))
      select p.id, p.user_id, p.notebook_id, p.title, c.content, c.entry_id is null, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, null::text, private.entry_track(p.music_track_id),
             a.full_name, a.avatar_url, p.meta_scope,
             case when array_position('{user,team,org,public}'::text[], p.content_scope)
                       > array_position('{user,team,org,public}'::text[], p.meta_scope)
                  then p.meta_scope else p.content_scope end,
             p.row_version
        from p
        left join public.journal_entry_contents c on c.entry_id = p.id
        left join authors a on a.user_id = p.user_id
       order by p.created_at desc, p.id desc;
  elsif private.is_super_admin() then
    -- Super admins may see every entry (rule 6). Planned on each call with the request's
    -- values (EXECUTE): their filters decide the index (a team's or an organization's, a
    -- notebook's, or simply the newest), which one generic plan could not.
    return query execute $feed$
      with p as materialized (
          select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                 e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at, e.meta_scope, e.content_scope, e.row_version
            from public.journal_entries e
           where ($1 is null or (e.meta_scope = 'team' and e.meta_scope_id = $1))
             and ($2 is null or (e.meta_scope = 'org' and e.meta_scope_id = $2))
             and ($3 is null or e.notebook_id = $3)
             and ($4 is null or e.mood = $4)
             and ($5 is null or e.tags @> array[$5])
             and ($6 is null or e.title ilike $6 or exists (
                   select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike $6))
             and e.created_at <= $7 and (e.created_at < $7 or e.id < $8)
           order by e.created_at desc, e.id desc
           limit $9),
      authors as (select * from private.author_cards(array(select p.user_id from p)))
      select p.id, p.user_id, p.notebook_id, p.title, coalesce(c.content, ''), false, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, $10 ->> p.mood, private.entry_track(p.music_track_id),
             a.full_name, a.avatar_url, p.meta_scope,
             case when array_position('{user,team,org,public}'::text[], p.content_scope)
                       > array_position('{user,team,org,public}'::text[], p.meta_scope)
                  then p.meta_scope else p.content_scope end,
             p.row_version
        from p
        left join public.journal_entry_contents c on c.entry_id = p.id
        left join authors a on a.user_id = p.user_id
       order by p.created_at desc, p.id desc
    $feed$ using journal_feed.team_id, journal_feed.org_id, journal_feed.notebook_id, journal_feed.mood,
                 journal_feed.tag, pattern, cursor_at, cursor_id, n, icons;
  elsif journal_feed.search is null then
    page_ids := private.visible_entry_page_ids(journal_feed.team_id, journal_feed.org_id,
                  journal_feed.notebook_id, journal_feed.mood, journal_feed.tag, cursor_at, cursor_id, n);
    -- The page's candidates come from private.visible_entry_page_ids (the branches, memberships
    -- read once); this select reads them as the caller, so the policies of journal_entries and
    -- journal_entry_contents decide what is returned, content included.
    return query
      with page as materialized (
        select e.id, e.user_id, e.notebook_id, e.title, c.entry_id as content_entry_id, c.content, e.mood, e.tags,
               e.metadata_visibility, e.content_visibility, e.team_id, e.org_id, e.music_track_id,
               e.created_at, e.updated_at, e.background_url, e.meta_scope, e.content_scope, e.row_version
          from public.journal_entries e
          left join public.journal_entry_contents c on c.entry_id = e.id
         where e.id = any (page_ids)),
      authors as (select * from private.author_cards(array(select page.user_id from page)))
      select p.id, p.user_id, p.notebook_id, p.title,
             case when p.content_entry_id is null and p.user_id = me then '' else p.content end,
             p.content_entry_id is null and p.user_id is distinct from me, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, icons ->> p.mood, private.entry_track(p.music_track_id),
             a.full_name, a.avatar_url, p.meta_scope,
             case when array_position('{user,team,org,public}'::text[], p.content_scope)
                       > array_position('{user,team,org,public}'::text[], p.meta_scope)
                  then p.meta_scope else p.content_scope end,
             p.row_version
        from page p
        left join authors a on a.user_id = p.user_id
       order by p.created_at desc, p.id desc;
  else
    -- A search must not match content the caller may not read, so it runs as the caller: four
    -- branches, each newest-first from its own index, limited to the page size, under RLS.
    return query
      with p as materialized (
          select u.* from (
            (select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                    e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at, e.meta_scope, e.content_scope, e.row_version
               from public.journal_entries e
              where e.user_id = me
                and (journal_feed.team_id is null or (e.meta_scope = 'team' and e.meta_scope_id = journal_feed.team_id))
                and (journal_feed.org_id is null or (e.meta_scope = 'org' and e.meta_scope_id = journal_feed.org_id))
                and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                and (journal_feed.mood is null or e.mood = journal_feed.mood)
                and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                and (journal_feed.search is null or e.title ilike pattern or exists (
                      select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
              order by e.created_at desc, e.id desc
              limit n)
            union all
            (select e.*
               from (select private.my_team_ids() as tid) t
               cross join lateral (
                 select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                        e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at, e.meta_scope, e.content_scope, e.row_version
                   from public.journal_entries e
                  where journal_feed.org_id is null
                    and e.meta_scope = 'team' and e.meta_scope_id = t.tid and e.user_id <> me
                    and (journal_feed.team_id is null or t.tid = journal_feed.team_id)
                    and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                    and (journal_feed.mood is null or e.mood = journal_feed.mood)
                    and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                    and (journal_feed.search is null or e.title ilike pattern or exists (
                          select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                    and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
                  order by e.created_at desc, e.id desc
                  limit n) e)
            union all
            (select e.*
               from (select private.my_org_ids() as oid) o
               cross join lateral (
                 select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                        e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at, e.meta_scope, e.content_scope, e.row_version
                   from public.journal_entries e
                  where journal_feed.team_id is null
                    and e.meta_scope = 'org' and e.meta_scope_id = o.oid and e.user_id <> me
                    and (journal_feed.org_id is null or o.oid = journal_feed.org_id)
                    and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                    and (journal_feed.mood is null or e.mood = journal_feed.mood)
                    and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                    and (journal_feed.search is null or e.title ilike pattern or exists (
                          select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                    and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
                  order by e.created_at desc, e.id desc
                  limit n) e)
            union all
            (select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                    e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at, e.meta_scope, e.content_scope, e.row_version
               from public.journal_entries e
              where journal_feed.team_id is null and journal_feed.org_id is null
                and e.meta_scope = 'public' and e.user_id <> me
                and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                and (journal_feed.mood is null or e.mood = journal_feed.mood)
                and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                and (journal_feed.search is null or e.title ilike pattern or exists (
                      select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
              order by e.created_at desc, e.id desc
              limit n)
          ) u
          order by u.created_at desc, u.id desc
          limit n),
      authors as (select * from private.author_cards(array(select p.user_id from p)))
      select p.id, p.user_id, p.notebook_id, p.title, case when c.entry_id is null and p.user_id = me then '' else c.content end,
             c.entry_id is null and p.user_id is distinct from me, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, icons ->> p.mood, private.entry_track(p.music_track_id),
             a.full_name, a.avatar_url, p.meta_scope,
             case when array_position('{user,team,org,public}'::text[], p.content_scope)
                       > array_position('{user,team,org,public}'::text[], p.meta_scope)
                  then p.meta_scope else p.content_scope end,
             p.row_version
        from p
        left join public.journal_entry_contents c on c.entry_id = p.id
        left join authors a on a.user_id = p.user_id
       order by p.created_at desc, p.id desc;
  end if;
end
$$;
comment on function public.journal_feed(text, uuid, uuid, uuid, text, text, text, timestamptz, uuid, integer) is
  'A page of entries the caller may see (scope own or visible), filterable, newest first, keyset-paginated. '
  'Anonymous callers: visible gives the public entries (as journal_entry_details), own none.';
grant execute on function public.journal_feed(text, uuid, uuid, uuid, text, text, text, timestamptz, uuid, integer) to anon, authenticated;
