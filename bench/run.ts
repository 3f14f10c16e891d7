/**
 * Benchmarks, against a real supervisor and real controllers (build first: `npm run bench` does).
 *
 *   npx tsx bench/run.ts [cold|foundation|events|beads|sessions|sessions-acp|sessions-real-clis|hosts|agents|agents-loop|agents-loop-codex|workflows|config|extmsg|access|stream-opens|worktrees|review|ui|ui-events|templates|all]   (default: all, one after the other)
 *   npm run bench -- beads                                  (builds, then runs one)
 *
 * cold (bench/cold.ts): issue 20's goals beside bare-Node baselines — `ctl version`/`help`/`bead list`, create → event,
 *   first request per family to fresh controllers, the proxy's extra hop, POST …/events cold and warm, idle RSS → .bench-out/cold.json
 * foundation (bench/foundation.ts): city create latency, memory, proxied vs direct GET → .bench-out/foundation.json
 * events (bench/events.ts): the event bus — append → SSE latency, fan-out, list, `ctl events --seq` → .bench-out/events.json
 * beads (bench/beads.ts): 100,000 beads per store backend — creates/s, `ready` and list latency, open time, RSS → .bench-out/beads.json
 * sessions (bench/sessions.ts): session create → woke, message → reply frame, 100 idle sessions, a 100,000-entry transcript, the ACP example agent → .bench-out/sessions.json
 * sessions-acp (bench/sessions.ts): the ACP example agent's part alone → .bench-out/sessions-acp.json
 * sessions-real-clis (bench/sessions-real-clis.ts): the real Claude Code and Codex against the scripted model server → .bench-out/sessions-real-clis.json
 * hosts (bench/hosts.ts): sessions on network-namespace hosts over OpenSSH beside local ones — session start warm and
 *   cold, message → reply frame, 10 sessions on each of 3 hosts (time to all running, controller RSS), tmux screen reads
 *   over a host, a host crash → session.lost and → its beads open again; root only → .bench-out/hosts.json
 * agents (bench/agents.ts): the tick with 50 agents and 500 beads, sling → first turn, 20 cities × 5 agents at idle → .bench-out/agents.json,
 *   then agents-loop
 * agents-loop (bench/agents-loop.ts): sling → bead closed by a real Claude Code agent and by a real Codex agent (scripted model,
 *   warm session), session start with a new worktree of a 10,000-file rig, 10 worktree sessions at once (time to all ready,
 *   disk) → .bench-out/agents-loop.json
 * agents-loop-codex (bench/agents-loop.ts): the Codex loop alone (not in `all`) → .bench-out/agents-loop-codex.json
 * workflows (bench/workflows.ts): a 100-step formula instantiated, GET /runs with 1,000 molecules, 100 cooldown orders' evaluation → .bench-out/workflows.json
 * extmsg (bench/extmsg.ts): inbound → session reply → adapter callback round trip, transcript pages of a 1,000-message conversation → .bench-out/extmsg.json
 * access (bench/access.ts): the access gate's added cost per kept-alive request and per new connection (with 1,000 other sockets open) → .bench-out/access.json
 * stream-opens (bench/stream-opens.ts): 500 supervisor streams opened at once beside a busy city (12,000 events in its
 *   log, beads created and slung) — time until all are open, /health and POST p50/p99 meanwhile → .bench-out/stream-opens.json
 * ui (bench/ui.ts): the dashboard in Chromium — bundle sizes, time to the first interactive view, frames while 500
 *   events/s arrive, the page's heap after an hour of a busy city, the beads board's requests per 100 bead events
 *   → .bench-out/ui.json
 * ui-events (bench/ui-bead-events.ts): that last part alone (not in `all`)
 * config (bench/config.ts): composing 10 packs × 10 agents, the svc/* proxy vs the service directly, GET /rigs?git=true with 20 rigs,
 *   API writes to city.toml, an edit on disk until it is in use → .bench-out/config.json
 * templates (bench/templates.ts): a 26-level doubling prompt template bomb — POST /sessions and prime refused (status,
 *   latency), /health latency meanwhile, controller VmRSS before/after → .bench-out/templates.json
 * review (bench/review.ts): a review of a 1,000-file change served (p50), the overlaps of 20 worktrees of a
 *   10,000-file rig (through the API and cold), a merge queue of 10 approved reviews → .bench-out/review.json
 * worktrees (bench/worktrees.ts): session start with a new git worktree of a 10,000-file rig, close, 10 worktree sessions at once (time to all ready, disk) → .bench-out/worktrees.json
 */
import { runAccess } from './access.js';
import { runAgents } from './agents.js';
import { runAgentsLoop } from './agents-loop.js';
import { runBeads } from './beads.js';
import { runCold } from './cold.js';
import { runEvents } from './events.js';
import { runFoundation } from './foundation.js';
import { runHosts } from './hosts.js';
import { runStreamOpens } from './stream-opens.js';
import { runSessionsRealClis } from './sessions-real-clis.js';
import { runSessions, runSessionsAcp } from './sessions.js';
import { runWorkflows } from './workflows.js';
import { runConfig } from './config.js';
import { runExtmsg } from './extmsg.js';
import { runUi } from './ui.js';
import { runUiEvents } from './ui-bead-events.js';
import { runReview } from './review.js';
import { runWorktrees } from './worktrees.js';
import { runTemplates } from './templates.js';

const BENCHMARKS: Record<string, () => Promise<void>> = {
  cold: runCold,
  foundation: runFoundation,
  events: runEvents,
  beads: runBeads,
  sessions: runSessions,
  'sessions-acp': runSessionsAcp,
  'sessions-real-clis': runSessionsRealClis,
  hosts: runHosts,
  agents: runAgents,
  'agents-loop': () => runAgentsLoop(),
  'agents-loop-codex': () => runAgentsLoop(['codex'], false),
  workflows: runWorkflows,
  config: runConfig,
  extmsg: runExtmsg,
  access: runAccess,
  'stream-opens': runStreamOpens,
  worktrees: runWorktrees,
  review: runReview,
  ui: runUi,
  'ui-events': runUiEvents,
  templates: runTemplates,
};

async function main(): Promise<void> {
  const which = process.argv[2] ?? 'all';
  // A part run alone (agents-loop-codex, ui-events) is in `all` already, as part of the whole.
  const parts = new Set(['agents-loop-codex', 'ui-events']);
  const names = which === 'all' ? Object.keys(BENCHMARKS).filter((name) => !parts.has(name)) : [which];
  if (!names.every((name) => name in BENCHMARKS)) {
    console.error(`usage: tsx bench/run.ts [${Object.keys(BENCHMARKS).join('|')}|all]`);
    process.exitCode = 2;
    return;
  }
  for (const [i, name] of names.entries()) {
    if (i > 0) console.log('');
    try {
      await BENCHMARKS[name]();
    } catch (err) {
      // One failing benchmark does not keep the others from running; the exit status reports it.
      console.error(`${name} benchmark failed:`, err);
      process.exitCode = 1;
    }
  }
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  // Everything is stopped and removed by now: leave without waiting for stray handles (timers, sockets).
  .finally(() => process.exit());
