-- Payments (Stripe) and e-mail (Resend).
--
-- Payments: `subscriptions` mirrors Stripe's view of each subscription (status, period end,
-- cancel-at-period-end). The webhook hands every verified event to ONE function,
-- public.apply_stripe_event, which in one transaction records the event id (a replay changes
-- nothing) and applies the event only when it is newer than the state stored, so events
-- arriving twice or out of order never move a subscription back. Premium stays derived:
-- private.is_premium(user) (monthly_drops migration) reads `subscriptions` and is what the
-- monthly award uses; nothing copies it.
--
-- E-mail: every send is logged in `email_messages` (senders read their own), through
-- public.begin_email_send, which applies the recipient rule, the suppression list and the daily
-- cap as the caller. Provider events (delivered, bounced, complained, inbound) are stored once
-- by their Svix id; bounced and complained addresses are suppressed.

-- =========================================================================================
-- Payments
-- =========================================================================================

-- The Stripe customer of each user: created once, reused by every checkout. A secret (no
-- client role reads it), written only by the payment endpoint through the service role.
create table private.stripe_customers (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  stripe_customer_id text not null unique check (stripe_customer_id ~ '^cus_[A-Za-z0-9_]{1,250}$'),
  created_at timestamptz not null default now()
);
comment on table private.stripe_customers is
  'The Stripe customer of each user (created once, reused); never readable by clients.';

-- Stripe's view of a subscription, plus the position (event time, status rank, event id) of the
-- event the state came from, which decides whether a later-arriving event is newer.
alter table public.subscriptions
  -- A subscription event may arrive before the checkout that names its user (or belong to a
  -- customer made outside the product); its state is kept and linked when the user is known.
  alter column user_id drop not null,
  add column current_period_end timestamptz,
  add column cancel_at_period_end boolean not null default false,
  add column last_payment_failed_at timestamptz,
  add column stripe_event_at timestamptz,
  add column stripe_event_id text,
  add constraint subscriptions_status_check check (length(status) between 1 and 50);
comment on column public.subscriptions.stripe_event_at is
  'Created time of the Stripe event the stored state came from (null: not from a subscription event yet).';
comment on column public.subscriptions.last_payment_failed_at is
  'When Stripe last reported a failed invoice payment for this subscription (invoice.payment_failed).';
grant select (current_period_end, cancel_at_period_end, last_payment_failed_at) on public.subscriptions to authenticated;

-- Every Stripe event applied, once: the primary key makes a replay a no-op.
create table private.stripe_events (
  event_id text primary key,
  event_type text not null,
  event_created timestamptz not null,
  stripe_subscription_id text,
  outcome text not null check (outcome in ('applied', 'stale', 'ignored')),
  received_at timestamptz not null default now()
);
comment on table private.stripe_events is
  'Stripe events already processed (by event id) and what they did; replays are acknowledged and change nothing.';

-- How settled a status is. At the same event second, a more settled status wins (a subscription
-- goes incomplete -> active -> canceled, never back), so ties resolve the same way in any order.
create or replace function private.subscription_status_rank(status text) returns integer
language sql immutable
set search_path = ''
as $$
  select case
    when status = 'incomplete' then 0
    when status in ('canceled', 'incomplete_expired') then 2
    else 1
  end
$$;
revoke execute on function private.subscription_status_rank(text) from public;

-- The user a Stripe object belongs to: the stored customer's user first, else the user id the
-- checkout put in metadata / client_reference_id (only if that profile exists).
create or replace function private.stripe_event_user(customer_id text, claimed_user_id text) returns uuid
language sql stable
set search_path = ''
as $$
  select coalesce(
    (select c.user_id from private.stripe_customers c where c.stripe_customer_id = stripe_event_user.customer_id),
    (select p.id from public.profiles p
      where stripe_event_user.claimed_user_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        and p.id = stripe_event_user.claimed_user_id::uuid))
$$;
revoke execute on function private.stripe_event_user(text, text) from public;

/*
 * Applies one verified Stripe event in one transaction. `details` is the event's object reduced
 * to what the product keeps (functions/_shared/payments.ts):
 *   subscription events: {subscription_id, customer_id, user_id, status, current_period_end, cancel_at_period_end}
 *   checkout.session.completed: {subscription_id, customer_id, user_id, paid}
 *   invoice.payment_failed: {subscription_id, customer_id}
 * Returns 'replay' (event id seen before: nothing changes), 'applied', 'stale' (older than the
 * stored state: only links a missing user), or 'ignored' (nothing this product keeps).
 */
create or replace function private.apply_stripe_event(
  event_id text, event_type text, event_created timestamptz, details jsonb
) returns text
language plpgsql security definer
set search_path = ''
as $$
declare
  sub_id text := details ->> 'subscription_id';
  customer text := details ->> 'customer_id';
  owner uuid;
  new_status text;
  result text := 'ignored';
begin
  insert into private.stripe_events (event_id, event_type, event_created, stripe_subscription_id, outcome)
  values (event_id, event_type, event_created, sub_id, 'ignored')
  on conflict on constraint stripe_events_pkey do nothing;
  if not found then
    return 'replay';
  end if;
  if sub_id is null then
    return result;
  end if;
  owner := private.stripe_event_user(customer, details ->> 'user_id');

  if event_type = 'checkout.session.completed' then
    -- A checkout links user, customer and subscription; a paid one means the subscription is
    -- active (Stripe's own rule for subscription-mode sessions). Nothing else is known here.
    if owner is not null and customer is not null then
      insert into private.stripe_customers (user_id, stripe_customer_id) values (owner, customer)
      on conflict do nothing;
    end if;
    new_status := case when (details ->> 'paid')::boolean then 'active' end;
  elsif event_type in ('customer.subscription.created', 'customer.subscription.updated', 'customer.subscription.deleted') then
    new_status := details ->> 'status';
    if new_status is null then
      raise exception 'a subscription event without a status' using errcode = '22023';
    end if;
  elsif event_type = 'invoice.payment_failed' then
    -- Records when; the status itself comes with Stripe's subscription events. Arriving before
    -- any of them, it starts the row as 'incomplete' with no position, so the first state event wins.
    insert into public.subscriptions as s
      (user_id, stripe_customer_id, stripe_subscription_id, status, last_payment_failed_at)
    values (owner, customer, sub_id, 'incomplete', event_created)
    on conflict (stripe_subscription_id) do update
      set last_payment_failed_at = greatest(s.last_payment_failed_at, excluded.last_payment_failed_at),
          user_id = coalesce(s.user_id, excluded.user_id),
          stripe_customer_id = coalesce(s.stripe_customer_id, excluded.stripe_customer_id),
          updated_at = now();
    result := 'applied';
    update private.stripe_events e set outcome = result where e.event_id = apply_stripe_event.event_id;
    return result;
  else
    return result;
  end if;

  if new_status is null then
    -- An unpaid checkout: link the user if the row exists; the subscription events carry the state.
    update public.subscriptions s set user_id = owner, updated_at = now()
     where s.stripe_subscription_id = sub_id and s.user_id is null and owner is not null;
    result := 'applied';
  else
    -- Insert, or update only when this event is newer than the stored state. ON CONFLICT takes
    -- the row lock, so concurrent events for one subscription are compared one after another.
    -- A checkout's position carries the event id '' so that, within its second, it sorts below
    -- every subscription event (which knows the period end and the cancel flag; it does not).
    insert into public.subscriptions as s
      (user_id, stripe_customer_id, stripe_subscription_id, status, current_period_end,
       cancel_at_period_end, stripe_event_at, stripe_event_id)
    values
      (owner, customer, sub_id, new_status, (details ->> 'current_period_end')::timestamptz,
       coalesce((details ->> 'cancel_at_period_end')::boolean, false), event_created,
       case when event_type = 'checkout.session.completed' then '' else event_id end)
    on conflict (stripe_subscription_id) do update
      set status = excluded.status,
          user_id = coalesce(s.user_id, excluded.user_id),
          stripe_customer_id = coalesce(excluded.stripe_customer_id, s.stripe_customer_id),
          -- A checkout knows neither the period end nor the cancel flag: keep what is stored.
          current_period_end = case when details ? 'current_period_end' then excluded.current_period_end else s.current_period_end end,
          cancel_at_period_end = case when details ? 'cancel_at_period_end' then excluded.cancel_at_period_end else s.cancel_at_period_end end,
          stripe_event_at = excluded.stripe_event_at,
          stripe_event_id = excluded.stripe_event_id,
          updated_at = now()
      where s.stripe_event_at is null
         or (excluded.stripe_event_at, private.subscription_status_rank(excluded.status), excluded.stripe_event_id)
          > (s.stripe_event_at, private.subscription_status_rank(s.status), s.stripe_event_id);
    if found then
      result := 'applied';
    else
      result := 'stale';
      -- Older than what is stored, but it may still name the user the stored state lacked.
      update public.subscriptions s set user_id = owner, updated_at = now()
       where s.stripe_subscription_id = sub_id and s.user_id is null and owner is not null;
    end if;
  end if;

  update private.stripe_events e set outcome = result where e.event_id = apply_stripe_event.event_id;
  return result;
end
$$;
revoke execute on function private.apply_stripe_event(text, text, timestamptz, jsonb) from public;
grant execute on function private.apply_stripe_event(text, text, timestamptz, jsonb) to service_role;

-- The webhook's RPC (service role only: the Stripe signature is the credential, checked by the
-- edge function before it calls this).
create or replace function public.apply_stripe_event(
  event_id text, event_type text, event_created timestamptz, details jsonb
) returns text
language sql security invoker
set search_path = ''
as $$ select private.apply_stripe_event(event_id, event_type, event_created, details) $$;
revoke execute on function public.apply_stripe_event(text, text, timestamptz, jsonb) from public, anon, authenticated;
grant execute on function public.apply_stripe_event(text, text, timestamptz, jsonb) to service_role;

-- The caller's Stripe customer, for the checkout endpoint (service role, on behalf of the
-- verified caller): the stored one, or null.
create or replace function private.stripe_customer_of(target_user_id uuid) returns text
language sql stable security definer
set search_path = ''
as $$ select c.stripe_customer_id from private.stripe_customers c where c.user_id = target_user_id $$;
revoke execute on function private.stripe_customer_of(uuid) from public;
grant execute on function private.stripe_customer_of(uuid) to service_role;

create or replace function public.stripe_customer_of(target_user_id uuid) returns text
language sql stable security invoker
set search_path = ''
as $$ select private.stripe_customer_of(target_user_id) $$;
revoke execute on function public.stripe_customer_of(uuid) from public, anon, authenticated;
grant execute on function public.stripe_customer_of(uuid) to service_role;

-- Stores a newly created customer unless one is stored already; returns the stored one, so
-- two concurrent first checkouts end up with one customer.
create or replace function private.remember_stripe_customer(target_user_id uuid, customer_id text) returns text
language plpgsql security definer
set search_path = ''
as $$
declare
  stored text;
begin
  insert into private.stripe_customers (user_id, stripe_customer_id) values (target_user_id, customer_id)
  on conflict (user_id) do nothing;
  select c.stripe_customer_id into stored from private.stripe_customers c where c.user_id = target_user_id;
  return stored;
end
$$;
revoke execute on function private.remember_stripe_customer(uuid, text) from public;
grant execute on function private.remember_stripe_customer(uuid, text) to service_role;

create or replace function public.remember_stripe_customer(target_user_id uuid, customer_id text) returns text
language sql security invoker
set search_path = ''
as $$ select private.remember_stripe_customer(target_user_id, customer_id) $$;
revoke execute on function public.remember_stripe_customer(uuid, text) from public, anon, authenticated;
grant execute on function public.remember_stripe_customer(uuid, text) to service_role;

-- Replaces a stored customer Stripe no longer knows (deleted in the dashboard, or the account
-- switched from test to live keys), only if it is still the stored one; returns the stored one.
create or replace function private.replace_stripe_customer(target_user_id uuid, old_customer_id text, new_customer_id text)
returns text
language plpgsql security definer
set search_path = ''
as $$
declare
  stored text;
begin
  update private.stripe_customers c set stripe_customer_id = new_customer_id, created_at = now()
   where c.user_id = target_user_id and c.stripe_customer_id = old_customer_id;
  select c.stripe_customer_id into stored from private.stripe_customers c where c.user_id = target_user_id;
  return stored;
end
$$;
revoke execute on function private.replace_stripe_customer(uuid, text, text) from public;
grant execute on function private.replace_stripe_customer(uuid, text, text) to service_role;

create or replace function public.replace_stripe_customer(target_user_id uuid, old_customer_id text, new_customer_id text)
returns text
language sql security invoker
set search_path = ''
as $$ select private.replace_stripe_customer(target_user_id, old_customer_id, new_customer_id) $$;
revoke execute on function public.replace_stripe_customer(uuid, text, text) from public, anon, authenticated;
grant execute on function public.replace_stripe_customer(uuid, text, text) to service_role;

-- Whether the caller is premium, for the subscription endpoint and any client that asks: the
-- same helper the monthly award uses (private.is_premium), asked about oneself only.
create or replace function private.caller_is_premium() returns boolean
language sql stable security definer
set search_path = ''
as $$ select coalesce(private.is_premium((select auth.uid())), false) $$;
revoke execute on function private.caller_is_premium() from public;
grant execute on function private.caller_is_premium() to authenticated;

create or replace function public.caller_is_premium() returns boolean
language sql stable security invoker
set search_path = ''
as $$ select private.caller_is_premium() $$;
revoke execute on function public.caller_is_premium() from public, anon;
grant execute on function public.caller_is_premium() to authenticated;

-- =========================================================================================
-- E-mail
-- =========================================================================================

-- One row: the per-user cap on sends in any 24 hours. Change it in the SQL dashboard:
--   update private.email_settings set daily_cap = 50;
create table private.email_settings (
  id boolean primary key default true check (id),
  daily_cap integer not null default 20 check (daily_cap between 0 and 100000)
);
comment on table private.email_settings is 'E-mail settings (one row): daily_cap = sends per user in any 24 hours.';
insert into private.email_settings default values;

create table public.email_messages (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references public.profiles (id) on delete cascade,
  to_address text not null check (length(to_address) between 3 and 320),
  subject text not null check (length(subject) between 1 and 500),
  idempotency_key text not null check (length(idempotency_key) between 1 and 256),
  request_hash text not null,
  provider_id text,
  status text not null default 'sending'
    check (status in ('sending', 'sent', 'failed', 'delivery_delayed', 'delivered', 'bounced', 'complained')),
  error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (user_id, idempotency_key)
);
comment on table public.email_messages is
  'Every e-mail sent through POST /api/email/send: who, to, subject, provider id, status. Senders read their own.';
-- The cap counts a user's recent sends; the list reads them newest first.
create index email_messages_user_created on public.email_messages (user_id, created_at desc);
create index email_messages_provider_id on public.email_messages (provider_id) where provider_id is not null;

alter table public.email_messages enable row level security;
revoke all on public.email_messages from anon, authenticated;
grant select (id, user_id, to_address, subject, provider_id, status, error, created_at, updated_at)
  on public.email_messages to authenticated;
create policy "email_messages: senders and super admins read" on public.email_messages
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- Addresses that bounced (hard) or complained: later sends to them are refused.
create table private.email_suppressions (
  address text primary key check (address = lower(address)),
  reason text not null check (reason in ('bounced', 'complained')),
  svix_id text not null,
  created_at timestamptz not null default now()
);
comment on table private.email_suppressions is 'Addresses that hard-bounced or complained; e-mail to them is refused.';

-- Every Resend webhook event, once by its Svix id.
create table private.email_events (
  svix_id text primary key,
  event_type text not null,
  email_id text,
  payload jsonb not null,
  received_at timestamptz not null default now()
);
comment on table private.email_events is 'Resend webhook events, stored once by svix-id.';

-- Mail received by the product's inbound address (email.received), body fetched from Resend.
create table private.inbound_emails (
  email_id text primary key,
  svix_id text not null references private.email_events (svix_id) on delete cascade,
  from_address text not null,
  to_addresses text[] not null default '{}',
  subject text,
  text_body text,
  html_body text,
  received_at timestamptz not null,
  created_at timestamptz not null default now()
);
comment on table private.inbound_emails is 'Inbound e-mail (metadata from the event, body fetched from Resend); super admins read it in SQL.';
create index inbound_emails_svix_id on private.inbound_emails (svix_id);

-- How far a message got; a status only moves forward (events may arrive out of order).
create or replace function private.email_status_rank(status text) returns integer
language sql immutable
set search_path = ''
as $$
  select case status
    when 'sending' then 0 when 'failed' then 1 when 'sent' then 2 when 'delivery_delayed' then 3
    when 'delivered' then 4 when 'bounced' then 5 when 'complained' then 6 else 0 end
$$;
revoke execute on function private.email_status_rank(text) from public;

/*
 * Before an e-mail goes to the provider: the rules, as the caller, and the log row.
 *   - the same idempotency key again returns the row logged for it (409 if the request differs);
 *   - ordinary users may send only to their own verified address; super admins to anyone;
 *   - suppressed (bounced/complained) addresses are refused (422);
 *   - at most email_settings.daily_cap sends per user in any 24 hours (429).
 * Returns the log row and whether it existed already.
 */
create or replace function private.begin_email_send(
  to_address text, subject text, idempotency_key text, request_hash text
) returns table (message public.email_messages, existing boolean)
language plpgsql security definer
set search_path = ''
as $$
declare
  uid uuid := (select auth.uid());
  recipient text := lower(trim(to_address));
  own_address text;
  cap integer;
  recent integer;
  found_row public.email_messages;
begin
  if uid is null then
    raise exception 'sign in to send e-mail' using errcode = '42501';
  end if;
  -- One sender at a time: the cap and the idempotency check stay exact under concurrency.
  perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('email-send:' || uid::text, 0));

  select * into found_row from public.email_messages m
   where m.user_id = uid and m.idempotency_key = begin_email_send.idempotency_key;
  if found then
    if found_row.request_hash <> begin_email_send.request_hash or found_row.to_address <> recipient
       or found_row.subject <> begin_email_send.subject then
      raise exception 'Idempotency-Key: already used for a different e-mail' using errcode = 'PT409';
    end if;
    -- A retry of a send that never reached the provider goes to the logged (checked) address,
    -- unless it has bounced or complained since.
    if found_row.status in ('sending', 'failed')
       and exists (select 1 from private.email_suppressions s where s.address = found_row.to_address) then
      raise exception 'to: % bounced or complained earlier; e-mail to it is suppressed', found_row.to_address using errcode = 'PT422';
    end if;
    return query select found_row, true;
    return;
  end if;

  if not private.is_super_admin() then
    select lower(u.email) into own_address from auth.users u where u.id = uid and u.email_confirmed_at is not null;
    if own_address is null or own_address <> recipient then
      raise exception 'to: you may send e-mail only to your own verified address' using errcode = '42501';
    end if;
  end if;

  if exists (select 1 from private.email_suppressions s where s.address = recipient) then
    raise exception 'to: % bounced or complained earlier; e-mail to it is suppressed', recipient using errcode = 'PT422';
  end if;

  select s.daily_cap into cap from private.email_settings s;
  select count(*) into recent from public.email_messages m
   where m.user_id = uid and m.created_at > now() - interval '24 hours';
  if recent >= coalesce(cap, 20) then
    raise exception 'daily e-mail limit of % reached; try again later', coalesce(cap, 20) using errcode = 'PT429';
  end if;

  insert into public.email_messages (user_id, to_address, subject, idempotency_key, request_hash)
  values (uid, recipient, begin_email_send.subject, begin_email_send.idempotency_key, begin_email_send.request_hash)
  returning * into found_row;
  return query select found_row, false;
end
$$;
revoke execute on function private.begin_email_send(text, text, text, text) from public;
grant execute on function private.begin_email_send(text, text, text, text) to authenticated;

create or replace function public.begin_email_send(
  to_address text, subject text, idempotency_key text, request_hash text
) returns table (message public.email_messages, existing boolean)
language sql security invoker
set search_path = ''
as $$ select * from private.begin_email_send(to_address, subject, idempotency_key, request_hash) $$;
revoke execute on function public.begin_email_send(text, text, text, text) from public, anon;
grant execute on function public.begin_email_send(text, text, text, text) to authenticated;

-- The provider's answer for a logged send (service role: the endpoint, after Resend replied).
-- A status only moves forward, so a webhook that was faster than this call is not undone.
create or replace function private.finish_email_send(message_id uuid, provider_id text, status text, error text)
returns public.email_messages
language plpgsql security definer
set search_path = ''
as $$
declare
  result public.email_messages;
begin
  update public.email_messages m
     set provider_id = coalesce(finish_email_send.provider_id, m.provider_id),
         status = case when private.email_status_rank(finish_email_send.status) > private.email_status_rank(m.status)
                  then finish_email_send.status else m.status end,
         error = case when private.email_status_rank(finish_email_send.status) > private.email_status_rank(m.status)
                 then finish_email_send.error else m.error end,
         updated_at = now()
   where m.id = message_id
  returning * into result;
  if result.id is null then
    raise exception 'no such e-mail message' using errcode = 'PT404';
  end if;
  return result;
end
$$;
revoke execute on function private.finish_email_send(uuid, text, text, text) from public;
grant execute on function private.finish_email_send(uuid, text, text, text) to service_role;

create or replace function public.finish_email_send(message_id uuid, provider_id text, status text, error text)
returns public.email_messages
language sql security invoker
set search_path = ''
as $$ select private.finish_email_send(message_id, provider_id, status, error) $$;
revoke execute on function public.finish_email_send(uuid, text, text, text) from public, anon, authenticated;
grant execute on function public.finish_email_send(uuid, text, text, text) to service_role;

/*
 * One verified Resend webhook event, once by its Svix id: 'replay' when seen before, else
 * 'stored'. Delivery events move the logged message's status forward; bounced (unless the
 * bounce is transient) and complained suppress the recipients; email.received stores the
 * inbound mail (`inbound`: the body fetched from Resend, or null when it could not be).
 */
create or replace function private.record_email_event(svix_id text, payload jsonb, inbound jsonb)
returns text
language plpgsql security definer
set search_path = ''
as $$
declare
  event_type text := payload ->> 'type';
  data jsonb := coalesce(payload -> 'data', '{}'::jsonb);
  email_id text := data ->> 'email_id';
  new_status text;
begin
  if event_type is null then
    raise exception 'type: required' using errcode = '22023';
  end if;
  insert into private.email_events (svix_id, event_type, email_id, payload)
  values (record_email_event.svix_id, event_type, email_id, payload)
  on conflict on constraint email_events_pkey do nothing;
  if not found then
    return 'replay';
  end if;

  new_status := case event_type
    when 'email.sent' then 'sent' when 'email.delivered' then 'delivered'
    when 'email.delivery_delayed' then 'delivery_delayed' when 'email.bounced' then 'bounced'
    when 'email.complained' then 'complained' when 'email.failed' then 'failed' end;
  if new_status is not null and email_id is not null then
    update public.email_messages m set status = new_status, updated_at = now()
     where m.provider_id = email_id
       and private.email_status_rank(new_status) > private.email_status_rank(m.status);
  end if;

  if event_type = 'email.complained'
     or (event_type = 'email.bounced' and coalesce(data #>> '{bounce,type}', '') !~* '^transient') then
    insert into private.email_suppressions (address, reason, svix_id)
    select distinct lower(trim(a)), case when event_type = 'email.bounced' then 'bounced' else 'complained' end, record_email_event.svix_id
      from jsonb_array_elements_text(case when jsonb_typeof(data -> 'to') = 'array' then data -> 'to' else '[]'::jsonb end) a
     where trim(a) <> ''
    on conflict (address) do nothing;
  end if;

  if event_type = 'email.received' and email_id is not null then
    insert into private.inbound_emails (email_id, svix_id, from_address, to_addresses, subject, text_body, html_body, received_at)
    values (
      email_id, record_email_event.svix_id, coalesce(data ->> 'from', ''),
      coalesce(array(select jsonb_array_elements_text(case when jsonb_typeof(data -> 'to') = 'array' then data -> 'to' else '[]'::jsonb end)), '{}'),
      data ->> 'subject', inbound ->> 'text', inbound ->> 'html',
      coalesce((data ->> 'created_at')::timestamptz, (payload ->> 'created_at')::timestamptz, now()))
    on conflict on constraint inbound_emails_pkey do nothing;
  end if;
  return 'stored';
end
$$;
revoke execute on function private.record_email_event(text, jsonb, jsonb) from public;
grant execute on function private.record_email_event(text, jsonb, jsonb) to service_role;

create or replace function public.record_email_event(svix_id text, payload jsonb, inbound jsonb)
returns text
language sql security invoker
set search_path = ''
as $$ select private.record_email_event(svix_id, payload, inbound) $$;
revoke execute on function public.record_email_event(text, jsonb, jsonb) from public, anon, authenticated;
grant execute on function public.record_email_event(text, jsonb, jsonb) to service_role;
