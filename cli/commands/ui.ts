import { spawn } from 'node:child_process';
import { call, connect, CSRF } from '../_api.js';
import { command } from '../_command.js';
import { apiFlag } from '../_flags.js';
import { line } from '../_output.js';

/**
 * The program that opens a URL here: `$BROWSER` (the usual convention; its first word is the program), else
 * `open` on macOS, else `xdg-open` where a graphical session is (`DISPLAY`, `WAYLAND_DISPLAY`); undefined where
 * no browser can be opened (a server over SSH), and the URL is printed instead.
 */
export function browserCommand(env: NodeJS.ProcessEnv = process.env, platform = process.platform): string | undefined {
  const chosen = env.BROWSER?.trim();
  if (chosen) return chosen;
  if (platform === 'darwin') return 'open';
  if (env.DISPLAY || env.WAYLAND_DISPLAY) return 'xdg-open';
  return undefined;
}

/** Starts `program url`, detached; resolves false when it could not be started or exited with a failure at once. */
export function openWith(program: string, url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const [bin = '', ...rest] = program.split(/\s+/);
    const child = spawn(bin, [...rest, url], { detached: true, stdio: 'ignore' });
    child.once('error', () => resolve(false));
    // xdg-open and open return once the browser has the URL; a browser run directly keeps running (ours to leave).
    const settled = setTimeout(() => {
      child.unref();
      resolve(true);
    }, 1_500);
    child.once('exit', (code) => {
      clearTimeout(settled);
      resolve(code === 0);
    });
  });
}

export const uiCommand = command({
  name: 'ui',
  description:
    'Open the dashboard in a browser, signed in as you (a one-time link, valid a minute); prints the link where no browser can be opened',
  examples: ['ctl ui', 'ctl ui --print   # only print the link (open it within a minute)'],
  args: {
    print: { type: 'boolean', description: 'Print the sign-in link instead of opening a browser' },
    ...apiFlag,
  },
  async run({ args: a }) {
    const api = connect(a.api);
    // A one-time code, not the page's address alone: a browser on another account, or one given a token
    // (CTL_TOKEN), is signed in as the caller here, and no token ever appears in a URL.
    const { data } = await call(api, api.client.POST('/v0/auth/codes', { params: { header: CSRF } }));
    const url = new URL(data.url, `${api.base}/`).toString();
    const browser = a.print ? undefined : browserCommand();
    if (browser && (await openWith(browser, url))) {
      process.stderr.write(`Opened the dashboard (${api.base}/ui/) in the browser.\n`);
      return;
    }
    line(url);
    process.stderr.write(
      `${browser ? `Could not start ${browser}; open` : 'Open'} this link within a minute (it works once): it signs the browser in and shows ${api.base}/ui/\n`,
    );
  },
});
