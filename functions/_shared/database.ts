// The database as the edge functions call it through PostgREST: the types `npm run gen:types`
// generates from the migrated database (types/database.ts), corrected here where the
// generator cannot know better, so that no call site casts. With it, `npm run check` checks
// every .rpc() name, its arguments and its result, and every .from() table and its columns.
//
// The corrections, all in this file:
// - Any function argument may be null (Postgres passes it; the SQL decides what it means), and
//   a jsonb argument or column takes any JSON value. The generator types arguments non-null
//   and jsonb as Json, which a Record<string, unknown> does not fit.
// - A jsonb result is only Json to the generator: Results gives the shape its SQL builds where
//   the api reads into it (where the api passes it on as the reply, Json is enough). Results
//   also holds the columns of a returned table that may be null: Postgres cannot declare a
//   function's result column not null, the generator assumes it is.
// - ArgCorrections and TableCorrections: what the generator types wrongly (a bigint sent as a
//   decimal string, a column a trigger fills).
// Every corrected name must be a generated function or table: a rename fails `npm run check`.
//
// A new or changed RPC: write it (schema and migration), apply it (`npm start`), then
// `npm run gen:types`; tests/schema_types_test.ts fails until types/database.ts is regenerated.
// If it returns jsonb whose fields the api reads, add its shape to Results.
import type { Database as Generated, Json } from '../../types/database.ts'
import type { Tone } from './tone.ts'
import type { Participant, Section } from '../api/routes/workout/mosaic_image.ts'

type Public = Generated['public']

/** jsonb (Json, null or not) becomes any JSON value: PostgREST sends what JSON.stringify makes of it. */
type AnyJson<T> = NonNullable<Json> extends NonNullable<T> ? unknown : T

/** Every argument may be null; jsonb arguments take any JSON value. */
type LooseArgs<A> = string extends keyof A ? A : { [K in keyof A]: AnyJson<A[K]> | null }

/** Arguments the generator types wrongly, by function. */
type ArgCorrections = {
  // bigint: a 64-bit perceptual hash does not fit a JSON number; PostgREST reads the decimal string.
  register_workout_photo: { dhash: string | null; dhash_as_sent: string | null }
}

/** A date's mosaic as private.mosaic_json builds it. */
type MosaicJson = {
  imageUrl: string
  date: string
  sections: Section[]
  stats: { totalParticipants: number; completed: number; failed: number; pending: number }
  updatedAt: string
}

/** A tone pack as private.tone_pack_json builds it for a viewer. */
type TonePackJson = {
  id: string
  owner_id: string
  name: string
  description: string
  theme: string
  is_public: boolean
  price_drops: number
  retired: boolean
  created_at: string
  updated_at: string
  images: { tone: Tone; url: string; updated_at: string }[]
  is_owner: boolean
  is_shared: boolean
  is_purchased: boolean
  can_use: boolean
  can_buy: boolean
  is_active: boolean
}

/** A member row: the owner / team admin has no joined_at; a profile may have no name or avatar. */
type MemberRow = {
  user_id: string
  full_name: string | null
  avatar_url: string | null
  role: string
  joined_at: string | null
}

/** A returned table's rows with some columns' types corrected. */
type RowsWith<Name extends keyof Public['Functions'], Columns> = Public['Functions'][Name]['Returns'] extends
  (infer Row)[] ? (Omit<Row, keyof Columns> & Columns)[]
  : never

/** Results the generator cannot know, by function. */
type Results = {
  claim_ai_calls: { granted: number; day: string; counted: boolean }
  // Null when the write is allowed.
  take_api_write: { retry_after_seconds: number | null; message: string | null }[]
  workout_mosaic_participants: Participant[]
  save_workout_mosaic: { mosaic: MosaicJson; replacedObject: string | null }
  list_organization_members: (MemberRow & { is_owner: boolean })[]
  list_team_members: (MemberRow & { is_admin: boolean })[]
  // Each job's claim builds its own user shape; claimChunk's caller names it.
  claim_ai_job_chunk: { users: unknown[]; remaining: number }
  delete_tone_pack: { result: 'deleted' | 'retired'; objects: string[] }
  purchase_tone_pack: {
    purchase: Public['Tables']['tone_pack_purchases']['Row']
    balance: number
    replayed: boolean
  }
  get_tone_pack: TonePackJson
  labs_process_step_prompts: {
    total: number
    prompted: number
    skipped: number
    failed: number
    errors: string[]
    remaining: number
  }
  labs_claim_outreach_digests: RowsWith<
    'labs_claim_outreach_digests',
    { messages: { body: string; sent_at: string }[] }
  >
}

type Known<Names extends keyof Public['Functions'], Tables extends keyof Public['Tables']> = [Names, Tables]
export type CorrectedNames = Known<keyof Results | keyof ArgCorrections, keyof TableCorrections>

type Simplify<T> = { [K in keyof T]: T[K] }

type CorrectedFunction<Name, F> = F extends { Args: infer A; Returns: infer R } ? Simplify<
    & Omit<F, 'Args' | 'Returns'>
    & {
      Args: Name extends keyof ArgCorrections
        ? Simplify<Omit<LooseArgs<A>, keyof ArgCorrections[Name]> & ArgCorrections[Name]>
        : LooseArgs<A>
      Returns: Name extends keyof Results ? Results[Name] : R
    }
  >
  : F

/** Columns the generator types wrongly, by table: only what differs. */
type TableCorrections = {
  // Filled from the team by a trigger (a member's organization is their team's).
  team_members: { Insert: { org_id?: string } }
}

type Writable<T> = { [K in keyof T]: AnyJson<T[K]> }

type CorrectedTable<Name, T> = T extends { Row: unknown; Insert: infer I; Update: infer U } ? Simplify<
    & Omit<T, 'Insert' | 'Update'>
    & {
      Insert: Name extends keyof TableCorrections ? Simplify<
          Omit<Writable<I>, keyof TableCorrections[Name]['Insert']> & TableCorrections[Name]['Insert']
        >
        : Writable<I>
      Update: Writable<U>
    }
  >
  : T

export type Database = {
  public: Simplify<
    & Omit<Public, 'Tables' | 'Functions'>
    & {
      Tables: { [Name in keyof Public['Tables']]: CorrectedTable<Name, Public['Tables'][Name]> }
      Functions: { [Name in keyof Public['Functions']]: CorrectedFunction<Name, Public['Functions'][Name]> }
    }
  >
}
