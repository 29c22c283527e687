// The encouragement configuration (daily allowance, bonus per engagement, engagement window,
// custom drops a day), on the Encouragement tab and the Features page: the form sends only the
// values that changed, and every change is listed with who made it, when, before and after.
import { useState } from 'react'
import { api } from '../api.ts'
import { ActionForm, Field, Loader, Time, useLoad } from '../ui.tsx'
import { UserLink } from '../review/parts.tsx'

const CONFIG_KEYS = [
  ['daily_allowance', 'Daily allowance (drops a user may send a day)', 100],
  ['bonus_per_engagement', 'Bonus per engagement (drops)', 100],
  ['engagement_window_hours', 'Engagement window (hours)', 168],
  ['max_custom_per_day', 'Custom drops a day (at most)', 100],
] as const
type ConfigKey = (typeof CONFIG_KEYS)[number][0]
type Config = Record<ConfigKey, number>
interface ConfigReply {
  config: Config & { updated_at: string; updated_by: string | null }
  changes: { id: number; changed_by: string | null; changed_at: string; old_values: Config; new_values: Config }[]
}

export function EncouragementConfiguration() {
  const loaded = useLoad(() => api<ConfigReply>('/api/encouragement-drops/admin/config'), [])
  return (
    <section aria-labelledby="enc-config">
      <h3 id="enc-config">Configuration</h3>
      <Loader loaded={loaded}>
        {(d) => (
          <>
            <ConfigForm config={d.config} onDone={loaded.reload} />
            <p className="muted">
              Last changed <Time value={d.config.updated_at} /> by <UserLink id={d.config.updated_by} />.
            </p>
            <table>
              <caption>Latest changes (20), newest first</caption>
              <thead>
                <tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Changed</th></tr>
              </thead>
              <tbody>
                {d.changes.map((ch) => (
                  <tr key={ch.id}>
                    <td><Time value={ch.changed_at} /></td>
                    <td><UserLink id={ch.changed_by} /></td>
                    <td>
                      <ul>
                        {CONFIG_KEYS.filter(([k]) => ch.old_values?.[k] !== ch.new_values?.[k]).map(([k]) => (
                          <li key={k}>{k}: {ch.old_values?.[k] ?? '—'} → {ch.new_values?.[k] ?? '—'}</li>
                        ))}
                      </ul>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {d.changes.length === 0 && <p className="empty">No change recorded yet.</p>}
          </>
        )}
      </Loader>
    </section>
  )
}

function ConfigForm({ config, onDone }: { config: Config; onDone: () => void }) {
  const [values, setValues] = useState<Record<ConfigKey, string>>(
    Object.fromEntries(CONFIG_KEYS.map(([k]) => [k, String(config[k])])) as Record<ConfigKey, string>,
  )
  return (
    <ActionForm
      label="Save configuration"
      success="The configuration is saved."
      // Only the values that changed are sent; with none, the API says so.
      submit={() =>
        api('/api/encouragement-drops/admin/config', {
          method: 'PUT',
          body: Object.fromEntries(
            CONFIG_KEYS.filter(([k]) => values[k] !== String(config[k])).map(([k]) => [k, values[k] === '' ? null : Number(values[k])]),
          ),
        })}
      onDone={onDone}
    >
      {CONFIG_KEYS.map(([k, label, max]) => (
        <Field key={k} label={label} hint={`1 to ${max}`}>
          {(id) => (
            <input id={id} type="number" step="1" value={values[k]}
              onChange={(e) => setValues((v) => ({ ...v, [k]: e.target.value }))} />
          )}
        </Field>
      ))}
    </ActionForm>
  )
}
