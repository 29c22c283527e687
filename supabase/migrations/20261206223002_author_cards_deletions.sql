-- Authors being deleted are found in private.account_deletions (a small table, which Auth's soft
-- delete also fills) rather than by probing auth.users for every author of a feed page.
create or replace function private.author_cards(user_ids uuid[])
returns table (user_id uuid, full_name text, avatar_url text)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  -- An account being deleted has its row in private.account_deletions (a small table, user_data/
  -- account.sql, defined after this file: plpgsql reads it at run time), which Auth's soft delete
  -- also starts; far cheaper to probe than auth.users for every author.
  return query
    select x.id,
           case when p.id is null or d.user_id is not null then 'Deleted user' else p.full_name end,
           case when p.id is not null and d.user_id is null then p.avatar_url end
      from (select distinct unnest(user_ids) as id) x
      left join public.profiles p on p.id = x.id
      left join private.account_deletions d on d.user_id = x.id;
end
$$;
