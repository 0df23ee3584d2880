import { randomUUID } from 'node:crypto';
import { type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ErrorCode, ServiceError } from '../domain/errors';
import { errorBody, errorFamilyOf, HTTP_STATUS } from './errors';

/**
 * Requests Node's HTTP parser refuses before Koa sees them (headers over Node's 16 kB limit,
 * bytes that are not HTTP) get the spec's error shape too, instead of Node's empty 431 or 400.
 * The family follows from the request's path when the parser got that far.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const code = error.code === 'HPE_HEADER_OVERFLOW' ? ErrorCode.HEADERS_TOO_LARGE : ErrorCode.BAD_REQUEST;
    const status = HTTP_STATUS[code];
    // The path alone decides the family: read up to its end, however long the line (a request
    // line over the limit has no "HTTP/1.1" in what arrived).
    const path = /^[A-Z]+ (\/[^\s?#]*)/.exec(error.rawPacket?.toString('latin1', 0, 65_536) ?? '')?.[1] ?? '/';
    const requestId = randomUUID();
    const body = JSON.stringify(errorBody(new ServiceError(code), errorFamilyOf(path), requestId));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  });
}
