-- Benchmark fixture for token usage and the admin user list (issue 7): 100,000 users (x the
-- setting bench.scale, BENCH_SCALE) with
-- profiles and balances, 2,000,000 AI usage rows (20 per user over the last twelve months:
-- 70 % tone analyses, 20 % entry backgrounds, 10 % tone pack images) plus 10,000 more this
-- month for one heavy user (user 2), and the monthly aggregate those rows make. User 1 is a
-- super admin.
--
-- Loaded in bulk with triggers off (session_replication_role = replica), so the cost and the
-- aggregate the triggers maintain are computed here by the same rules (prices of the
-- migration: gpt-4o-mini $0.15/$0.60 per million tokens, dall-e-3 $0.040 per standard image,
-- gpt-image-1 $5/$40 per million tokens).
begin;
set local session_replication_role = replica;

create temporary table bench_ai_users on commit drop as
  select g as n,
         ('a1000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid as id,
         timestamptz '2025-01-01' + g * interval '4 minutes' as created_at
    from generate_series(1, 100000 * coalesce(nullif(current_setting('bench.scale', true), '')::integer, 1)) g;

insert into auth.users (id, email, created_at)
select id, 'bench-ai-' || n || '@bench.local', created_at from bench_ai_users;
-- The admin search's copy of e-mails and names (triggers keep it, and triggers are off here).
insert into private.user_search (user_id, email, full_name)
select id, 'bench-ai-' || n || '@bench.local', 'Bench User ' || n from bench_ai_users;
insert into public.profiles (id, full_name, role, drops_balance, created_at)
select id, 'Bench User ' || n, case when n = 1 then 'super_admin' else 'user' end, 50 + n % 200, created_at
  from bench_ai_users;

insert into public.ai_usage (user_id, usage_type, model, input_tokens, output_tokens, image_count, image_quality,
                             cost_usd, created_at)
select u.id, x.usage_type, x.model, x.input_tokens, x.output_tokens, x.image_count, x.image_quality,
       case x.usage_type
         when 'tone_analysis' then (x.input_tokens * 0.15 + x.output_tokens * 0.60) / 1000000
         when 'entry_background' then 0.040
         else (x.input_tokens * 5.0 + x.output_tokens * 40.0) / 1000000 end,
       now() - ((k - 1) * 18 + u.n % 18) * interval '1 day' - (u.n % 86400) * interval '1 second'
  from bench_ai_users u
 cross join generate_series(1, 20) k
 cross join lateral (
   select t.usage_type,
          case t.usage_type when 'tone_analysis' then 'gpt-4o-mini' when 'entry_background' then 'dall-e-3' else 'gpt-image-1' end as model,
          case t.usage_type when 'tone_analysis' then 300 + u.n % 500 when 'tone_pack_image' then 50 else 0 end as input_tokens,
          case t.usage_type when 'tone_analysis' then 60 when 'tone_pack_image' then 1056 else 0 end as output_tokens,
          case t.usage_type when 'tone_analysis' then 0 else 1 end as image_count,
          case t.usage_type when 'tone_analysis' then null else 'standard' end as image_quality
     from (select case when k % 10 < 7 then 'tone_analysis' when k % 10 < 9 then 'entry_background'
                       else 'tone_pack_image' end as usage_type) t
 ) x;

-- The heavy user: 10,000 tone analyses this month.
insert into public.ai_usage (user_id, usage_type, model, input_tokens, output_tokens, cost_usd, created_at)
select (select id from bench_ai_users where n = 2), 'tone_analysis', 'gpt-4o-mini', 500, 60,
       (500 * 0.15 + 60 * 0.60) / 1000000,
       greatest(date_trunc('month', now() at time zone 'UTC') at time zone 'UTC', now() - g * interval '1 minute')
  from generate_series(1, 10000) g;

insert into public.ai_usage_monthly (user_id, month, usage_type, calls, input_tokens, output_tokens, image_count, cost_usd)
select user_id, date_trunc('month', created_at at time zone 'UTC')::date, usage_type,
       count(*), sum(input_tokens), sum(output_tokens), sum(image_count), sum(cost_usd)
  from public.ai_usage
 where user_id in (select id from bench_ai_users)
 group by 1, 2, 3;
commit;

analyze auth.users;
analyze private.user_search;
analyze public.profiles;
analyze public.ai_usage;
analyze public.ai_usage_monthly;
