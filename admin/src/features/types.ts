// The replies of GET /api/admin/features and its audit, as the Features page reads them.
export interface Provider {
  id: string
  name: string
  configured: boolean
  variables: { name: string; set: boolean; required: boolean }[]
}
export interface Limit {
  id: string
  area: string
  name: string
  value: number | null
  unit: string
  source: 'env' | 'database' | 'constant'
  where: string
  editable: boolean
}
export interface Features {
  providers: Provider[]
  limits: Limit[]
  write_rate_limits: { subject_kind: string; subject: string; max_writes: number; window_seconds: number }[]
  kit_launch_date: string | null
}
export interface SettingChange {
  id: number
  changed_by: string | null
  changed_by_email: string | null
  changed_at: string
  setting: string
  old_value: unknown
  new_value: unknown
}

export const SOURCE_LABEL: Record<Limit['source'], string> = {
  env: 'Environment variable (read-only here)',
  database: 'Database row',
  constant: 'Constant in the code (read-only)',
}

/** An audited value as text: "max_writes 40, window_seconds 60", or "none" before a first row. */
export function showValue(v: unknown): string {
  if (v === null || v === undefined) return 'none'
  if (typeof v === 'object') {
    return Object.entries(v as Record<string, unknown>).map(([k, x]) => `${k} ${String(x)}`).join(', ')
  }
  return String(v)
}
