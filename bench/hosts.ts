/**
 * Hosts benchmark (issue 32, "Measure"): sessions on hosts over OpenSSH against network-namespace hosts with their
 * own sshd (test/helpers/netns-hosts.ts), beside the same on this machine, in one city of a real supervisor:
 *   1. session start, POST /sessions → `session.woke`: on a host whose connection is open (warm) and here; and cold,
 *      the city started again (`ctl city start`), from its controller's process start to the host's `host.up` (a
 *      first connection and the check that ctl is shipped there) and to its agents' sessions woke, there and here —
 *      and the very first start, which ships Node and ctl's tools to the host,
 *   2. a message → the first reply frame (session stream), a session there and one here,
 *   3. 10 sessions on each of 3 hosts (agents with min_active_sessions = 10, hosts with slots = 10): the time from the
 *      city.toml edit that adds them until all 30 run; the controller's RSS and its ssh children before and then,
 *   4. a tmux screen read (TmuxServer.capture) over a host (SshHost: its one control-mode client) and here,
 *   5. a host crashed (its pid 1 SIGKILLed, its 10 sessions holding a bead each) → each `session.lost`, and → each
 *      bead back in the pool (`bead.updated`, open and unassigned).
 * Runs as root only (namespaces): otherwise it says why and measures what runs here alone. Prints tables and writes
 * `.bench-out/hosts.json`. Run with `npm run bench -- hosts`.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { SshHost } from '../controller/hosts/ssh-host.js';
import { localHost } from '../controller/hosts/local-host.js';
import type { Host } from '../controller/hosts/host.js';
import { TmuxServer } from '../controller/sessions/tmux/tmux.js';
import { ASSIGNED_SESSION } from '../controller/beads/work-schema.js';
import type { Envelope } from '../test/helpers/city-api.js';
import { controllerPid } from '../test/helpers/controller-pid.js';
import { hostConfigOf } from '../test/helpers/host-config-of.js';
import { hostsAvailable, makeHosts, type TestHost, type TestHosts } from '../test/helpers/netns-hosts.js';
import { ECHO_AGENT, startSessionCity, type SessionCity } from '../test/helpers/sessions.js';
import { tempDir } from '../test/helpers/temp-dir.js';
import { waitUntil } from '../test/helpers/wait.js';
import { childPids, memoryKiB, rssKiB, startedAtMs } from './proc.js';
import { createLatency, replyLatency } from './sessions.js';
import { round, rounded, summarize, type Summary } from './stats.js';
import { formatTable, mib, ms } from './table.js';

const CITY = 'hosts';
const CREATES = 30;
const COLD_STARTS = 8;
const MESSAGES = 200;
const POOL_HOSTS = 3;
const POOL_SESSIONS = 10;
const READS = 200;
/** Where the echo agent is installed on each host, as a person would install their agent's program there. */
const ON_HOST = '/srv/agents/echo.sh';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'hosts.json');

const remoteAgent = { kind: 'agent', name: 'worker' };
const localAgent = { kind: 'agent', name: 'here' };

/** The city: `worker` kept on the first host, `here` kept on this machine; the pools are added by part 3. */
function cityToml(hosts: TestHost[], pools: boolean): string {
  const agents = [
    hosts.length
      ? `[[agent]]\nname = "worker"\nprovider = "remote-echo"\nhosts = ["${hosts[0].name}"]\nmin_active_sessions = 1\n`
      : '',
    '[[agent]]\nname = "here"\nprovider = "echo"\nmin_active_sessions = 1\n',
    ...(pools
      ? hosts
          .slice(1)
          .map(
            (host, i) =>
              `[[agent]]\nname = "pool${i + 1}"\nprovider = "remote-echo"\nhosts = ["${host.name}"]\nmin_active_sessions = ${POOL_SESSIONS}\nmax_active_sessions = ${POOL_SESSIONS}\n`,
          )
      : []),
  ];
  return `
${hosts.map((host) => host.tomlTable()).join('\n')}
[providers.remote-echo]
command = "${ON_HOST}"
ready_prompt_prefix = "ready>"
env = { ECHO_READY = "ready>" }

${agents.join('\n')}`;
}

const after = (events: Envelope[], since: number) => events.filter((e) => Date.parse(e.ts) >= since);
const sessionOf = (e: Envelope) => e.payload.session_id as string | undefined;

interface Listed {
  id: string;
  template: string;
  state: string;
  running: boolean;
}

async function listSessions(city: SessionCity): Promise<Listed[]> {
  const reply = await city.api.get<{ items: Listed[] }>('/sessions?state=all&limit=1000');
  if (reply.status !== 200) throw new Error(`GET /sessions: HTTP ${reply.status}`);
  return reply.body.items;
}

/** The agent (or provider) a session event's session was made from. */
function templateOf(e: Envelope): string {
  return e.payload.template as string;
}

type StartFigures = Awaited<ReturnType<typeof startFigures>>;

interface Cold {
  /** The first start of the city: Node and ctl's tools shipped to the host. */
  first: StartFigures;
  controllerStarted: number[];
  hostUp: number[];
  remoteWoke: number[];
  localWoke: number[];
}

/**
 * In one start of the city, from its controller's process start to its `controller.started`, to the first host's
 * `host.up` and to each agent's session woke. (Its sessions start before its API, so before `controller.started`.)
 */
async function startFigures(city: SessionCity, hostName: string, since: number) {
  // The controller of this start, not the one before it (whose pid file may still be there): it started after
  // `since`, give or take a clock tick (10 ms) of its start time.
  const controllerStart = await waitUntil("this start's controller", () => {
    try {
      const at = startedAtMs(controllerPid(city.dir));
      return at >= since - 20 ? at : undefined;
    } catch {
      return undefined;
    }
  });
  const found = await waitUntil(
    'the city started, its host up and both agents woke',
    async () => {
      const events = after(await city.api.events(), since);
      const started = events.find((e) => e.type === 'controller.started');
      const up = events.find((e) => e.type === 'host.up' && e.payload.host === hostName);
      const woke = events.filter((e) => e.type === 'session.woke');
      const remote = woke.find((e) => templateOf(e) === 'worker');
      const local = woke.find((e) => templateOf(e) === 'here');
      return started && up && remote && local ? { started, up, remote, local } : undefined;
    },
    120_000,
    200,
  );
  const fromStart = (e: Envelope) => Date.parse(e.ts) - controllerStart;
  return {
    controllerStarted: fromStart(found.started),
    hostUp: fromStart(found.up),
    remoteWoke: fromStart(found.remote),
    localWoke: fromStart(found.local),
  };
}

/** 1 (cold). The city stopped and started again, `COLD_STARTS` times: a new controller, a new connection. */
async function coldStarts(city: SessionCity, hostName: string): Promise<Omit<Cold, 'first'>> {
  const out: Omit<Cold, 'first'> = { controllerStarted: [], hostUp: [], remoteWoke: [], localWoke: [] };
  for (let i = 0; i < COLD_STARTS; i++) {
    const stopped = await city.sup.ctl(['city', 'stop', CITY]);
    if (stopped.code !== 0) throw new Error(`ctl city stop: ${stopped.stderr.trim()}`);
    const since = Date.now();
    const started = await city.sup.ctl(['city', 'start', CITY]);
    if (started.code !== 0) throw new Error(`ctl city start: ${started.stderr.trim()}`);
    const figures = await startFigures(city, hostName, since);
    out.controllerStarted.push(figures.controllerStarted);
    out.hostUp.push(figures.hostUp);
    out.remoteWoke.push(figures.remoteWoke);
    out.localWoke.push(figures.localWoke);
  }
  return out;
}

interface Pools {
  rssBeforeKib: number;
  rssAfterKib: number;
  allRunningMs: number;
  /** The controller's ssh children (a ControlMaster per host, a client per channel on it) and their PSS summed. */
  sshBefore: SshChildren;
  sshAfter: SshChildren;
}

interface SshChildren {
  count: number;
  pssKib: number;
}

function sshChildrenOf(pid: number): SshChildren {
  const ssh = childPids(pid).filter((child) => {
    try {
      return readFileSync(`/proc/${child}/comm`, 'utf8').trim() === 'ssh';
    } catch {
      return false;
    }
  });
  // PSS: the ssh binary's and libraries' pages are shared among them, which summed RSS would count each time.
  return { count: ssh.length, pssKib: ssh.reduce((sum, child) => sum + (memoryKiB(child).pss || 0), 0) };
}

/** 3. The pools added to city.toml: until all 30 sessions run on their hosts; the controller's RSS. */
async function pools(city: SessionCity, hosts: TestHost[]): Promise<Pools> {
  const pid = controllerPid(city.dir);
  const rssBeforeKib = rssKiB(pid);
  const sshBefore = sshChildrenOf(pid);
  const started = performance.now();
  const file = join(city.dir, 'city.toml');
  writeFileSync(file, readFileSync(file, 'utf8').replace(cityToml(hosts, false), cityToml(hosts, true)));
  const want = POOL_HOSTS * POOL_SESSIONS;
  await waitUntil(
    `${want} pool sessions running`,
    async () =>
      (await listSessions(city)).filter((s) => s.template.startsWith('pool') && s.state === 'active' && s.running)
        .length >= want,
    120_000,
    50,
  );
  const allRunningMs = performance.now() - started;
  if (controllerPid(city.dir) !== pid) throw new Error('the controller was replaced while the pools started');
  return { rssBeforeKib, rssAfterKib: rssKiB(pid), allRunningMs, sshBefore, sshAfter: sshChildrenOf(pid) };
}

/** 4. `READS` screen reads of a tmux session running `cat` on `host` (the first 20 not counted). */
async function screenReads(host: Host, socket: string): Promise<number[]> {
  const tmux = new TmuxServer(socket, host);
  await tmux.run(['new-session', '-d', '-s', 'ctl-bench', '-x', '80', '-y', '24', '--', 'cat']);
  try {
    await tmux.type('ctl-bench', 'a screen to read');
    await tmux.sendKeys('ctl-bench', ['Enter']);
    await waitUntil('the screen to show it', async () =>
      (await tmux.capture('ctl-bench')).some((l) => l.includes('a screen to read')),
    );
    const latencies: number[] = [];
    for (let i = 0; i < READS + 20; i++) {
      const sent = performance.now();
      const lines = await tmux.capture('ctl-bench');
      if (i >= 20) latencies.push(performance.now() - sent);
      if (lines.length === 0) throw new Error('an empty screen read');
    }
    return latencies;
  } finally {
    await tmux.run(['kill-session', '-t', 'ctl-bench']);
  }
}

/** 4 over a host: an SshHost of its own (not the controller's), its tmux over its one control client. */
async function remoteScreenReads(made: TestHost): Promise<number[]> {
  const cityRoot = tempDir('ctl-bench-hosts-tmux-');
  const host = new SshHost(hostConfigOf(made), {
    cityName: 'bench-tmux',
    cityRoot,
    runtimeDir: join(cityRoot, '.ctl'),
    onLost: (why) => console.error(`the tmux bench's host was lost: ${why}`),
  });
  try {
    await host.prepare();
    return await screenReads(host, host.tmuxSocket());
  } finally {
    await host.close();
    rmSync(cityRoot, { recursive: true, force: true });
  }
}

interface Crash {
  lost: number[];
  reopened: number[];
  beads: number;
}

/**
 * 5. A bead slung to each session of the last pool, then its host crashed: from the SIGKILL of the host's pid 1 to
 * each of its sessions' `session.lost`, and to each bead open and unassigned again (`bead.updated`).
 */
async function crash(city: SessionCity, made: TestHost, agent: string): Promise<Crash> {
  const beadIds: string[] = [];
  for (let i = 0; i < POOL_SESSIONS; i++) {
    const bead = await city.api.create({ title: `held on ${made.name} ${i}` });
    const slung = await city.api.post('/sling', { target: agent, bead: bead.id, no_convoy: true });
    if (slung.status >= 300) throw new Error(`sling: HTTP ${slung.status}: ${JSON.stringify(slung.body)}`);
    beadIds.push(bead.id);
  }
  const holders = await waitUntil(
    `each of the ${POOL_SESSIONS} beads held by a session of ${agent}`,
    async () => {
      const held = await Promise.all(
        beadIds.map(async (id) => {
          const bead = await city.api.get<{ metadata?: Record<string, string> }>(`/bead/${id}`);
          return bead.body.metadata?.[ASSIGNED_SESSION];
        }),
      );
      return held.every(Boolean) ? new Set(held as string[]) : undefined;
    },
    60_000,
  );
  const since = Date.now();
  await made.crash();
  const reopenedOf = (events: Envelope[]) =>
    events.filter((e) => {
      const bead = e.payload.bead as { id: string; status: string; metadata?: Record<string, string> } | undefined;
      return (
        e.type === 'bead.updated' &&
        bead !== undefined &&
        beadIds.includes(bead.id) &&
        bead.status === 'open' &&
        !bead.metadata?.[ASSIGNED_SESSION]
      );
    });
  const { lost, reopened } = await waitUntil(
    `every session on ${made.name} lost and every bead it held open again`,
    async () => {
      const events = after(await city.api.events(), since);
      const lostEvents = events.filter((e) => e.type === 'session.lost' && holders.has(sessionOf(e) ?? ''));
      const reopenedEvents = reopenedOf(events);
      const byBead = new Map<string, Envelope>();
      for (const e of reopenedEvents) {
        const id = (e.payload.bead as { id: string }).id;
        if (!byBead.has(id)) byBead.set(id, e);
      }
      return lostEvents.length >= holders.size && byBead.size >= beadIds.length
        ? { lost: lostEvents, reopened: [...byBead.values()] }
        : undefined;
    },
    60_000,
    100,
  );
  return {
    lost: lost.map((e) => Date.parse(e.ts) - since),
    reopened: reopened.map((e) => Date.parse(e.ts) - since),
    beads: beadIds.length,
  };
}

function row(label: string, s: Summary | undefined, digits = 1): string[] {
  if (!s || s.n === 0) return [label, '0', 'n/a', 'n/a', 'n/a'];
  return [label, String(s.n), ms(s.median, digits), ms(s.p90, digits), ms(s.max, digits)];
}

export async function runHosts(): Promise<void> {
  const startedAt = performance.now();
  console.log(`ctl hosts benchmark: node ${process.version}, ${availableParallelism()} cores`);
  const loadAtStart = loadavg().map((l) => round(l, 2));
  const why = hostsAvailable();
  if (why) console.log(`hosts cannot be made here (${why}): measuring only what runs on this machine`);
  let hosts: TestHosts | undefined;
  let city: SessionCity | undefined;
  try {
    // One for `worker` (parts 1, 2 and 4), one per pool (part 3), the last crashed (part 5).
    if (!why) {
      console.log(`making ${1 + POOL_HOSTS} network-namespace hosts…`);
      hosts = await makeHosts(1 + POOL_HOSTS, { slots: POOL_SESSIONS });
      for (const host of hosts.hosts) host.put(ECHO_AGENT, ON_HOST);
    }
    const made = hosts?.hosts ?? [];
    const since = Date.now();
    city = await startSessionCity(CITY, cityToml(made, false));

    let first: Cold['first'] | undefined;
    let cold: Omit<Cold, 'first'> | undefined;
    if (made.length) {
      console.log('1/5 the first start (Node and ctl shipped to the host), then cold starts…');
      first = await startFigures(city, made[0].name, since);
      cold = await coldStarts(city, made[0].name);
    } else {
      console.log('1/5 session starts…');
    }
    console.log(`    ${CREATES} session creates on a host with its connection open, and here…`);
    const warmRemote = made.length ? await createLatency(city.api, remoteAgent, CREATES) : [];
    const warmLocal = await createLatency(city.api, localAgent, CREATES);

    console.log(`2/5 ${MESSAGES} messages → reply frames, there and here…`);
    const replyRemote = made.length ? await replyLatency(city.api, remoteAgent, MESSAGES, 10) : [];
    const replyLocal = await replyLatency(city.api, localAgent, MESSAGES, 10);

    console.log(`4/5 ${READS} tmux screen reads over a host, and here…`);
    const readsRemote = made.length ? await remoteScreenReads(made[0]) : [];
    const localDir = tempDir('ctl-bench-hosts-local-tmux-');
    const readsLocal = await screenReads(localHost, join(localDir, 'tmux.sock')).finally(() =>
      rmSync(localDir, { recursive: true, force: true }),
    );

    let pool: Pools | undefined;
    let crashed: Crash | undefined;
    if (made.length) {
      console.log(`3/5 ${POOL_SESSIONS} sessions on each of ${POOL_HOSTS} hosts…`);
      pool = await pools(city, made);
      console.log(`5/5 a host crashed under ${POOL_SESSIONS} sessions holding a bead each…`);
      crashed = await crash(city, made[POOL_HOSTS], `pool${POOL_HOSTS}`);
    }

    const s = (values: number[]) => (values.length ? summarize(values) : undefined);
    const figures = {
      warmRemote: s(warmRemote),
      warmLocal: s(warmLocal),
      coldStarted: s(cold?.controllerStarted ?? []),
      coldHostUp: s(cold?.hostUp ?? []),
      coldRemote: s(cold?.remoteWoke ?? []),
      coldLocal: s(cold?.localWoke ?? []),
      replyRemote: s(replyRemote),
      replyLocal: s(replyLocal),
      readsRemote: s(readsRemote),
      readsLocal: s(readsLocal),
      lost: s(crashed?.lost ?? []),
      reopened: s(crashed?.reopened ?? []),
    };
    const header = ['measure', 'n', 'p50', 'p90', 'max'];
    const out = [
      `load average at start ${loadAtStart.join(' ')}, at end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
      ...(why ? [`(no hosts: ${why})`] : []),
      '',
      formatTable('1. Session start (ms)', header, [
        row('POST /sessions → session.woke, on a host, connection open', figures.warmRemote),
        row('POST /sessions → session.woke, here', figures.warmLocal),
        ...(first
          ? [
              row('first start, controller process start → host.up (Node + ctl shipped)', summarize([first.hostUp])),
              row('first start, controller process start → woke on the host', summarize([first.remoteWoke])),
              row('first start, controller process start → woke here', summarize([first.localWoke])),
              row('cold start, controller process start → controller.started', figures.coldStarted),
              row('cold start, … → host.up (a new connection, shipped copy checked)', figures.coldHostUp),
              row('cold start, … → session woke on the host', figures.coldRemote),
              row('cold start, … → session woke here', figures.coldLocal),
            ]
          : []),
      ]),
      '',
      formatTable('2. Message → first reply frame (ms), one run', header, [
        row('a session on a host', figures.replyRemote, 2),
        row('a session here', figures.replyLocal, 2),
      ]),
      '',
      formatTable('4. tmux screen read, TmuxServer.capture (ms)', header, [
        row('over a host (SshHost, one control-mode client)', figures.readsRemote, 2),
        row('here (localHost, a tmux command each)', figures.readsLocal, 2),
      ]),
      ...(pool
        ? [
            '',
            formatTable(
              `3. ${POOL_SESSIONS} sessions on each of ${POOL_HOSTS} hosts (slots ${POOL_SESSIONS})`,
              ['measure', 'value'],
              [
                [`city.toml edit → all ${POOL_HOSTS * POOL_SESSIONS} running, ms`, ms(pool.allRunningMs, 0)],
                ['controller RSS before (worker + here running), MiB', mib(pool.rssBeforeKib)],
                [`controller RSS, ${POOL_HOSTS * POOL_SESSIONS} more running on hosts, MiB`, mib(pool.rssAfterKib)],
                [`its ssh children before → then (count)`, `${pool.sshBefore.count} → ${pool.sshAfter.count}`],
                [`their PSS summed before → then, MiB`, `${mib(pool.sshBefore.pssKib)} → ${mib(pool.sshAfter.pssKib)}`],
              ],
            ),
          ]
        : []),
      ...(crashed
        ? [
            '',
            formatTable(
              `5. Host crash (pid 1 SIGKILLed) under ${crashed.beads} sessions, each holding a bead (ms)`,
              header,
              [
                row('crash → session.lost', figures.lost, 0),
                row('crash → bead open again (bead.updated)', figures.reopened, 0),
              ],
            ),
          ]
        : []),
    ];
    console.log(out.join('\n'));
    const json = (v: Summary | undefined) => (v ? rounded(v) : null);
    mkdirSync(dirname(OUT_FILE), { recursive: true });
    writeFileSync(
      OUT_FILE,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          node: process.version,
          loadavg_at_start: loadAtStart,
          hosts_unavailable: why ?? null,
          create_to_woke_remote_warm_ms: json(figures.warmRemote),
          create_to_woke_local_ms: json(figures.warmLocal),
          first_start_ms: first ?? null,
          cold_start_controller_started_ms: json(figures.coldStarted),
          cold_start_host_up_ms: json(figures.coldHostUp),
          cold_start_remote_woke_ms: json(figures.coldRemote),
          cold_start_local_woke_ms: json(figures.coldLocal),
          message_to_reply_frame_remote_ms: json(figures.replyRemote),
          message_to_reply_frame_local_ms: json(figures.replyLocal),
          tmux_capture_remote_ms: json(figures.readsRemote),
          tmux_capture_local_ms: json(figures.readsLocal),
          pools: pool ?? null,
          crash_to_session_lost_ms: json(figures.lost),
          crash_to_bead_reopened_ms: json(figures.reopened),
          total_runtime_s: round((performance.now() - startedAt) / 1000, 1),
        },
        null,
        2,
      ) + '\n',
    );
    console.log(`wrote ${OUT_FILE}`);
  } finally {
    await city?.sup.cleanup();
    await hosts?.cleanup();
  }
}
