import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { CityOrdersConfig } from '../../shared/config/city-config.js';
import { OutsideTree, outsideTree, readWithin } from '../../shared/fs/within.js';
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
    /**
     * Imported packs' `orders/` directories: their orders are named `namespace.name` (the binding unless the pack
     * is included or re-exported), bare for an empty namespace.
     */
    private readonly packs: () => { binding: string; namespace?: string; dir: string; root?: string }[] = () => [],
  ) {}

  get dir(): string {
    return join(this.root, 'orders');
  }

  /**
   * The orders that parse, the errors of those that do not, and the files `skipped` because a symbolic link leads
   * out of the pack or city they belong to (never read).
   */
  list(): { orders: OrderDef[]; errors: string[]; skipped: string[] } {
    const config = this.config();
    const skipped: string[] = [];
    const chosen = this.files(skipped);
    const orders: OrderDef[] = [];
    const errors: string[] = [];
    for (const [name, file] of chosen) {
      if (config.skip.includes(name)) continue;
      const override = config.overrides.find((o) => o.name === name && (o.rig === undefined || o.rig === '*'));
      const fields = override
        ? { ...override.fields, ...(override.enabled !== undefined ? { enabled: override.enabled } : {}) }
        : {};
      const entry = this.read(name, file, fields);
      if (entry.error) errors.push(entry.error);
      if (!entry.order) continue;
      // An alias is an older name, bare or under the pack's binding (`mol-dog-reaper`, `core.mol-dog-reaper`).
      if (entry.order.skipAliases.some((a) => config.skip.includes(a) || config.skip.includes(`${file.prefix}${a}`)))
        continue;
      const order = { ...entry.order };
      if (config.maxTimeoutMs !== undefined) order.timeoutMs = Math.min(order.timeoutMs, config.maxTimeoutMs);
      if (order.trigger === 'cron' && !order.tz && config.timezone) order.tz = config.timezone;
      orders.push(order);
    }
    for (const o of config.overrides) {
      if (!chosen.has(o.name)) errors.push(`city.toml: orders.overrides: no order named ${JSON.stringify(o.name)}`);
    }
    return { orders, errors, skipped };
  }

  get(name: string): OrderDef | undefined {
    return this.list().orders.find((o) => o.name === name);
  }

  /** Whether a file for `name` exists at all (parsed or not). */
  has(name: string): boolean {
    return this.files().has(name);
  }

  /** Each order's file: the city's `orders/`, then each pack's (`binding.name`); `.toml` wins over `.order.toml`. */
  private files(skipped: string[] = []): Map<string, OrderFile> {
    const chosen = new Map<string, OrderFile>();
    const sources = [
      { dir: this.dir, label: 'orders/', prefix: '', tree: { root: this.root, what: 'the city' } },
      ...this.packs().map((p) => ({
        dir: p.dir,
        label: `pack:${p.binding}/orders/`,
        prefix: (p.namespace ?? p.binding) ? `${p.namespace ?? p.binding}.` : '',
        tree: { root: p.root ?? p.dir, what: `pack ${p.binding}` },
      })),
    ];
    for (const source of sources) {
      let files: string[];
      try {
        files = readdirSync(source.dir).sort();
      } catch {
        continue;
      }
      for (const file of files) {
        const m = /^(.+?)(?:\.order)?\.toml$/.exec(file);
        if (!m || !ORDER_NAME.test(m[1]!)) continue;
        const name = `${source.prefix}${m[1]}`;
        const prior = chosen.get(name);
        if (prior && !(prior.file.endsWith('.order.toml') && !file.endsWith('.order.toml'))) continue;
        const path = join(source.dir, file);
        const why = outsideTree(path, source.tree.root, source.tree.what);
        if (why) {
          skipped.push(`${source.label}${file}: ${why}`);
          continue;
        }
        chosen.set(name, { path, file: `${source.label}${file}`, tree: source.tree, prefix: source.prefix });
      }
    }
    return chosen;
  }

  private read(name: string, { path, file, tree }: OrderFile, overrides: Record<string, unknown>): Cached {
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
      entry = { key, order: parseOrder(readWithin(path, tree.root, tree.what), file, name, overrides) };
    } catch (err) {
      entry = { key, error: err instanceof OutsideTree ? `${file}: ${err.message}` : (err as Error).message };
    }
    this.cache.set(path, entry);
    return entry;
  }
}

interface OrderFile {
  path: string;
  file: string;
  /** `binding.` of the pack it comes from; empty for the city's own. */
  prefix: string;
  /** The tree it belongs to: it is read only when it really lies inside. */
  tree: { root: string; what: string };
}
