import type { DoctorCheck, DoctorReport } from '../../shared/dto/doctor.js';
import { report, runChecks } from '../../shared/doctor.js';
import { call, connect, CSRF, failureText } from '../_api.js';
import { command } from '../_command.js';
import { apiFlag, cityFlag, jsonFlag } from '../_flags.js';
import { localChecks } from '../_local-doctor.js';
import { json, line, paint, type Colour } from '../_output.js';
import { listCities, resolveCity } from '../_scope.js';
import type { CityInfo } from '../../shared/dto/cities.js';

const MARK: Record<DoctorCheck['status'], [string, Colour]> = {
  ok: ['ok  ', 'green'],
  warn: ['warn', 'yellow'],
  fail: ['FAIL', 'red'],
};

export const doctorCommand = command({
  name: 'doctor',
  description:
    'Check what breaks cities in practice — supervisor, machine, each city and its packs’ checks — and how to fix each; exits 1 when one fails',
  examples: [
    'ctl doctor              # this machine and every running city',
    'ctl doctor --city alpha # this machine and one city',
    'ctl doctor --fix        # also do the safe fixes, saying what each did',
    'ctl doctor --json',
  ],
  args: {
    fix: {
      type: 'boolean',
      description:
        'Do the safe fixes: remove a dead supervisor’s files, end programs a controller left running, drop packs.lock entries nothing imports',
    },
    ...cityFlag,
    ...jsonFlag,
    ...apiFlag,
  },
  async run({ args: a }) {
    const fix = a.fix === true;
    const reports: (DoctorReport | { scope: 'ctl'; ok: boolean; checks: DoctorCheck[] })[] = [];
    const local = await runChecks(localChecks(), fix);
    reports.push({ scope: 'ctl', ok: local.every((c) => c.status !== 'fail'), checks: local });
    const running = local.find((c) => c.id === 'supervisor.running')?.status === 'ok';
    // A supervisor elsewhere (--api, CTL_API) is asked too: the local checks only concern this machine's home.
    const api = connect(a.api);
    const elsewhere = a.api !== undefined || (process.env.CTL_API ?? '') !== '';
    let machine: DoctorReport | undefined;
    if (running || elsewhere) {
      try {
        machine = (await call(api, api.client.GET('/v0/doctor'))).data;
      } catch (err) {
        // No supervisor runs here, and none answers where we were pointed: the local checks say what to do.
        if (running) throw err;
        const why = await failureText(err, api);
        reports.push(
          report('machine', [
            { id: 'supervisor.api', status: 'fail', message: why, fix: 'ctl supervisor start', fixable: false },
          ]),
        );
      }
    }
    if (machine) {
      reports.push(machine);
      const chosen = await resolveCity(api, a.city);
      const cities: CityInfo[] = chosen ? [chosen] : (await listCities(api)).filter((c) => c.running);
      for (const city of cities) {
        if (!city.running) {
          reports.push(
            report(
              'city',
              [
                {
                  id: 'city.running',
                  status: 'fail',
                  message: `city ${city.name} is ${city.status ?? 'not running'}${city.error ? `: ${city.error}` : ''}`,
                  fix: `ctl city start ${city.name} (see ${city.path}/.ctl/controller.log)`,
                  fixable: false,
                },
              ],
              city.name,
            ),
          );
          continue;
        }
        const path = { cityName: city.name };
        const { data } = await call(
          api,
          fix
            ? api.client.POST('/v0/city/{cityName}/doctor/fix', { params: { header: CSRF, path } })
            : api.client.GET('/v0/city/{cityName}/doctor', { params: { path } }),
        );
        reports.push(data);
      }
    }
    const ok = reports.every((r) => r.ok);
    if (!ok) process.exitCode = 1;
    if (a.json) return json({ ok, reports });
    const all = reports.flatMap((r) => r.checks);
    for (const r of reports) {
      line(
        r.scope === 'ctl'
          ? 'ctl on this machine'
          : r.scope === 'machine'
            ? `supervisor at ${api.base}`
            : `city ${r.city}`,
      );
      for (const c of r.checks) {
        const [mark, colour] = MARK[c.status];
        line(`  ${paint(mark, colour)}  ${c.id}  ${c.message}`);
        for (const d of c.details ?? []) line(`          ${d}`);
        if (c.fixed) line(`          fixed: ${c.fixed}`);
        if (c.status !== 'ok' && c.fix) line(`          fix: ${c.fix}`);
      }
    }
    const count = (s: DoctorCheck['status']) => all.filter((c) => c.status === s).length;
    line(`${all.length} checks: ${count('ok')} ok, ${count('warn')} warnings, ${count('fail')} failed`);
  },
});
