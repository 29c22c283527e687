// The console's one Supabase client, typed with the generated Database. The URL defaults to the
// page's own origin (the local gateway serves the console beside the API); a static host sets
// VITE_SUPABASE_URL and VITE_SUPABASE_ANON_KEY at build time. Only public values belong here:
// the build is checked for the service-role key, the JWT secret and provider keys.
import { createClient } from '@supabase/supabase-js'
import type { Database } from '../../types/database.ts'

export const supabaseUrl: string = import.meta.env.VITE_SUPABASE_URL || window.location.origin
const anonKey: string | undefined = import.meta.env.VITE_SUPABASE_ANON_KEY
if (!anonKey) throw new Error('VITE_SUPABASE_ANON_KEY was not set when the console was built')

export const supabase = createClient<Database>(supabaseUrl, anonKey, {
  // The console signs in with a password only: a session in a link's fragment is never taken
  // (a crafted link would otherwise sign the admin in as someone else).
  auth: { persistSession: true, autoRefreshToken: true, detectSessionInUrl: false },
})

/** The edge function's base: every /api path of the OpenAPI document lives under it. */
export const functionsUrl = `${supabaseUrl}/functions/v1`
