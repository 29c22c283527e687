// auth.users rows as hosted Supabase Auth reads them: GoTrue scans the token and change columns
// into Go strings, so a row the project writes by hand with NULL there makes every lookup of the
// user a 500 ("Database error querying schema", supabase/auth#1940), and a row without
// instance_id is never found. The local Auth reads rows as strictly; the project's own rows
// (seed, the assistant, AI users) are written by private.new_auth_user and so sign in.
import { strict as assert } from 'node:assert'
import { insertAuthUser, sql, test } from './_helpers.ts'
import { appClient, freshEmail, resetAuthRateLimits } from './_auth.ts'

const PASSWORD = 'row-test-password'
const hash = async () =>
  (await sql`select extensions.crypt(${PASSWORD}, extensions.gen_salt('bf', 4)) as h`)[0].h as string

test('a user written by private.new_auth_user signs in with a password', async () => {
  await resetAuthRateLimits()
  const email = freshEmail('rows-helper')
  const id = await insertAuthUser(sql, { email, encrypted_password: await hash(), email_confirmed_at: new Date() })
  const { data, error } = await appClient().auth.signInWithPassword({ email, password: PASSWORD })
  assert.equal(error, null)
  assert.equal(data.user?.id, id)
  assert.deepEqual(data.user?.identities?.map((i) => i.provider), ['email'])
})

test('a row with NULL in a column GoTrue reads as a string: 500 on sign-in, as on hosted', async () => {
  await resetAuthRateLimits()
  const email = freshEmail('rows-null-token')
  // What the seed and the assistant's migration wrote before: no token columns.
  await sql`insert into auth.users (instance_id, id, aud, role, email, encrypted_password, email_confirmed_at,
                                    raw_app_meta_data, raw_user_meta_data, created_at, updated_at)
            values ('00000000-0000-0000-0000-000000000000', gen_random_uuid(), 'authenticated', 'authenticated',
                    ${email}, ${await hash()}, now(), '{"provider": "email", "providers": ["email"]}', '{}', now(), now())`
  const { error } = await appClient().auth.signInWithPassword({ email, password: PASSWORD })
  assert.equal(error?.status, 500)
  assert.equal(error?.message, 'Database error querying schema')

  // The repair of 20261206170000_auth_users_as_auth_writes_them makes it readable.
  await sql`update auth.users set confirmation_token = '', recovery_token = '', email_change_token_new = '',
                                  email_change = '' where email = ${email}`
  const again = await appClient().auth.signInWithPassword({ email, password: PASSWORD })
  assert.equal(again.error, null)
})

test('a row without instance_id is not found by Auth', async () => {
  await resetAuthRateLimits()
  const email = freshEmail('rows-no-instance')
  await insertAuthUser(sql, { email, encrypted_password: await hash(), email_confirmed_at: new Date() })
  await sql`update auth.users set instance_id = null where email = ${email}`
  const { error } = await appClient().auth.signInWithPassword({ email, password: PASSWORD })
  assert.equal(error?.code, 'invalid_credentials')
})
