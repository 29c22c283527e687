// Conversion rates: how many AI tokens make one drop. The rate in force, its history (paginated),
// and a new rate, in force at once or from a later moment.
import { useState } from 'react'
import { api } from '../api.ts'
import { ActionForm, Field, Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'

interface Rate {
  id: number
  tokens_per_drop: number
  effective_at: string
  created_by: string | null
  created_at: string
}
interface Rates {
  current: Rate | null
  history: Rate[]
  next_cursor: string | null
}

export function ConversionRatesTab() {
  const pages = useCursorPages()
  const rates = useLoad(
    () => api<Rates>('/api/admin/conversion/rates', { query: { before: pages.cursor, limit: 20 } }),
    [pages.cursor],
  )
  const [tokens, setTokens] = useState('')
  const [from, setFrom] = useState('')
  return (
    <>
      <Loader loaded={rates}>
        {(r) => (
          <>
            <p className="current-rate">
              {r.current
                ? <>In force: <strong>{r.current.tokens_per_drop.toLocaleString()}</strong> tokens per drop since <Time value={r.current.effective_at} />.</>
                : 'No rate has been set: AI usage is not converted to drops.'}
            </p>
            <table>
              <caption>Every rate set, newest effective first</caption>
              <thead>
                <tr><th scope="col">Tokens per drop</th><th scope="col">Effective</th><th scope="col">Set</th></tr>
              </thead>
              <tbody>
                {r.history.map((rate) => (
                  <tr key={rate.id}>
                    <td>{rate.tokens_per_drop.toLocaleString()}</td>
                    <td><Time value={rate.effective_at} /></td>
                    <td><Time value={rate.created_at} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
            {r.history.length === 0 && <p className="empty">No rates yet.</p>}
            <Pager pages={pages} nextCursor={r.next_cursor} />
          </>
        )}
      </Loader>
      <h3>Set a new rate</h3>
      <ActionForm
        label="Set rate"
        success="The new rate is saved."
        submit={() =>
          api('/api/admin/conversion/rates', {
            body: {
              tokens_per_drop: Number(tokens),
              ...(from ? { effective_at: new Date(from).toISOString() } : {}),
            },
          })}
        onDone={() => {
          setTokens('')
          setFrom('')
          pages.reset()
          rates.reload()
        }}
      >
        <Field label="Tokens per drop">
          {(id) => (
            <input id={id} type="number" min="0.0001" step="any" required value={tokens}
              onChange={(e) => setTokens(e.target.value)} />
          )}
        </Field>
        <Field label="Effective from (optional, your time zone)" hint="Empty: in force at once">
          {(id) => (
            <input id={id} type="datetime-local" value={from} onChange={(e) => setFrom(e.target.value)} />
          )}
        </Field>
      </ActionForm>
    </>
  )
}
