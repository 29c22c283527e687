-- Demo data for the local stack (applied once, when the cluster is created).
-- Tokens for these users: `npm run token -- alice@example.com`.
insert into auth.users (id, email, raw_user_meta_data) values
  ('00000000-0000-4000-a000-000000000001', 'alice@example.com', '{"full_name": "Alice Demo"}'),
  ('00000000-0000-4000-a000-000000000002', 'bob@example.com', '{"full_name": "Bob Demo"}'),
  ('00000000-0000-4000-a000-000000000003', 'admin@example.com', '{"full_name": "Ada Admin"}')
on conflict do nothing;

update public.profiles set role = 'super_admin' where id = '00000000-0000-4000-a000-000000000003';

insert into public.subscriptions (user_id, stripe_customer_id, stripe_subscription_id, status)
values ('00000000-0000-4000-a000-000000000002', 'cus_demo_bob', 'sub_demo_bob', 'active')
on conflict do nothing;
