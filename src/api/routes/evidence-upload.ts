import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  ACCEPTED_FILE_TYPES,
  createFileEvidence,
  discardStaged,
  EVIDENCE_FILE_FIELD,
  type EvidenceDeps,
  EvidenceUploadFields,
  evidenceFormFields,
  receiveEvidenceForm,
  storageFailureError,
  type UploadRefusal,
} from '../../compliance/index.ts';
import { frameworkError, type ServiceError, sendServiceError } from '../../http/errors.ts';
import {
  fieldErrors,
  invalidRequest,
  malformedMultipart,
  PROBLEM_ERRORS,
  type Problem,
  problem,
  sendProblem,
} from '../../http/problem.ts';
import { compiledSchema, validationIssues } from '../../http/validation.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import { sendComplianceError } from '../errors.ts';

const checkFields = compiledSchema(EvidenceUploadFields);

/**
 * The multipart form of POST /evidence. The file is streamed to the store as it arrives (the text
 * fields may come before or after it), then the fields are checked; a refused form leaves no file.
 */
export async function uploadEvidence(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: EvidenceDeps,
  maxBytes: number,
): Promise<FastifyReply> {
  const workspaceId = workspaceOf(request);
  // The parser's `files: 1` limit refuses a second file, so at most one is staged.
  const form = await receiveEvidenceForm(request.parts(), deps.store, workspaceId);
  const [staged] = form.staged;
  if (form.storageFailure) {
    const failure = storageFailureError(request.log, form.storageFailure, deps.store.kind, workspaceId);
    return sendServiceError(request, reply, PROBLEM_ERRORS, failure);
  }
  if (form.unreadable)
    return sendServiceError(request, reply, PROBLEM_ERRORS, unreadableForm(form.unreadable));
  if (form.refusal) return sendProblem(reply, refusalProblem(request, form.refusal, maxBytes));
  const fields = evidenceFormFields(form.fields);
  const errors = [
    ...fieldErrors(validationIssues(checkFields.Errors(fields)), 'body'),
    ...form.strayFiles.map((name) => ({ path: `body/${name}`, message: 'is not a known field' })),
    ...(staged ? [] : [{ path: `body/${EVIDENCE_FILE_FIELD}`, message: 'is required' }]),
  ];
  if (!staged || errors.length > 0 || !checkFields.Check(fields)) {
    if (staged) await discardStaged(deps.store, staged);
    return sendProblem(reply, invalidRequest(request, errors));
  }
  const result = await createFileEvidence(deps, workspaceId, fields, staged, auditSourceOf(request));
  if (!result.ok) return sendComplianceError(request, reply, result.error, 'evidence');
  return reply.code(201).send(result.value);
}

/** The parser's limits keep their own answers (413); anything else it refused is a malformed body. */
function unreadableForm(error: FastifyError | Error): ServiceError {
  return ('code' in error && frameworkError(error as FastifyError)) || { code: 'invalid_multipart' };
}

function refusalProblem(request: FastifyRequest, refusal: UploadRefusal, maxBytes: number): Problem {
  switch (refusal.code) {
    case 'incomplete_upload':
      return malformedMultipart(request);
    case 'file_too_large':
      return problem(
        request,
        413,
        'file_too_large',
        `The file is larger than the limit of ${maxBytes} bytes.`,
      );
    case 'empty_file':
      return invalidRequest(request, [{ path: `body/${EVIDENCE_FILE_FIELD}`, message: 'is empty' }]);
    case 'unsupported_file_type': {
      const detected = refusal.detected ? ` (${refusal.detected})` : '';
      return problem(
        request,
        415,
        'unsupported_file_type',
        `This type of file${detected} is not accepted as evidence. Accepted: ${ACCEPTED_FILE_TYPES.join(', ')}.`,
      );
    }
  }
}
