// The render queue (scripts/lib/storage/render_queue.ts), tested on its own with renders that
// finish when the test says: a client queuing slow renders keeps to one worker and a few places
// in line, and another client's image is rendered meanwhile instead of being turned away.
import { strict as assert } from 'node:assert'
import { test } from './_helpers.ts'
import { RENDER_LIMITS, RENDER_QUEUE_LIMIT } from '../scripts/lib/storage/render.ts'
import { FairQueue, QueueFull } from '../scripts/lib/storage/render_queue.ts'

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
  assert.deepEqual(queue.stats(), { waiting: 0, running: 0 })
})

test('storage render queue: the line in all is bounded; a failed render frees its worker', async () => {
  const queue = new FairQueue<number, number>(
    { slots: 1, perClientRunning: 1, perClientWaiting: 2, waiting: 3 },
    (n) => n < 0 ? Promise.reject(new Error('unrenderable')) : Promise.resolve(n),
  )
  const failing = queue.submit('A', -1)
  const rest = [queue.submit('A', 1), queue.submit('B', 2), queue.submit('C', 3)]
  assert.ok(await queue.submit('D', 4).then(() => null, (e) => e) instanceof QueueFull, 'three wait in all')
  await assert.rejects(failing, /unrenderable/)
  assert.deepEqual(await Promise.all(rest), [1, 2, 3])
})
