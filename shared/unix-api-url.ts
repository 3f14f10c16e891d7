// An API on a Unix socket, as a URL the client takes in `--api` and `CTL_API` (the convention of Docker's and
// Python's requests-unixsocket clients): `http+unix://` and the socket's path percent-encoded as the host, so the
// request's own path follows as in any URL. A remote session's `ctl` reaches its city so: the far end of its host's
// reverse tunnel is a socket only that host's account can open.

export const UNIX_API_PROTOCOL = 'http+unix:';

/** The API base URL of a socket path. */
export function unixApiUrl(socketPath: string): string {
  return `http+unix://${encodeURIComponent(socketPath)}`;
}

/** The socket path of an `http+unix:` URL. */
export function socketPathOf(url: URL): string {
  return decodeURIComponent(url.host);
}
