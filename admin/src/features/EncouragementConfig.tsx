// The encouragement configuration on the Features page: the values in force, a form changing
// some of them (PUT /api/encouragement-drops/admin/config, which records the change) and the
// history that endpoint keeps.
import { useState } from 'react'
import { api } from '../api.ts'
import { ActionForm, Field, Loader, Time, useLoad } from '../ui.tsx'
import { showValue } from './types.ts'

const FIELDS = [
  ['daily_allowance', 'Daily allowance (drops per user per day)', 100],
  ['bonus_per_engagement', 'Bonus per engagement', 100],
  ['engagement_window_hours', 'Engagement window (hours)', 168],
  ['max_custom_per_day', 'Custom drops per day', 100],
] as const
type Key = (typeof FIELDS)[number][0]
type Config = Record<Key, number>
interface ConfigReply {
  config: Config & { updated_at: string; updated_by: string | null }
  changes: { id: number; changed_by: string | null; changed_at: string; old_values: Config; new_values: Config }[]
}

export function EncouragementConfig() {
  const loaded = useLoad(() => api<ConfigReply>('/api/encouragement-drops/admin/config'), [])
  return (
    <Loader loaded={loaded}>
      {(r) => <ConfigForm key={r.config.updated_at} reply={r} onDone={loaded.reload} />}
    </Loader>
  )
}

function ConfigForm({ reply, onDone }: { reply: ConfigReply; onDone: () => void }) {
  const [values, setValues] = useState<Record<Key, string>>(
    Object.fromEntries(FIELDS.map(([k]) => [k, String(reply.config[k])])) as Record<Key, string>,
  )
  return (
    <>
      <p className="muted">Set in the database row <code>public.encouragement_config</code>; last changed <Time value={reply.config.updated_at} />.</p>
      <ActionForm
        label="Save configuration"
        success="The configuration is saved and the change recorded."
        submit={() => {
          const patch: Partial<Config> = {}
          for (const [k] of FIELDS) if (Number(values[k]) !== reply.config[k]) patch[k] = Number(values[k])
          return api('/api/encouragement-drops/admin/config', { method: 'PUT', body: patch })
        }}
        onDone={onDone}
      >
        <div className="inline-fields">
          {FIELDS.map(([k, label]) => (
            <Field key={k} label={label}>
              {(id) => (
                <input id={id} type="number" required min="1" step="1" value={values[k]}
                  onChange={(e) => setValues((v) => ({ ...v, [k]: e.target.value }))} />
              )}
            </Field>
          ))}
        </div>
      </ActionForm>
      {reply.changes.length === 0
        ? <p className="empty">The configuration has not been changed yet.</p>
        : (
          <table>
            <caption>Its latest changes (the endpoint keeps the last 20)</caption>
            <thead>
              <tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Before</th><th scope="col">After</th></tr>
            </thead>
            <tbody>
              {reply.changes.map((c) => (
                <tr key={c.id}>
                  <td><Time value={c.changed_at} /></td>
                  <td>{c.changed_by ?? <span className="muted">—</span>}</td>
                  <td>{showValue(c.old_values)}</td>
                  <td>{showValue(c.new_values)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
    </>
  )
}
