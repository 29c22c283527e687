-- SQL dashboard snippet (super admins): re-derive a user's balance from the ledger and show
-- the stored balance before and after (equal unless something bypassed the ledger).
select u.email,
       p.drops_balance as stored_before,
       public.recompute_drops_balance(u.id) as recomputed
from auth.users u join public.profiles p on p.id = u.id
where u.email = 'alice@example.com';
