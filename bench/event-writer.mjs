// A writer process for the events benchmark (bench/events.ts), started with an IPC channel. It appends
// events to city logs at a paced rate, open loop, each carrying its send time, either straight to
// `<city>/.ctl/events.jsonl` through the built EventLog (what any process on the machine may do), or through
// `POST /v0/city/{name}/events` (supervisor proxy → controller append).
//
// Messages from the parent:
//   { kind: 'ping', t }                       → { kind: 'pong', t, now }           (clock comparison)
//   { kind: 'run', run, mode, targets, ratePerTarget, durationMs, startAt, padBytes, base, closedLoop }
//                                             → { kind: 'done', run, sent, failed, samples }
//   { kind: 'exit' }
// where a target is { city, path, lockPath } and a sample is [target index, i, sent, done] (ms, same clock
// as the parent's `performance.timeOrigin + performance.now()`). Paced runs are open loop: event i of a target
// is due at startAt + phase + i / ratePerTarget, whether or not earlier ones are done. A closedLoop run sends
// back to back instead (one in flight per target) for at most durationMs: a capacity probe.
import { Buffer } from 'node:buffer';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout } from 'node:timers';
import { URL } from 'node:url';
import { EventLog } from '../dist/shared/events/event-log.js';

const now = () => performance.timeOrigin + performance.now();
const writer = Number(process.env.BENCH_WRITER_ID ?? 0);
const agent = new Agent({ keepAlive: true, maxSockets: 16 });

function post(base, city, body) {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const url = new URL(`/v0/city/${encodeURIComponent(city)}/events`, base);
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(text),
          'X-CTL-Request': 'bench',
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

async function run(spec) {
  const { mode, targets, ratePerTarget, durationMs, startAt, padBytes, base } = spec;
  const pad = 'x'.repeat(padBytes);
  const logs = targets.map((t) => (mode === 'file' ? EventLog.at(t.path, t.lockPath) : undefined));
  const period = 1000 / ratePerTarget;
  const perTarget = Math.floor((durationMs / 1000) * ratePerTarget);
  // Every target gets its own phase, so the writers' events are spread out rather than in lockstep.
  const phase = targets.map((_, k) => ((writer * targets.length + k) * 0.618 * period) % period);
  const next = targets.map(() => 0);
  const samples = [];
  const pending = [];
  let failed = 0;

  const fire = (k) => {
    const i = next[k]++;
    const sample = [k, i, now(), NaN];
    samples.push(sample);
    const event = {
      type: 'bench.latency',
      actor: `bench-writer-${writer}`,
      payload: { r: spec.run, w: writer, k, i, t: sample[2], pad },
    };
    const done = mode === 'file' ? logs[k].append(event).then(() => undefined) : post(base, targets[k].city, event);
    pending.push(
      done.then(
        () => (sample[3] = now()),
        () => failed++,
      ),
    );
  };

  if (spec.closedLoop) {
    // Capacity probe: one request at a time per target, back to back, until the deadline.
    const deadline = startAt + durationMs;
    while (now() < startAt) await new Promise((resolve) => setTimeout(resolve, 1));
    await Promise.all(
      targets.map(async (_, k) => {
        while (now() < deadline && next[k] < perTarget) {
          fire(k);
          await pending[pending.length - 1];
        }
      }),
    );
    await Promise.all(pending);
    return { kind: 'done', run: spec.run, sent: samples.length - failed, failed, samples };
  }

  await new Promise((resolve) => {
    const tick = () => {
      const t = now();
      let wake = Infinity;
      let remaining = false;
      for (let k = 0; k < targets.length; k++) {
        while (next[k] < perTarget && startAt + phase[k] + next[k] * period <= t) fire(k);
        if (next[k] < perTarget) {
          remaining = true;
          wake = Math.min(wake, startAt + phase[k] + next[k] * period);
        }
      }
      if (!remaining) return resolve();
      setTimeout(tick, Math.max(0, wake - now()));
    };
    setTimeout(tick, Math.max(0, startAt - now()));
  });
  await Promise.all(pending);
  return { kind: 'done', run: spec.run, sent: samples.length - failed, failed, samples };
}

process.on('message', (msg) => {
  if (msg.kind === 'ping') process.send({ kind: 'pong', t: msg.t, now: now() });
  else if (msg.kind === 'run') {
    run(msg).then(
      (result) => process.send(result),
      (err) => process.send({ kind: 'error', run: msg.run, message: String(err?.stack ?? err) }),
    );
  } else if (msg.kind === 'exit') {
    agent.destroy();
    process.disconnect();
  }
});
// The parent gone (killed, Ctrl-C): leave too.
process.on('disconnect', () => process.exit(0));
process.send({ kind: 'ready' });
