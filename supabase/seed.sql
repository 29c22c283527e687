-- Demo data for the local stack (applied once, when the cluster is created).
-- Tokens for these users: `npm run token -- alice@example.com`.
-- Confirmed, with the password `demo-password` (bcrypt, as Supabase Auth stores it), so a client
-- can call auth.signInWithPassword against the local stack or a hosted project: every other
-- column as Auth writes it (private.new_auth_user).
select private.new_auth_user(jsonb_build_object(
         'id', demo.id, 'email', demo.email, 'raw_user_meta_data', jsonb_build_object('full_name', demo.full_name),
         'encrypted_password', extensions.crypt('demo-password', extensions.gen_salt('bf', 10)),
         'email_confirmed_at', now()))
  from (values ('00000000-0000-4000-a000-000000000001'::uuid, 'alice@example.com', 'Alice Demo'),
               ('00000000-0000-4000-a000-000000000002', 'bob@example.com', 'Bob Demo'),
               ('00000000-0000-4000-a000-000000000003', 'admin@example.com', 'Ada Admin')) demo (id, email, full_name)
 where not exists (select 1 from auth.users u where u.id = demo.id);

update public.profiles set role = 'super_admin' where id = '00000000-0000-4000-a000-000000000003';

insert into public.subscriptions (user_id, stripe_customer_id, stripe_subscription_id, status)
values ('00000000-0000-4000-a000-000000000002', 'cus_demo_bob', 'sub_demo_bob', 'active')
on conflict do nothing;
