// Check-ins to review (SPEC's manual review of unusual check-ins): a check-in whose photo did
// not verify itself (no capture time, taken or uploaded outside the window, too far away, a
// picture used before, too plain to compare) waits here with the first reason it failed. The
// admin looks at the photo (the check-in bucket's public URL the API returns), then verifies it
// or rejects it with a reason (its chips stop counting; the user is notified).
import { useState } from 'react'
import { api } from '../api.ts'
import { ActionButton, Field, Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'
import { UserLink, useNotice } from '../review/parts.tsx'

type Status = 'pending' | 'verified' | 'rejected'
interface Checkin {
  id: string
  userId: string
  date: string
  activityType: string
  photoUrl: string
  photoTimestamp: string
  locationLat: number | null
  locationLng: number | null
  status: Status
  reviewReason: string | null
  chainContinued: boolean
  streakDays: number
  battleChipsEarned: number
  createdAt: string
  user: { id: string; name: string | null; isAi: boolean; window: { timezone: string; windowStartTime: string; windowEndTime: string } | null }
}

const LIMIT = 20
const STATUS_LABEL: Record<Status, string> = { pending: 'Waiting for review', verified: 'Verified', rejected: 'Rejected' }

export function CheckinsTab() {
  const [status, setStatus] = useState<Status>('pending')
  const pages = useCursorPages()
  const notice = useNotice()
  const list = useLoad(
    () =>
      api<{ checkins: Checkin[] }>('/api/workout-window/admin/checkins', {
        query: { status, limit: LIMIT, before: pages.cursor },
      }),
    [status, pages.cursor],
  )
  const done = (text: string) => {
    notice.say(text)
    list.reload()
  }
  return (
    <>
      <div className="filters">
        <Field label="Show">
          {(id) => (
            <select
              id={id}
              value={status}
              onChange={(e) => {
                setStatus(e.target.value as Status)
                pages.reset()
              }}
            >
              <option value="pending">Waiting for review</option>
              <option value="verified">Verified</option>
              <option value="rejected">Rejected</option>
            </select>
          )}
        </Field>
      </div>
      {notice.view}
      <Loader
        loaded={list}
        empty={status === 'pending' ? 'No check-in is waiting for review.' : `No ${status} check-ins.`}
        isEmpty={(d) => d.checkins.length === 0 && pages.page === 1}
      >
        {(d) => (
          <>
            <ul className="review-list">
              {d.checkins.map((k) => <CheckinCard key={k.id} k={k} done={done} />)}
            </ul>
            {d.checkins.length === 0 && <p className="empty">No more check-ins.</p>}
            <Pager
              pages={pages}
              nextCursor={d.checkins.length === LIMIT ? d.checkins[d.checkins.length - 1].createdAt : null}
            />
          </>
        )}
      </Loader>
    </>
  )
}

function CheckinCard({ k, done }: { k: Checkin; done: (text: string) => void }) {
  const who = k.user.name || 'A user'
  const headingId = `checkin-${k.id}`
  return (
    <li>
      <article className="review-item checkin" aria-labelledby={headingId}>
        <a href={k.photoUrl} target="_blank" rel="noopener noreferrer">
          <img src={k.photoUrl} alt={`Check-in photo of ${who} for ${k.date}`} />
        </a>
        <div>
          <h3 id={headingId}>
            {who}, {k.date}
          </h3>
          {k.status === 'pending'
            ? <p className="flag"><strong>Flagged:</strong> {k.reviewReason ?? 'no reason recorded'}</p>
            : (
              <p>
                <span className={k.status === 'verified' ? 'status-ok' : 'status-bad'}>{STATUS_LABEL[k.status]}</span>
                {k.reviewReason && <> — {k.reviewReason}</>}
              </p>
            )}
          <dl>
            <dt>User</dt>
            <dd>
              <UserLink id={k.userId} name={k.user.name} />
              {k.user.isAi && <> <span className="pill">AI user</span></>}
            </dd>
            <dt>Activity</dt>
            <dd>{k.activityType}</dd>
            <dt>Checked in</dt>
            <dd><Time value={k.createdAt} /></dd>
            <dt>Photo taken</dt>
            <dd><Time value={k.photoTimestamp} /></dd>
            <dt>Window</dt>
            <dd>
              {k.user.window
                ? `${k.user.window.windowStartTime.slice(0, 5)}–${k.user.window.windowEndTime.slice(0, 5)} (${k.user.window.timezone})`
                : <span className="muted">none</span>}
            </dd>
            <dt>Location</dt>
            <dd>
              {k.locationLat !== null && k.locationLng !== null
                ? `${k.locationLat.toFixed(4)}, ${k.locationLng.toFixed(4)}`
                : <span className="muted">not given</span>}
            </dd>
            <dt>Streak, chips</dt>
            <dd>{k.streakDays} days, {k.battleChipsEarned} chips</dd>
          </dl>
          <div className="review-actions">
            {k.status !== 'verified' && (
              <ActionButton
                label="Verify"
                onConfirm={() => api(`/api/workout-window/admin/checkins/${k.id}/verify`, { body: {} })}
                onDone={() => done(`Verified ${who}'s check-in for ${k.date}.`)}
              />
            )}
            {k.status !== 'rejected' && (
              <ActionButton
                label="Reject"
                title={`Reject ${who}'s check-in for ${k.date}`}
                danger
                confirm={<p>Its chips stop counting and {who} is told, with your reason.</p>}
                reason={{ label: 'Reason (the user sees it)' }}
                onConfirm={(reason) => api(`/api/workout-window/admin/checkins/${k.id}/reject`, { body: { reason } })}
                onDone={() => done(`Rejected ${who}'s check-in for ${k.date}.`)}
              />
            )}
          </div>
        </div>
      </article>
    </li>
  )
}
