// The render queue (scripts/lib/storage/render_queue.ts), tested on its own with renders that
// finish when the test says: a client queuing slow renders keeps to one worker and a few places
// in line, and another client's image is rendered meanwhile instead of being turned away; heavy
// renders (render_plan.ts decides which) hold one worker at most, so small ones never wait.
import { strict as assert } from 'node:assert'
import { test } from './_helpers.ts'
import { RENDER_LIMITS, RENDER_QUEUE_LIMIT } from '../scripts/lib/storage/render.ts'
import { FairQueue, QueueFull } from '../scripts/lib/storage/render_queue.ts'
import { AVIF_MAX_PIXELS, boundRender, HEAVY_COST } from '../scripts/lib/storage/render_plan.ts'

interface Job {
  name: string
  finish: (v: string) => void
}

/** A queue with the limits render.ts uses, whose renders end when `finish` is called. */
function controlledQueue() {
  const started: Job[] = []
  const queue = new FairQueue<string, string>(RENDER_LIMITS, (name) =>
    new Promise<string>((resolve) => {
      started.push({ name, finish: resolve })
    }))
  const job = (name: string) => started.find((j) => j.name === name)
  return { queue, started, job }
}
const tick = () => new Promise((r) => setTimeout(r, 0))

test('storage render queue: one client with slow renders keeps to its share; others are rendered meanwhile', async () => {
  assert.deepEqual(RENDER_LIMITS, {
    slots: 2,
    perClientRunning: 1,
    perClientWaiting: 4,
    waiting: RENDER_QUEUE_LIMIT,
    heavySlots: 1,
  })
  const { queue, started, job } = controlledQueue()

  // A floods: one render runs, four wait, the rest are turned away at once.
  const flood: Promise<string>[] = []
  for (let i = 0; i < 5; i++) flood.push(queue.submit('A', `a${i}`))
  const refused = await queue.submit('A', 'a5').then(() => null, (e) => e)
  assert.ok(refused instanceof QueueFull)
  await tick()
  assert.deepEqual(started.map((j) => j.name), ['a0'])
  assert.deepEqual(queue.stats('A'), { waiting: 4, running: 1 })

  // B is not behind A's line: the second worker takes B's image now.
  const b = queue.submit('B', 'b0')
  await tick()
  assert.deepEqual(started.map((j) => j.name), ['a0', 'b0'])
  job('b0')!.finish('b0 done')
  assert.equal(await b, 'b0 done')

  // With both workers busy (A, and C), D's image is next, before A's waiting ones.
  const c = queue.submit('C', 'c0')
  const d = queue.submit('D', 'd0')
  await tick()
  assert.deepEqual(started.map((j) => j.name), ['a0', 'b0', 'c0'])
  job('c0')!.finish('c0 done')
  await c
  await tick()
  assert.deepEqual(started.map((j) => j.name), ['a0', 'b0', 'c0', 'd0'])
  job('d0')!.finish('d0 done')
  await d

  // A's own line moves one at a time as its renders end (a slow one held only A's worker).
  job('a0')!.finish('a0 done')
  await tick()
  assert.equal(started.at(-1)!.name, 'a1')
  assert.deepEqual(queue.stats('A'), { waiting: 3, running: 1 })
  for (let i = 1; i < 5; i++) {
    await tick()
    job(`a${i}`)!.finish(`a${i} done`)
  }
  assert.deepEqual(await Promise.all(flood), ['a0 done', 'a1 done', 'a2 done', 'a3 done', 'a4 done'])
  assert.deepEqual(queue.stats(), { waiting: 0, running: 0, heavy: 0 })
})

test('storage render queue: heavy renders hold one worker at most; a small one submitted after two heavy ones starts at once', async () => {
  const { queue, started, job } = controlledQueue()
  const heavyA = queue.submit('A:heavy', 'a-big', true)
  const heavyB = queue.submit('B:heavy', 'b-big', true)
  const icon = queue.submit('C:light', 'c-icon')
  await tick()
  assert.deepEqual(started.map((j) => j.name), ['a-big', 'c-icon'], 'the second heavy render waits, the icon does not')
  assert.deepEqual(queue.stats(), { waiting: 1, running: 2, heavy: 1 })
  job('c-icon')!.finish('icon')
  assert.equal(await icon, 'icon')

  // More icons keep the free worker while a heavy render runs; B's heavy one waits for A's.
  const icons = [queue.submit('D:light', 'd-icon'), queue.submit('E:light', 'e-icon')]
  await tick()
  assert.deepEqual(started.map((j) => j.name), ['a-big', 'c-icon', 'd-icon'])
  job('d-icon')!.finish('d')
  await tick()
  assert.equal(started.at(-1)!.name, 'e-icon')
  job('e-icon')!.finish('e')
  assert.deepEqual(await Promise.all(icons), ['d', 'e'])
  job('a-big')!.finish('a')
  await heavyA
  await tick()
  assert.equal(started.at(-1)!.name, 'b-big')
  job('b-big')!.finish('b')
  assert.equal(await heavyB, 'b')
})

test('storage render plan: cost from the source header and the output; AVIF past 1024x1024 is made as WebP', () => {
  // The review's case: a 16-20 MP PNG asked as a 2000x2000 AVIF.
  const big = boundRender(5000, 4000, 'image/png', { width: 2000, height: 2000, format: 'avif' }, null)
  assert.deepEqual([big.contentType, big.options.format, big.heavy], ['image/webp', 'webp', true])
  assert.ok(big.cost > HEAVY_COST)
  // A tone icon (1024x1024) at 32 or 64 px, in any format, is light.
  for (const format of [undefined, 'webp', 'avif'] as const) {
    const icon = boundRender(1024, 1024, 'image/png', { width: 64, height: 64, format }, 'image/webp')
    assert.equal(icon.heavy, false, String(format))
    assert.equal(icon.contentType, format === 'avif' ? 'image/avif' : 'image/webp')
  }
  // AVIF up to AVIF_MAX_PIXELS; one side given, the other follows the source (and either way up).
  assert.equal(AVIF_MAX_PIXELS, 1024 * 1024)
  assert.equal(boundRender(1024, 1024, 'image/png', { width: 1024, format: 'avif' }, null).contentType, 'image/avif')
  assert.equal(boundRender(1100, 1100, 'image/png', { width: 1100, format: 'avif' }, null).contentType, 'image/webp')
  assert.equal(boundRender(3000, 500, 'image/jpeg', { height: 450, format: 'avif' }, null).contentType, 'image/webp')
  // Never enlarged: a small source asked at 2000x2000 stays small and light.
  const small = boundRender(64, 64, 'image/png', { width: 2000, height: 2000, format: 'avif' }, null)
  assert.deepEqual([small.contentType, small.heavy], ['image/avif', false])
})

test('storage render queue: the line in all is bounded; a failed render frees its worker', async () => {
  const queue = new FairQueue<number, number>(
    { slots: 1, perClientRunning: 1, perClientWaiting: 2, waiting: 3, heavySlots: 0 },
    (n) => n < 0 ? Promise.reject(new Error('unrenderable')) : Promise.resolve(n),
  )
  const failing = queue.submit('A', -1)
  const rest = [queue.submit('A', 1), queue.submit('B', 2), queue.submit('C', 3)]
  assert.ok(await queue.submit('D', 4).then(() => null, (e) => e) instanceof QueueFull, 'three wait in all')
  await assert.rejects(failing, /unrenderable/)
  assert.deepEqual(await Promise.all(rest), [1, 2, 3])
})
