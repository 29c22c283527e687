// Expo push (the mobile app), through the official SDK: chunks of 100 messages, push tickets,
// then receipts. The SDK itself retries a 429 twice with exponential backoff; past that the
// delivery job backs off.
//
// Configuration: EXPO_ACCESS_TOKEN (Expo's "enhanced security" access token) turns the channel
// on; EXPO_BASE_URL is the SDK's own variable for Expo's address (tests point it at
// tests/fakes/expo.ts); EXPO_RETRY_MIN_TIMEOUT_MS the SDK's first 429 wait (default 1000).
import { Expo, type ExpoPushMessage, type ExpoPushReceipt, type ExpoPushTicket } from 'expo-server-sdk'
import { optionalEnv } from './env.ts'

export type { ExpoPushMessage, ExpoPushReceipt, ExpoPushTicket }

let cached: { token: string; client: Expo } | undefined

/** An Expo client, or null while EXPO_ACCESS_TOKEN is unset (the channel is off). */
export function expoClient(): Expo | null {
  const token = optionalEnv('EXPO_ACCESS_TOKEN')
  if (!token) return null
  if (cached?.token !== token) {
    const retry = Number(optionalEnv('EXPO_RETRY_MIN_TIMEOUT_MS') ?? '')
    cached = {
      token,
      client: new Expo({ accessToken: token, ...(retry > 0 ? { retryMinTimeout: retry } : {}) }),
    }
  }
  return cached.client
}

export const expoConfigured = () => !!optionalEnv('EXPO_ACCESS_TOKEN')

/** What went wrong with a whole request (not one message): the HTTP status when there was one. */
export interface ExpoRequestFailure {
  status: number | null
  message: string
}

export function expoFailure(e: unknown): ExpoRequestFailure {
  const err = e as { statusCode?: number; message?: string; code?: string }
  const status = typeof err?.statusCode === 'number' ? err.statusCode : null
  return {
    status,
    message: `${status ?? 'network'}${err?.code ? ` ${err.code}` : ''}: ${err?.message ?? String(e)}`,
  }
}
