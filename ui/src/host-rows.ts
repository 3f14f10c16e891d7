import type { components } from '../../shared/generated/api-types.js';

// What the Hosts view and the session badges make of the API's hosts: words for a person, the rows kept up to date
// from a check's answer, and which of the city's events may change what the view shows. No Preact here, so unit
// tests import it.

export type Host = components['schemas']['HostResponse'];

/** The machine a session runs on when it names no `[[host]]`. */
export const LOCAL_HOST = 'local';

/** A host's state in words; `unknown` is what a person would not guess from the bare word. */
export const HOST_STATE_WORDS: Record<Host['state'], string> = {
  up: 'up',
  down: 'down',
  unknown: 'not checked yet',
};

/** Slots used of the host's slots: `local` has no limit of its own (an agent's `max_active_sessions` is). */
export function slotsText(host: Pick<Host, 'slots' | 'used'>): string {
  return host.slots === null ? `${host.used} (no limit)` : `${host.used} of ${host.slots}`;
}

export function rttText(host: Pick<Host, 'rtt_ms'>): string {
  return host.rtt_ms === undefined ? '—' : `${host.rtt_ms} ms`;
}

/**
 * What its last check found of git and tmux. A host that never answered says nothing of them ("—"), which is not
 * the same as saying it lacks them.
 */
export function toolsText(host: Pick<Host, 'git' | 'tmux'>): string {
  if (host.git === undefined && host.tmux === undefined) return '—';
  const said = (tool: string, has: boolean | undefined) => (has === undefined ? [] : [has ? tool : `no ${tool}`]);
  return [...said('git', host.git), ...said('tmux', host.tmux)].join(', ');
}

/** The host a check answered put in its place; a host the list does not have (yet) is left for a reload. */
export function withHost(hosts: Host[] | undefined, host: Host): Host[] | undefined {
  return hosts?.map((h) => (h.name === host.name ? host : h));
}

/**
 * City events after which the hosts may look different: a host's state changed (`host.up`, `host.down`); a
 * session's program started or ended there (its `used`), or was lost; the configuration (hosts added or removed).
 */
const CHANGES_HOSTS =
  /^(host\.(up|down)|session\.(created|woke|stopped|suspended|crashed|closed|lost|quarantined|reset)|config\.reloaded)$/;

export function changesHosts(eventType: string): boolean {
  return CHANGES_HOSTS.test(eventType);
}

/** A session's host as its badge shows it: `local`, or the `[[host]]` it was placed on, marked remote. */
export interface HostBadgeView {
  text: string;
  remote: boolean;
  /** What the badge's look says, in words (read after the name): a remote host's badge looks different. */
  said?: string;
}

export function hostBadge(host: string | undefined): HostBadgeView {
  const name = host || LOCAL_HOST;
  return name === LOCAL_HOST ? { text: name, remote: false } : { text: name, remote: true, said: 'remote host' };
}
