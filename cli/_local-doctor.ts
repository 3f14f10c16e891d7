import { existsSync, rmSync } from 'node:fs';
import { readSupervisorConfig } from '../shared/config/supervisor-config.js';
import { nodeCheck, portFree, type Check } from '../shared/doctor.js';
import { readPid } from '../shared/fs/pid-file.js';
import { ctlHome, homePaths } from '../shared/paths.js';
import { supervisorPid } from './_supervisor-pid.js';

/**
 * What `ctl doctor` checks itself, on this machine's `$CTL_HOME`, before asking any supervisor: whether one runs,
 * files a dead one left (`supervisor.address`, `supervisor.pid`: clients would be sent to it), the port the next
 * one would take, and the Node `ctl` runs on.
 */
export function localChecks(env: NodeJS.ProcessEnv = process.env): Check[] {
  const paths = homePaths(ctlHome(env));
  const running = supervisorPid();
  const checks: Check[] = [
    nodeCheck('ctl.node'),
    {
      id: 'supervisor.running',
      run: () =>
        running !== undefined
          ? { status: 'ok', message: `the supervisor of ${paths.home} runs (pid ${running})` }
          : { status: 'fail', message: `no supervisor runs for ${paths.home}`, fix: 'ctl supervisor start' },
    },
    {
      id: 'supervisor.files',
      run: () => {
        // The supervisor holds its lock for life: with the lock free, whatever these files say is stale.
        if (supervisorPid() !== undefined) return { status: 'ok', message: 'supervisor.address and .pid are its own' };
        const stale = [paths.address, paths.pid].filter((f) => existsSync(f));
        if (stale.length === 0) return { status: 'ok', message: 'no files of a stopped supervisor are left' };
        const pid = readPid(paths.pid);
        return {
          status: 'warn',
          message: `${stale.map((f) => f.slice(paths.home.length + 1)).join(' and ')} left by a supervisor that is gone${pid ? ` (pid ${pid})` : ''}`,
          fix: 'ctl doctor --fix removes them (ctl supervisor start also replaces them)',
          repair: () => {
            for (const file of stale) rmSync(file, { force: true });
            return `removed ${stale.map((f) => f.slice(paths.home.length + 1)).join(' and ')}`;
          },
        };
      },
    },
  ];
  if (running === undefined) {
    checks.push({
      id: 'supervisor.port',
      run: async () => {
        const config = readSupervisorConfig(paths.config, env);
        if (config.port === 0 || (await portFree(config.port, config.bind))) {
          return { status: 'ok', message: `port ${config.port} is free for the supervisor` };
        }
        return {
          status: 'fail',
          message: `port ${config.port}, where the supervisor listens, is in use by another program`,
          fix: `stop what listens there (ss -ltnp 'sport = :${config.port}') or set port in ${paths.config}`,
        };
      },
    });
  }
  return checks;
}
