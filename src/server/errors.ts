/**
 * One JSON error shape for every route (the seed's result envelope, failed):
 *   { success: false, code, message, field?, requestId }
 * `code` is the stable code of src/core/errors.ts; the HTTP status follows it.
 * Unexpected errors answer 500 without their text (it may hold data) and are logged.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ErrorCode, TaskLeaseError, ValidationError } from '../core/errors.js';

export interface ErrorBody {
  success: false;
  code: string;
  message: string;
  field?: string;
  requestId: string;
}

const STATUS_BY_CODE: Record<string, number> = {
  [ErrorCode.NOT_FOUND]: 404,
  [ErrorCode.INVALID_TRANSITION]: 409,
  [ErrorCode.UNIQUE_CONFLICT]: 409,
  [ErrorCode.TASK_CHANGED]: 409,
  [ErrorCode.UNAUTHENTICATED]: 401,
  [ErrorCode.FORBIDDEN]: 403,
  [ErrorCode.RATE_LIMITED]: 429,
  [ErrorCode.REQUEST_TOO_LARGE]: 413,
  [ErrorCode.PAYLOAD_TOO_LARGE]: 413,
  [ErrorCode.STORE_UNAVAILABLE]: 503,
  [ErrorCode.SCHEMA_MISMATCH]: 503,
};

/** Fastify's own errors (body parsing, schema validation) in our codes. */
const FASTIFY_CODES: Record<string, { status: number; code: string; message?: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: ErrorCode.REQUEST_TOO_LARGE },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: ErrorCode.VALIDATION, message: 'send the body as application/json' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: ErrorCode.VALIDATION, message: 'the body is empty but Content-Type says JSON' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: ErrorCode.VALIDATION },
};

export function errorBody(request: FastifyRequest, code: string, message: string, field?: string): ErrorBody {
  return { success: false, code, message, ...(field ? { field } : {}), requestId: request.id };
}

export function sendError(reply: FastifyReply, status: number, body: ErrorBody): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

export function handleError(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const first = fastifyError.validation[0];
    const where = fastifyError.validationContext ?? 'request';
    const path = first?.instancePath
      ? first.instancePath.replace(/^\//, '').replaceAll('/', '.')
      : (first?.params as { missingProperty?: string } | undefined)?.missingProperty;
    const field = path ? `${where}.${path}` : where;
    const extra = (first?.params as { additionalProperty?: string } | undefined)?.additionalProperty;
    const message = `${field} ${first?.message ?? 'is invalid'}${extra ? `: ${JSON.stringify(extra)}` : ''}`;
    return sendError(reply, 400, errorBody(request, ErrorCode.VALIDATION, message, field));
  }
  if (error instanceof SyntaxError || fastifyError.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return sendError(reply, 400, errorBody(request, ErrorCode.VALIDATION, 'the body is not valid JSON', 'body'));
  }
  const known = fastifyError.code ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (known) return sendError(reply, known.status, errorBody(request, known.code, known.message ?? error.message, 'body'));
  if (error instanceof TaskLeaseError) {
    const status = STATUS_BY_CODE[error.code] ?? (error instanceof ValidationError ? 400 : 500);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(reply, status, errorBody(request, error.code, error.message, error instanceof ValidationError ? error.field : undefined));
  }
  if (typeof fastifyError.statusCode === 'number' && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return sendError(reply, fastifyError.statusCode, errorBody(request, ErrorCode.VALIDATION, error.message));
  }
  request.log.error({ err: error }, 'request failed');
  return sendError(reply, 500, errorBody(request, 'INTERNAL', 'internal error; the server log has the details under this requestId'));
}

export function handleNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendError(reply, 404, errorBody(request, ErrorCode.NOT_FOUND, `no route ${request.method} ${request.url.split('?')[0]}`));
}
