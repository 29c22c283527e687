-- Entry decorations: what an entry carries beside its text so clients draw it without a
-- second request. The columns are added once here; the areas that fill them replace the
-- seam functions (create or replace), never the view or the feed:
--   background_url  the entry's generated background (AI area: set_entry_background)
--   tone_icon_url   the icon of the VIEWER's active tone pack for the entry's mood
--                   (private.tone_icon_url, tone packs area)
--   track           the linked track's display: title, artists, album art, link
--                   (private.entry_track, listening-history area)

alter table public.journal_entries
  add column background_url text check (char_length(background_url) <= 2048),
  add column background_object text check (char_length(background_object) <= 512);
comment on column public.journal_entries.background_url is
  'Public URL of the entry''s generated background image; set only through set_entry_background.';
comment on column public.journal_entries.background_object is
  'Storage object name behind background_url (bucket entry-backgrounds), so a replaced image can be deleted.';

-- Seams: null until their areas land.
create or replace function private.tone_icon_url(mood text) returns text
language sql stable
set search_path = ''
as $$ select null::text $$;
comment on function private.tone_icon_url(text) is
  'Icon URL of the viewer''s active tone pack for this mood, or null (replaced by the tone packs migration).';

create or replace function private.entry_track(music_track_id text) returns jsonb
language sql stable
set search_path = ''
as $$ select null::jsonb $$;
comment on function private.entry_track(text) is
  'Display of a linked track ({id, name, artists, album, image_url, external_url}), or null (replaced by the listening-history migration).';

grant execute on function private.tone_icon_url(text), private.entry_track(text) to anon, authenticated, service_role;

-- New columns go at the end of the view (create or replace keeps the existing ones).
create or replace view public.journal_entry_details with (security_invoker = true) as
select e.id, e.user_id, e.notebook_id, e.title, c.content, c.entry_id is null as content_hidden,
       e.mood, e.tags, e.metadata_visibility, e.content_visibility, e.team_id, e.org_id,
       e.music_track_id, e.created_at, e.updated_at,
       e.background_url, private.tone_icon_url(e.mood) as tone_icon_url, private.entry_track(e.music_track_id) as track
  from public.journal_entries e
  left join public.journal_entry_contents c on c.entry_id = e.id;

-- Anonymous readers are granted columns one by one (advisor_clean, finding 8).
grant select (background_url, background_object) on public.journal_entries to anon;

/*
 * Records an entry's stored background: service role only (the api, once the image is in the
 * bucket), for the owner it names. The object must exist in the bucket, in the owner's folder
 * and named for this entry, and the URL must end with its name, so no client can point the
 * column (which other readers see) at an address of its choosing. Returns the object it
 * replaced (the caller deletes it). Not the owner's entry: not found.
 */
create or replace function private.set_entry_background(owner_id uuid, entry_id uuid, object_name text, url text)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  previous text;
begin
  select e.background_object into previous
    from public.journal_entries e
   where e.id = set_entry_background.entry_id and e.user_id = owner_id
     for update;
  if not found then
    raise exception 'entry not found' using errcode = 'PT404';
  end if;
  if object_name is null or object_name not like owner_id::text || '/' || set_entry_background.entry_id::text || '-%'
     or object_name ~ '(^|/)\.\.?(/|$)' or char_length(object_name) > 512
     or not exists (select 1 from storage.objects o where o.bucket_id = 'entry-backgrounds' and o.name = object_name) then
    raise exception 'object_name: must name a stored object in the owner''s folder for this entry' using errcode = '22023';
  end if;
  if url is null or url !~ '^https?://' or char_length(url) > 2048 or right(url, char_length(object_name) + 1) <> '/' || object_name then
    raise exception 'url: must be the public address of object_name' using errcode = '22023';
  end if;
  update public.journal_entries e set background_url = url, background_object = object_name
   where e.id = set_entry_background.entry_id;
  return jsonb_build_object('previous_object', previous, 'background_url', url);
end
$$;
revoke execute on function private.set_entry_background(uuid, uuid, text, text) from public, anon, authenticated;
grant execute on function private.set_entry_background(uuid, uuid, text, text) to service_role;

create or replace function public.set_entry_background(owner_id uuid, entry_id uuid, object_name text, url text)
returns jsonb
language sql
set search_path = ''
as $$ select private.set_entry_background($1, $2, $3, $4) $$;
comment on function public.set_entry_background(uuid, uuid, text, text) is
  'Service role (the api) only: records the stored background image of an owner''s entry; returns {previous_object, background_url}.';
revoke execute on function public.set_entry_background(uuid, uuid, text, text) from public, anon, authenticated;
grant execute on function public.set_entry_background(uuid, uuid, text, text) to service_role;

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
  pattern text := '%' || replace(replace(replace(journal_feed.search, '\', '\\'), '%', '\%'), '_', '\_') || '%';
begin
  if journal_feed.scope is distinct from 'visible' then
    return query
      select p.id, p.user_id, p.notebook_id, p.title, c.content, c.entry_id is null, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, private.tone_icon_url(p.mood), private.entry_track(p.music_track_id)
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
             p.created_at, p.updated_at, p.background_url, private.tone_icon_url(p.mood), private.entry_track(p.music_track_id)
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
                 journal_feed.tag, pattern, cursor_at, cursor_id, n;
  else
    -- Four branches, each newest-first from its own index and limited to the page size.
    return query
      select p.id, p.user_id, p.notebook_id, p.title, c.content, c.entry_id is null, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, private.tone_icon_url(p.mood), private.entry_track(p.music_track_id)
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
