-- =============================================================================================
-- Avatars: the `avatars` bucket of Supabase's user-management guide (docs/core.md, "Avatars")
-- =============================================================================================
-- The bucket row itself (public, 2 MB, PNG/JPEG/WebP) is reference data: it lives in its
-- migration only (*_avatars_bucket.sql). A public bucket is read by its public URL (and the
-- render route) without any policy, so there is no select policy for everyone: listing the
-- bucket would hand out every user's id. Each signed-in user reads, writes, replaces and
-- removes only objects under their own folder, `<user id>/...`, directly with supabase-js
-- (upsert needs select and update besides insert; remove needs select and delete).

-- One select policy for every bucket whose objects users read by folder (the schema lint allows
-- one permissive policy per table, role and action): avatars, and tone-packs (tone_packs.sql),
-- whose objects only the api writes.
create policy "own folder: users read theirs in avatars and tone-packs" on storage.objects
  for select to authenticated
  using (bucket_id in ('avatars', 'tone-packs') and (storage.foldername(name))[1] = (select auth.uid())::text);

create policy "avatars bucket: users upload to their own folder" on storage.objects
  for insert to authenticated
  with check (bucket_id = 'avatars' and (storage.foldername(name))[1] = (select auth.uid())::text);

create policy "avatars bucket: users replace their own" on storage.objects
  for update to authenticated
  using (bucket_id = 'avatars' and (storage.foldername(name))[1] = (select auth.uid())::text)
  with check (bucket_id = 'avatars' and (storage.foldername(name))[1] = (select auth.uid())::text);

create policy "avatars bucket: users remove their own" on storage.objects
  for delete to authenticated
  using (bucket_id = 'avatars' and (storage.foldername(name))[1] = (select auth.uid())::text);
comment on policy "avatars bucket: users upload to their own folder" on storage.objects is
  'Avatars are written by the user with supabase-js, only under <their id>/; anyone reads them by public URL.';
