-- Webhook outcomes (issue 20): a signed webhook event that cannot be applied is recorded as
-- `ignored` with its reason and acknowledged (2xx), never answered 500; and the Stripe state
-- stored is Stripe's latest, read from Stripe when an event is applied, not the event's copy.
--
-- The SQL that applies events refuses values Stripe and Resend never send with class-22 errors
-- (22023 bad value, 22007 bad time, 22008 time out of range). The edge function validates each
-- event's shape with zod first, so these are the last line: the route answers a class-22 error
-- by recording the event as ignored (private.record_ignored_*_event) with the error's message.
--
-- Supersedes, from 20261122030000_payments_email.sql:
--   private.apply_stripe_event(text, text, timestamptz, jsonb)   (ordering by Stripe read time)
--   private.record_email_event(text, jsonb, jsonb)                (checks its input, outcome column)
-- private.subscription_status_rank(text) is no longer used by them (kept: nothing else changes).

-- =========================================================================================
-- Where ignored events are recorded
-- =========================================================================================

alter table private.stripe_events
  -- An ignored event may carry no usable time (created: "notanumber").
  alter column event_created drop not null,
  add column reason text check (reason is null or length(reason) <= 2000);
comment on column private.stripe_events.event_id is
  'Stripe''s event id; for a signed event without a usable id, sha256:<hex of the body>, so a replay is still one row.';
comment on column private.stripe_events.reason is
  'Why the event was ignored (malformed, unknown to Stripe, refused by the database); null when applied or stale.';

alter table private.email_events
  add column outcome text not null default 'stored' check (outcome in ('stored', 'ignored')),
  add column reason text check (reason is null or length(reason) <= 2000);
comment on column private.email_events.outcome is
  'stored: applied (status, suppression, inbound mail); ignored: malformed, kept only for inspection (payload as received).';
comment on column private.email_events.reason is 'Why the event was ignored; null when stored.';

-- When the stored state was read from Stripe. A state read earlier never replaces one read
-- later, whatever order the events that caused the reads arrived in. Not granted to clients.
alter table public.subscriptions add column stripe_fetched_at timestamptz;
comment on column public.subscriptions.stripe_fetched_at is
  'When the stored state was retrieved from Stripe (the webhook reads Stripe''s latest); an earlier read never replaces it.';

-- =========================================================================================
-- Input checks shared by both webhooks
-- =========================================================================================

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
revoke execute on function private.webhook_string(jsonb, text, text, text, integer) from public;

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
revoke execute on function private.webhook_time(text, text, timestamptz) from public;

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
revoke execute on function private.webhook_time_field(jsonb, text, timestamptz, text) from public;

-- =========================================================================================
-- Stripe
-- =========================================================================================

/*
 * Applies one verified Stripe event in one transaction (supersedes the 20261122030000 version,
 * which ordered events by their own time, status rank and id). `details`, built by
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
revoke execute on function private.apply_stripe_event(text, text, timestamptz, jsonb) from public;
grant execute on function private.apply_stripe_event(text, text, timestamptz, jsonb) to service_role;

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
revoke execute on function private.record_ignored_stripe_event(text, text, timestamptz, text) from public;
grant execute on function private.record_ignored_stripe_event(text, text, timestamptz, text) to service_role;

create or replace function public.record_ignored_stripe_event(
  event_key text, event_type text, event_created timestamptz, reason text
) returns text
language sql security invoker
set search_path = ''
as $$ select private.record_ignored_stripe_event(event_key, event_type, event_created, reason) $$;
revoke execute on function public.record_ignored_stripe_event(text, text, timestamptz, text) from public, anon, authenticated;
grant execute on function public.record_ignored_stripe_event(text, text, timestamptz, text) to service_role;

-- =========================================================================================
-- E-mail (Resend)
-- =========================================================================================

/*
 * One verified Resend webhook event, once by its Svix id (supersedes the 20261122030000
 * version, which cast times without checking them). 'replay' when seen before, else 'stored'.
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
revoke execute on function private.record_email_event(text, jsonb, jsonb) from public;
grant execute on function private.record_email_event(text, jsonb, jsonb) to service_role;

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
revoke execute on function private.record_ignored_email_event(text, text, jsonb, text) from public;
grant execute on function private.record_ignored_email_event(text, text, jsonb, text) to service_role;

create or replace function public.record_ignored_email_event(svix_id text, event_type text, payload jsonb, reason text)
returns text
language sql security invoker
set search_path = ''
as $$ select private.record_ignored_email_event(svix_id, event_type, payload, reason) $$;
revoke execute on function public.record_ignored_email_event(text, text, jsonb, text) from public, anon, authenticated;
grant execute on function public.record_ignored_email_event(text, text, jsonb, text) to service_role;
