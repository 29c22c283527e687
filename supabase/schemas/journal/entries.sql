-- =============================================================================================
-- Journal: reading and writing entries
-- =============================================================================================
-- Decorations, the journal_entry_details view, create/update and the stats (/api/journal).
-- The area's overview: journal/tables.sql.

-- ---------------------------------------------------------------------------------------------
-- Entry decorations
-- ---------------------------------------------------------------------------------------------
-- What an entry carries beside its text, so clients draw it without a second request: its
-- generated background (background_url, ai_usage.sql), the icon of the viewer's active tone
-- pack for its mood (tone_packs.sql) and the linked track (music.sql).

-- The viewer's active pack's image for an entry's mood, one entry at a time (the feed reads the
-- viewer's icons once per page instead). Anonymous viewers and entries without a mood return at
-- once; which pack counts is decided by private.viewer_tone_icons alone.
create or replace function private.tone_icon_url(mood text) returns text
language plpgsql stable
set search_path = ''
as $$
begin
  -- Anonymous viewers never reach the helper (they are not granted it).
  if mood is null or auth.uid() is null then
    return null;
  end if;
  return private.active_tone_icon_url(mood);
end
$$;
comment on function private.tone_icon_url(text) is
  'Icon URL of the viewer''s active tone pack for this mood, or null (no viewer, no mood, no active pack the viewer may use, no image for the tone).';
grant execute on function private.tone_icon_url(text) to anon, authenticated, service_role;

-- The linked track for display. Security invoker on purpose: the track cache is readable by
-- every role, and the entry's own visibility already decided whether this row is seen at all.
create or replace function private.entry_track(music_track_id text) returns jsonb
language sql stable strict -- most entries have no track: null without running the lookup
set search_path = ''
as $$
  select jsonb_build_object('id', t.id, 'name', t.name, 'artists', to_jsonb(t.artists), 'album', t.album,
                            'album_image_url', t.album_image_url, 'image_url', t.album_image_url,
                            'external_url', t.external_url)
    from public.music_tracks t
   where t.id = entry_track.music_track_id
$$;
comment on function private.entry_track(text) is
  'Display of a linked track: {id, name, artists, album, album_image_url, external_url} (image_url: the same URL, for the seam''s first readers), or null.';
grant execute on function private.entry_track(text) to anon, authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Reading and writing entries
-- ---------------------------------------------------------------------------------------------
-- What clients call to write and read entries (RPC through PostgREST, and /api/journal):
-- atomic create/update of metadata with content, the visibility feed and aggregates. Every
-- function runs as the caller (security invoker): RLS decides.

-- Entries as a viewer sees them. A new column goes at the end (`create or replace view`
-- keeps the existing ones in place).
-- Owners always see their own entries whole, super admins every entry (rule 6): an entry
-- written without a text (a client inserting into journal_entries alone) reads as an empty
-- text for them, never as hidden.
create or replace function private.sees_whole_entry(owner uuid) returns boolean
language plpgsql stable
set search_path = ''
as $$
begin
  if (select auth.uid()) is null then
    return false; -- anonymous: neither an owner nor a super admin (and not granted is_super_admin)
  end if;
  return owner = (select auth.uid()) or private.is_super_admin();
end
$$;
comment on function private.sees_whole_entry(uuid) is
  'True for the entry''s owner and for super admins (rule 6); read only for entries without a text row.';
grant execute on function private.sees_whole_entry(uuid) to anon, authenticated, service_role;

-- The name and avatar of each given author ("Deleted user" once their account is being deleted,
-- or gone). Callers pass only the authors of rows the caller may already see (journal_feed's
-- page, journal_entry_details' rows under RLS): it reads profiles past their owner-only policy,
-- and lives in private, out of the API's reach. One indexed read per distinct author of a page.
create or replace function private.author_cards(user_ids uuid[])
returns table (user_id uuid, full_name text, avatar_url text)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  -- private.person_card (user_data/account.sql, defined after this file: plpgsql resolves it at
  -- run time) masks an account being deleted, as member lists and profile cards do.
  return query
    select x.id, c.full_name, c.avatar_url
      from (select distinct unnest(user_ids) as id) x
      left join public.profiles p on p.id = x.id
      cross join lateral private.person_card(x.id, p.full_name, p.avatar_url, p.id is not null) c;
end
$$;
comment on function private.author_cards(uuid[]) is
  'Name and avatar of the given authors (Deleted user while their account is being deleted); for rows the caller already sees.';
revoke all on function private.author_cards(uuid[]) from public;
grant execute on function private.author_cards(uuid[]) to anon, authenticated, service_role;

-- What applies to an entry's text (effective_content_visibility): its effective content level,
-- never wider than the effective metadata level, since the content policy admits a reader only
-- where both admit them (user < team < org < public). Written out, not a function: a SQL
-- function with its search_path set is not inlined, and the feed computes it for every row.
create or replace view public.journal_entry_details with (security_invoker = true) as
select e.id, e.user_id, e.notebook_id, e.title,
       case when c.entry_id is null and private.sees_whole_entry(e.user_id) then '' else c.content end as content,
       c.entry_id is null and not private.sees_whole_entry(e.user_id) as content_hidden,
       e.mood, e.tags, e.metadata_visibility, e.content_visibility, e.team_id, e.org_id,
       e.music_track_id, e.created_at, e.updated_at,
       e.background_url, private.tone_icon_url(e.mood) as tone_icon_url, private.entry_track(e.music_track_id) as track,
       a.full_name as author_name, a.avatar_url as author_avatar_url,
       e.meta_scope as effective_metadata_visibility,
       case when array_position('{user,team,org,public}'::text[], e.content_scope)
                 > array_position('{user,team,org,public}'::text[], e.meta_scope)
            then e.meta_scope else e.content_scope end as effective_content_visibility,
       e.row_version
  from public.journal_entries e
  left join public.journal_entry_contents c on c.entry_id = e.id
  left join lateral private.author_cards(array[e.user_id]) a on true;
comment on view public.journal_entry_details is
  'Entries as a viewer sees them: content is null and content_hidden true where the content policy refuses; '
  'the author''s name and avatar; the levels that apply (an entry at user inherits its notebook''s); '
  'row_version, the entry''s ETag (sync.sql).';
revoke all on public.journal_entry_details from anon, authenticated;
grant select on public.journal_entry_details to anon, authenticated;

-- POST /api/journal: the entry and its content in one transaction. With a client-chosen id
-- (conventions.sql, "Client-chosen ids"), a repeated create is answered with the entry already
-- made, unchanged (no write, so no second tone analysis), when it is the caller's and carries
-- what the request carries, compared as /api normalises it (trimmed title, lower-case mood,
-- tags as a set; no mood matches the mood tone analysis set); otherwise it is a 409 naming id,
-- the same words for another user's entry. created_now (below) tells a retry from a creation.
create or replace function public.create_journal_entry(
  title text,
  content text default '',
  mood text default null,
  tags text[] default '{}',
  notebook_id uuid default null,
  metadata_visibility text default 'user',
  content_visibility text default 'user',
  team_id uuid default null,
  org_id uuid default null,
  id uuid default null
) returns setof public.journal_entry_details
language plpgsql
set search_path = ''
as $$
declare
  new_id uuid;
  existing record;
  taken_constraint text;
begin
  -- Twice at most: a concurrent create of the same id that commits between the look and the
  -- insert makes the insert fail on the key; the second look then finds its entry.
  for attempt in 1..2 loop
    if create_journal_entry.id is not null then
      select e.user_id, e.title, e.mood, e.mood_detected, e.tags, e.notebook_id, e.metadata_visibility,
             e.content_visibility, e.team_id, e.org_id, c.content
        into existing
        from public.journal_entries e left join public.journal_entry_contents c on c.entry_id = e.id
       where e.id = create_journal_entry.id and e.user_id = (select auth.uid());
      if found then
        if btrim(existing.title) = btrim(create_journal_entry.title)
           and coalesce(existing.content, '') = coalesce(create_journal_entry.content, '')
           and (case when create_journal_entry.mood is null then existing.mood is null or existing.mood_detected
                     else lower(btrim(existing.mood)) is not distinct from lower(btrim(create_journal_entry.mood)) end)
           and array(select distinct btrim(t) from unnest(existing.tags) t order by 1)
               = array(select distinct btrim(t) from unnest(coalesce(create_journal_entry.tags, '{}')) t order by 1)
           and existing.notebook_id is not distinct from create_journal_entry.notebook_id
           and existing.metadata_visibility = coalesce(create_journal_entry.metadata_visibility, 'user')
           and existing.content_visibility = coalesce(create_journal_entry.content_visibility, 'user')
           and existing.team_id is not distinct from create_journal_entry.team_id
           and existing.org_id is not distinct from create_journal_entry.org_id then
          return query select * from public.journal_entry_details d where d.id = create_journal_entry.id;
          return;
        end if;
        exit;
      end if;
    end if;
    begin
      insert into public.journal_entries (id, title, mood, tags, notebook_id, metadata_visibility, content_visibility, team_id, org_id)
      values (coalesce(create_journal_entry.id, gen_random_uuid()), create_journal_entry.title, create_journal_entry.mood,
              coalesce(create_journal_entry.tags, '{}'), create_journal_entry.notebook_id,
              coalesce(create_journal_entry.metadata_visibility, 'user'),
              coalesce(create_journal_entry.content_visibility, 'user'), create_journal_entry.team_id,
              create_journal_entry.org_id)
      returning journal_entries.id into new_id;
      insert into public.journal_entry_contents (entry_id, content)
      values (new_id, coalesce(create_journal_entry.content, ''));
      return query select * from public.journal_entry_details d where d.id = new_id;
      return;
    exception when unique_violation then
      get stacked diagnostics taken_constraint = constraint_name;
      if create_journal_entry.id is null or taken_constraint is distinct from 'journal_entries_pkey' then
        raise;
      end if;
    end;
  end loop;
  -- The caller's entry with other content, or someone else's (the key said so; nothing of it is read).
  raise exception 'id: already used for something else; choose a new id'
    using errcode = '23505', hint = 'id_conflict';
end
$$;
grant execute on function public.create_journal_entry(text, text, text, text[], uuid, text, text, uuid, uuid, uuid) to authenticated;

-- Whether the entry was made by the current request's transaction: true in the reply of a
-- create, false for a create answered with the entry a retry's first attempt made (and for
-- every read). A computed field (select=*,created_now); journal_entry_details stays as it is.
-- Volatile, so it sees the row the same request's create just made (as mood_pending).
create or replace function public.created_now(entry public.journal_entry_details) returns boolean
language sql volatile
set search_path = ''
as $$
  select coalesce((select e.created_version = pg_catalog.pg_current_xact_id_if_assigned()
                     from public.journal_entries e where e.id = entry.id), false)
$$;
comment on function public.created_now(public.journal_entry_details) is
  'Computed field (select=*,created_now): true when this request made the entry, false when a create was a retry of one already made.';
grant execute on function public.created_now(public.journal_entry_details) to authenticated;

-- PUT /api/journal/:id: metadata and content in one transaction; "not found" is PT404, which
-- PostgREST answers 404.
create or replace function public.update_journal_entry(entry_id uuid, patch jsonb)
returns setof public.journal_entry_details
language plpgsql
set search_path = ''
as $$
declare
  updated uuid;
begin
  if jsonb_typeof(patch) is distinct from 'object' then
    raise exception 'patch must be a JSON object' using errcode = '22023';
  end if;
  update public.journal_entries e set
    title = case when patch ? 'title' then patch ->> 'title' else e.title end,
    mood = case when patch ? 'mood' then patch ->> 'mood' else e.mood end,
    tags = case when patch ? 'tags' then array(select jsonb_array_elements_text(patch -> 'tags')) else e.tags end,
    notebook_id = case when patch ? 'notebook_id' then (patch ->> 'notebook_id')::uuid else e.notebook_id end,
    metadata_visibility = case when patch ? 'metadata_visibility' then patch ->> 'metadata_visibility' else e.metadata_visibility end,
    content_visibility = case when patch ? 'content_visibility' then patch ->> 'content_visibility' else e.content_visibility end,
    team_id = case when patch ? 'team_id' then (patch ->> 'team_id')::uuid else e.team_id end,
    org_id = case when patch ? 'org_id' then (patch ->> 'org_id')::uuid else e.org_id end
  where e.id = update_journal_entry.entry_id and e.user_id = (select auth.uid())
  returning e.id into updated;
  if updated is null then
    if exists (select 1 from public.journal_entries e where e.id = update_journal_entry.entry_id) then
      raise exception 'only the owner may change this entry' using errcode = '42501';
    end if;
    raise exception 'entry not found' using errcode = 'PT404';
  end if;
  if patch ? 'content' then
    insert into public.journal_entry_contents as c (entry_id, content)
    values (updated, coalesce(patch ->> 'content', ''))
    on conflict on constraint journal_entry_contents_pkey do update set content = excluded.content;
  end if;
  return query select * from public.journal_entry_details d where d.id = updated;
end
$$;
grant execute on function public.update_journal_entry(uuid, jsonb) to authenticated;

-- GET /api/journal/stats: counts, tags and moods over the entries the caller may see (for anon,
-- the public ones: RLS decides, as for journal_feed).
create or replace function public.journal_stats(scope text default 'own')
returns jsonb
language sql stable
set search_path = ''
as $$
  with visible as (
    select e.mood, e.tags from public.journal_entries e
     where journal_stats.scope = 'visible' or e.user_id = (select auth.uid())
  )
  select jsonb_build_object(
    'count', (select count(*) from visible),
    'tags', coalesce((select jsonb_agg(jsonb_build_object('tag', tag, 'count', n) order by n desc, tag)
                        from (select t as tag, count(*) as n from visible, unnest(visible.tags) t group by t) x), '[]'::jsonb),
    'moods', coalesce((select jsonb_agg(jsonb_build_object('mood', mood, 'count', n) order by n desc, mood)
                         from (select mood, count(*) as n from visible where mood is not null group by mood) y), '[]'::jsonb)
  )
$$;
grant execute on function public.journal_stats(text) to anon, authenticated;
