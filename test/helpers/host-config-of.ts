import type { HostConfig } from '../../controller/hosts/host-config.js';
import type { TestHost } from './netns-hosts.js';

/** A test host as the `[[host]]` table a city would have for it. */
export function hostConfigOf(host: TestHost, overrides: Partial<HostConfig> = {}): HostConfig {
  return {
    name: host.name,
    address: host.address,
    user: 'root',
    hostname: host.ip,
    port: host.port,
    identity_file: host.identityFile,
    known_hosts: host.knownHostsFile,
    slots: host.slots,
    labels: host.labels,
    work_root: host.workRoot,
    ...overrides,
  };
}
