// PostgREST clients. userDb() carries the caller's token so RLS decides; serviceDb() is for
// work no user is the caller of (jobs, webhooks, checked super-admin operations).
import { createClient, type SupabaseClient } from '@supabase/supabase-js'
import { requiredEnv } from './env.ts'

const options = { auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false } }

export function userDb(token: string): SupabaseClient {
  return createClient(requiredEnv('SUPABASE_URL'), requiredEnv('SUPABASE_ANON_KEY'), {
    ...options,
    global: { headers: { Authorization: `Bearer ${token}` } },
  })
}

let service: SupabaseClient | undefined
export function serviceDb(): SupabaseClient {
  service ??= createClient(requiredEnv('SUPABASE_URL'), requiredEnv('SUPABASE_SERVICE_ROLE_KEY'), options)
  return service
}
