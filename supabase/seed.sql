-- Demo data for the local stack (applied once, when the cluster is created).
-- Tokens for these users: `npm run token -- alice@example.com`.
-- Confirmed, with the password `demo-password` (bcrypt, as Supabase Auth stores it), so a client
-- can call auth.signInWithPassword against the local stack.
insert into auth.users (id, email, raw_user_meta_data, encrypted_password, email_confirmed_at) values
  ('00000000-0000-4000-a000-000000000001', 'alice@example.com', '{"full_name": "Alice Demo"}',
   extensions.crypt('demo-password', extensions.gen_salt('bf', 10)), now()),
  ('00000000-0000-4000-a000-000000000002', 'bob@example.com', '{"full_name": "Bob Demo"}',
   extensions.crypt('demo-password', extensions.gen_salt('bf', 10)), now()),
  ('00000000-0000-4000-a000-000000000003', 'admin@example.com', '{"full_name": "Ada Admin"}',
   extensions.crypt('demo-password', extensions.gen_salt('bf', 10)), now())
on conflict do nothing;

update public.profiles set role = 'super_admin' where id = '00000000-0000-4000-a000-000000000003';

insert into public.subscriptions (user_id, stripe_customer_id, stripe_subscription_id, status)
values ('00000000-0000-4000-a000-000000000002', 'cus_demo_bob', 'sub_demo_bob', 'active')
on conflict do nothing;
