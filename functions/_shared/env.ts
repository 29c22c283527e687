// Configuration read from the environment (Supabase sets SUPABASE_*; the rest are secrets).
export function optionalEnv(name: string): string | undefined {
  const v = Deno.env.get(name)
  return v === undefined || v === '' ? undefined : v
}

export function requiredEnv(name: string): string {
  const v = optionalEnv(name)
  if (!v) throw new Error(`${name} is not configured`)
  return v
}
