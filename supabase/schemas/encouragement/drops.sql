-- =============================================================================================
-- Encouragement drops: sending and reading drops
-- =============================================================================================
-- routes/encouragement/drops.ts. The area's overview: encouragement/shared.sql.

-- ---------------------------------------------------------------------------------------------
-- Sending
-- ---------------------------------------------------------------------------------------------

-- Sends a drop as the caller within today's allowance (and custom cap); counts the template,
-- notifies the recipient, recalculates the badge.
create or replace function private.send_encouragement_drop(
  recipient_id uuid, drop_type text, template_id uuid, content text, entry_id uuid
) returns public.encouragement_sent_drops
language plpgsql security definer
set search_path = ''
as $$
declare
  sender constant uuid := (select auth.uid());
  today constant date := private.utc_today();
  cfg public.encouragement_config;
  template public.encouragement_templates;
  body text := nullif(btrim(send_encouragement_drop.content), '');
  custom boolean;
  daily public.encouragement_daily_drops;
  sent public.encouragement_sent_drops;
begin
  if sender is null then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  if drop_type is null or drop_type not in ('encouragement', 'media', 'science_tidbit') then
    raise exception 'drop_type: must be one of encouragement, media, science_tidbit' using errcode = '22023';
  end if;
  if (template_id is null) = (body is null) then
    raise exception 'template_id, content: give exactly one of them' using errcode = '22023';
  end if;
  if char_length(body) > 1000 then
    raise exception 'content: must be at most 1000 characters' using errcode = '22023';
  end if;
  if recipient_id is null then
    raise exception 'recipient_id: is required' using errcode = '22023';
  end if;
  if recipient_id = sender then
    raise exception 'recipient_id: you cannot send a drop to yourself' using errcode = '22023';
  end if;
  if recipient_id = private.assistant_user_id()
     or not exists (select 1 from public.profiles p where p.id = send_encouragement_drop.recipient_id and p.is_active) then
    raise exception 'recipient_id: no active user %', recipient_id using errcode = 'PT404';
  end if;
  custom := body is not null;
  if not custom then
    select * into template from public.encouragement_templates t
     where t.id = send_encouragement_drop.template_id and t.is_approved and t.type = send_encouragement_drop.drop_type;
    if not found then
      raise exception 'template_id: no approved % template %', drop_type, template_id using errcode = 'PT404';
    end if;
  end if;

  -- The allowance: today's row, locked by the conditional update, so concurrent sends queue
  -- behind each other and re-check the counts.
  select * into cfg from public.encouragement_config;
  insert into public.encouragement_daily_drops (user_id, day, daily_allowance)
  values (sender, today, cfg.daily_allowance)
  on conflict (user_id, day) do nothing;
  update public.encouragement_daily_drops d
     set drops_used = d.drops_used + 1,
         custom_used = d.custom_used + case when custom then 1 else 0 end
   where d.user_id = sender and d.day = today
     and d.drops_used < d.daily_allowance + d.bonus_earned
     and (not custom or d.custom_used < cfg.max_custom_per_day)
  returning * into daily;
  if not found then
    select * into daily from public.encouragement_daily_drops d where d.user_id = sender and d.day = today;
    if daily.drops_used >= daily.daily_allowance + daily.bonus_earned then
      raise exception 'No encouragement drops left today: all % used (allowance % + bonus %); more tomorrow (UTC)',
        daily.drops_used, daily.daily_allowance, daily.bonus_earned
        using errcode = 'PT429', hint = 'daily_allowance_exhausted';
    end if;
    raise exception 'Custom drop limit reached: % custom drops per day; send a template instead', cfg.max_custom_per_day
      using errcode = 'PT429', hint = 'custom_drop_limit_reached';
  end if;

  insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, template_id, content, entry_id, is_custom)
  values (sender, recipient_id, drop_type, template_id,
          coalesce(body, template.content), entry_id, custom)
  returning * into sent;
  if not custom then
    update public.encouragement_templates t set usage_count = t.usage_count + 1 where t.id = template.id;
  end if;
  perform private.notify(recipient_id, 'encouragement.drop_received',
    jsonb_build_object('drop_id', sent.id, 'sender_id', sender, 'drop_type', drop_type));
  perform private.recalculate_encouragement_badges(array[sender]);
  return sent;
end
$$;
grant execute on function private.send_encouragement_drop(uuid,text,uuid,text,uuid) to authenticated;

-- The entry check runs here, as the caller: an entry_id must be one the journal's policies
-- show them.
create or replace function public.send_encouragement_drop(
  recipient_id uuid, drop_type text, template_id uuid default null, content text default null, entry_id uuid default null
) returns public.encouragement_sent_drops
language plpgsql
set search_path = ''
as $$
begin
  if entry_id is not null and not exists (select 1 from public.journal_entries e where e.id = send_encouragement_drop.entry_id) then
    raise exception 'entry_id: no entry % that you can see', entry_id using errcode = 'PT404';
  end if;
  return private.send_encouragement_drop(recipient_id, drop_type, template_id, content, entry_id);
end
$$;
comment on function public.send_encouragement_drop(uuid, text, uuid, text, uuid) is
  'Sends a drop as the caller: one of today''s allowance (custom content also counts against the custom cap), template usage counted, recipient notified, badge recalculated. 429 (PT429) when no allowance or custom drop is left; nothing is written then.';
grant execute on function send_encouragement_drop(uuid,text,uuid,text,uuid) to authenticated, service_role;

-- Today's record of the caller (without a row yet: the configured allowance, nothing used).
create or replace function public.my_encouragement_drops() returns jsonb
language sql stable
set search_path = ''
as $$
  select jsonb_build_object(
           'day', private.utc_today(),
           'daily_allowance', coalesce(d.daily_allowance, c.daily_allowance),
           'drops_used', coalesce(d.drops_used, 0),
           'bonus_drops_earned', coalesce(d.bonus_earned, 0),
           'total_available', coalesce(d.total_available, c.daily_allowance),
           'custom_used', coalesce(d.custom_used, 0),
           'custom_remaining', greatest(0, c.max_custom_per_day - coalesce(d.custom_used, 0)))
    from public.encouragement_config c
    left join public.encouragement_daily_drops d on d.user_id = (select auth.uid()) and d.day = private.utc_today()
$$;
comment on function public.my_encouragement_drops() is 'The caller''s drops today (UTC day).';
grant execute on function my_encouragement_drops() to authenticated, service_role;

-- Received drops, newest first, with the sender's name and avatar.
create or replace function private.received_encouragement_drops(
  unread_only boolean, before_date_sent timestamptz, before_id uuid, page_size integer
) returns table (
  id uuid, sender_id uuid, sender_name text, sender_avatar_url text, is_system boolean, drop_type text,
  content text, template_id uuid, entry_id uuid, date_sent timestamptz, read_at timestamptz
)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if (select auth.uid()) is null then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  return query
  select d.id, d.sender_id, coalesce(p.full_name, private.deleted_user_name()), p.avatar_url, d.is_system,
         d.drop_type, d.content, d.template_id, d.entry_id, d.date_sent, d.read_at
    from public.encouragement_sent_drops d
    left join public.profiles p on p.id = d.sender_id
   where d.recipient_id = (select auth.uid())
     and (not coalesce(unread_only, false) or d.read_at is null)
     and (before_date_sent is null or (d.date_sent, d.id) < (before_date_sent, before_id))
   order by d.date_sent desc, d.id desc
   limit least(greatest(coalesce(page_size, 50), 1), 101);
end
$$;
grant execute on function private.received_encouragement_drops(boolean,timestamp with time zone,uuid,integer) to authenticated;

create or replace function public.received_encouragement_drops(
  unread_only boolean default false, before_date_sent timestamptz default null, before_id uuid default null,
  page_size integer default 50
) returns table (
  id uuid, sender_id uuid, sender_name text, sender_avatar_url text, is_system boolean, drop_type text,
  content text, template_id uuid, entry_id uuid, date_sent timestamptz, read_at timestamptz
)
language sql stable
set search_path = ''
as $$ select * from private.received_encouragement_drops(unread_only, before_date_sent, before_id, page_size) $$;
comment on function public.received_encouragement_drops(boolean, timestamptz, uuid, integer) is
  'The caller''s received drops, newest first (keyset by date_sent, id), optionally unread only, with the sender''s name and avatar.';
grant execute on function received_encouragement_drops(boolean,timestamp with time zone,uuid,integer) to authenticated, service_role;

-- Marks one of the caller's received drops read (the first time is kept).
create or replace function private.mark_encouragement_drop_read(drop_id uuid) returns public.encouragement_sent_drops
language plpgsql security definer
set search_path = ''
as $$
declare
  row public.encouragement_sent_drops;
begin
  update public.encouragement_sent_drops d set read_at = coalesce(d.read_at, now())
   where d.id = drop_id and d.recipient_id = (select auth.uid())
  returning * into row;
  if not found then
    raise exception 'no received drop %', drop_id using errcode = 'PT404';
  end if;
  return row;
end
$$;
grant execute on function private.mark_encouragement_drop_read(uuid) to authenticated;

create or replace function public.mark_encouragement_drop_read(drop_id uuid) returns public.encouragement_sent_drops
language sql
set search_path = ''
as $$ select private.mark_encouragement_drop_read(drop_id) $$;
comment on function public.mark_encouragement_drop_read(uuid) is 'Marks one of the caller''s received drops read (the first time is kept).';
grant execute on function mark_encouragement_drop_read(uuid) to authenticated, service_role;
