-- Local stand-in for pg_net: net.http_post/net.http_get with pg_net's signatures queue the
-- request; the gateway drains the queue (woken by NOTIFY on commit, as pg_net's worker is)
-- and stores each reply in net._http_response.
create schema if not exists net;

create table if not exists net.http_request_queue (
  id bigserial primary key,
  method text not null,
  url text not null,
  headers jsonb not null default '{}'::jsonb,
  params jsonb not null default '{}'::jsonb,
  body bytea,
  timeout_milliseconds integer not null default 5000
);

create unlogged table if not exists net._http_response (
  id bigint primary key,
  status_code integer,
  content_type text,
  headers jsonb,
  content text,
  timed_out boolean,
  error_msg text,
  created timestamptz not null default now()
);

create or replace function net.http_post(
  url text,
  body jsonb default '{}'::jsonb,
  params jsonb default '{}'::jsonb,
  headers jsonb default '{"Content-Type": "application/json"}'::jsonb,
  timeout_milliseconds integer default 5000
) returns bigint
language plpgsql
as $$
declare request_id bigint;
begin
  insert into net.http_request_queue (method, url, headers, params, body, timeout_milliseconds)
  values ('POST', url, headers, params, convert_to(body::text, 'UTF8'), timeout_milliseconds)
  returning id into request_id;
  perform pg_notify('net_http_request', request_id::text);
  return request_id;
end
$$;

create or replace function net.http_get(
  url text,
  params jsonb default '{}'::jsonb,
  headers jsonb default '{}'::jsonb,
  timeout_milliseconds integer default 5000
) returns bigint
language plpgsql
as $$
declare request_id bigint;
begin
  insert into net.http_request_queue (method, url, headers, params, body, timeout_milliseconds)
  values ('GET', url, headers, params, null, timeout_milliseconds)
  returning id into request_id;
  perform pg_notify('net_http_request', request_id::text);
  return request_id;
end
$$;

revoke all on schema net from public;
revoke all on all functions in schema net from public, anon, authenticated;
grant usage on schema net to service_role;
grant execute on all functions in schema net to service_role;
