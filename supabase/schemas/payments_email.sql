-- =============================================================================================
-- Payments (Stripe) and e-mail (Resend)
-- =============================================================================================
-- Payments: `subscriptions` mirrors Stripe's view of each subscription (status, period end,
-- cancel-at-period-end). The webhook hands every verified event to ONE function,
-- public.apply_stripe_event, which in one transaction records the event id (a replay changes
-- nothing) and applies the event only when it is newer than the state stored, so events
-- arriving twice or out of order never move a subscription back. Premium stays derived:
-- private.is_premium(user) (drops_ledger.sql) reads `subscriptions` and is what the
-- monthly award uses; nothing copies it.
--
-- E-mail: every send is logged in `email_messages` (senders read their own), through
-- public.begin_email_send, which applies the recipient rule, the suppression list and the daily
-- cap as the caller. Provider events (delivered, bounced, complained, inbound) are stored once
-- by their Svix id; bounced and complained addresses are suppressed.

-- ---------------------------------------------------------------------------------------------
-- Subscriptions
-- ---------------------------------------------------------------------------------------------

-- Stripe's view of each subscription; a user is premium while one is active (which the monthly
-- drops award reads: 30 drops, 250 for premium users).
create table public.subscriptions (
  id uuid primary key default gen_random_uuid(),
  -- Null until the user is known: a subscription event may arrive before the checkout that
  -- names its user (or belong to a customer made outside the product).
  user_id uuid references public.profiles (id) on delete set null,
  stripe_customer_id text,
  stripe_subscription_id text unique,
  status text not null check (length(status) between 1 and 50),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  current_period_end timestamptz,
  cancel_at_period_end boolean not null default false,
  last_payment_failed_at timestamptz,
  stripe_event_at timestamptz,
  stripe_event_id text,
  stripe_fetched_at timestamptz
);
alter table public.subscriptions enable row level security;
comment on table public.subscriptions is
  'Payment-provider subscriptions; a user is premium while one has status active. Written by the payment webhook.';
comment on column public.subscriptions.stripe_event_at is
  'Created time of the Stripe event the stored state came from (null: not from a subscription event yet).';
comment on column public.subscriptions.last_payment_failed_at is
  'When Stripe last reported a failed invoice payment for this subscription (invoice.payment_failed).';
comment on column public.subscriptions.stripe_fetched_at is
  'When the stored state was retrieved from Stripe (the webhook reads Stripe''s latest); an earlier read never replaces it.';
revoke all on public.subscriptions from anon, authenticated;
grant select (id, user_id, status, created_at, updated_at, current_period_end, cancel_at_period_end, last_payment_failed_at)
  on public.subscriptions to authenticated;

create index subscriptions_user_status on public.subscriptions (user_id, status);

create policy "subscriptions: owners and super admins read" on public.subscriptions
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- ---------------------------------------------------------------------------------------------
-- Payments
-- ---------------------------------------------------------------------------------------------

-- The Stripe customer of each user: created once, reused by every checkout. A secret (no
-- client role reads it), written only by the payment endpoint through the service role.
create table private.stripe_customers (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  stripe_customer_id text not null unique check (stripe_customer_id ~ '^cus_[A-Za-z0-9_]{1,250}$'),
  created_at timestamptz not null default now()
);
comment on table private.stripe_customers is
  'The Stripe customer of each user (created once, reused); never readable by clients.';

-- Every Stripe event applied, once: the primary key makes a replay a no-op.
create table private.stripe_events (
  event_id text primary key,
  event_type text not null,
  event_created timestamptz, -- null: an ignored event may carry no usable time ("notanumber")
  stripe_subscription_id text,
  outcome text not null check (outcome in ('applied', 'stale', 'ignored')),
  received_at timestamptz not null default now(),
  reason text check (reason is null or length(reason) <= 2000)
);
comment on table private.stripe_events is
  'Stripe events already processed (by event id) and what they did; replays are acknowledged and change nothing.';
comment on column private.stripe_events.event_id is
  'Stripe''s event id; for a signed event without a usable id, sha256:<hex of the body>, so a replay is still one row.';
comment on column private.stripe_events.reason is
  'Why the event was ignored (malformed, unknown to Stripe, refused by the database); null when applied or stale.';

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

-- ---------------------------------------------------------------------------------------------
-- Stripe
-- ---------------------------------------------------------------------------------------------

/*
 * Applies one verified Stripe event in one transaction. `details`, built by
 * functions/_shared/payments.ts from Stripe's CURRENT subscription (retrieved when the event
 * arrived) plus what the event itself adds:
 *   {subscription_id, customer_id, user_id, status, current_period_end, cancel_at_period_end,
 *    fetched_at}  -- fetched_at: when the subscription was read from Stripe
 * checkout.session.completed also remembers the user's customer; invoice.payment_failed also
 * records last_payment_failed_at = event_created. An event naming no subscription (a one-off
 * payment checkout) is recorded as ignored.
 * Returns 'replay' (event id seen before), 'applied', 'stale' (a later read of Stripe is stored
 * already; only a missing user link or a payment failure time is added), or 'ignored'.
 * Bad values raise class-22 errors; the webhook then records the event as ignored with the
 * message (private.record_ignored_stripe_event).
 */
create or replace function private.apply_stripe_event(
  event_id text, event_type text, event_created timestamptz, details jsonb
) returns text
language plpgsql security definer
set search_path = ''
as $$
declare
  sub_id text;
  customer text;
  claimed_user text;
  owner uuid;
  new_status text;
  period_end timestamptz;
  cancel_flag boolean;
  fetched timestamptz;
  failed_at timestamptz;
  took_state boolean;
  result text;
begin
  if event_id is null or event_id !~ '^evt_[A-Za-z0-9_]{1,250}$' then
    raise exception 'id: not a Stripe event id' using errcode = '22023';
  end if;
  if event_type is null or event_type !~ '^[a-z_]+(\.[a-z_]+){1,5}$' then
    raise exception 'type: not a Stripe event type' using errcode = '22023';
  end if;
  if event_created is null or event_created < timestamptz '2000-01-01 00:00:00+00' or event_created > now() + interval '1 day' then
    raise exception 'created: out of range' using errcode = '22008';
  end if;
  if details is null or jsonb_typeof(details) <> 'object' then
    raise exception 'details: must be an object' using errcode = '22023';
  end if;
  sub_id := private.webhook_string(details, 'subscription_id', '^sub_[A-Za-z0-9_]{1,250}$');

  insert into private.stripe_events (event_id, event_type, event_created, stripe_subscription_id, outcome)
  values (event_id, event_type, event_created, sub_id, 'ignored')
  on conflict on constraint stripe_events_pkey do nothing;
  if not found then
    return 'replay';
  end if;
  if sub_id is null or event_type not in (
    'checkout.session.completed', 'customer.subscription.created', 'customer.subscription.updated',
    'customer.subscription.deleted', 'invoice.payment_failed') then
    return 'ignored';
  end if;

  customer := private.webhook_string(details, 'customer_id', '^cus_[A-Za-z0-9_]{1,250}$');
  claimed_user := private.webhook_string(details, 'user_id', '', null, 100);
  new_status := private.webhook_string(details, 'status',
    '^(incomplete|incomplete_expired|trialing|active|past_due|canceled|unpaid|paused)$');
  if new_status is null then
    raise exception 'status: required' using errcode = '22023';
  end if;
  period_end := private.webhook_time_field(details, 'current_period_end', timestamptz '2200-01-01 00:00:00+00');
  if jsonb_typeof(details -> 'cancel_at_period_end') is distinct from 'boolean' then
    raise exception 'cancel_at_period_end: must be a boolean' using errcode = '22023';
  end if;
  cancel_flag := (details ->> 'cancel_at_period_end')::boolean;
  fetched := private.webhook_time_field(details, 'fetched_at', now() + interval '1 day');
  if fetched is null then
    raise exception 'fetched_at: required (when the subscription was read from Stripe)' using errcode = '22023';
  end if;
  -- A read cannot be later than now: an edge clock running ahead must not pin a state.
  fetched := least(fetched, now());
  if event_type = 'invoice.payment_failed' then
    failed_at := event_created;
  end if;

  owner := private.stripe_event_user(customer, claimed_user);
  if event_type = 'checkout.session.completed' and owner is not null and customer is not null then
    insert into private.stripe_customers (user_id, stripe_customer_id) values (owner, customer)
    on conflict do nothing;
  end if;

  -- Insert, or take Stripe's state only when it was read later than the stored one. ON CONFLICT
  -- takes the row lock, so concurrent events for one subscription are compared one at a time.
  insert into public.subscriptions as s
    (user_id, stripe_customer_id, stripe_subscription_id, status, current_period_end, cancel_at_period_end,
     last_payment_failed_at, stripe_event_at, stripe_event_id, stripe_fetched_at)
  values
    (owner, customer, sub_id, new_status, period_end, cancel_flag, failed_at, event_created, event_id, fetched)
  on conflict (stripe_subscription_id) do update
    set status = case when s.stripe_fetched_at is null or excluded.stripe_fetched_at > s.stripe_fetched_at
                      then excluded.status else s.status end,
        current_period_end = case when s.stripe_fetched_at is null or excluded.stripe_fetched_at > s.stripe_fetched_at
                                  then excluded.current_period_end else s.current_period_end end,
        cancel_at_period_end = case when s.stripe_fetched_at is null or excluded.stripe_fetched_at > s.stripe_fetched_at
                                    then excluded.cancel_at_period_end else s.cancel_at_period_end end,
        stripe_customer_id = case when s.stripe_fetched_at is null or excluded.stripe_fetched_at > s.stripe_fetched_at
                                  then coalesce(excluded.stripe_customer_id, s.stripe_customer_id) else coalesce(s.stripe_customer_id, excluded.stripe_customer_id) end,
        stripe_event_at = case when s.stripe_fetched_at is null or excluded.stripe_fetched_at > s.stripe_fetched_at
                               then excluded.stripe_event_at else s.stripe_event_at end,
        stripe_event_id = case when s.stripe_fetched_at is null or excluded.stripe_fetched_at > s.stripe_fetched_at
                               then excluded.stripe_event_id else s.stripe_event_id end,
        stripe_fetched_at = greatest(s.stripe_fetched_at, excluded.stripe_fetched_at),
        -- Whatever the order: the user once known stays, and the latest payment failure is kept.
        user_id = coalesce(s.user_id, excluded.user_id),
        last_payment_failed_at = greatest(s.last_payment_failed_at, excluded.last_payment_failed_at),
        updated_at = now()
  returning s.stripe_event_id = apply_stripe_event.event_id into took_state;

  result := case when took_state or failed_at is not null then 'applied' else 'stale' end;
  update private.stripe_events e set outcome = result where e.event_id = apply_stripe_event.event_id;
  return result;
end
$$;
grant execute on function private.apply_stripe_event(text,text,timestamp with time zone,jsonb) to service_role;

-- The webhook's RPC (service role only: the Stripe signature is the credential, checked by the
-- edge function before it calls this).
create or replace function public.apply_stripe_event(
  event_id text, event_type text, event_created timestamptz, details jsonb
) returns text
language sql security invoker
set search_path = ''
as $$ select private.apply_stripe_event(event_id, event_type, event_created, details) $$;
grant execute on function apply_stripe_event(text,text,timestamp with time zone,jsonb) to service_role;

-- The caller's Stripe customer, for the checkout endpoint (service role, on behalf of the
-- verified caller): the stored one, or null.
create or replace function private.stripe_customer_of(target_user_id uuid) returns text
language sql stable security definer
set search_path = ''
as $$ select c.stripe_customer_id from private.stripe_customers c where c.user_id = target_user_id $$;
grant execute on function private.stripe_customer_of(uuid) to service_role;

create or replace function public.stripe_customer_of(target_user_id uuid) returns text
language sql stable security invoker
set search_path = ''
as $$ select private.stripe_customer_of(target_user_id) $$;
grant execute on function stripe_customer_of(uuid) to service_role;

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
grant execute on function private.remember_stripe_customer(uuid,text) to service_role;

create or replace function public.remember_stripe_customer(target_user_id uuid, customer_id text) returns text
language sql security invoker
set search_path = ''
as $$ select private.remember_stripe_customer(target_user_id, customer_id) $$;
grant execute on function remember_stripe_customer(uuid,text) to service_role;

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
grant execute on function private.replace_stripe_customer(uuid,text,text) to service_role;

create or replace function public.replace_stripe_customer(target_user_id uuid, old_customer_id text, new_customer_id text)
returns text
language sql security invoker
set search_path = ''
as $$ select private.replace_stripe_customer(target_user_id, old_customer_id, new_customer_id) $$;
grant execute on function replace_stripe_customer(uuid,text,text) to service_role;

-- Whether the caller is premium, for the subscription endpoint and any client that asks: the
-- same helper the monthly award uses (private.is_premium), asked about oneself only.
create or replace function private.caller_is_premium() returns boolean
language sql stable security definer
set search_path = ''
as $$ select coalesce(private.is_premium((select auth.uid())), false) $$;
grant execute on function private.caller_is_premium() to authenticated;

create or replace function public.caller_is_premium() returns boolean
language sql stable security invoker
set search_path = ''
as $$ select private.caller_is_premium() $$;
grant execute on function caller_is_premium() to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- E-mail
-- ---------------------------------------------------------------------------------------------

-- One row: the per-user cap on sends in any 24 hours. Change it in the SQL dashboard:
--   update private.email_settings set daily_cap = 50;
create table private.email_settings (
  id boolean primary key default true check (id),
  daily_cap integer not null default 20 check (daily_cap between 0 and 100000)
);
comment on table private.email_settings is 'E-mail settings (one row): daily_cap = sends per user in any 24 hours.';

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
alter table public.email_messages enable row level security;
comment on table public.email_messages is
  'Every e-mail sent through POST /api/email/send: who, to, subject, provider id, status. Senders read their own.';
revoke all on public.email_messages from anon, authenticated;
grant select (id, user_id, to_address, subject, provider_id, status, error, created_at, updated_at)
  on public.email_messages to authenticated;

-- The cap counts a user's recent sends; the list reads them newest first.
create index email_messages_user_created on public.email_messages (user_id, created_at desc);

create index email_messages_provider_id on public.email_messages (provider_id) where provider_id is not null;

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
  received_at timestamptz not null default now(),
  outcome text not null default 'stored' check (outcome in ('stored', 'ignored')),
  reason text check (reason is null or length(reason) <= 2000)
);
comment on table private.email_events is 'Resend webhook events, stored once by svix-id.';
comment on column private.email_events.outcome is
  'stored: applied (status, suppression, inbound mail); ignored: malformed, kept only for inspection (payload as received).';
comment on column private.email_events.reason is 'Why the event was ignored; null when stored.';

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
grant execute on function private.begin_email_send(text,text,text,text) to authenticated;

create or replace function public.begin_email_send(
  to_address text, subject text, idempotency_key text, request_hash text
) returns table (message public.email_messages, existing boolean)
language sql security invoker
set search_path = ''
as $$ select * from private.begin_email_send(to_address, subject, idempotency_key, request_hash) $$;
grant execute on function begin_email_send(text,text,text,text) to authenticated, service_role;

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
grant execute on function private.finish_email_send(uuid,text,text,text) to service_role;

create or replace function public.finish_email_send(message_id uuid, provider_id text, status text, error text)
returns public.email_messages
language sql security invoker
set search_path = ''
as $$ select private.finish_email_send(message_id, provider_id, status, error) $$;
grant execute on function finish_email_send(uuid,text,text,text) to service_role;

-- ---------------------------------------------------------------------------------------------
-- E-mail (Resend)
-- ---------------------------------------------------------------------------------------------

/*
 * One verified Resend webhook event, once by its Svix id. 'replay' when seen before, else 'stored'.
 * Delivery events move the logged message's status forward; bounced (unless transient) and
 * complained suppress the recipients; email.received stores the inbound mail (`inbound`: the
 * body fetched from Resend, or null). Values Resend never sends raise class-22 errors naming
 * the field; the webhook then records the event as ignored (private.record_ignored_email_event).
 */
create or replace function private.record_email_event(svix_id text, payload jsonb, inbound jsonb)
returns text
language plpgsql security definer
set search_path = ''
as $$
declare
  event_type text;
  data jsonb;
  email_id text;
  recipients text[] := '{}'::text[];
  sent_at timestamptz;
  new_status text;
begin
  if svix_id is null or length(svix_id) not between 1 and 255 then
    raise exception 'svix-id: 1 to 255 characters' using errcode = '22023';
  end if;
  if payload is null or jsonb_typeof(payload) <> 'object' then
    raise exception 'event: must be an object' using errcode = '22023';
  end if;
  event_type := private.webhook_string(payload, 'type', '^[a-z_]+(\.[a-z_]+){1,5}$');
  if event_type is null then
    raise exception 'type: required' using errcode = '22023';
  end if;
  data := coalesce(payload -> 'data', 'null'::jsonb);
  if jsonb_typeof(data) = 'null' then
    data := '{}'::jsonb;
  elsif jsonb_typeof(data) <> 'object' then
    raise exception 'data: must be an object' using errcode = '22023';
  end if;
  email_id := private.webhook_string(data, 'email_id', '^[A-Za-z0-9._:@<>+=-]{1,255}$', 'data.email_id');
  if data -> 'to' is not null and jsonb_typeof(data -> 'to') <> 'null' then
    if jsonb_typeof(data -> 'to') <> 'array'
       or exists (select 1 from jsonb_array_elements(data -> 'to') a
                   where jsonb_typeof(a) <> 'string' or length(a #>> '{}') not between 1 and 320)
       or jsonb_array_length(data -> 'to') > 50 then
      raise exception 'data.to: must be a list of at most 50 addresses' using errcode = '22023';
    end if;
    recipients := array(select jsonb_array_elements_text(data -> 'to'));
  end if;

  if event_type = 'email.received' then
    perform private.webhook_string(data, 'from', '.', 'data.from', 1000);
    perform private.webhook_string(data, 'subject', '', 'data.subject', 2000);
    sent_at := coalesce(
      private.webhook_time_field(data, 'created_at', now() + interval '1 day', 'data.created_at'),
      private.webhook_time_field(payload, 'created_at', now() + interval '1 day', 'created_at'),
      now());
    if inbound is not null and (jsonb_typeof(inbound) <> 'object'
       or jsonb_typeof(coalesce(inbound -> 'text', 'null')) not in ('string', 'null')
       or jsonb_typeof(coalesce(inbound -> 'html', 'null')) not in ('string', 'null')) then
      raise exception 'inbound: must be {text, html}' using errcode = '22023';
    end if;
  end if;
  if event_type = 'email.bounced' and data -> 'bounce' is not null and jsonb_typeof(data -> 'bounce') <> 'null' then
    if jsonb_typeof(data -> 'bounce') <> 'object' then
      raise exception 'data.bounce: must be an object' using errcode = '22023';
    end if;
    perform private.webhook_string(data -> 'bounce', 'type', '', 'data.bounce.type', 100);
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
      from unnest(recipients) a
     where trim(a) <> ''
    on conflict (address) do nothing;
  end if;

  if event_type = 'email.received' and email_id is not null then
    insert into private.inbound_emails (email_id, svix_id, from_address, to_addresses, subject, text_body, html_body, received_at)
    values (
      email_id, record_email_event.svix_id, coalesce(data ->> 'from', ''), recipients,
      data ->> 'subject', inbound ->> 'text', inbound ->> 'html', sent_at)
    on conflict on constraint inbound_emails_pkey do nothing;
  end if;
  return 'stored';
end
$$;
grant execute on function private.record_email_event(text,jsonb,jsonb) to service_role;

create or replace function public.record_email_event(svix_id text, payload jsonb, inbound jsonb)
returns text
language sql security invoker
set search_path = ''
as $$ select private.record_email_event(svix_id, payload, inbound) $$;
grant execute on function record_email_event(text,jsonb,jsonb) to service_role;

-- ---------------------------------------------------------------------------------------------
-- Input checks shared by both webhooks
-- ---------------------------------------------------------------------------------------------

-- A string field of a webhook payload: null when absent or JSON null; 22023 naming the field
-- when it is another JSON type, longer than `max_length` or does not match `pattern`.
create or replace function private.webhook_string(
  payload jsonb, field text, pattern text, label text default null, max_length integer default 255
) returns text
language plpgsql immutable
set search_path = ''
as $$
declare
  value jsonb := payload -> field;
  name text := coalesce(label, field);
begin
  if value is null or jsonb_typeof(value) = 'null' then
    return null;
  end if;
  if jsonb_typeof(value) <> 'string' then
    raise exception '%: must be a string, not %', name, jsonb_typeof(value) using errcode = '22023';
  end if;
  if length(value #>> '{}') > max_length or (value #>> '{}') !~ pattern then
    raise exception '%: not a valid value', name using errcode = '22023';
  end if;
  return value #>> '{}';
end
$$;

-- A time from a webhook payload: an ISO-8601 / Postgres timestamp (not 'now', 'epoch' or
-- 'infinity'), a real calendar date, between 2000-01-01 and `latest`. 22007 when it is not a
-- time, 22008 when out of range.
create or replace function private.webhook_time(value text, field text, latest timestamptz)
returns timestamptz
language plpgsql stable
set search_path = ''
as $$
declare
  parsed timestamptz;
begin
  if value is null then
    return null;
  end if;
  if value !~ '^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?\s*(Z|z|[+-]\d{2}(:?\d{2})?)?$' then
    raise exception '%: not a time', field using errcode = '22007';
  end if;
  begin
    parsed := value::timestamptz;
  exception when data_exception then
    raise exception '%: not a valid date or time', field using errcode = '22008';
  end;
  if parsed < timestamptz '2000-01-01 00:00:00+00' or parsed > latest then
    raise exception '%: out of range', field using errcode = '22008';
  end if;
  return parsed;
end
$$;

-- A time field of a webhook payload (string or absent), checked as above.
create or replace function private.webhook_time_field(payload jsonb, field text, latest timestamptz, label text default null)
returns timestamptz
language plpgsql stable
set search_path = ''
as $$
begin
  if payload -> field is not null and jsonb_typeof(payload -> field) not in ('string', 'null') then
    raise exception '%: must be a time string, not %', coalesce(label, field), jsonb_typeof(payload -> field) using errcode = '22023';
  end if;
  return private.webhook_time(payload ->> field, coalesce(label, field), latest);
end
$$;

/*
 * Records a signed Stripe event the webhook could not apply (malformed, unknown to Stripe, or
 * refused by private.apply_stripe_event) as 'ignored' with the reason. `event_key` is the event
 * id, or sha256:<hex of the body> when the event has no usable id. Returns 'ignored', or
 * 'replay' when the key was recorded before (applied or ignored).
 */
create or replace function private.record_ignored_stripe_event(
  event_key text, event_type text, event_created timestamptz, reason text
) returns text
language plpgsql security definer
set search_path = ''
as $$
begin
  if event_key is null or event_key !~ '^(evt_[A-Za-z0-9_]{1,250}|sha256:[0-9a-f]{64})$' then
    raise exception 'event_key: an event id or sha256:<hex>' using errcode = '22023';
  end if;
  insert into private.stripe_events (event_id, event_type, event_created, outcome, reason)
  values (
    event_key,
    coalesce(nullif(left(event_type, 100), ''), '(none)'),
    case when event_created between timestamptz '2000-01-01 00:00:00+00' and now() + interval '1 day' then event_created end,
    'ignored',
    coalesce(nullif(left(reason, 2000), ''), 'not applied'))
  on conflict on constraint stripe_events_pkey do nothing;
  return case when found then 'ignored' else 'replay' end;
end
$$;
grant execute on function private.record_ignored_stripe_event(text,text,timestamp with time zone,text) to service_role;

create or replace function public.record_ignored_stripe_event(
  event_key text, event_type text, event_created timestamptz, reason text
) returns text
language sql security invoker
set search_path = ''
as $$ select private.record_ignored_stripe_event(event_key, event_type, event_created, reason) $$;
grant execute on function record_ignored_stripe_event(text,text,timestamp with time zone,text) to service_role;

/*
 * Records a signed Resend event the webhook could not apply as 'ignored', with the reason and
 * the payload as received (so nothing Resend sent is lost: an inbound mail can be recovered by
 * hand). Returns 'ignored', or 'replay' when the svix-id was recorded before.
 */
create or replace function private.record_ignored_email_event(svix_id text, event_type text, payload jsonb, reason text)
returns text
language plpgsql security definer
set search_path = ''
as $$
begin
  if svix_id is null or length(svix_id) not between 1 and 255 then
    raise exception 'svix-id: 1 to 255 characters' using errcode = '22023';
  end if;
  insert into private.email_events (svix_id, event_type, payload, outcome, reason)
  values (
    record_ignored_email_event.svix_id,
    coalesce(nullif(left(event_type, 100), ''), '(none)'),
    coalesce(payload, 'null'::jsonb),
    'ignored',
    coalesce(nullif(left(reason, 2000), ''), 'not applied'))
  on conflict on constraint email_events_pkey do nothing;
  return case when found then 'ignored' else 'replay' end;
end
$$;
grant execute on function private.record_ignored_email_event(text,text,jsonb,text) to service_role;

create or replace function public.record_ignored_email_event(svix_id text, event_type text, payload jsonb, reason text)
returns text
language sql security invoker
set search_path = ''
as $$ select private.record_ignored_email_event(svix_id, event_type, payload, reason) $$;
grant execute on function record_ignored_email_event(text,text,jsonb,text) to service_role;

