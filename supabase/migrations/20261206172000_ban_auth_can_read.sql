-- An account being deleted was banned until 'infinity', which GoTrue cannot scan into a Go time:
-- Auth's admin list of users failed (500) while any deletion was pending. A finite date instead,
-- and the users banned so already get it.
create or replace function private.suspend_account(target uuid) returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  -- A date Auth can read: GoTrue scans banned_until into a Go time, which 'infinity' is not.
  update auth.users set banned_until = now() + interval '100 years' where id = target;
  delete from auth.sessions where user_id = target;
  update public.profiles set is_active = false where id = target;
  update public.music_connections set needs_reconnect = true where user_id = target;
  update public.tone_packs set retired_at = now(), is_public = false where owner_id = target and retired_at is null;
end
$$;

update auth.users set banned_until = now() + interval '100 years' where banned_until = 'infinity';
