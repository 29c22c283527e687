-- Avatars (issue 39, part 4): the public `avatars` bucket of Supabase's user-management guide,
-- 2 MB, PNG/JPEG/WebP, each user writing only under their own folder (supabase/schemas/avatars.sql).

insert into storage.buckets (id, name, public, file_size_limit, allowed_mime_types)
values ('avatars', 'avatars', true, 2 * 1024 * 1024, array['image/png', 'image/jpeg', 'image/webp'])
on conflict (id) do update set public = excluded.public, file_size_limit = excluded.file_size_limit,
  allowed_mime_types = excluded.allowed_mime_types;

drop policy "tone-packs bucket: users read their own folder" on storage.objects;
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
