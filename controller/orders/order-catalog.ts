import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { CityOrderOverride, CityOrdersConfig } from '../../shared/config/city-config.js';
import { OutsideTree, outsideTree, readWithin } from '../../shared/fs/within.js';
import { Problem } from '../../shared/http/problem.js';
import { parseOrder, type OrderDef } from './order-file.js';

const ORDER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

interface Cached {
  key: string;
  order?: OrderDef;
  error?: string;
}

/** A pack a rig imports: its orders run once per importing rig (unless `scope = "city"`), in the rig's directory. */
export interface RigPackDir {
  binding: string;
  dir: string;
  root: string;
  rig: string;
  rigDir: string;
}

/**
 * The city's orders: `orders/<name>.toml` (or the older `<name>.order.toml`) of the city and of each pack it
 * imports (`binding.name`), and of each pack a rig imports — one instance per rig, scoped `name:rig:<rig>`, unless
 * the order says `scope = "city"` — each with its `city.toml` override laid over it, less those `[orders] skip`
 * names. A file that does not parse is reported and left out; the others run. Files are read again only when they
 * (or their override) change, so listing is cheap enough to do on every request and every evaluation.
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
    private readonly rigPacks: () => RigPackDir[] = () => [],
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
    const seen = new Set<string>();
    for (const file of chosen) {
      const { name, rig } = file;
      if (config.skip.includes(name)) continue;
      const entry = this.read(file, overrideFields(config.overrides, name, rig));
      if (entry.error) {
        if (!errors.includes(entry.error)) errors.push(entry.error);
        continue;
      }
      // An alias is an older name, bare or under the pack's binding (`mol-dog-reaper`, `core.mol-dog-reaper`).
      if (entry.order!.skipAliases.some((a) => config.skip.includes(a) || config.skip.includes(`${file.prefix}${a}`)))
        continue;
      const order: OrderDef = { ...entry.order!, ...(file.binding ? { binding: file.binding } : {}) };
      // A rig pack's order runs per rig; one that says `scope = "city"` runs once, for the city.
      if (rig !== undefined && order.scope === 'rig') {
        Object.assign(order, { rig, rigDir: file.rigDir, scopedName: `${name}:rig:${rig}` });
      }
      if (seen.has(order.scopedName)) continue;
      seen.add(order.scopedName);
      if (config.maxTimeoutMs !== undefined) order.timeoutMs = Math.min(order.timeoutMs, config.maxTimeoutMs);
      if (order.trigger === 'cron' && !order.tz && config.timezone) order.tz = config.timezone;
      orders.push(order);
    }
    for (const o of config.overrides) {
      const matches = chosen.some(
        (f) => f.name === o.name && (o.rig === undefined || o.rig === '*' || o.rig === f.rig),
      );
      if (!matches) {
        const where = o.rig !== undefined && o.rig !== '*' ? ` in rig ${JSON.stringify(o.rig)}` : '';
        errors.push(`city.toml: orders.overrides: no order named ${JSON.stringify(o.name)}${where}`);
      }
    }
    return { orders, errors, skipped };
  }

  /** The order of this scoped name, or of this name when exactly one instance has it. */
  get(name: string): OrderDef | undefined {
    const orders = this.list().orders;
    const exact = orders.find((o) => o.scopedName === name);
    if (exact) return exact;
    const named = orders.filter((o) => o.name === name);
    if (named.length > 1) {
      throw new Problem(
        'validation-failed',
        `invalid: order ${name} runs in several rigs: name one of ${named.map((o) => o.scopedName).join(', ')}`,
        { errors: [{ location: 'path.name', message: 'name the instance by its scoped name', value: name }] },
      );
    }
    return named[0];
  }

  /** Whether a file for `name` exists at all (parsed or not). */
  has(name: string): boolean {
    return this.files().some((f) => f.name === name || `${f.name}:rig:${f.rig}` === name);
  }

  /**
   * Each order's file: the city's `orders/`, then each pack's (`binding.name`), then each rig pack's (per rig);
   * within one directory `.toml` wins over `.order.toml`.
   */
  private files(skipped: string[] = []): OrderFile[] {
    const chosen = new Map<string, OrderFile>();
    const packs = this.packs();
    // A pack the city imports as well runs its orders once, for the city: rig instances come only from the packs
    // a rig alone brings in (as the reference keeps only a rig's exclusive layers).
    const cityPacks = new Set(packs.map((p) => p.root ?? p.dir));
    const sources: Source[] = [
      { dir: this.dir, label: 'orders/', prefix: '', tree: { root: this.root, what: 'the city' } },
      ...packs.map((p) => ({
        dir: p.dir,
        label: `pack:${p.binding}/orders/`,
        prefix: (p.namespace ?? p.binding) ? `${p.namespace ?? p.binding}.` : '',
        binding: p.binding,
        tree: { root: p.root ?? p.dir, what: `pack ${p.binding}` },
      })),
      ...this.rigPacks()
        .filter((p) => !cityPacks.has(p.root))
        .map((p) => ({
          dir: p.dir,
          label: `rig:${p.rig}/pack:${p.binding}/orders/`,
          prefix: `${p.binding}.`,
          binding: p.binding,
          rig: p.rig,
          rigDir: p.rigDir,
          tree: { root: p.root, what: `pack ${p.binding} of rig ${p.rig}` },
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
        const key = source.rig !== undefined ? `${name}:rig:${source.rig}` : name;
        const prior = chosen.get(key);
        if (prior && !(prior.file.endsWith('.order.toml') && !file.endsWith('.order.toml'))) continue;
        const path = join(source.dir, file);
        const why = outsideTree(path, source.tree.root, source.tree.what);
        if (why) {
          skipped.push(`${source.label}${file}: ${why}`);
          continue;
        }
        chosen.set(key, {
          name,
          path,
          file: `${source.label}${file}`,
          tree: source.tree,
          prefix: source.prefix,
          ...(source.binding !== undefined ? { binding: source.binding } : {}),
          ...(source.rig !== undefined ? { rig: source.rig, rigDir: source.rigDir } : {}),
        });
      }
    }
    return [...chosen.values()];
  }

  private read({ name, path, file, tree }: OrderFile, overrides: Record<string, unknown>): Cached {
    let key: string;
    try {
      const stat = statSync(path);
      key = `${stat.mtimeMs}:${stat.size}:${JSON.stringify(overrides)}`;
    } catch {
      return { key: '', error: `${file}: cannot be read` };
    }
    const cacheKey = `${path}\n${JSON.stringify(overrides)}`;
    const cached = this.cache.get(cacheKey);
    if (cached?.key === key) return cached;
    let entry: Cached;
    try {
      entry = { key, order: parseOrder(readWithin(path, tree.root, tree.what), file, name, overrides) };
    } catch (err) {
      entry = { key, error: err instanceof OutsideTree ? `${file}: ${err.message}` : (err as Error).message };
    }
    this.cache.set(cacheKey, entry);
    return entry;
  }
}

/** The fields `[[orders.overrides]]` lay over an order: a rig's own override over a city-wide (`*`) one. */
function overrideFields(
  overrides: CityOrderOverride[],
  name: string,
  rig: string | undefined,
): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  const general = overrides.filter((o) => o.name === name && (o.rig === undefined || o.rig === '*'));
  const own = rig === undefined ? [] : overrides.filter((o) => o.name === name && o.rig === rig);
  for (const o of [...general, ...own]) {
    Object.assign(fields, o.fields, o.enabled !== undefined ? { enabled: o.enabled } : {});
  }
  return fields;
}

/** A directory orders are read from. */
interface Source {
  dir: string;
  label: string;
  prefix: string;
  binding?: string;
  rig?: string;
  rigDir?: string;
  tree: { root: string; what: string };
}

interface OrderFile {
  name: string;
  path: string;
  file: string;
  /** `binding.` of the pack it comes from; empty for the city's own. */
  prefix: string;
  binding?: string;
  rig?: string;
  rigDir?: string;
  /** The tree it belongs to: it is read only when it really lies inside. */
  tree: { root: string; what: string };
}
