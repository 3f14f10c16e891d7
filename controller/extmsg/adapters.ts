import type {
  ExtMsgAdapterRegisterInputBody,
  ExtMsgAdapterRegisterOutputBody,
  ExtMsgAdapterUnregisterInputBody,
  ExtmsgAdapterInfo,
} from '../../shared/dto/extmsg.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import { checkCallbackUrl } from './extmsg-checks.js';
import type { AdapterRecord, ExtmsgStore } from './extmsg-store.js';

/**
 * The adapters registered with the city: one per provider and account, each with the callback the city POSTs
 * its outbound messages to. Registering again updates an adapter (one coming back after its own restart) and
 * hands it at once what waited for it.
 */
export class Adapters {
  constructor(
    private readonly o: {
      store: ExtmsgStore;
      log: EventLog;
      callbackHosts: () => string[];
      /** Called when an adapter (re)registers: deliveries waiting for it go now, not at their next back-off. */
      registered: () => void;
    },
  ) {}

  async register(body: ExtMsgAdapterRegisterInputBody): Promise<ExtMsgAdapterRegisterOutputBody> {
    if (body.callback_url !== undefined) checkCallbackUrl(body.callback_url, this.o.callbackHosts());
    const existing = this.o.store.adapter(body.provider, body.account_id);
    const record: AdapterRecord = {
      provider: body.provider,
      account_id: body.account_id,
      name: body.name ?? existing?.name ?? `${body.provider}-${body.account_id}`,
      registered_at: existing?.registered_at ?? new Date().toISOString(),
      ...(body.callback_url !== undefined ? { callback_url: body.callback_url } : {}),
      ...(body.capabilities !== undefined ? { capabilities: body.capabilities } : {}),
    };
    this.o.store.putAdapter(record);
    if (!existing) {
      await this.o.log.append({
        type: 'extmsg.adapter_added',
        actor: 'ctl',
        subject: record.name,
        payload: { provider: record.provider, account_id: record.account_id },
      });
    }
    this.o.registered();
    return {
      provider: record.provider,
      account_id: record.account_id,
      name: record.name,
      status: existing ? 'updated' : 'registered',
    };
  }

  async unregister(body: ExtMsgAdapterUnregisterInputBody): Promise<void> {
    const adapter = this.require(body.provider, body.account_id);
    this.o.store.removeAdapter(adapter);
    await this.o.log.append({
      type: 'extmsg.adapter_removed',
      actor: 'ctl',
      subject: adapter.name,
      payload: { provider: adapter.provider, account_id: adapter.account_id },
    });
  }

  list(): ExtmsgAdapterInfo[] {
    const pending = this.o.store.pending();
    return this.o.store.adapters().map(({ last_delivery: last, ...a }) => ({
      ...a,
      pending_deliveries: pending.filter((p) => p.provider === a.provider && p.account_id === a.account_id).length,
      state: !a.callback_url ? 'no_callback' : !last ? 'unknown' : last.error ? 'unreachable' : 'reachable',
      ...(last ? { last_delivery_at: last.at } : {}),
      ...(last?.error ? { last_error: last.error } : {}),
    }));
  }

  /** The adapter of a provider and account; a 404 when none is registered. */
  require(provider: string, accountId: string): AdapterRecord {
    const adapter = this.o.store.adapter(provider, accountId);
    if (!adapter)
      throw new Problem('adapter-not-found', `not_found: no adapter registered for ${provider}/${accountId}`);
    return adapter;
  }
}
