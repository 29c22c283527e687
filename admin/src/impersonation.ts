// The impersonation in progress, kept in this tab's sessionStorage (never localStorage: the
// token must not outlive the tab). The banner and the callback page read it; `?stop=1` clears it.
import { useSyncExternalStore } from 'react'

export interface Impersonation {
  session_id: string
  access_token: string
  expires_at: string
  reason: string
  user: { id: string; email: string | null }
}

const KEY = 'admin-console.impersonation'
const listeners = new Set<() => void>()
let cached: { raw: string | null; value: Impersonation | null } = { raw: null, value: null }

function read(): Impersonation | null {
  const raw = sessionStorage.getItem(KEY)
  if (raw !== cached.raw) {
    let value: Impersonation | null = null
    try {
      value = raw ? JSON.parse(raw) : null
    } catch { /* a damaged value counts as none */ }
    cached = { raw, value }
  }
  return cached.value
}

export function setImpersonation(value: Impersonation | null) {
  if (value) sessionStorage.setItem(KEY, JSON.stringify(value))
  else sessionStorage.removeItem(KEY)
  for (const fn of listeners) fn()
}

export const currentImpersonation = read

/** The impersonation in progress, or null once it ended or expired. */
export function useImpersonation(): Impersonation | null {
  const value = useSyncExternalStore((fn) => {
    listeners.add(fn)
    return () => listeners.delete(fn)
  }, read)
  if (value && new Date(value.expires_at).getTime() <= Date.now()) return null
  return value
}
