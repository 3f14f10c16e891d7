import { accessSync, constants, statfsSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import type { DoctorCheck, DoctorReport, DoctorStatus } from './dto/doctor.js';

/** A check's finding, with the safe fix it offers (run by `--fix`, which then runs the check again). */
export interface Finding {
  status: DoctorStatus;
  message: string;
  fix?: string;
  details?: string[];
  /** Fixes it; answers what it did. */
  repair?: () => Promise<string> | string;
}

/** One check: a stable id and how to run it. */
export interface Check {
  id: string;
  run: () => Promise<Finding> | Finding;
}

/**
 * Runs the checks (at once: each is bounded by its own time-out), and with `fix` the repair of each that offers
 * one, then that check again, so that what is reported is the state after the fix. A check that throws fails,
 * naming why: a doctor never dies of what it examines.
 */
export async function runChecks(checks: Check[], fix: boolean): Promise<DoctorCheck[]> {
  return Promise.all(
    checks.map(async (check): Promise<DoctorCheck> => {
      let found = await settle(check);
      let fixed: string | undefined;
      if (fix && found.status !== 'ok' && found.repair) {
        try {
          fixed = await found.repair();
        } catch (err) {
          fixed = `the fix failed: ${(err as Error).message.split('\n')[0]}`;
        }
        found = await settle(check);
      }
      return {
        id: check.id,
        status: found.status,
        message: found.message,
        fixable: found.repair !== undefined,
        ...(found.status !== 'ok' && found.fix ? { fix: found.fix } : {}),
        ...(fixed !== undefined ? { fixed } : {}),
        ...(found.details?.length ? { details: found.details } : {}),
      };
    }),
  );
}

async function settle(check: Check): Promise<Finding> {
  try {
    return await check.run();
  } catch (err) {
    return { status: 'fail', message: `the check could not run: ${(err as Error).message.split('\n')[0]}` };
  }
}

export function report(scope: 'machine' | 'city', checks: DoctorCheck[], city?: string): DoctorReport {
  return { scope, ...(city !== undefined ? { city } : {}), ok: checks.every((c) => c.status !== 'fail'), checks };
}

/** The Node every ctl program needs (package.json `engines`). */
export const MIN_NODE_MAJOR = 22;

export function nodeCheck(id = 'node.version', version = process.versions.node): Check {
  return {
    id,
    run: () => {
      const major = Number(version.split('.')[0]);
      return major >= MIN_NODE_MAJOR
        ? { status: 'ok', message: `Node ${version}` }
        : {
            status: 'fail',
            message: `Node ${version} is older than ${MIN_NODE_MAJOR}`,
            fix: 'run ctl from its package (npm ci brings Node 24 as node_modules/.bin/node), or install Node 22 or newer',
          };
    },
  };
}

/** A directory ctl writes in: it exists and this process may write there. */
export function writableCheck(id: string, dir: string, what: string): Check {
  return {
    id,
    run: () => {
      try {
        if (!statSync(dir).isDirectory()) return { status: 'fail', message: `${what} ${dir} is not a directory` };
        accessSync(dir, constants.W_OK | constants.X_OK);
        return { status: 'ok', message: `${what} ${dir} is writable` };
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        return {
          status: 'fail',
          message: `${what} ${dir} ${code === 'ENOENT' ? 'does not exist' : `is not writable (${code ?? 'error'})`}`,
          fix:
            code === 'ENOENT'
              ? `create it (mkdir -p ${dir}) or unregister what needs it`
              : `give the user ctl runs as write access: chown -R "$(id -un)" ${dir}`,
        };
      }
    },
  };
}

/** Below this much free space a write can fail (the event log, the bead store): a failure. */
export const DISK_FAIL_BYTES = 100 * 1024 * 1024;
/** Below this much, a warning. */
export const DISK_WARN_BYTES = 1024 * 1024 * 1024;

export function diskCheck(id: string, dir: string, what: string): Check {
  return {
    id,
    run: () => {
      const fs = statfsSync(dir);
      const free = fs.bavail * fs.bsize;
      const message = `${bytes(free)} free on the file system of ${what} (${dir})`;
      if (free < DISK_FAIL_BYTES) return { status: 'fail', message, fix: 'free space on that file system' };
      if (free < DISK_WARN_BYTES) return { status: 'warn', message, fix: 'free space on that file system' };
      return { status: 'ok', message };
    },
  };
}

/** An event log's size: past `warnAt` it is worth a look (`note` says why: where it rotates, or that it does not). */
export function logSizeCheck(id: string, path: string, warnAt: number, note: string, fix: string): Check {
  return {
    id,
    run: () => {
      let size: number;
      try {
        size = statSync(path).size;
      } catch {
        return { status: 'ok', message: `${path} is not there yet` };
      }
      const message = `${path} is ${bytes(size)} (${note})`;
      return size > warnAt ? { status: 'warn', message, fix } : { status: 'ok', message };
    },
  };
}

export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

/** Whether a TCP port can be bound on `host` now. */
export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
