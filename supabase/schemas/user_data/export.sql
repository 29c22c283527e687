-- =============================================================================================
-- User data: the export of everything the system holds about the caller
-- =============================================================================================
-- GET /api/user/export reads almost every section as the caller through PostgREST, so RLS
-- decides and another user's private rows cannot appear. Two things need more than that:
--   * the journal, read in keyset pages (created_at, id) with each entry's text and track in
--     one round trip, so a user with 50,000 entries is exported page by page at flat memory;
--   * the rows about the caller that only super admins may read (the impersonation sessions
--     of the caller, their role changes, replication removals, kit waitlist sign-ups): a
--     security definer helper in `private` returns only the caller's, wrapped by an invoker RPC.
--
-- The area is split as its routes are (functions/api/routes/user_data/), loaded in this order
-- (supabase/config.toml, schema_paths): export (this file), account (asking for a deletion:
-- account.ts; the overview of deleting an account), account_deletion (the steps the api runs:
-- account_deletion.ts), account_deletion_rows (the rows step, in SQL alone).

-- ---------------------------------------------------------------------------------------------
-- The journal, page by page
-- ---------------------------------------------------------------------------------------------

-- The caller's own entries, oldest first, after the keyset (after_created_at, after_id), with
-- the text, the linked track and the background's object name. Invoker: RLS applies, and the
-- filter on the caller's id keeps other users' entries the caller may read out of it. The first
-- page is the default keyset (-infinity, nil uuid); null matches nothing. No `is null or` or
-- coalesce() around the arguments: the query is planned with them unknown, and only the plain
-- row comparison becomes an index condition on journal_entries_own (with either, every page
-- scanned the user's entries from the oldest: 40 ms a page at 100,000 entries, not 2 ms).
create or replace function public.export_journal_entries(
  after_created_at timestamptz default '-infinity', after_id uuid default '00000000-0000-0000-0000-000000000000',
  page_size integer default 500
) returns table (
  id uuid, notebook_id uuid, title text, content text, mood text, mood_detected boolean, tags text[],
  metadata_visibility text, content_visibility text, team_id uuid, org_id uuid, music_track_id text,
  track jsonb, background_object text, background_url text, created_at timestamptz, updated_at timestamptz
)
language sql stable
set search_path = ''
as $$
  select e.id, e.notebook_id, e.title, c.content, e.mood, e.mood_detected, e.tags,
         e.metadata_visibility, e.content_visibility, e.team_id, e.org_id, e.music_track_id,
         case when t.id is null then null
              else jsonb_build_object('id', t.id, 'name', t.name, 'artists', t.artists, 'album', t.album,
                                      'external_url', t.external_url) end,
         e.background_object, e.background_url, e.created_at, e.updated_at
    from public.journal_entries e
    left join public.journal_entry_contents c on c.entry_id = e.id
    left join public.music_tracks t on t.id = e.music_track_id
   where e.user_id = (select auth.uid())
     and (e.created_at, e.id) > (after_created_at, after_id)
   order by e.created_at, e.id
   limit least(greatest(coalesce(page_size, 500), 1), 1000)
$$;
comment on function public.export_journal_entries(timestamptz, uuid, integer) is
  'The caller''s own journal entries for the export, oldest first, after the keyset (created_at, id) (first page: the defaults), at most 1000 a page, with text, track and background object.';
grant execute on function public.export_journal_entries(timestamptz, uuid, integer) to authenticated;

-- ---------------------------------------------------------------------------------------------
-- The caller's own rows that RLS hides from them
-- ---------------------------------------------------------------------------------------------

-- The caller's rows of the admin-only audit tables: the impersonation sessions of the caller
-- (start, expiry, stop, reason and what was done in each; not which admin), the caller's role
-- changes, replication removals and kit waitlist sign-ups; and the tone packs the caller made
-- and retired (a pack someone bought is retired, not deleted, and only its buyers see it); and
-- the names of the caller's avatar objects (storage.objects is not served by PostgREST).
create or replace function private.export_own_hidden_rows() returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me constant uuid := (select auth.uid());
begin
  if me is null then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  -- The export is the user's own copy: a support session may read what it needs, not take it all.
  perform private.refuse_while_impersonating('exporting the account');
  return jsonb_build_object(
    'impersonation_sessions', coalesce((
      select jsonb_agg(jsonb_build_object(
               'session_id', s.session_id,
               'started_at', s.created_at,
               'expires_at', s.expires_at,
               'stopped_at', (select x.created_at from public.impersonation_audit x
                               where x.session_id = s.session_id and x.event = 'stop'),
               'reason', s.reason,
               'actions', coalesce((select jsonb_agg(jsonb_build_object(
                                             'at', w.created_at, 'kind', w.kind, 'table', w.table_name,
                                             'operation', w.operation, 'row_id', w.row_id)
                                           order by w.created_at, w.id)
                                      from public.impersonation_writes w
                                     where w.session_id = s.session_id and w.target_id = me), '[]'::jsonb))
             order by s.created_at, s.id)
        from public.impersonation_audit s
       where s.target_id = me and s.event = 'start'), '[]'::jsonb),
    'role_changes', coalesce((
      select jsonb_agg(jsonb_build_object('old_role', r.old_role, 'new_role', r.new_role,
                                          'changed_via', r.changed_via, 'created_at', r.created_at)
             order by r.created_at, r.id)
        from public.role_changes r where r.user_id = me), '[]'::jsonb),
    'labs_replication_removals', coalesce((
      select jsonb_agg(jsonb_build_object('replication_id', x.replication_id, 'template_id', x.template_id,
                                          'clone_id', x.clone_id, 'measured_value', x.measured_value,
                                          'confirmed', x.confirmed, 'reported_at', x.reported_at,
                                          'reason', x.reason, 'removed_at', x.removed_at)
             order by x.removed_at, x.id)
        from public.labs_replication_removals x where x.user_id = me), '[]'::jsonb),
    'labs_kit_waitlist', coalesce((
      select jsonb_agg(jsonb_build_object('email', k.email, 'created_at', k.created_at) order by k.created_at, k.id)
        from public.labs_kit_waitlist k where k.user_id = me), '[]'::jsonb),
    'retired_tone_packs', coalesce((
      select jsonb_agg(jsonb_build_object(
               'id', p.id, 'name', p.name, 'description', p.description, 'theme', p.theme, 'is_public', p.is_public,
               'price_drops', p.price_drops, 'retired_at', p.retired_at, 'created_at', p.created_at,
               'updated_at', p.updated_at,
               'images', coalesce((select jsonb_agg(jsonb_build_object('tone', i.tone, 'url', i.url,
                                                                     'object_name', i.object_name,
                                                                     'updated_at', i.updated_at) order by i.tone)
                                     from public.tone_pack_images i where i.pack_id = p.id), '[]'::jsonb))
             order by p.created_at, p.id)
        from public.tone_packs p where p.owner_id = me and p.retired_at is not null), '[]'::jsonb),
    -- The caller's avatars: the bucket is written by clients directly, so no table names them.
    'avatar_objects', coalesce((
      select jsonb_agg(o.name order by o.name)
        from storage.objects o
       where o.bucket_id = 'avatars' and o.name like me::text || '/%'), '[]'::jsonb)
  );
end
$$;
comment on function private.export_own_hidden_rows() is
  'For the export: the caller''s own rows RLS hides from them (impersonation sessions of the caller, role changes, replication removals, kit waitlist, retired packs they made) and their avatar objects.';
grant execute on function private.export_own_hidden_rows() to authenticated;

create or replace function public.export_own_hidden_rows() returns jsonb
language sql stable
set search_path = ''
as $$ select private.export_own_hidden_rows() $$;
comment on function public.export_own_hidden_rows() is
  'The caller''s own rows that RLS does not show them (admin-only audit rows about them, their retired packs), for GET /api/user/export.';
grant execute on function public.export_own_hidden_rows() to authenticated;
