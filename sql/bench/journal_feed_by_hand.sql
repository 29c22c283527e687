-- The fastest page of the visibility feed we can write by hand, as postgres (no RLS):
-- the viewer's memberships inlined, four index-ordered branches, content rule spelled out.
-- $1 viewer id, $2 before created_at, $3 before id (the cursor), $4 page size. Same columns
-- as public.journal_entry_details, decorations included (background, the viewer's tone icon
-- for the mood, the linked track, the author, the levels that apply), so both sides compute
-- the same page.
with my_teams as (select team_id from public.team_members where user_id = $1),
my_orgs as (select org_id from public.organization_members where user_id = $1),
icons as (
  select jsonb_object_agg(i.tone, i.url) as by_mood
    from public.profiles me
    join public.tone_packs p on p.id = (me.preferences ->> 'active_tone_pack_id')::uuid
    join public.tone_pack_images i on i.pack_id = p.id
   where me.id = $1
     and ((p.retired_at is null and (p.owner_id = me.id or (p.is_public and p.price_drops = 0)
            or exists (select 1 from public.tone_pack_shares s where s.pack_id = p.id and s.user_id = me.id)))
          or exists (select 1 from public.tone_pack_purchases b where b.pack_id = p.id and b.user_id = me.id))
),
page as (
  select id, created_at from (
    (select id, created_at from public.journal_entries
      where user_id = $1 and created_at <= $2 and (created_at < $2 or id < $3)
      order by created_at desc, id desc limit $4)
    union all
    (select e.id, e.created_at from my_teams t cross join lateral (
       select id, created_at from public.journal_entries
        where meta_scope = 'team' and meta_scope_id = t.team_id and user_id <> $1
          and created_at <= $2 and (created_at < $2 or id < $3)
        order by created_at desc, id desc limit $4) e)
    union all
    (select e.id, e.created_at from my_orgs o cross join lateral (
       select id, created_at from public.journal_entries
        where meta_scope = 'org' and meta_scope_id = o.org_id and user_id <> $1
          and created_at <= $2 and (created_at < $2 or id < $3)
        order by created_at desc, id desc limit $4) e)
    union all
    (select id, created_at from public.journal_entries
      where meta_scope = 'public' and user_id <> $1 and created_at <= $2 and (created_at < $2 or id < $3)
      order by created_at desc, id desc limit $4)
  ) u order by created_at desc, id desc limit $4
)
select e.id, e.user_id, e.notebook_id, e.title, case when v.content_visible then c.content end as content,
       not v.content_visible as content_hidden, e.mood, e.tags, e.metadata_visibility, e.content_visibility,
       e.team_id, e.org_id, e.music_track_id, e.created_at, e.updated_at, e.background_url,
       (select by_mood from icons) ->> e.mood as tone_icon_url,
       case when t.id is not null then
         jsonb_build_object('id', t.id, 'name', t.name, 'artists', to_jsonb(t.artists), 'album', t.album,
                            'album_image_url', t.album_image_url, 'image_url', t.album_image_url,
                            'external_url', t.external_url) end as track,
       case when a.id is null or u.id is not null then 'Deleted user' else a.full_name end as author_name,
       case when u.id is null then a.avatar_url end as author_avatar_url,
       e.meta_scope as effective_metadata_visibility,
       case when array_position('{user,team,org,public}'::text[], e.content_scope)
                 > array_position('{user,team,org,public}'::text[], e.meta_scope)
            then e.meta_scope else e.content_scope end as effective_content_visibility
  from page p
  join public.journal_entries e on e.id = p.id
  left join public.journal_entry_contents c on c.entry_id = e.id
  left join public.music_tracks t on t.id = e.music_track_id
  left join public.profiles a on a.id = e.user_id
  left join auth.users u on u.id = e.user_id and u.deleted_at is not null
  cross join lateral (select e.user_id = $1 or e.content_scope = 'public'
                          or (e.content_scope = 'team' and e.content_scope_id in (select team_id from my_teams))
                          or (e.content_scope = 'org' and e.content_scope_id in (select org_id from my_orgs))
                          as content_visible) v
 order by e.created_at desc, e.id desc
