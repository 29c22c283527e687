// Labs templates as GET /api/labs/templates answers them, shared by the Templates tab and the
// Open energy page.
export interface Output {
  label: string
  value: number
  unit: string
}
/** A golden spec, stored as the template's predicted_values. */
export interface GoldenSpec {
  calculator: string
  optimal_inputs: Record<string, number>
  calculator_outputs: { outputs: Output[] }
}
export interface Convergence {
  replications: number
  independent_confirmations: number
  mean: number | null
  stddev: number | null
  anomalies: number
  robust: boolean
}
export interface Template {
  id: string
  owner_id: string
  title: string
  calculator: string
  inputs: Record<string, number>
  safety_level: string
  min_grade_band: string | null
  is_public: boolean
  predicted_values: GoldenSpec | null
  created_at: string
  convergence: Convergence
}
