// GET /api/journal/stats: counts, tags and moods of one's own entries and of the visible ones.
import { strict as assert } from 'node:assert'
import { api, assertError, postEntry, sharingWorld, test, type TestUser } from './_helpers.ts'
import { rnd } from './_journal.ts'

test("GET /api/journal/stats: counts, tags and moods of one's own entries", async () => {
  const w = await sharingWorld()
  await postEntry(w.teammate, { title: 'a', tags: ['work', 'gym'], mood: 'happy' })
  await postEntry(w.teammate, {
    title: 'b',
    tags: ['work'],
    mood: 'sad',
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  await postEntry(w.teammate, { title: 'c' })
  await postEntry(w.owner, {
    title: 'not mine',
    tags: ['work'],
    mood: 'happy',
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  for (const path of ['/api/journal/stats', '/api/journal/stats?scope=own']) {
    const res = await api(path, { token: w.teammate.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(res.body, {
      count: 3,
      tags: [{ tag: 'work', count: 2 }, { tag: 'gym', count: 1 }],
      moods: [{ mood: 'happy', count: 1 }, { mood: 'sad', count: 1 }],
    })
  }
  assert.deepEqual((await api('/api/journal/stats', { token: w.stranger.token })).body, {
    count: 0,
    tags: [],
    moods: [],
  })
  assertError(await api('/api/journal/stats?scope=everyone', { token: w.teammate.token }), 400, 'scope')
  assertError(await api('/api/journal/stats?tag=x', { token: w.teammate.token }), 400, 'tag')
})

test('GET /api/journal/stats?scope=visible: shared tags and moods count; a private tag of another user never appears', async () => {
  const w = await sharingWorld()
  const s = rnd()
  await postEntry(w.owner, {
    title: 'private',
    content: 'x',
    tags: [`private-${s}`, `both-${s}`],
    mood: `secretmood-${s}`,
  })
  await postEntry(w.owner, {
    title: 'content only public',
    content: 'x',
    tags: [`contentpublic-${s}`],
    content_visibility: 'public',
  })
  await postEntry(w.owner, {
    title: 'team',
    content: 'x',
    tags: [`team-${s}`, `both-${s}`],
    mood: `teammood-${s}`,
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  await postEntry(w.owner, {
    title: 'team titles',
    content: 'x',
    tags: [`team-${s}`],
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  await postEntry(w.orgmate, {
    title: 'org',
    content: 'x',
    tags: [`org-${s}`],
    metadata_visibility: 'org',
    org_id: w.orgId,
  })
  const stats = async (u: TestUser) => {
    const res = await api('/api/journal/stats?scope=visible', { token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    const tags = Object.fromEntries(
      res.body.tags.filter((t: any) => t.tag.endsWith(s)).map((t: any) => [t.tag, t.count]),
    )
    const moods = Object.fromEntries(
      res.body.moods.filter((m: any) => m.mood.endsWith(s)).map((m: any) => [m.mood, m.count]),
    )
    return { count: res.body.count as number, tags, moods }
  }
  const teammate = await stats(w.teammate)
  assert.deepEqual(teammate.tags, { [`team-${s}`]: 2, [`both-${s}`]: 1, [`org-${s}`]: 1 })
  assert.deepEqual(teammate.moods, { [`teammood-${s}`]: 1 })
  assert.ok(teammate.count >= 3)
  const orgmate = await stats(w.orgmate)
  assert.deepEqual(orgmate.tags, { [`org-${s}`]: 1 })
  assert.deepEqual(orgmate.moods, {})
  const stranger = await stats(w.stranger)
  assert.deepEqual(stranger.tags, {})
  assert.deepEqual(stranger.moods, {})
  const owner = await stats(w.owner)
  assert.deepEqual(owner.tags, {
    [`private-${s}`]: 1,
    [`both-${s}`]: 2,
    [`contentpublic-${s}`]: 1,
    [`team-${s}`]: 2,
    [`org-${s}`]: 1,
  })
  assert.deepEqual(owner.moods, { [`secretmood-${s}`]: 1, [`teammood-${s}`]: 1 })
})
