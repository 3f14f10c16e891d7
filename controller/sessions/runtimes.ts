import type { WireProtocol } from '../providers/provider-spec.js';
import { PipeRuntime } from './pipe/pipe-runtime.js';
import type { ProtocolFactory } from './protocols/protocol.js';
import { StreamJsonProtocol } from './protocols/stream-json.js';
import { TextProtocol } from './protocols/text.js';
import type { RuntimeOptions, RuntimeSink, SessionRuntime } from './runtime.js';

const PROTOCOLS: Partial<Record<WireProtocol, ProtocolFactory>> = {
  text: (provider, sink) => new TextProtocol(provider, sink),
  'stream-json': (provider, sink) => new StreamJsonProtocol(provider, sink),
};

/** Whether this controller can run sessions of a provider speaking `protocol`. */
export function canRun(protocol: WireProtocol): boolean {
  return PROTOCOLS[protocol] !== undefined;
}

/** The runtime a session's program runs in, speaking its provider's protocol. */
export function createRuntime(options: RuntimeOptions, sink: RuntimeSink): SessionRuntime {
  const { provider } = options;
  const protocol = PROTOCOLS[provider.protocol];
  if (!protocol) {
    throw new Error(`provider ${provider.name} speaks ${provider.protocol}, which this controller cannot run`);
  }
  switch (provider.runtime) {
    case 'pipe':
      return new PipeRuntime(options, sink, protocol);
  }
}
