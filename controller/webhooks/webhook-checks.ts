import type { OrderDef } from '../orders/order-file.js';
import type { WebhookDef } from './webhook-config.js';

export interface WebhookWarning {
  file: string;
  key: string;
  message: string;
}

/**
 * What `[[webhook]]` tables say that parses but will not work with the city's orders, for validate's warnings: a
 * rule firing an order the city does not have, or one that is not `trigger = "webhook"` (its deliveries would be
 * refused, 422), and a table named as a webhook order is (the table takes `hook/<name>`; the order none).
 */
export function webhookWarnings(webhooks: WebhookDef[], orders: OrderDef[]): WebhookWarning[] {
  const warnings: WebhookWarning[] = [];
  for (const hook of webhooks) {
    const at = `webhook[${hook.index}]`;
    if (orders.some((o) => o.trigger === 'webhook' && o.scopedName === hook.name)) {
      warnings.push({
        file: 'city.toml',
        key: `${at}.name`,
        message: `webhook ${hook.name}: hook/${hook.name} is this table's; the webhook order of that name takes no deliveries there`,
      });
    }
    for (const [j, rule] of hook.rules.entries()) {
      const rig = hook.rig ?? rule.rig;
      const scoped = rig ? `${rule.order}:rig:${rig}` : rule.order;
      const order = orders.find((o) => o.scopedName === scoped);
      if (order?.trigger === 'webhook') continue;
      const why = order ? `${scoped} is not a trigger = "webhook" order` : `the city has no order ${scoped}`;
      warnings.push({
        file: 'city.toml',
        key: `${at}.rule[${j}].order`,
        message: `webhook ${hook.name}: ${why}: deliveries this rule matches are refused (422)`,
      });
    }
  }
  return warnings;
}
