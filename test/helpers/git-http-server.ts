import { execFileSync, spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tempDir } from './temp-dir.js';

/**
 * A real git server on loopback: git's own `git http-backend` (CGI) behind a Node HTTP server on 127.0.0.1 and a
 * free port, serving the bare repositories it holds (`create`) under `/<name>.git`, every request asking HTTP
 * basic auth of `user`/`password`. Nothing of it is a stub: clients push and fetch with git's smart HTTP
 * protocol, and what they pushed is read back from the bare repository (`git`). `hang` makes it take requests
 * and never answer (a remote that hangs); `stop` closes it (a remote that is gone).
 */
export class GitHttpServer {
  /** While true, every request is taken and left unanswered. */
  hang = false;
  /** Requests answered 401 for missing or wrong credentials, and requests served. */
  refused = 0;
  served = 0;
  /** Requests taken while `hang` was on. */
  hanging = 0;
  private readonly open = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    /** Where its bare repositories are. */
    readonly root: string,
    readonly user: string,
    readonly password: string,
  ) {}

  static async start(options: { user?: string; password?: string } = {}): Promise<GitHttpServer> {
    const root = tempDir('ctl-git-server-');
    const user = options.user ?? 'pusher';
    const password = options.password ?? `pw-${Math.random().toString(36).slice(2)}`;
    const server = createServer();
    const self = new GitHttpServer(server, root, user, password);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => self.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return self;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The URL of repository `name`, with no credentials in it (they come from the client's git configuration). */
  url(name: string): string {
    return `http://127.0.0.1:${this.port}/${name}.git`;
  }

  /** A `git credential-store` file's line for this server: what a person's `credential.helper store` holds. */
  credentialLine(password = this.password): string {
    return `http://${encodeURIComponent(this.user)}:${encodeURIComponent(password)}@127.0.0.1:${this.port}\n`;
  }

  /** A new bare repository `name` (pushes to it accepted), optionally holding what `from` has on `branch`. */
  create(name: string, from?: { repo: string; branch: string }): string {
    const dir = join(this.root, `${name}.git`);
    execFileSync('git', ['init', '-q', '--bare', dir]);
    execFileSync('git', ['config', 'http.receivepack', 'true'], { cwd: dir });
    if (from) execFileSync('git', ['push', '-q', dir, `${from.branch}:refs/heads/${from.branch}`], { cwd: from.repo });
    return dir;
  }

  /** git run in bare repository `name` (what the server holds), its output trimmed. */
  git(name: string, ...args: string[]): string {
    return execFileSync('git', args, { cwd: join(this.root, `${name}.git`), encoding: 'utf8' }).trim();
  }

  /** The commit `ref` is at in repository `name`, or undefined when it has no such ref. */
  refOf(name: string, ref: string): string | undefined {
    try {
      return this.git(name, 'rev-parse', '--verify', '--quiet', ref);
    } catch {
      return undefined;
    }
  }

  async stop(): Promise<void> {
    for (const res of this.open) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Stops it and removes its repositories. */
  async cleanup(): Promise<void> {
    if (this.server.listening) await this.stop();
    rmSync(this.root, { recursive: true, force: true });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.open.add(res);
    res.on('close', () => this.open.delete(res));
    if (this.hang) {
      this.hanging += 1;
      return;
    }
    const expected = `Basic ${Buffer.from(`${this.user}:${this.password}`).toString('base64')}`;
    if (req.headers.authorization !== expected) {
      this.refused += 1;
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"', 'Content-Type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
    this.served += 1;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    // The CGI environment git http-backend reads (RFC 3875), and the user the push is recorded as.
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      GIT_PROJECT_ROOT: this.root,
      GIT_HTTP_EXPORT_ALL: '1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      REMOTE_USER: this.user,
      REMOTE_ADDR: '127.0.0.1',
      ...(req.headers['content-type'] ? { CONTENT_TYPE: req.headers['content-type'] } : {}),
      ...(req.headers['content-length'] ? { CONTENT_LENGTH: req.headers['content-length'] } : {}),
      ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
      ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
    };
    const cgi = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'ignore'] });
    req.pipe(cgi.stdin);
    cgi.stdin.on('error', () => undefined);
    let head = Buffer.alloc(0);
    let answered = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (answered) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      answered = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else res.setHeader(name, value);
      }
      res.writeHead(status);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => {
      if (!answered) res.writeHead(500);
      res.end();
    });
  }
}

/**
 * A person's git configuration in `home`, as their `~/.gitconfig` would have it: a name and address, and a
 * `credential.helper store` whose file holds `line` (`GitHttpServer.credentialLine`).
 */
export function personsGitConfig(home: string, line: string): string {
  const store = join(home, '.git-credentials-test');
  writeFileSync(store, line, { mode: 0o600 });
  writeFileSync(
    join(home, '.gitconfig'),
    `[user]\n\tname = dev\n\temail = dev@example.invalid\n[credential]\n\thelper = store --file ${store}\n`,
  );
  return store;
}
