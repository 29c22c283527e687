-- =============================================================================================
-- Journal: mentions
-- =============================================================================================
-- The area's overview: journal/tables.sql.

-- ---------------------------------------------------------------------------------------------
-- Mentions
-- ---------------------------------------------------------------------------------------------
-- `@[Name](<user uuid>)` in an entry's text. Derived from content, so readable exactly where
-- the content is.

create table public.journal_entry_mentions (
  entry_id uuid not null references public.journal_entries (id) on delete cascade,
  mentioned_user_id uuid not null references public.profiles (id) on delete cascade,
  primary key (entry_id, mentioned_user_id)
);
alter table public.journal_entry_mentions enable row level security;
comment on table public.journal_entry_mentions is 'Users mentioned in an entry''s text (@[Name](uuid)); visible where the content is.';
revoke all on public.journal_entry_mentions from anon, authenticated;
grant select on public.journal_entry_mentions to authenticated;
create index journal_entry_mentions_user on public.journal_entry_mentions (mentioned_user_id);
create policy "journal_entry_mentions: visible where the content is" on public.journal_entry_mentions
  for select to authenticated
  using (exists (select 1 from public.journal_entry_contents c where c.entry_id = journal_entry_mentions.entry_id));

-- Replaces an entry's indexed mentions (@[name](user id) in its text) and stamps the text as
-- indexed.
create or replace function private.index_mentions(target_entry uuid, body text) returns void
language sql
set search_path = ''
as $$
  delete from public.journal_entry_mentions where entry_id = target_entry;
  insert into public.journal_entry_mentions (entry_id, mentioned_user_id)
  select distinct target_entry, p.id
    from regexp_matches(body, '@\[[^\]]{1,200}\]\(([0-9a-fA-F-]{36})\)', 'g') m
    join public.profiles p on p.id::text = lower(m[1]);
  update public.journal_entry_contents set mentions_indexed_at = now() where entry_id = target_entry;
$$;

-- After a text is written: indexes its mentions.
create or replace function private.reindex_mentions() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.index_mentions(new.entry_id, new.content);
  return null;
end
$$;
create trigger journal_entry_contents_mentions after insert or update of content on public.journal_entry_contents
  for each row execute function private.reindex_mentions();

-- Indexes the caller's texts written before the index existed, a batch at a time. It locks
-- texts (for update) before any write statement, so it takes the caller's gate first itself.
create or replace function private.backfill_mentions(batch_size integer default 200) returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  r record;
  remaining integer;
begin
  if me is null then
    raise exception 'sign in to backfill your mentions' using errcode = '42501';
  end if;
  perform private.hold_journal_gate(me, false);
  for r in
    select entry_id, content from public.journal_entry_contents
     where user_id = me and mentions_indexed_at is null
     limit least(greatest(coalesce(batch_size, 200), 1), 1000)
     for update skip locked
  loop
    perform private.index_mentions(r.entry_id, r.content);
  end loop;
  select count(*) into remaining from public.journal_entry_contents where user_id = me and mentions_indexed_at is null;
  return remaining;
end
$$;
comment on function private.backfill_mentions(integer) is
  'Indexes one batch of the caller''s own texts written before the mention index; returns how many remain.';
grant execute on function private.backfill_mentions(integer) to authenticated;
create or replace function public.backfill_mentions(batch_size integer default 200) returns integer
language sql security invoker
set search_path = ''
as $$ select private.backfill_mentions(batch_size) $$;
grant execute on function public.backfill_mentions(integer) to authenticated;
