// Encouragement: the drop templates users pick from (all of them, approved or not: only approved
// ones are offered), to approve, edit, create and delete; and the configuration (daily allowance,
// bonus per engagement, engagement window, custom drops a day), whose every change is recorded
// with who made it, when, and the values before and after.
import { useEffect, useRef, useState } from 'react'
import { api } from '../api.ts'
import { ActionButton, ActionForm, Field, Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'
import { useNotice } from '../review/parts.tsx'
import { EncouragementConfiguration } from '../encouragement/Configuration.tsx'

const TYPES = ['encouragement', 'media', 'science_tidbit'] as const
const MEDIA_TYPES = ['image', 'video', 'audio', 'link'] as const
type DropType = (typeof TYPES)[number]

interface Template {
  id: string
  type: DropType
  title: string
  content: string
  media_type: string | null
  thumbnail_url: string | null
  is_approved: boolean
  usage_count: number
  created_at: string
  updated_at: string
}
export function EncouragementTab() {
  return (
    <>
      <Templates />
      <EncouragementConfiguration />
    </>
  )
}

function Templates() {
  const pages = useCursorPages()
  const notice = useNotice()
  const [approved, setApproved] = useState('')
  const [type, setType] = useState('')
  const [editing, setEditing] = useState<Template | 'new' | null>(null)
  const list = useLoad(
    () =>
      api<{ templates: Template[]; next_cursor: string | null }>('/api/encouragement-drops/admin/templates', {
        query: { before: pages.cursor, limit: 20, approved, type },
      }),
    [pages.cursor, approved, type],
  )
  const done = (text: string) => {
    notice.say(text)
    list.reload()
  }
  return (
    <section aria-labelledby="enc-templates">
      <h3 id="enc-templates">Templates</h3>
      <div className="filters">
        <Field label="Approval">
          {(id) => (
            <select id={id} value={approved} onChange={(e) => (setApproved(e.target.value), pages.reset())}>
              <option value="">All</option>
              <option value="false">Waiting for approval</option>
              <option value="true">Approved</option>
            </select>
          )}
        </Field>
        <Field label="Type">
          {(id) => (
            <select id={id} value={type} onChange={(e) => (setType(e.target.value), pages.reset())}>
              <option value="">All</option>
              {TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
            </select>
          )}
        </Field>
        <button type="button" onClick={() => setEditing('new')}>New template</button>
      </div>
      {notice.view}
      {editing && (
        <TemplateEditor
          key={editing === 'new' ? 'new' : editing.id}
          template={editing === 'new' ? null : editing}
          onClose={() => setEditing(null)}
          onSaved={(t, created) => {
            setEditing(null)
            done(created ? `Created “${t.title}”.` : `Saved “${t.title}”.`)
          }}
        />
      )}
      <Loader loaded={list} empty="No templates match." isEmpty={(d) => d.templates.length === 0 && pages.page === 1}>
        {(d) => (
          <>
            <table>
              <caption>Templates, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Title</th>
                  <th scope="col">Type</th>
                  <th scope="col">Content</th>
                  <th scope="col">Status</th>
                  <th scope="col">Used</th>
                  <th scope="col">Updated</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {d.templates.map((t) => (
                  <tr key={t.id}>
                    <th scope="row">{t.title}</th>
                    <td>{t.type}{t.media_type && <> ({t.media_type})</>}</td>
                    <td>{t.content.length > 140 ? `${t.content.slice(0, 140)}…` : t.content}</td>
                    <td>{t.is_approved ? <span className="status-ok">Approved</span> : <span className="status-warn">Waiting</span>}</td>
                    <td>{t.usage_count}</td>
                    <td><Time value={t.updated_at} /></td>
                    <td>
                      <div className="review-actions">
                        <ActionButton
                          label={t.is_approved ? 'Withdraw approval' : 'Approve'}
                          onConfirm={() =>
                            api(`/api/encouragement-drops/admin/templates/${t.id}`, {
                              method: 'PUT',
                              body: { is_approved: !t.is_approved },
                            })}
                          onDone={() => done(t.is_approved ? `“${t.title}” is no longer offered.` : `Approved “${t.title}”.`)}
                        />
                        <button type="button" onClick={() => setEditing(t)}>Edit</button>
                        <ActionButton
                          label="Delete"
                          title={`Delete “${t.title}”`}
                          danger
                          confirm={<p>Drops already sent keep their text.</p>}
                          onConfirm={() => api(`/api/encouragement-drops/admin/templates/${t.id}`, { method: 'DELETE' })}
                          onDone={() => done(`Deleted “${t.title}”.`)}
                        />
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {d.templates.length === 0 && <p className="empty">No more templates.</p>}
            <Pager pages={pages} nextCursor={d.next_cursor} />
          </>
        )}
      </Loader>
    </section>
  )
}

/** Create (template null) or edit a template. */
function TemplateEditor({ template, onClose, onSaved }: {
  template: Template | null
  onClose: () => void
  onSaved: (t: Template, created: boolean) => void
}) {
  const [type, setType] = useState<DropType>(template?.type ?? 'encouragement')
  const [title, setTitle] = useState(template?.title ?? '')
  const [content, setContent] = useState(template?.content ?? '')
  const [mediaType, setMediaType] = useState(template?.media_type ?? '')
  const [thumbnail, setThumbnail] = useState(template?.thumbnail_url ?? '')
  const [isApproved, setApproved] = useState(template?.is_approved ?? false)
  const heading = useRef<HTMLHeadingElement>(null)
  useEffect(() => heading.current?.focus(), [])
  const media = type === 'media'
  return (
    <section className="editor" aria-labelledby="enc-editor">
      <h4 id="enc-editor" tabIndex={-1} ref={heading}>{template ? `Edit “${template.title}”` : 'New template'}</h4>
      <ActionForm
        label={template ? 'Save template' : 'Create template'}
        submit={async () => {
          const body = {
            type,
            title,
            content,
            media_type: media ? mediaType || null : null,
            thumbnail_url: media ? thumbnail.trim() || null : null,
            is_approved: isApproved,
          }
          const r = template
            ? await api<{ template: Template }>(`/api/encouragement-drops/admin/templates/${template.id}`, { method: 'PUT', body })
            : await api<{ template: Template }>('/api/encouragement-drops/admin/templates', { body })
          onSaved(r.template, !template)
        }}
      >
        <Field label="Type">
          {(id) => (
            <select id={id} value={type} onChange={(e) => setType(e.target.value as DropType)}>
              {TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
            </select>
          )}
        </Field>
        <Field label="Title">
          {(id) => <input id={id} value={title} onChange={(e) => setTitle(e.target.value)} />}
        </Field>
        <Field label="Content">
          {(id) => <textarea id={id} rows={4} value={content} onChange={(e) => setContent(e.target.value)} />}
        </Field>
        {media && (
          <>
            <Field label="Media type">
              {(id) => (
                <select id={id} value={mediaType} onChange={(e) => setMediaType(e.target.value)}>
                  <option value="">Choose…</option>
                  {MEDIA_TYPES.map((m) => <option key={m} value={m}>{m}</option>)}
                </select>
              )}
            </Field>
            <Field label="Thumbnail URL (optional)">
              {(id) => <input id={id} type="url" value={thumbnail} onChange={(e) => setThumbnail(e.target.value)} />}
            </Field>
          </>
        )}
        <p className="field">
          <label>
            <input type="checkbox" checked={isApproved} onChange={(e) => setApproved(e.target.checked)} /> Approved (offered to users)
          </label>
        </p>
      </ActionForm>
      <button type="button" onClick={onClose}>Cancel</button>
    </section>
  )
}
