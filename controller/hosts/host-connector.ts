import type { HostConfig, HostProbe } from './host-config.js';

/**
 * What the host registry asks of a `[[host]]`'s connection: check it (does it answer, has it what ctl needs), and
 * let it go (the host was removed or changed, or the city stops). `SshHost` is one; the registry's unit tests
 * give scripted ones. `check` resolves with what it found, a failure in `error`; it rejects only for a fault of
 * ours, which the registry takes as the host down with that reason.
 */
export interface HostConnector {
  check(): Promise<HostProbe>;
  close(): Promise<void>;
}

/** Makes the connector of one host's configuration (a changed configuration gets a new one). */
export type HostConnectorFactory<C extends HostConnector = HostConnector> = (config: HostConfig) => C;
