// An agent's session written for E2B's JavaScript SDK, as E2B's documentation shows it:
// nothing in it names sandboxd. It runs with the stock `e2b` package from npm, configured only
// by the environment (scripts/e2b-env: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY).
//
//   node e2b_session.mjs RUN_ID      (RUN_ID goes into the sandbox's metadata)
//
// The same checks as e2b_session.py; the last line printed is a JSON report
// ({"sandbox_id", "steps": {name: seconds}}) for run_e2b_sdk.py. A failed check exits 1.
import { CommandExitError, Sandbox, TimeoutError } from 'e2b'

const runId = process.argv[2]
const steps = {}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

async function step(name, f) {
  const t = performance.now()
  await f()
  steps[name] = Math.round(performance.now() - t) / 1000
  console.log(`ok ${name} ${steps[name]}s`)
}

// JSON with object keys sorted, so that two objects with the same fields compare equal.
const canonical = (v) =>
  JSON.stringify(v, (_, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x)

function expect(what, seen, wanted) {
  if (canonical(seen) !== canonical(wanted))
    throw new Error(`${what}: got ${JSON.stringify(seen)}, wanted ${JSON.stringify(wanted)}`)
}

const sbx = await Sandbox.create('python', {
  timeoutMs: 300_000,
  metadata: { suite: 'e2b-js', run: runId },
  envs: { GREETING: 'hello from e2b' },
})

await step('run', async () => {
  const r = await sbx.commands.run("python3 -c 'print(sum([2, 3, 5]))'")
  expect('stdout', r.stdout, '10\n')
  expect('envs', (await sbx.commands.run('echo $GREETING')).stdout, 'hello from e2b\n')
})

await step('on_stdout', async () => {
  const seen = []
  const r = await sbx.commands.run('for i in 1 2 3; do echo line$i; sleep 0.4; done', {
    onStdout: (d) => seen.push([performance.now(), d]),
  })
  expect('joined callbacks', seen.map((s) => s[1]).join(''), 'line1\nline2\nline3\n')
  expect('stdout', r.stdout, 'line1\nline2\nline3\n')
  if (seen.length < 3 || seen[seen.length - 1][0] - seen[0][0] < 600)
    throw new Error(`onStdout was not streamed: ${JSON.stringify(seen)}`)
  try {
    await sbx.commands.run('echo err >&2; exit 3')
    throw new Error('exit 3 did not throw')
  } catch (e) {
    if (!(e instanceof CommandExitError)) throw e
    expect('exit code', e.exitCode, 3)
    expect('stderr', e.stderr, 'err\n')
  }
})

await step('background_kill', async () => {
  const h = await sbx.commands.run('sleep 600', { background: true })
  const pids = (await sbx.commands.list()).map((p) => p.pid)
  if (!pids.includes(h.pid)) throw new Error(`pid ${h.pid} not listed: ${pids}`)
  expect('kill', await h.kill(), true)
  try {
    await h.wait()
    throw new Error('a killed command ended without CommandExitError')
  } catch (e) {
    if (!(e instanceof CommandExitError)) throw e
    expect('killed exit code', e.exitCode, -1)
  }
})

await step('stdin', async () => {
  const h = await sbx.commands.run('cat', { background: true, stdin: true })
  await h.sendStdin('first line\n')
  await sbx.commands.sendStdin(h.pid, 'second line\n')
  await sbx.commands.closeStdin(h.pid)
  expect("cat's output", (await h.wait()).stdout, 'first line\nsecond line\n')
})

await step('command_timeout', async () => {
  try {
    await sbx.commands.run('sleep 30', { timeoutMs: 1000 })
    throw new Error('a 30 s command with timeoutMs 1000 returned')
  } catch (e) {
    if (!(e instanceof TimeoutError)) throw e
  }
  for (let i = 0; ; i++) {
    const left = (await sbx.commands.list()).filter((p) => p.args.join(' ').includes('sleep 30'))
    if (left.length === 0) break
    if (i > 50) throw new Error('the command outlived its timeout')
    await sleep(100)
  }
})

await step('files', async () => {
  await sbx.files.write('/workspace/notes.txt', 'first notes\n')
  expect('read', await sbx.files.read('/workspace/notes.txt'), 'first notes\n')
  const blob = new Uint8Array(16384).map((_, i) => i % 256)
  await sbx.files.write('/workspace/data/blob.bin', blob.buffer)
  const back = await sbx.files.read('/workspace/data/blob.bin', { format: 'bytes' })
  expect('read bytes', Array.from(back), Array.from(blob))
  const names = Object.fromEntries((await sbx.files.list('/workspace')).map((e) => [e.name, e]))
  expect('listed', [names['notes.txt']?.size, names['data']?.type], [12, 'dir'])
  expect('makeDir', await sbx.files.makeDir('/workspace/out'), true)
  expect('makeDir again', await sbx.files.makeDir('/workspace/out'), false)
  await sbx.files.rename('/workspace/notes.txt', '/workspace/out/notes.txt')
  expect('cat', (await sbx.commands.run('cat /workspace/out/notes.txt')).stdout, 'first notes\n')
  await sbx.files.remove('/workspace/out')
  expect('exists after remove', await sbx.files.exists('/workspace/out'), false)
})

await step('list_filters', async () => {
  let found = []
  for (let i = 0; i < 100 && found.length === 0; i++) {
    found = await Sandbox.list({ query: { metadata: { run: runId } } }).nextItems()
    if (found.length === 0) await sleep(100)
  }
  expect('listed by metadata', found.map((s) => s.sandboxId), [sbx.sandboxId])
  expect('its metadata', found[0].metadata, { suite: 'e2b-js', run: runId })
  expect('another run', await Sandbox.list({ query: { metadata: { run: runId + '-x' } } }).nextItems(), [])
})

await step('set_timeout', async () => {
  const before = (await sbx.getInfo()).endAt
  await sbx.setTimeout(900_000)
  const grew = ((await sbx.getInfo()).endAt - before) / 1000
  if (grew < 590 || grew > 610) throw new Error(`setTimeout(900 s) moved the end by ${grew} s`)
})

const kept = {}
await step('pause', async () => {
  const h = await sbx.commands.run(
    "python3 -c 'import time\nn = 0\nwhile True:\n n += 1\n open(\"/workspace/n\", \"w\").write(str(n))\n time.sleep(0.1)'",
    { background: true, timeoutMs: 0 })
  kept.pid = h.pid
  await sbx.files.write('/workspace/kept.txt', 'kept across pause\n')
  await sleep(500)
  expect('pause', await sbx.pause(), true)
  expect('state', (await sbx.getInfo()).state, 'paused')
  kept.count = Number(await sbx.files.read('/workspace/n'))
})

await step('connect', async () => {
  const same = await Sandbox.connect(sbx.sandboxId)
  expect('state', (await same.getInfo()).state, 'running')
  expect('file', await same.files.read('/workspace/kept.txt'), 'kept across pause\n')
  if (!(await same.commands.list()).map((p) => p.pid).includes(kept.pid))
    throw new Error('the background process did not survive pause and connect')
  await sleep(500)
  const n = Number(await same.files.read('/workspace/n'))
  if (n <= kept.count) throw new Error(`the process did not go on counting: ${kept.count} -> ${n}`)
  expect('kill it', await same.commands.kill(kept.pid), true)
})

await step('kill', async () => {
  await sbx.kill()
  expect('kill again', await Sandbox.kill(sbx.sandboxId), false)
})

console.log(JSON.stringify({ sandbox_id: sbx.sandboxId, steps }))
