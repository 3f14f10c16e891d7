// Diagnosis only: a preload that CPU-profiles a process and writes `<pid>.cpuprofile` (Chrome DevTools format)
// to $BENCH_CPU_PROFILE_DIR when it exits, for processes whose command line contains $BENCH_CPU_PROFILE_MATCH
// (default: every one). Node 20 refuses `--cpu-prof` in NODE_OPTIONS, but takes `--import`:
//
//   BENCH_CPU_PROFILE_DIR=/tmp/prof BENCH_CPU_PROFILE_MATCH='supervisor run' \
//   BENCH_EVENTS_SUPERVISOR_NODE_OPTIONS="--import=$PWD/bench/cpu-profile.mjs" \
//   BENCH_EVENTS_PHASES=fanout npx tsx bench/run.ts events
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import process from 'node:process';

const dir = process.env.BENCH_CPU_PROFILE_DIR;
const match = process.env.BENCH_CPU_PROFILE_MATCH ?? '';
if (dir && process.argv.join(' ').includes(match)) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: Number(process.env.BENCH_CPU_PROFILE_INTERVAL_US ?? 100) });
  session.post('Profiler.start');
  // A same-thread session answers synchronously, so the profile can be written from the exit handler.
  process.on('exit', () => {
    session.post('Profiler.stop', (err, result) => {
      if (err) return;
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
