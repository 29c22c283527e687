// The optimizer on the Open energy page: a calculator and N, and the top N parameter sets of
// its default sweep, ranked by the calculator's objective (POST /api/labs/optimize).
import { useState } from 'react'
import { api } from '../api.ts'
import { ActionForm, Field } from '../ui.tsx'

const CALCULATORS = ['resonance', 'coil', 'impedance', 'electrolysis', 'pulsed_dc', 'plasma'] as const
interface Result {
  calculator: string
  objective: string
  goal: 'maximize' | 'minimize'
  combinations: number
  evaluated: number
  results: (Record<string, unknown> & { rank: number; inputs: Record<string, number> })[]
}
const show = (v: unknown) =>
  typeof v === 'number' ? v.toLocaleString(undefined, { maximumSignificantDigits: 6 }) : typeof v === 'object' ? JSON.stringify(v) : String(v ?? '')

export function Optimizer() {
  const [calculator, setCalculator] = useState<string>(CALCULATORS[0])
  const [topN, setTopN] = useState('5')
  const [result, setResult] = useState<Result | null>(null)
  const columns = result?.results[0] ? Object.keys(result.results[0]).filter((k) => k !== 'rank' && k !== 'inputs') : []
  const inputs = result?.results[0] ? Object.keys(result.results[0].inputs) : []
  return (
    <>
      <ActionForm
        label="Run optimizer"
        success="Done."
        submit={async () => {
          setResult(null)
          setResult(await api<Result>('/api/labs/optimize', { body: { calculator, top_n: Number(topN) } }))
        }}
      >
        <div className="inline-fields">
          <Field label="Calculator">
            {(id) => (
              <select id={id} value={calculator} onChange={(e) => setCalculator(e.target.value)}>
                {CALCULATORS.map((c) => <option key={c} value={c}>{c}</option>)}
              </select>
            )}
          </Field>
          <Field label="Top N" hint="1 to 100">
            {(id) => <input id={id} type="number" required min="1" step="1" value={topN} onChange={(e) => setTopN(e.target.value)} />}
          </Field>
        </div>
      </ActionForm>
      {result && (
        <table>
          <caption>
            Top {result.results.length} of {result.combinations.toLocaleString()} combinations of {result.calculator},{' '}
            {result.goal === 'maximize' ? 'highest' : 'lowest'} {result.objective} first
          </caption>
          <thead>
            <tr>
              <th scope="col">Rank</th>
              {inputs.map((k) => <th scope="col" key={`in-${k}`}>{k}</th>)}
              {columns.map((k) => <th scope="col" key={k}>{k}</th>)}
            </tr>
          </thead>
          <tbody>
            {result.results.map((r) => (
              <tr key={r.rank}>
                <td>{r.rank}</td>
                {inputs.map((k) => <td key={`in-${k}`}>{show(r.inputs[k])}</td>)}
                {columns.map((k) => <td key={k}>{show(r[k])}</td>)}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  )
}
