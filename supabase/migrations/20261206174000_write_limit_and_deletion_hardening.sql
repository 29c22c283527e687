-- Hardening after an attacker's review of the write limit and deletion:
-- - an IPv6 caller is counted by its /64 (rotating addresses inside it bought a fresh budget);
--   a caller with no known address is not counted, rather than pooled with every other one;
-- - deleting an account whose address was never confirmed leaves that address's suppressions
--   (a bounce, a complaint), mail and waitlist rows alone: the address may be someone else's.

create or replace function private.client_address(headers jsonb) returns text
language plpgsql immutable
set search_path = ''
as $$
declare
  raw text := coalesce(nullif(btrim(headers ->> 'cf-connecting-ip'), ''),
                       nullif(btrim(regexp_replace(headers ->> 'x-forwarded-for', '^.*,', '')), ''));
  addr inet;
begin
  if raw is null then
    return 'unknown';
  end if;
  begin
    addr := raw::inet;
  exception when invalid_text_representation then
    return 'unknown';
  end;
  if family(addr) = 6 then
    return set_masklen(addr, 64)::cidr::text;
  end if;
  return host(addr);
end
$$;

comment on function private.client_address(jsonb) is
  'The caller''s address: cf-connecting-ip, else the last x-forwarded-for entry (IPv6 by its /64), else ''unknown'' (not counted).';

create or replace function private.take_write(subject_kind text, subject text)
returns table (retry_after_seconds integer, message text)
language plpgsql
set search_path = ''
as $$
declare
  lim record;
  this_window timestamptz;
  counted integer;
  retry integer;
begin
  if subject_kind = 'address' and subject = 'unknown' then
    return query select null::integer, null::text; -- no address known: nobody to count
    return;
  end if;
  select l.max_writes, l.window_seconds into lim
    from private.write_rate_limits l
   where l.subject_kind = take_write.subject_kind and l.subject in (take_write.subject, '*')
   order by l.subject = '*'
   limit 1;
  if not found then
    return query select null::integer, null::text;
    return;
  end if;
  this_window := to_timestamp(floor(extract(epoch from now()) / lim.window_seconds) * lim.window_seconds);
  if lim.max_writes > 0 then
    insert into private.write_rate_counters as c (subject, window_start, writes)
    values (take_write.subject_kind || ':' || take_write.subject, this_window, 1)
    on conflict on constraint write_rate_counters_pkey do update set writes = c.writes + 1
      where c.writes < lim.max_writes
    returning c.writes into counted;
  end if;
  if counted is not null then
    return query select null::integer, null::text;
    return;
  end if;
  retry := greatest(1, ceil(extract(epoch from this_window - now()) + lim.window_seconds)::integer);
  return query select retry, format('Too many writes: at most %s every %s seconds. Try again in %s seconds.',
                                    lim.max_writes, lim.window_seconds, retry);
end
$$;

create or replace function private.remove_account_rows(target uuid) returns void
language plpgsql security definer
set search_path = ''
as $$
declare
  d private.account_deletions;
  tomb uuid;
begin
  select * into strict d from private.account_deletions where user_id = target for update;
  tomb := d.tombstone_id;
  perform private.refuse_account_deletion_while_owning(target);

  -- Organizations: the ones the user is alone in go; memberships elsewhere end.
  delete from public.organizations o where o.owner_id = target;
  delete from public.organization_members m where m.user_id = target;

  -- Kept records: the tombstone stands for the user.
  update public.impersonation_audit set admin_id = tomb where admin_id = target;
  update public.impersonation_audit set target_id = tomb where target_id = target;
  update public.impersonation_writes set admin_id = tomb where admin_id = target;
  update public.impersonation_writes set target_id = tomb where target_id = target;
  update public.role_changes set user_id = tomb where user_id = target;
  update public.role_changes set changed_by = tomb where changed_by = target;
  update public.drops_transactions set created_by = tomb where created_by = target;
  update public.ai_prices set created_by = tomb where created_by = target;
  update public.token_conversion_rates set created_by = tomb where created_by = target;
  update public.encouragement_config set updated_by = tomb where updated_by = target;
  update public.labs_replication_removals set removed_by = tomb where removed_by = target;
  delete from public.labs_replication_removals where user_id = target;

  -- Other users' notifications that name the user keep their text, not the id.
  update public.notifications n
     set payload = (select jsonb_object_agg(k, case when v = to_jsonb(target::text) then 'null'::jsonb else v end)
                      from jsonb_each(n.payload) e(k, v))
   where n.payload::text like '%' || target::text || '%' and n.user_id <> target;

  -- Platform AI totals keep the user's usage, without the user.
  insert into private.ai_usage_of_deleted_accounts as t
         (month, usage_type, calls, input_tokens, output_tokens, image_count, cost_usd)
  select m.month, m.usage_type, m.calls, m.input_tokens, m.output_tokens, m.image_count, m.cost_usd
    from public.ai_usage_monthly m where m.user_id = target
  on conflict (month, usage_type) do update set
    calls = t.calls + excluded.calls, input_tokens = t.input_tokens + excluded.input_tokens,
    output_tokens = t.output_tokens + excluded.output_tokens, image_count = t.image_count + excluded.image_count,
    cost_usd = t.cost_usd + excluded.cost_usd;

  delete from private.encouragement_bonus_pairs b where b.sender_id = target or b.recipient_id = target;
  -- Rows found by the address only when the account proved it owned it: an unconfirmed sign-up
  -- of someone else's address must not take that person's suppressions (a bounce, a complaint)
  -- or mail with it.
  if d.email is not null and not exists (select 1 from auth.users u
                                          where u.id = target and u.email_confirmed_at is not null) then
    d.email := null;
  end if;
  delete from public.labs_kit_waitlist k where k.user_id = target or k.email = lower(d.email);
  if d.email is not null then
    delete from private.email_suppressions s where s.address = lower(d.email);
    delete from private.inbound_emails e where lower(e.from_address) = lower(d.email);
    delete from private.email_events e where e.payload -> 'data' -> 'to' ? d.email
                                          or e.payload -> 'data' -> 'to' ? lower(d.email);
  end if;
  delete from auth.flow_state f where f.user_id = target;

  update private.account_deletions x
     set rows_done_at = now(), email = null,
         -- Steps still to come find here what the cascade is about to remove.
         music_access_token = case when x.music_done_at is null
                                   then (select t.access_token from private.music_tokens t where t.user_id = target) end,
         music_refresh_token = case when x.music_done_at is null
                                    then (select t.refresh_token from private.music_tokens t where t.user_id = target) end,
         bought_image_objects = case when x.storage_done_at is null then coalesce(
           (select array_agg(i.object_name order by i.object_name) from public.tone_pack_purchase_images i
              join public.tone_pack_purchases p on p.id = i.purchase_id
             where p.user_id = target and i.object_name like 'purchases/%'), '{}') else '{}' end
   where x.user_id = target;
end
$$;
