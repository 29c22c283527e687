// The console's shared pieces: loading, error and empty states, times in the viewer's zone,
// confirmations for destructive actions, and cursor pagination. Every page builds from these so
// the states look and read the same everywhere.
import { type ReactNode, useCallback, useEffect, useId, useRef, useState } from 'react'
import { errorText } from './api.ts'

export interface Loaded<T> {
  data: T | undefined
  error: string | null
  loading: boolean
  reload: () => void
}

/** Runs `load` now and whenever `deps` change; a later answer replaces an earlier one only when
 *  it belongs to the latest call. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error: string | null; loading: boolean }>({
    error: null,
    loading: true,
  })
  const [tick, setTick] = useState(0)
  const latest = useRef(0)
  useEffect(() => {
    const call = ++latest.current
    setState((s) => ({ ...s, loading: true }))
    load().then(
      (data) => call === latest.current && setState({ data, error: null, loading: false }),
      (e) => call === latest.current && setState((s) => ({ ...s, error: errorText(e), loading: false })),
    )
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick])
  const reload = useCallback(() => setTick((t) => t + 1), [])
  return { data: state.data, error: state.error, loading: state.loading, reload }
}

/** Reloads every `ms` while the page is visible. */
export function useInterval(fn: () => void, ms: number) {
  useEffect(() => {
    const id = setInterval(() => document.visibilityState === 'visible' && fn(), ms)
    return () => clearInterval(id)
  }, [fn, ms])
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return <p className="loading" role="status" aria-live="polite">{what}…</p>
}

/** The API's {error} text, announced to screen readers. */
export function ErrorMessage({ error }: { error: string | null | undefined }) {
  if (!error) return null
  return <p className="error" role="alert">{error}</p>
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>
}

/** Loading, error and empty states around a loaded value; `children` renders the value. */
export function Loader<T>({ loaded, empty, isEmpty, children }: {
  loaded: Loaded<T>
  empty?: ReactNode
  isEmpty?: (data: T) => boolean
  children: (data: T) => ReactNode
}) {
  if (loaded.error) {
    return (
      <div>
        <ErrorMessage error={loaded.error} />
        <button type="button" onClick={loaded.reload}>Try again</button>
      </div>
    )
  }
  if (loaded.data === undefined) return <Loading />
  if (empty && isEmpty?.(loaded.data)) return <Empty>{empty}</Empty>
  return <>{children(loaded.data)}</>
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' })

/** A moment in the viewer's own time zone; the exact UTC value on hover. */
export function Time({ value }: { value: string | null | undefined }) {
  if (!value) return <span className="muted">—</span>
  const d = new Date(value)
  if (Number.isNaN(d.getTime())) return <span>{value}</span>
  return <time dateTime={d.toISOString()} title={d.toISOString()}>{dateTime.format(d)}</time>
}

export const formatTime = (value: string) => dateTime.format(new Date(value))

/**
 * A button that opens a modal dialog to confirm an action (and, with `reason`, to give one).
 * The action's error stays in the dialog, so the API's message is read where it was caused.
 */
export function ActionButton({ label, title, confirm, reason, danger, onConfirm, onDone, disabled }: {
  label: string
  /** The dialog's heading; default: the label. */
  title?: string
  /** What the action does, shown in the dialog. Without it (and without reason) no dialog. */
  confirm?: ReactNode
  /** A text field the action receives (a decline's reason); the API decides whether it may be empty. */
  reason?: { label: string; placeholder?: string }
  danger?: boolean
  onConfirm: (reason: string) => Promise<unknown>
  onDone?: () => void
  disabled?: boolean
}) {
  const dialog = useRef<HTMLDialogElement>(null)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [text, setText] = useState('')
  const fieldId = useId()
  const headingId = useId()
  const run = async () => {
    setBusy(true)
    setError(null)
    try {
      await onConfirm(text)
      dialog.current?.close()
      setText('')
      onDone?.()
    } catch (e) {
      setError(errorText(e))
    } finally {
      setBusy(false)
    }
  }
  if (!confirm && !reason) {
    return (
      <span className="action">
        <button type="button" className={danger ? 'danger' : undefined} disabled={disabled || busy} onClick={run}>
          {label}
        </button>
        <ErrorMessage error={error} />
      </span>
    )
  }
  return (
    <>
      <button
        type="button"
        className={danger ? 'danger' : undefined}
        disabled={disabled}
        onClick={() => {
          setError(null)
          dialog.current?.showModal()
        }}
      >
        {label}
      </button>
      <dialog ref={dialog} aria-labelledby={headingId}>
        <form
          method="dialog"
          onSubmit={(e) => {
            e.preventDefault()
            run()
          }}
        >
          <h2 id={headingId}>{title ?? label}</h2>
          {confirm && <div>{confirm}</div>}
          {reason && (
            <p>
              <label htmlFor={fieldId}>{reason.label}</label>
              <textarea
                id={fieldId}
                value={text}
                placeholder={reason.placeholder}
                onChange={(e) => setText(e.target.value)}
                rows={3}
              />
            </p>
          )}
          <ErrorMessage error={error} />
          <div className="buttons">
            <button type="submit" className={danger ? 'danger' : 'primary'} disabled={busy}>
              {busy ? 'Working…' : label}
            </button>
            <button type="button" onClick={() => dialog.current?.close()}>Cancel</button>
          </div>
        </form>
      </dialog>
    </>
  )
}

/**
 * Keyset pagination over an endpoint that answers `next_cursor`: the cursors seen so far make
 * "Previous" possible without offsets.
 */
export function useCursorPages() {
  const [stack, setStack] = useState<(string | null)[]>([null])
  const cursor = stack[stack.length - 1]
  return {
    cursor,
    page: stack.length,
    next: (c: string) => setStack((s) => [...s, c]),
    previous: () => setStack((s) => (s.length > 1 ? s.slice(0, -1) : s)),
    reset: () => setStack([null]),
  }
}

export function Pager({ pages, nextCursor }: {
  pages: ReturnType<typeof useCursorPages>
  nextCursor: string | null | undefined
}) {
  return (
    <nav className="pager" aria-label="Pages">
      <button type="button" onClick={pages.previous} disabled={pages.page === 1}>Previous</button>
      <span>Page {pages.page}</span>
      <button type="button" onClick={() => nextCursor && pages.next(nextCursor)} disabled={!nextCursor}>
        Next
      </button>
    </nav>
  )
}

/** A labelled form field. */
export function Field({ label, children, hint }: { label: string; children: (id: string) => ReactNode; hint?: string }) {
  const id = useId()
  return (
    <p className="field">
      <label htmlFor={id}>{label}</label>
      {children(id)}
      {hint && <small>{hint}</small>}
    </p>
  )
}

/** A form whose submit runs an async action and shows its error or a short success message. */
export function ActionForm({ submit, label, onDone, children, success }: {
  submit: () => Promise<unknown>
  label: string
  onDone?: () => void
  success?: string
  children: ReactNode
}) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [done, setDone] = useState<string | null>(null)
  return (
    <form
      className="action-form"
      onSubmit={async (e) => {
        e.preventDefault()
        setBusy(true)
        setError(null)
        setDone(null)
        try {
          await submit()
          setDone(success ?? 'Saved.')
          onDone?.()
        } catch (err) {
          setError(errorText(err))
        } finally {
          setBusy(false)
        }
      }}
    >
      {children}
      <ErrorMessage error={error} />
      {done && <p className="success" role="status">{done}</p>}
      <button type="submit" className="primary" disabled={busy}>{busy ? 'Working…' : label}</button>
    </form>
  )
}
