import type { ResolvedProvider, WireProtocol } from '../providers/provider-spec.js';
import { AcpRuntime } from './acp/acp-runtime.js';
import { CodexExecRuntime } from './exec/codex-exec-runtime.js';
import { PipeRuntime } from './pipe/pipe-runtime.js';
import { TmuxRuntime } from './tmux/tmux-runtime.js';
import type { ProtocolFactory } from './protocols/protocol.js';
import { StreamJsonProtocol } from './protocols/stream-json.js';
import { TextProtocol } from './protocols/text.js';
import type { RuntimeOptions, RuntimeSink, SessionRuntime } from './runtime.js';

const PROTOCOLS: Partial<Record<WireProtocol, ProtocolFactory>> = {
  text: (provider, sink) => new TextProtocol(provider, sink),
  'stream-json': (provider, sink, logger) => new StreamJsonProtocol(provider, sink, logger),
};

/** Whether this controller can run sessions of a provider speaking `protocol`. */
export function canRun(protocol: WireProtocol): boolean {
  return protocol === 'acp' || protocol === 'codex-exec' || PROTOCOLS[protocol] !== undefined;
}

/**
 * Whether a provider's program can continue a conversation by the provider's own id: on its command line
 * (`resume_args`), or — ACP — by `session/load`, when the agent can.
 */
export function canResume(provider: ResolvedProvider): boolean {
  return provider.resume_args !== undefined || provider.protocol === 'acp';
}

/** The runtime a session's program runs in, speaking its provider's protocol. */
export function createRuntime(options: RuntimeOptions, sink: RuntimeSink): SessionRuntime {
  const { provider } = options;
  // ACP is a conversation with requests both ways and answers that come later, not lines in and lines out: it has
  // a runtime of its own (still a child program over our pipes).
  if (provider.protocol === 'acp') return new AcpRuntime(options, sink);
  // Codex's exec mode is one process per turn, resumed by thread id: no program lives between turns.
  if (provider.protocol === 'codex-exec') return new CodexExecRuntime(options, sink);
  const protocol = PROTOCOLS[provider.protocol];
  if (!protocol) {
    throw new Error(`provider ${provider.name} speaks ${provider.protocol}, which this controller cannot run`);
  }
  switch (provider.runtime) {
    case 'pipe':
      return new PipeRuntime(options, sink, protocol);
    case 'tmux':
      // Read off its screen: the protocol's lines do not apply.
      return new TmuxRuntime(options, sink);
  }
}
