-- The feed's decorations per page rather than per entry. The tone icon depends only on the
-- viewer and the mood, so journal_feed reads the viewer's icons once (mood -> URL) instead of
-- calling private.tone_icon_url for each of its 50 rows (measured: about 1 ms a page, doubling
-- the feed's SQL time). The rule of which pack counts lives in private.viewer_tone_icons
-- alone; tone_icon_url (the entry view's seam, one entry at a time) reads from it too.

create or replace function private.viewer_tone_icons() returns jsonb
language sql stable security definer
set search_path = ''
as $$
  select jsonb_object_agg(i.tone, i.url)
    from public.profiles me
    join public.tone_packs p on p.id = (me.preferences ->> 'active_tone_pack_id')::uuid
    join public.tone_pack_images i on i.pack_id = p.id
   where me.id = (select auth.uid())
     and ((p.retired_at is null and (p.owner_id = me.id or (p.is_public and p.price_drops = 0)
            or exists (select 1 from public.tone_pack_shares s where s.pack_id = p.id and s.user_id = me.id)))
          or exists (select 1 from public.tone_pack_purchases b where b.pack_id = p.id and b.user_id = me.id))
$$;
comment on function private.viewer_tone_icons() is
  'The signed-in viewer''s icons by mood ({tone: url}) from their active tone pack while they may use it; null otherwise.';
revoke execute on function private.viewer_tone_icons() from public, anon;
grant execute on function private.viewer_tone_icons() to authenticated;

create or replace function private.active_tone_icon_url(mood text) returns text
language sql stable security definer
set search_path = ''
as $$ select private.viewer_tone_icons() ->> $1 $$;

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
as $$
declare
  me uuid := auth.uid(); -- a plain expression: no query per call
  -- No cursor: start after the newest possible entry (keeps the cursor an index condition).
  cursor_at timestamptz := coalesce(journal_feed.before_created_at, 'infinity'::timestamptz);
  cursor_id uuid := coalesce(journal_feed.before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid);
  n integer := least(greatest(coalesce(journal_feed.page_size, 50), 1), 200);
  -- The viewer's icons once per page (mood -> URL), not one lookup per entry.
  icons jsonb := case when me is null then null else private.viewer_tone_icons() end;
  pattern text := '%' || replace(replace(replace(journal_feed.search, '\', '\\'), '%', '\%'), '_', '\_') || '%';
begin
  if journal_feed.scope is distinct from 'visible' then
    return query
      select p.id, p.user_id, p.notebook_id, p.title, c.content, c.entry_id is null, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, icons ->> p.mood, private.entry_track(p.music_track_id)
        from (
          select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                 e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
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
           limit n) p
        left join public.journal_entry_contents c on c.entry_id = p.id
       order by p.created_at desc, p.id desc;
  elsif private.is_super_admin() then
    -- Super admins may see every entry (rule 6). Planned on each call with the request's
    -- values (EXECUTE): their filters decide the index (a team's or an organization's, a
    -- notebook's, or simply the newest), which one generic plan could not.
    return query execute $feed$
      select p.id, p.user_id, p.notebook_id, p.title, c.content, c.entry_id is null, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, $10 ->> p.mood, private.entry_track(p.music_track_id)
        from (
          select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                 e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
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
           limit $9) p
        left join public.journal_entry_contents c on c.entry_id = p.id
       order by p.created_at desc, p.id desc
    $feed$ using journal_feed.team_id, journal_feed.org_id, journal_feed.notebook_id, journal_feed.mood,
                 journal_feed.tag, pattern, cursor_at, cursor_id, n, icons;
  else
    -- Four branches, each newest-first from its own index and limited to the page size.
    return query
      select p.id, p.user_id, p.notebook_id, p.title, c.content, c.entry_id is null, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, icons ->> p.mood, private.entry_track(p.music_track_id)
        from (
          select u.* from (
            (select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                    e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
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
                        e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
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
                        e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
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
                    e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
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
          limit n) p
        left join public.journal_entry_contents c on c.entry_id = p.id
       order by p.created_at desc, p.id desc;
  end if;
end
$$;
comment on function public.journal_feed(text, uuid, uuid, uuid, text, text, text, timestamptz, uuid, integer) is
  'A page of entries the caller may see (scope own or visible), filterable, newest first, keyset-paginated.';

notify pgrst, 'reload schema';
