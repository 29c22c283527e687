// AI users: synthetic users for the workout windows. Generate 1–1000 with SPEC's distributions or
// other weights, list them (paginated), pause or activate one, delete one; and a date's red and
// blue teams with their AI versus real members.
import { useState } from 'react'
import { Link } from 'react-router'
import { api } from '../api.ts'
import { ActionButton, ActionForm, Field, Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'
import '../users/users.css'

interface AiUser {
  id: string
  fullName: string | null
  isAi: boolean
  isActive: boolean
  region: string
  city: string
  state: string | null
  timezone: string
  activityType: string
  windowStartTime: string
  windowEndTime: string
  checkInProbability: number
  createdAt: string
}

// SPEC rule 5's default distributions, as private.ai_generation_defaults() holds them; a group
// sent differs from them, a group left as it is is not sent (the database's default applies).
const DEFAULTS = {
  regions: { 'West Coast': 25, 'East Coast': 30, Midwest: 20, South: 15, 'Mountain West': 10 },
  activities: { cardio: 30, strength: 25, walk: 20, meditation: 10, reading: 10, homework: 3, other: 2 },
  windows: { '06:00': 15, '08:00': 10, '12:00': 20, '14:00': 15, '16:00': 25, '18:00': 15 },
} as const
type Group = keyof typeof DEFAULTS
const GROUP_NAMES: Record<Group, string> = {
  regions: 'Regions',
  activities: 'Activities',
  windows: 'Window start times (each window is 2 hours)',
}
const DEFAULT_PROBABILITY = 0.85
const PAGE = 25

const today = () => {
  const d = new Date()
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`
}

export function AiUsersTab() {
  const pages = useCursorPages()
  const list = useLoad(
    () => api<{ users: AiUser[] }>('/api/workout-window/admin/ai-users', { query: { limit: PAGE, after: pages.cursor } }),
    [pages.cursor],
  )
  const [notice, setNotice] = useState<string | null>(null)
  return (
    <>
      <Generate onDone={() => {
        pages.reset()
        list.reload()
      }} />
      <h3>Synthetic users</h3>
      {notice && <p className="notice" role="status">{notice}</p>}
      <Loader loaded={list} isEmpty={(r) => r.users.length === 0 && pages.page === 1} empty="No AI users yet: generate some above.">
        {(r) => (
          <>
            <table>
              <caption>AI users (by id)</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Where</th>
                  <th scope="col">Activity</th>
                  <th scope="col">Window (their zone)</th>
                  <th scope="col">Check-in probability</th>
                  <th scope="col">Created</th>
                  <th scope="col">Status</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {r.users.map((u) => (
                  <tr key={u.id}>
                    <td><Link to={`/dashboard/admin/users/${u.id}`}>{u.fullName ?? u.id}</Link></td>
                    <td>{u.city}{u.state ? `, ${u.state}` : ''} <span className="muted">({u.region}, {u.timezone})</span></td>
                    <td>{u.activityType}</td>
                    <td>{u.windowStartTime}–{u.windowEndTime}</td>
                    <td>{Math.round(u.checkInProbability * 100)}%</td>
                    <td><Time value={u.createdAt} /></td>
                    <td>{u.isActive ? <span className="status-ok">Active</span> : <span className="status-warn">Paused</span>}</td>
                    <td>
                      <div className="row-actions">
                        <ActionButton
                          label={u.isActive ? 'Pause' : 'Activate'}
                          onConfirm={() =>
                            api(`/api/workout-window/admin/ai-users/${u.id}/toggle`, {
                              method: 'PUT',
                              body: { isActive: !u.isActive },
                            })}
                          onDone={() => {
                            setNotice(`${u.fullName ?? u.id} is ${u.isActive ? 'paused' : 'active'}.`)
                            list.reload()
                          }}
                        />
                        <ActionButton
                          danger
                          label="Delete"
                          title={`Delete ${u.fullName ?? u.id}`}
                          confirm={<p>Removes this synthetic user and all their data (check-ins, chains, squads). It cannot be undone.</p>}
                          onConfirm={() => api(`/api/workout-window/admin/ai-users/${u.id}`, { method: 'DELETE' })}
                          onDone={() => {
                            setNotice(`${u.fullName ?? u.id} was deleted.`)
                            list.reload()
                          }}
                        />
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {r.users.length === 0 && <p className="empty">No more AI users.</p>}
            <Pager pages={pages} nextCursor={r.users.length === PAGE ? r.users[r.users.length - 1].id : null} />
          </>
        )}
      </Loader>
      <Teams />
    </>
  )
}

function Generate({ onDone }: { onDone: () => void }) {
  const [count, setCount] = useState('10')
  const [probability, setProbability] = useState(String(DEFAULT_PROBABILITY))
  const [weights, setWeights] = useState<Record<Group, Record<string, string>>>(() => {
    const w = {} as Record<Group, Record<string, string>>
    for (const g of Object.keys(DEFAULTS) as Group[]) {
      w[g] = Object.fromEntries(Object.entries(DEFAULTS[g]).map(([k, v]) => [k, String(v)]))
    }
    return w
  })
  const [created, setCreated] = useState<AiUser[] | null>(null)
  const config = () => {
    const c: Record<string, unknown> = {}
    for (const g of Object.keys(DEFAULTS) as Group[]) {
      const entries = Object.entries(weights[g])
      const changed = entries.some(([k, v]) => Number(v) !== (DEFAULTS[g] as Record<string, number>)[k])
      if (changed) c[g] = Object.fromEntries(entries.map(([k, v]) => [k, v === '' ? 0 : Number(v)]))
    }
    if (Number(probability) !== DEFAULT_PROBABILITY) c.checkInProbability = probability === '' ? null : Number(probability)
    return Object.keys(c).length ? c : undefined
  }
  return (
    <section aria-labelledby="generate-heading">
      <h3 id="generate-heading">Generate AI users</h3>
      <ActionForm
        label="Generate"
        success="Generated."
        submit={async () => {
          setCreated(null)
          const r = await api<{ created: number; users: AiUser[] }>('/api/workout-window/admin/ai-users/generate', {
            body: { count: Number(count), config: config() },
          })
          setCreated(r.users)
        }}
        onDone={onDone}
      >
        <Field label="How many (1–1000)">
          {(id) => <input id={id} type="number" min={1} step={1} required value={count} onChange={(e) => setCount(e.target.value)} />}
        </Field>
        <Field label="Check-in probability (0–1)" hint="The chance each one checks in during their window">
          {(id) => (
            <input id={id} type="number" min={0} max={1} step="0.01" value={probability}
              onChange={(e) => setProbability(e.target.value)} />
          )}
        </Field>
        <details>
          <summary>Distributions (SPEC's by default; relative weights, 0 leaves one out)</summary>
          {(Object.keys(DEFAULTS) as Group[]).map((g) => (
            <fieldset key={g}>
              <legend>{GROUP_NAMES[g]}</legend>
              <div className="weights">
                {Object.keys(DEFAULTS[g]).map((k) => (
                  <Field key={k} label={k}>
                    {(id) => (
                      <input id={id} type="number" min={0} step="any" value={weights[g][k]}
                        onChange={(e) => setWeights((w) => ({ ...w, [g]: { ...w[g], [k]: e.target.value } }))} />
                    )}
                  </Field>
                ))}
              </div>
            </fieldset>
          ))}
        </details>
      </ActionForm>
      {created && (
        <div role="status">
          <p className="success">Created {created.length} AI users:</p>
          <ul aria-label="Created AI users">
            {created.map((u) => (
              <li key={u.id}>{u.fullName} — {u.city}, {u.activityType} {u.windowStartTime}–{u.windowEndTime}</li>
            ))}
          </ul>
        </div>
      )}
    </section>
  )
}

interface Team {
  totalMembers: number
  aiMembers: number
  realMembers: number
  squads: { id: string; members: { id: string; name: string | null; isAi: boolean }[] | null; aiCount: number; realCount: number }[]
}

function Teams() {
  const [date, setDate] = useState(today)
  const teams = useLoad(
    () =>
      date
        ? api<{ redTeam: Team; blueTeam: Team }>(`/api/workout-window/admin/teams/${encodeURIComponent(date)}`)
        : Promise.reject(new Error('Choose a date.')),
    [date],
  )
  return (
    <section aria-labelledby="teams-heading">
      <h3 id="teams-heading">A date's teams: AI versus real</h3>
      <Field label="Date">
        {(id) => <input id={id} type="date" value={date} required onChange={(e) => setDate(e.target.value)} />}
      </Field>
      <Loader loaded={teams}>
        {(t) => (
          <div className="teams">
            {([['Red team', t.redTeam], ['Blue team', t.blueTeam]] as const).map(([name, team]) => (
              <div className="card" key={name}>
                <h4>{name}</h4>
                <p>
                  {team.totalMembers} members: <strong>{team.aiMembers}</strong> AI, <strong>{team.realMembers}</strong> real.
                </p>
                {team.squads.length === 0 ? <p className="empty">No squads on this date.</p> : (
                  <table>
                    <caption>{name} squads</caption>
                    <thead>
                      <tr><th scope="col">Members</th><th scope="col">AI</th><th scope="col">Real</th></tr>
                    </thead>
                    <tbody>
                      {team.squads.map((s) => (
                        <tr key={s.id}>
                          <td>{(s.members ?? []).map((m) => `${m.name ?? m.id}${m.isAi ? ' (AI)' : ''}`).join(', ')}</td>
                          <td>{s.aiCount}</td>
                          <td>{s.realCount}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                )}
              </div>
            ))}
          </div>
        )}
      </Loader>
    </section>
  )
}
