import { join } from 'node:path';
import type { Logger } from 'pino';
import type { CityConfig } from '../shared/config/city-config.js';
import type { EventLog } from '../shared/events/event-log.js';
import type { LogTail } from '../shared/events/log-tail.js';
import { ctlEntryPath, type CityPaths } from '../shared/paths.js';
import { ReadinessProber } from '../shared/readiness.js';
import { promptFor, suspensionIn, type AgentDefinition } from './agent-catalog/agent-catalog.js';
import { AgentTick } from './agents/tick.js';
import { AgentStartSteps, rigRootOf } from './agents/agent-start.js';
import { WorkHolding } from './agents/work-holding.js';
import type { BeadStore } from './beads/bead-store.js';
import { BeadsService } from './beads/beads-service.js';
import { ConvoysService } from './beads/convoys.js';
import { MailService } from './beads/mail.js';
import { StoreMaintenance } from './beads/store-maintenance.js';
import { CityRuntime } from './city-runtime.js';
import { cityClock } from './clock.js';
import { CommandRunner } from './commands.js';
import type { ConfigFileHost } from './config/config-file-edit.js';
import { ConfigInUse, loadConfig } from './config/config-in-use.js';
import { ProviderEditor } from './config/provider-editor.js';
import { ExtmsgService } from './extmsg/extmsg-service.js';
import { FormulaCatalog } from './formulas/formula-catalog.js';
import { MoleculeEngine } from './molecules/molecule-engine.js';
import { pourCrashHook } from './molecules/pour-crash-hook.js';
import { RunVars } from './formulas/run-vars.js';
import { launchFormula } from './formulas/launch.js';
import { RunViews } from './molecules/run-views.js';
import { RunVersions } from './molecules/run-versions.js';
import { OrderCatalog } from './orders/order-catalog.js';
import { WebhookDesk } from './webhooks/webhook-desk.js';
import { SessionWaits } from './waits/session-waits.js';
import { INTERRUPTED, OrderDispatcher } from './orders/order-dispatch.js';
import { OrderScheduler } from './orders/order-scheduler.js';
import { ProviderRegistry } from './providers/provider-registry.js';
import { ServiceRunner } from './services/service-runner.js';
import { createRuntime } from './sessions/runtimes.js';
import { SessionService } from './sessions/session-service.js';
import { SessionStore } from './sessions/session-store.js';
import { writeCtlLauncher } from './sessions/ctl-launcher.js';
import { StatusCounts } from './status-counts.js';
import { UsageLog } from './usage/usage-log.js';
import { WorktreeMerges } from './worktrees/bead-merge.js';
import { ReviewService } from './reviews/review-service.js';
import { ReviewStore } from './reviews/review-store.js';
import { rigOfReview, waitingReviews, type ReviewPartiesCity } from './reviews/review-parties.js';
import { MergeJournal, mergeCrashHook } from './worktrees/merge-journal.js';
import { overlapMessage, RigOverlaps, WAITING_REVIEW_STATES } from './worktrees/overlaps.js';
import { worktreesRoot } from './worktrees/repository.js';
import { SessionWorktrees } from './worktrees/session-worktrees.js';
import { LOCAL_HOST, type Host } from './hosts/host.js';
import { HostRegistry } from './hosts/host-registry.js';
import { placeSession, PlacementLedger } from './hosts/placement.js';
import { localHost } from './hosts/local-host.js';
import { SshHost } from './hosts/ssh-host.js';
import { HostGateways } from './hosts/host-gateway.js';
import { SessionCredentials } from './hosts/session-credentials.js';
import type { SessionRecord } from './sessions/session-store.js';

/** A session's program gets this long after SIGTERM before SIGKILL (our own shutdown is bounded at 5 s). */
const SESSION_STOP_GRACE_MS = 3000;
/** A session's program that is not ready this long after it started has failed to start. */
const SESSION_START_TIMEOUT_MS = 60_000;

export interface CityInputs {
  name: string;
  paths: CityPaths;
  /** `city.toml` as read at start. */
  config: CityConfig;
  log: EventLog;
  tail: LogTail;
  store: BeadStore;
  logger: Logger;
  /** Called with each configuration taken after the first (a reload from disk or an edit through the API). */
  onConfig?: (config: CityConfig) => void;
  /** Where this controller's API listens (a socket path, or a loopback port): the host gateways forward there. */
  listen?: string;
}

/**
 * The controller's composition root: every part of the city built here, in one place, each given what it needs
 * (a narrow host, or the parts themselves) — nothing patched in afterwards. Builds only: `startCity` starts
 * what runs on its own, `stopCity` stops it. Throws a ConfigError when the configuration does not resolve.
 */
export function assembleCity(o: CityInputs): CityRuntime {
  const { name, paths, log, tail, logger } = o;
  const root = paths.root;
  const providers = new ProviderRegistry(o.config, paths.config);
  // What follows a change of the configuration; called only on a reload, once every part below exists.
  const settings = new ConfigInUse(
    paths,
    providers,
    loadConfig(root, paths.config, providers, o.config),
    log,
    {
      looked: () => orderScheduler.evaluateSoon(),
      taken: (config) => {
        maintenance.schedule(config.maintenanceIntervalMs);
        services.reconcile(config.services);
        hosts.reconcile(settings.composed.hosts);
        o.onConfig?.(config);
      },
      changed: () => tick.poke(),
    },
    logger,
  );
  const usage = new UsageLog(join(paths.runtimeDir, 'usage.jsonl'), {
    pricing: () => settings.config.pricing,
    logger,
  });
  // Shell commands of agents, formulas and orders: each in its own process group, all killed when the city stops.
  const commands = new CommandRunner();
  const ctlBin = writeCtlLauncher(join(paths.runtimeDir, 'bin'), process.execPath, process.argv[1] || ctlEntryPath());
  const startSteps = new AgentStartSteps({
    cityName: name,
    cityRoot: root,
    sessionsDir: join(paths.runtimeDir, 'sessions'),
    env: process.env,
    ctlBin,
    commands,
    logger,
    agent: (agentName) => settings.agent(agentName),
    rigRoot: (rig) => rigRootOf(root, settings.config.rigs, rig),
    timeoutMs: () => settings.config.daemon.setupTimeoutMs,
    hostOf: (record) => hostOf(record),
  });
  const beads = new BeadsService(o.store, log);
  const holding = new WorkHolding(beads, logger, async (session, file) => {
    const record = sessions.find(session.id).record;
    const host = hostOf(record);
    if (!host.remote || host.lost() !== undefined) return;
    await host.prepare();
    await host.stage(session.dir, [file], host.sessionDir(session.id, session.dir));
  });
  const sessions: SessionService = new SessionService(
    {
      cityName: name,
      cityRoot: root,
      sessionsDir: join(paths.runtimeDir, 'sessions'),
      store: new SessionStore(o.store),
      log,
      logger,
      provider: (provider) => providers.get(provider),
      env: sessionEnvironment(),
      ctlBin,
      runtimes: createRuntime,
      heldBead: (session) => holding.atStart(session),
      agentPrompt: (record, bead) => {
        const agent = settings.agent(record.template);
        return (
          agent &&
          promptFor(agent, { city: name, session: record.session_name, bead, workDir: sessions.workDirOf(record) })
        );
      },
      agentEnv: (record) => settings.agent(record.template)?.config.env,
      agentOptions: (record) => settings.agent(record.template)?.config.option_defaults,
      stopGraceMs: SESSION_STOP_GRACE_MS,
      startTimeoutMs: SESSION_START_TIMEOUT_MS,
      usage: (fact) => usage.record(fact),
      worktrees: new SessionWorktrees(worktreesRoot(root), logger, (record) => hostOf(record)),
      beforeProgram: (session, programDir) => startSteps.beforeProgram(session, programDir),
      hostOf: (record) => hostOf(record),
      credentialFor: (record, host) =>
        credentials.mint({
          city: name,
          host: host.name,
          sessionId: record.id,
          sessionName: record.session_name,
          actor: record.kind === 'agent' ? record.template : record.session_name,
        }),
      credentialEnded: (record) => credentials.revoke(record.id),
    },
    // The city's configuration as it is now: edits on disk and provider writes reload it.
    {
      agent: (agentName) => settings.agent(agentName),
      promptOf: (agent, record) =>
        promptFor(agent, { city: name, session: record.session_name, workDir: sessions.workDirOf(record) }),
      defaultProvider: () => providers.defaultProvider(),
      place: (agent) =>
        placeSession(
          { hosts: agent.config.hosts, tmux: agent.provider?.runtime === 'tmux' },
          hosts.list(),
          new PlacementLedger(),
        ),
    },
  );
  startSteps.watch(sessions);
  // A remote session's ctl reaches its city through its host's gateway, with a credential of its own.
  const credentials = new SessionCredentials();
  const listen = o.listen ?? paths.socket;
  const gateways = new HostGateways({
    city: name,
    cityRoot: root,
    runtimeDir: paths.runtimeDir,
    upstream: /^\d+$/.test(listen) ? { host: '127.0.0.1', port: Number(listen) } : { socketPath: listen },
    credentials,
    logger,
  });
  // The city's hosts: each an SshHost, which the registry checks and the sessions placed there run on.
  const hosts: HostRegistry<SshHost> = new HostRegistry<SshHost>({
    connect: (config) => {
      const host: SshHost = new SshHost(config, {
        cityName: name,
        cityRoot: root,
        runtimeDir: paths.runtimeDir,
        onLost: (why) => {
          credentials.revokeHost(config.name);
          hosts.lost(host, why);
        },
        gateway: () => gateways.open(config.name),
        logger,
      });
      return host;
    },
    used: (hostName) =>
      [...sessions.all()].filter(
        (s) =>
          (s.record.host ?? LOCAL_HOST) === hostName &&
          (s.running || s.state === 'creating' || s.state === 'start-pending'),
      ).length,
    record: async (type, payload, message) => {
      await log.append({ type, actor: 'ctl', subject: payload.host, message, payload });
    },
    logger,
  });
  hosts.reconcile(settings.composed.hosts);
  /** The host a session's programs run on: this machine, or its `[[host]]`. */
  const hostOf = (record: Pick<SessionRecord, 'host'>): Host => {
    const placed = record.host ?? LOCAL_HOST;
    if (placed === LOCAL_HOST) return localHost;
    const host = hosts.connector(placed);
    if (!host) throw new Error(`its host ${placed} is no longer configured ([[host]] in city.toml)`);
    return host;
  };
  // The configuration files as the API's editors write them: checked, written, then taken at once.
  const configFiles: ConfigFileHost = {
    root,
    paths,
    get config() {
      return settings.config;
    },
    reloadConfig: (config, written) => settings.reload(config, written),
  };
  const prober = new ReadinessProber();
  const tick = new AgentTick({
    cityName: name,
    cityRoot: root,
    log,
    beads,
    sessions,
    holding,
    logger,
    agents: () => settings.agents,
    daemon: () => settings.config.daemon,
    suspension: () => suspensionIn(settings.config),
    env: process.env,
    programMissing: (agent) => programMissing(prober, agent),
    hosts: () => hosts.list(),
  });
  hosts.onChange(() => tick.poke());
  const clock = cityClock();
  const mail = new MailService(beads);
  const formulas = new FormulaCatalog(
    root,
    () => settings.config.rigs,
    () => settings.packDirs('formulas'),
  );
  const runVars = new RunVars({
    root,
    rigs: () => settings.config.rigs,
    timezone: () => settings.config.orders.timezone,
    agent: (agentName) => settings.agent(agentName),
    bead: (id) => beads.find(id),
    dependents: (id) => beads.dependents(id),
    now: () => clock.now(),
  });
  const commandEnv = { ...process.env, CTL_CITY: name, CTL_CITY_ROOT: root };
  const molecules: MoleculeEngine = new MoleculeEngine({
    beads,
    log,
    commands,
    cityRoot: root,
    env: commandEnv,
    logger,
    now: () => clock.now(),
    poke: () => tick.poke(),
    // A step's on_complete pours runs of its bond formula, checked and filled as any launch.
    bond: async (formula, vars, options): Promise<string> => {
      const run = await runVars.of({ target: options.routedTo });
      return (await launchFormula(formulas, molecules, formula, vars, options, run)).root.id;
    },
    pourHook: pourCrashHook(process.env),
  });
  clock.onMoved(() => molecules.recheckAll());
  const maintenance = new StoreMaintenance({
    store: o.store,
    backend: o.store.backend,
    log,
    statePath: join(paths.runtimeDir, 'maintenance.json'),
    logger,
  });
  maintenance.schedule(settings.config.maintenanceIntervalMs);
  const orders = new OrderCatalog(
    root,
    () => settings.config.orders,
    () => settings.packDirs('orders'),
    () => settings.rigPackDirs('orders'),
  );
  const orderScheduler = new OrderScheduler({
    catalog: orders,
    dispatcher: new OrderDispatcher({
      beads,
      log,
      commands,
      formulas,
      molecules,
      runVars,
      cityRoot: root,
      env: commandEnv,
      logger,
      agentExists: (name) => settings.agents.some((a) => a.name === name),
      // A run settled: the scheduler looks again (called only once it runs, so never before it exists).
      settled: () => orderScheduler.evaluateSoon(),
    }),
    beads,
    log,
    tail,
    clock,
    commands,
    cityRoot: root,
    env: commandEnv,
    conditionEveryMs: () => settings.config.daemon.patrolIntervalMs,
    logger,
  });
  const reviewStore = new ReviewStore(join(paths.runtimeDir, 'reviews'));
  const reviewCity: ReviewPartiesCity = {
    rigOfAgent: (agent) => settings.agent(agent)?.rig,
    sessionName: (id) => sessions.recordOf(id)?.session_name,
    bead: (id) => beads.find(id),
  };
  // Which worktrees and waiting reviews of a rig changed the same files: read at each turn end of its sessions, when
  // a review moves, and on demand.
  const overlaps = new RigOverlaps({
    reviewsOf: (rig) => waitingReviews(reviewStore, rig, reviewCity),
    sessionsOf: (rig) =>
      settings.config.rigs.some((r) => r.name === rig)
        ? settings.agents
            .filter((a) => a.rig === rig)
            .flatMap((a) => sessions.agentSessions(a.name))
            .map((s) => s.record)
        : undefined,
    rigOf: (record) => {
      const template = sessions.recordOf(record.id)?.template;
      return template === undefined ? undefined : settings.agent(template)?.rig;
    },
    record: async (payload) => {
      await log.append({
        type: 'rig.overlap',
        actor: 'ctl',
        subject: payload.rig,
        message: overlapMessage(payload),
        payload,
      });
    },
    logger,
  });
  sessions.worktrees.onTurnEnded((record) => overlaps.turnEnded(record));
  const services = new ServiceRunner({
    cityName: name,
    cityRoot: root,
    runtimeDir: paths.runtimeDir,
    log,
    env: process.env,
    logger,
  });
  // A bead finished in a session's worktree records its branch, and merges it (or holds it for review) as its
  // agent or its sling says.
  const merges = new WorktreeMerges({
    beads,
    worktrees: sessions.worktrees,
    sessionRecord: (id) => sessions.recordOf(id),
    agent: (agentName) => settings.agent(agentName),
    tell: (id, text) => sessions.tell(id, text, 'woken: its bead was reopened'),
    record: (event) => log.append(event),
    journal: new MergeJournal(join(paths.runtimeDir, 'merges')),
    crashBeforeFastForward: mergeCrashHook(process.env),
    logger,
  });
  return new CityRuntime({
    name,
    paths,
    settings,
    log,
    logger,
    tail,
    beads,
    mail,
    convoys: new ConvoysService(beads),
    merges,
    reviews: new ReviewService({
      beads,
      merges,
      worktrees: sessions.worktrees,
      store: reviewStore,
      commands,
      reviewConfig: () => settings.config.review,
      env: commandEnv,
      sessionRecord: (id) => sessions.recordOf(id),
      sessionOpen: (id) => sessions.findOpen(id)?.record.id === id,
      tell: (id, text) => sessions.tell(id, text, 'woken: changes were requested on its work'),
      record: async (event) => {
        await log.append(event);
        // A review that began, came back or left its rig's waiting ones: the overlaps it is a side of change.
        const review = event.type === 'review.commented' ? undefined : reviewStore.get(event.subject ?? '');
        const rig = review && rigOfReview(review, reviewCity);
        if (review && rig !== undefined) overlaps.reviewMoved(rig, review.bead);
      },
      overlapsOf: async (review) => {
        const rig = rigOfReview(review, reviewCity);
        if (rig === undefined || !WAITING_REVIEW_STATES.has(review.state)) return undefined;
        return overlaps.of(rig, { kind: 'review', session_id: review.session, bead: review.bead });
      },
      land: () => settings.config.review?.land ?? 'merge',
      logger,
    }),
    overlaps,
    statusCounts: new StatusCounts(() => ({ work: beads.workCounts(), mail: mail.count({}) }), log),
    providers,
    prober,
    sessions,
    usage,
    tick,
    holding,
    clock,
    commands,
    formulas,
    runVars,
    molecules,
    runs: new RunViews(beads, new RunVersions(log)),
    orders,
    orderScheduler,
    webhooks: new WebhookDesk({
      order: (scopedName) => orders.list().orders.find((order) => order.scopedName === scopedName),
      fire: (order, vars, payload) => orderScheduler.fireNow(order, vars, payload),
      interrupted: (trackingId) => beads.find(trackingId)?.metadata?.[INTERRUPTED] === 'true',
      tables: () => settings.composed.webhooks,
      log,
      payloadDir: join(paths.runtimeDir, 'webhooks'),
      ledgerFile: join(paths.runtimeDir, 'webhook-deliveries.jsonl'),
      env: process.env,
      logger,
    }),
    maintenance,
    waits: new SessionWaits({
      beads,
      openSession: (idOrName) => sessions.findOpen(idOrName),
      log,
      logger,
    }),
    extmsg: new ExtmsgService({
      dir: join(paths.runtimeDir, 'extmsg'),
      log,
      sessions,
      agent: (agentName) => settings.agent(agentName),
      callbackHosts: () => settings.config.extmsgCallbackHosts,
      logger,
    }),
    services,
    hosts,
    gateways,
    providerEditor: new ProviderEditor(configFiles),
  });
}

/** Starts what runs on its own once the controller serves its API: the tick, services, messaging, runs, orders. */
export function startCity(city: CityRuntime): void {
  city.hosts.start();
  city.tick.start();
  city.services.reconcile(city.config.services);
  city.extmsg.start();
  // Runs that were in flight when the last controller stopped carry on (their checks, gates and finalize).
  city.molecules.resume();
  // So do closes whose merge a dead controller began, and the merge queues of approved reviews.
  void city.merges.resume();
  city.reviews.resume();
  city.orderScheduler.start();
  // Waits whose beads closed while no controller ran are over now.
  city.waits.recheckSoon();
}

/** Stops what `startCity` started, and what the parts keep running (timers, commands, services). */
export async function stopCity(city: CityRuntime): Promise<void> {
  city.tick.stop();
  city.orderScheduler.stop();
  city.maintenance.stop();
  city.molecules.stop();
  city.reviews.stop();
  city.commands.stop();
  city.clock.stop();
  city.extmsg.stop();
  await Promise.all([city.services.stop(), city.hosts.stop()]);
  await city.gateways.closeAll();
}

/** Why the agent's program is missing (installed or not only: no sign-in check, that runs the program). */
async function programMissing(prober: ReadinessProber, agent: AgentDefinition): Promise<string | undefined> {
  const provider = agent.provider;
  if (!provider) return undefined;
  // An agent that runs only on other hosts needs its program there, not here: a start there says when it is not.
  const hosts = agent.config.hosts ?? [];
  if (hosts.length > 0 && !hosts.includes(LOCAL_HOST)) return undefined;
  // Cached by the prober for 2 s.
  const item = await prober.probeCommand({
    name: provider.name,
    displayName: provider.display_name,
    command: provider.command,
    cwd: agent.workDir,
    env: provider.env,
  });
  return item.status === 'not_installed' || item.status === 'invalid_configuration'
    ? `provider ${provider.name}: ${item.detail ?? item.status}`
    : undefined;
}

/**
 * What every session's program starts with: ours (the supervisor's API address, `CTL_API`, among it), plus
 * `CTL_NODE` and `CTL_CLI`, the Node and `ctl` entry point this controller runs (what its `ctl` launcher, first on
 * the program's PATH, runs too).
 */
function sessionEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (process.argv[1]) env.CTL_CLI = process.argv[1];
  env.CTL_NODE = process.execPath;
  return env;
}
