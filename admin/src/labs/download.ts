// A file reply of the API (such as a CSV) saved by the browser: fetched with the admin's token,
// then handed to the browser as a download. A refusal throws the API's {error} text.
import { ApiError, type ApiOptions, apiResponse } from '../api.ts'

export async function download(path: string, o: ApiOptions = {}, fallbackName = 'download') {
  const res = await apiResponse(path, o)
  if (!res.ok) {
    const text = await res.text()
    let message = `${res.status} ${res.statusText}`
    try {
      const body = JSON.parse(text)
      if (typeof body?.error === 'string') message = body.error
    } catch { /* not JSON */ }
    throw new ApiError(res.status, message, text)
  }
  const name = res.headers.get('content-disposition')?.match(/filename="([^"]+)"/)?.[1] ?? fallbackName
  const url = URL.createObjectURL(await res.blob())
  const a = document.createElement('a')
  a.href = url
  a.download = name
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}
