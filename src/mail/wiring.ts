import type { ModuleWiring } from '../jobs/index.ts';
import { SEND_MAIL_JOB, type SendMailDeps, sendMailJob } from './outbox.ts';

export function mailWiring(deps: SendMailDeps): ModuleWiring {
  return { jobs: { [SEND_MAIL_JOB]: sendMailJob(deps) } };
}
