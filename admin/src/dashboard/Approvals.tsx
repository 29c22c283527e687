// Approvals: the labs submissions waiting for a super admin (sponsor applications,
// opportunities, dream videos), each with its contact fields (shown here only: the public
// listings never carry them); approve, or decline with a reason the API requires and stores
// privately (the applicant is not told it). Below, the approved dream videos to feature.
import { api } from '../api.ts'
import { ActionButton, Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'
import { UserLink, useNotice } from '../review/parts.tsx'

type Plural = 'sponsors' | 'opportunities' | 'videos'
type Rec = Record<string, any> & { id: string; applied_at: string }

const KINDS: Record<Plural, { heading: string; one: string; name: (r: Rec) => string }> = {
  sponsors: { heading: 'Sponsor applications', one: 'sponsor', name: (r) => r.name },
  opportunities: { heading: 'Opportunities', one: 'opportunity', name: (r) => r.title },
  videos: { heading: 'Dream videos', one: 'dream video', name: (r) => r.title },
}

export function ApprovalsTab() {
  const notice = useNotice()
  return (
    <>
      <p className="muted">
        Contact fields are shown to super admins only. A decline needs a reason; it is stored privately and never shown to
        the applicant or on a public listing.
      </p>
      {notice.view}
      {(Object.keys(KINDS) as Plural[]).map((p) => <Pending key={p} plural={p} say={notice.say} />)}
      <FeaturedVideos say={notice.say} />
    </>
  )
}

function Pending({ plural, say }: { plural: Plural; say: (s: string) => void }) {
  const k = KINDS[plural]
  const pages = useCursorPages()
  const list = useLoad(
    () => api<Record<string, unknown>>(`/api/labs/admin/${plural}/pending`, { query: { before: pages.cursor, limit: 20 } }),
    [pages.cursor],
  )
  const headingId = `pending-${plural}`
  return (
    <section aria-labelledby={headingId}>
      <h3 id={headingId}>{k.heading}</h3>
      <Loader loaded={list}>
        {(data) => {
          const items = data[plural] as Rec[]
          return (
            <>
              {items.length === 0
                ? <p className="empty">No pending {plural}.</p>
                : (
                  <ul className="review-list">
                    {items.map((r) => (
                      <li key={r.id}>
                        <article className="review-item" aria-labelledby={`rec-${r.id}`}>
                          <h4 id={`rec-${r.id}`}>{k.name(r)}</h4>
                          <Details plural={plural} r={r} />
                          <div className="review-actions">
                            <ActionButton
                              label="Approve"
                              onConfirm={() => api(`/api/labs/admin/${plural}/${r.id}/approve`, { method: 'POST' })}
                              onDone={() => {
                                say(`Approved the ${k.one} “${k.name(r)}”: it is on the public listing.`)
                                list.reload()
                              }}
                            />
                            <ActionButton
                              label="Decline"
                              title={`Decline the ${k.one} “${k.name(r)}”`}
                              danger
                              confirm={<p>It leaves the queue and is never listed publicly.</p>}
                              reason={{ label: 'Reason (stored privately, not sent to the applicant)' }}
                              onConfirm={(reason) =>
                                api(`/api/labs/admin/${plural}/${r.id}/decline`, { method: 'POST', body: { reason } })}
                              onDone={() => {
                                say(`Declined the ${k.one} “${k.name(r)}”.`)
                                list.reload()
                              }}
                            />
                          </div>
                        </article>
                      </li>
                    ))}
                  </ul>
                )}
              <Pager pages={pages} nextCursor={data.next_cursor as string | null} />
            </>
          )
        }}
      </Loader>
    </section>
  )
}

function Details({ plural, r }: { plural: Plural; r: Rec }) {
  const submitter = r.applicant_id ?? r.submitter_id
  return (
    <dl>
      {plural === 'sponsors' && (
        <>
          <dt>Tier</dt>
          <dd>{r.tier}</dd>
        </>
      )}
      {plural === 'opportunities' && (
        <>
          <dt>Kind</dt>
          <dd>{r.kind}</dd>
          <dt>Description</dt>
          <dd>{r.description || <span className="muted">—</span>}</dd>
          <dt>Link</dt>
          <dd>{r.url ? <a href={r.url} rel="noopener noreferrer" target="_blank">{r.url}</a> : <span className="muted">—</span>}</dd>
        </>
      )}
      {plural === 'videos' && (
        <>
          <dt>Video</dt>
          <dd><a href={r.video_url} rel="noopener noreferrer" target="_blank">{r.video_url}</a></dd>
        </>
      )}
      {r.contact_email !== undefined && (
        <>
          <dt>Contact</dt>
          <dd>
            {r.contact_name} &lt;<a href={`mailto:${r.contact_email}`}>{r.contact_email}</a>&gt;
          </dd>
        </>
      )}
      <dt>Submitted by</dt>
      <dd><UserLink id={submitter} /></dd>
      <dt>Applied</dt>
      <dd><Time value={r.applied_at} /></dd>
    </dl>
  )
}

/** The approved dream videos (the public listing, featured first), to feature or unfeature. */
function FeaturedVideos({ say }: { say: (s: string) => void }) {
  const pages = useCursorPages()
  const list = useLoad(
    () => api<{ videos: Rec[]; next_cursor: string | null }>('/api/labs/videos', { query: { before: pages.cursor, limit: 20 } }),
    [pages.cursor],
  )
  return (
    <section aria-labelledby="approved-videos">
      <h3 id="approved-videos">Approved dream videos</h3>
      <p className="muted">Featured videos lead the public listing.</p>
      <Loader loaded={list} empty="No approved dream videos yet." isEmpty={(d) => d.videos.length === 0}>
        {(d) => (
          <>
            <table>
              <caption>Approved dream videos, featured first</caption>
              <thead>
                <tr><th scope="col">Title</th><th scope="col">Video</th><th scope="col">Approved since</th><th scope="col">Featured</th><th scope="col">Action</th></tr>
              </thead>
              <tbody>
                {d.videos.map((v) => (
                  <tr key={v.id}>
                    <td>{v.title}</td>
                    <td><a href={v.video_url} rel="noopener noreferrer" target="_blank">{v.video_url}</a></td>
                    <td><Time value={v.applied_at} /></td>
                    <td>{v.is_featured ? <span className="status-ok">Featured</span> : 'No'}</td>
                    <td>
                      <ActionButton
                        label={v.is_featured ? 'Unfeature' : 'Feature'}
                        onConfirm={() =>
                          api(`/api/labs/admin/videos/${v.id}/feature`, { body: { is_featured: !v.is_featured } })}
                        onDone={() => {
                          say(`${v.is_featured ? 'Unfeatured' : 'Featured'} “${v.title}”.`)
                          list.reload()
                        }}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager pages={pages} nextCursor={d.next_cursor} />
          </>
        )}
      </Loader>
    </section>
  )
}
