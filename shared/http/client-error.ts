import { maxHeaderSize, STATUS_CODES, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { Problem } from './problem.js';
import { newResponseId, REQUEST_ID_HEADER } from './request-id.js';

interface ClientError extends Error {
  code?: string;
  /** llhttp's reason, without node's "Parse Error: " prefix. */
  reason?: string;
  /** The bytes the parser refused. */
  rawPacket?: Buffer;
}

/** `METHOD target HTTP/x.y`: a request line, whatever its method (RFC 9112 §3; the method a token). */
const REQUEST_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^\s]+ HTTP\/\d\.\d\r?\n/;

/** What node:http keeps on a server socket while a response on it is in flight (its own name, not public). */
interface HttpSocket extends Duplex {
  _httpMessage?: ServerResponse | null;
}

/**
 * Answers what node's HTTP parser refuses before any request reaches Koa (a NUL or space in the path, a bad
 * header name, both Content-Length and Transfer-Encoding, headers or URL over `maxHeaderSize`, a method it does
 * not know, a broken chunk in a body) as the problem Koa would have sent, instead of node's bare 400:
 * problem+json, a request id, `Connection: close`, then the end of the connection, whose parser cannot go on.
 * Responses to requests pipelined before the bad one go out first; a connection already gone or with a
 * response half-written is just destroyed.
 */
export function answerClientErrors(server: Server, logger: Logger): void {
  const answering = new WeakSet<Duplex>();
  server.on('clientError', (err: ClientError, socket: HttpSocket) => {
    // The parser stays failed, so more bytes on the connection report the same error again.
    if (err.code === 'ECONNRESET' || !socket.writable || answering.has(socket)) {
      socket.destroy();
      return;
    }
    answering.add(socket);
    const problem = problemFor(err);
    const id = newResponseId();
    logger.debug(
      { requestId: id, code: err.code, status: problem.status },
      `refused by the HTTP parser: ${err.message}`,
    );
    afterInFlight(socket, () => {
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      const body = JSON.stringify(problem.toBody());
      socket.end(
        `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? ''}\r\n` +
          `Content-Type: application/problem+json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n` +
          `${REQUEST_ID_HEADER}: ${id}\r\n` +
          `Connection: close\r\n\r\n${body}`,
      );
    });
  });
}

function problemFor(err: ClientError): Problem {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new Problem('headers-too-large', `too_large: request line and headers exceed ${maxHeaderSize / 1024} KiB`);
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new Problem('payload-too-large', 'too_large: chunk extensions too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new Problem('request-timeout', 'timeout: the request did not arrive in time');
    case 'HPE_INVALID_METHOD':
      // A well-formed request line whose method llhttp does not know is a 501 (TRACE, PROPFIND and other known
      // ones reach the routes and their 405); anything else — no request line at all, TLS bytes — is malformed.
      if (err.rawPacket && REQUEST_LINE.test(err.rawPacket.toString('latin1')))
        return new Problem('not-implemented', 'not_implemented: request method not recognised');
      return new Problem('invalid-request', 'invalid: malformed HTTP request: not a request line');
    default:
      return new Problem('invalid-request', `invalid: malformed HTTP request: ${err.reason ?? err.message}`);
  }
}

/** Runs `then` once every response to a request pipelined before the refused one has been written. */
function afterInFlight(socket: HttpSocket, then: () => void): void {
  const inFlight = socket._httpMessage;
  if (!inFlight) {
    then();
    return;
  }
  if (!inFlight.req.complete) {
    // The refused bytes are this request's own body, which will now never end: it is answered at once,
    // while nothing of its own response has been sent.
    if (inFlight.headersSent) socket.destroy();
    else then();
    return;
  }
  // node hands the socket to the next queued response when this one finishes, before this listener runs.
  inFlight.once('close', () => afterInFlight(socket, then));
}
