import { existsSync, readdirSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { loadSimpleGit } from '../simple-git.js';
import type { RigCreateInputBody, RigCreateResponseBody } from '../../shared/dto/rigs.js';
import { Problem } from '../../shared/http/problem.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { ConfigFileHost } from '../config/config-file-edit.js';
import { checkSourceAllowed, machineSourcePolicy, PackSourceError, parsePackSource } from '../packs/pack-source.js';
import { checkRigPath } from './rig-placement.js';
import { RigEditor } from './rigs.js';

/** URL schemes a rig is cloned from. */
const SCHEMES = /^(https?|ssh|git|file):\/\//;
/** A clone that takes longer than this fails (and what it left is removed). */
const CLONE_TIMEOUT_MS = 30 * 60_000;

/** Rigs being cloned, by name: a second clone of one is refused meanwhile. */
const cloning = new Set<string>();

/** What cloning a rig needs of the city: its configuration to write the rig to, and its log to report on. */
export interface RigCloneHost extends ConfigFileHost {
  log: EventLog;
}

/**
 * `POST /rigs` with `git_url`: checks what it can at once (name, URL, a free target directory), answers 202, and
 * clones in the background with the machine's `git` (through simple-git), recording `rig.provision.progress` as
 * git reports its phases, then — the rig written to city.toml with the branch it checked out — exactly one
 * `request.result.rig.create`, or `request.failed` (the half-made directory removed).
 */
export async function startClone(
  city: RigCloneHost,
  body: RigCreateInputBody & { git_url: string },
): Promise<RigCreateResponseBody> {
  const editor = new RigEditor(city);
  editor.checkNew(body.name);
  if (cloning.has(body.name)) throw new Problem('conflict-wrong-state', `conflict: rig ${body.name} is being cloned`);
  await checkGitUrl(body.git_url, city.root);
  const written = body.path ?? `rigs/${body.name}`;
  const target = (await checkRigPath(written, city.root, { mustExist: false })).path;
  if (existsSync(target) && readdirSync(target).length > 0) {
    throw new Problem('validation-failed', `invalid: ${target} exists and is not empty`, {
      errors: [{ location: 'body.path', message: `${target} exists and is not empty`, value: written }],
    });
  }
  if (cloning.has(body.name)) throw new Problem('conflict-wrong-state', `conflict: rig ${body.name} is being cloned`);
  const requestId = body.request_id ?? `req-${randomBytes(12).toString('hex')}`;
  const cursor = city.log.head();
  cloning.add(body.name);
  void clone(city, body, written, target, requestId).finally(() => cloning.delete(body.name));
  return { status: 'accepted', rig: body.name, request_id: requestId, event_cursor: String(cursor) };
}

/**
 * A git URL a rig may be cloned from: an https, http, ssh, git or file URL (or user@host:path), never one git could
 * take for an option, checked against the machine's pack source policy (`[packs]` of supervisor.toml: no private,
 * link-local, carrier-grade NAT or unique-local address after DNS unless allowed; `file://` when allowed) — the clone
 * is made by the controller and must not become a way to reach the machine's networks. A 422 naming the rule.
 */
async function checkGitUrl(url: string, cityRoot: string): Promise<void> {
  const refuse = (message: string): never => {
    throw new Problem('validation-failed', `invalid: git_url ${JSON.stringify(url)}: ${message}`, {
      errors: [{ location: 'body.git_url', message, value: url }],
    });
  };
  if (url.startsWith('-')) refuse('a URL may not begin with "-" (git would take it for an option)');
  // A control character or space has no place in a URL, and a newline could end a line of git's config.
  // eslint-disable-next-line no-control-regex
  if (/[\s\x00-\x1f\x7f]/.test(url)) refuse('a URL may not contain spaces or control characters');
  if (!SCHEMES.test(url) && !/^[\w.-]+@[\w.-]+:/.test(url)) {
    refuse('not a git URL: an https, http, ssh, git or file URL (or user@host:path)');
  }
  let source;
  try {
    source = parsePackSource(url, cityRoot);
  } catch (err) {
    if (err instanceof PackSourceError) refuse(err.message);
    throw err;
  }
  if (source.kind === 'git' && source.host?.startsWith('-')) {
    refuse(`the host ${source.host} begins with "-" (ssh would take it for an option)`);
  }
  try {
    await checkSourceAllowed(source, machineSourcePolicy());
  } catch (err) {
    if (err instanceof PackSourceError) refuse(`refused by the machine's source policy: ${err.message}`);
    throw err;
  }
}

async function clone(
  city: RigCloneHost,
  body: RigCreateInputBody & { git_url: string },
  written: string,
  target: string,
  requestId: string,
): Promise<void> {
  const progress = (step: string, detail?: string) =>
    city.log.append({
      type: 'rig.provision.progress',
      actor: 'ctl',
      subject: body.name,
      ...(detail ? { message: detail } : {}),
      payload: { rig: body.name, step, request_id: requestId, ...(detail ? { detail } : {}) },
    });
  let lastStage = '';
  try {
    await progress('clone', `cloning ${body.git_url}`);
    const simpleGit = await loadSimpleGit();
    const git = simpleGit({
      timeout: { block: CLONE_TIMEOUT_MS },
      progress: ({ stage, progress: percent }) => {
        // One event per phase of git's progress (counting, receiving, resolving), not one per percent.
        if (stage === lastStage) return;
        lastStage = stage;
        void progress('clone', `${stage} ${percent}%`);
      },
    });
    // Neither is taken for an option: the URL was refused if it began with "-", the target is an absolute path.
    // (No `--`: simple-git's progress plugin appends `--progress` after the arguments given.)
    await git.clone(body.git_url, target, body.default_branch ? ['--branch', body.default_branch] : []);
    // An empty repository clones "successfully" (with a warning), leaving nothing to check out or name a branch.
    const head = await simpleGit(target)
      .revparse(['--verify', '--quiet', 'HEAD'])
      .catch(() => '');
    if (head.trim() === '') {
      throw new Problem(
        'validation-failed',
        `invalid: ${body.git_url} is an empty repository: it has no commit to check out`,
      );
    }
    const branch = body.default_branch ?? (await simpleGit(target).revparse(['--abbrev-ref', 'HEAD'])).trim();
    await new RigEditor(city).add({ name: body.name, path: written, prefix: body.prefix, default_branch: branch });
    await progress('config', `written to city.toml`);
    await city.log.append({
      type: 'request.result.rig.create',
      actor: 'ctl',
      subject: body.name,
      payload: { request_id: requestId, rig: body.name, prefix: body.prefix ?? '', default_branch: branch },
    });
  } catch (err) {
    rmSync(target, { recursive: true, force: true });
    const message = err instanceof Problem ? err.detail : gitFailure((err as Error).message);
    await city.log.append({
      type: 'request.failed',
      actor: 'ctl',
      subject: body.name,
      message,
      payload: {
        request_id: requestId,
        operation: 'rig.create',
        error_code: 'rig_clone_failed',
        error_message: message,
      },
    });
  }
}

/**
 * What went wrong, from git's output: its `fatal:` and `error:` lines (its first lines are progress, such as
 * "Cloning into '…'…"), else its last line that is not progress or a warning.
 */
export function gitFailure(output: string): string {
  const lines = output
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const errors = lines.filter((l) => /^(fatal|error):/i.test(l));
  if (errors.length > 0) return errors.join('; ');
  const rest = lines.filter((l) => !/^(Cloning into |remote: |warning: )/i.test(l));
  return rest.at(-1) ?? 'git failed without saying why';
}
