import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { CityOrdersConfig } from '../../shared/config/city-config.js';
import { parseOrder, type OrderDef } from './order-file.js';

const ORDER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

interface Cached {
  key: string;
  order?: OrderDef;
  error?: string;
}

/**
 * The city's orders: `orders/<name>.toml` (or the older `<name>.order.toml`), each with its `city.toml`
 * override laid over it, less those `[orders] skip` names. A file that does not parse is reported and left out;
 * the others run. Files are read again only when they (or their override) change, so listing is cheap enough to
 * do on every request and every evaluation.
 */
export class OrderCatalog {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly root: string,
    private readonly config: () => CityOrdersConfig,
  ) {}

  get dir(): string {
    return join(this.root, 'orders');
  }

  list(): { orders: OrderDef[]; errors: string[] } {
    const config = this.config();
    let files: string[];
    try {
      files = readdirSync(this.dir).sort();
    } catch {
      files = [];
    }
    const chosen = new Map<string, string>();
    for (const file of files) {
      const m = /^(.+?)(?:\.order)?\.toml$/.exec(file);
      if (!m || !ORDER_NAME.test(m[1])) continue;
      const prior = chosen.get(m[1]);
      if (!prior || (prior.endsWith('.order.toml') && !file.endsWith('.order.toml'))) chosen.set(m[1], file);
    }
    const orders: OrderDef[] = [];
    const errors: string[] = [];
    for (const [name, file] of chosen) {
      if (config.skip.includes(name)) continue;
      const override = config.overrides.find((o) => o.name === name && (o.rig === undefined || o.rig === '*'));
      const fields = override
        ? { ...override.fields, ...(override.enabled !== undefined ? { enabled: override.enabled } : {}) }
        : {};
      const entry = this.read(name, join(this.dir, file), `orders/${file}`, fields);
      if (entry.error) errors.push(entry.error);
      if (!entry.order) continue;
      const order = { ...entry.order };
      if (config.maxTimeoutMs !== undefined) order.timeoutMs = Math.min(order.timeoutMs, config.maxTimeoutMs);
      if (order.trigger === 'cron' && !order.tz && config.timezone) order.tz = config.timezone;
      orders.push(order);
    }
    for (const o of config.overrides) {
      if (!chosen.has(o.name)) errors.push(`city.toml: orders.overrides: no order named ${JSON.stringify(o.name)}`);
    }
    return { orders, errors };
  }

  get(name: string): OrderDef | undefined {
    return this.list().orders.find((o) => o.name === name);
  }

  /** Whether a file for `name` exists at all (parsed or not). */
  has(name: string): boolean {
    try {
      return readdirSync(this.dir).some((f) => f === `${name}.toml` || f === `${name}.order.toml`);
    } catch {
      return false;
    }
  }

  private read(name: string, path: string, file: string, overrides: Record<string, unknown>): Cached {
    let key: string;
    try {
      const stat = statSync(path);
      key = `${stat.mtimeMs}:${stat.size}:${JSON.stringify(overrides)}`;
    } catch {
      return { key: '', error: `${file}: cannot be read` };
    }
    const cached = this.cache.get(path);
    if (cached?.key === key) return cached;
    let entry: Cached;
    try {
      entry = { key, order: parseOrder(readFileSync(path, 'utf8'), file, name, overrides) };
    } catch (err) {
      entry = { key, error: (err as Error).message };
    }
    this.cache.set(path, entry);
    return entry;
  }
}
